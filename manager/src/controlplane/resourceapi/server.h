// ResourceApiServer: kdp-manager's local resource API, a small Kubernetes API server over HTTPS
// on 127.0.0.1 (cpp-httplib with OpenSSL) serving resource.k8s.io v1 and v1beta1 ResourceSlices,
// DeviceClasses, ResourceClaims (with /status) and ResourceClaimTemplates, the manager's Node
// (GET /api/v1/nodes/<name>), core v1 Namespaces, Pods and Events, the same Events as
// events.k8s.io/v1 (kinds.h kEventsV1), discovery (/apis, /apis/<group>[/<version>], /api,
// /api/v1) and /version, from an ObjectStore. TLS serves the certificate of serving_certs.h
// (TLS 1.2 or later; the certificate can be replaced while serving, for renewal). Every request
// must carry `Authorization: Bearer <token>` (kubeconfig.h writes it for drivers) or present a
// client certificate the CA signed (asked for, not required, as kube-apiserver does); otherwise
// 401 with a Kubernetes Status. There is no plain-HTTP listener: client-go sends credentials
// only over https. Request bodies in either version are converted to v1 for the store and
// answers back to the URL's version (conversion.h); errors are Kubernetes Status objects
// (api_errors.h). Lists take selectors, resourceVersion(Match), limit and continue; watches
// (watch.h) stream JSON events, watch-list included, each on its own worker thread, at most
// max_watches at once (429 beyond, so short requests always find a thread). Request bodies are
// JSON or Kubernetes protobuf (ResourceSlice, protobuf_codec.h); answers are JSON. That is what
// DRA drivers built on client-go were seen to need: protobuf request bodies (client-go >= 0.32
// prefers protobuf), watch-list or LIST + WATCH on resource.k8s.io v1 or v1beta1, and https.
//
// The manager's main constructs it over its store, calls Start, writes the kubeconfig with
// port(), and calls Stop at shutdown.
//
// Thread-safety: thread-safe. Start, Stop and port may be called from any thread; Stop is
// idempotent and may be called concurrently or without Start. Requests are served on the
// server's own threads.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "manager/src/controlplane/resourceapi/pod_writer.h"
#include "manager/src/controlplane/resourceapi/request_options.h"
#include "manager/src/controlplane/resourceapi/serving_certs.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/controlplane/resourceapi/watch.h"

struct ssl_st;  // OpenSSL's SSL

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}  // namespace httplib

namespace kdp::manager::resourceapi {

struct Route;        // a request's resolved URL (server_request.h)
struct TlsIdentity;  // the parsed serving certificate and key (server.cc)

struct ResourceApiServerOptions {
  // Address to listen on. Only loopback is meant: the serving certificate names loopback only.
  std::string host = "127.0.0.1";
  // TCP port; 0 picks a free one (see port()).
  int port = 0;
  // The bearer token every request must present (unless it presents a client certificate).
  // Required (Start fails without it).
  std::string token = {};
  // The TLS identity: ca_pem (trusted for client certificates), cert_pem and key_pem. Required.
  ServingCertificates tls = {};
  // The Kubernetes version /version reports (drivers may pick behaviour by it, e.g. NVIDIA's
  // combined vs split slices below 1.35).
  std::string kubernetes_version = "v1.34.0";
  // Worker threads serving requests; a watch holds one for its whole life.
  int threads = 64;
  // Concurrent watches allowed; 0: threads - 8.
  int max_watches = 0;
  // Pod creation and deletion (the manager's admission, pod_writer.h); borrowed, must outlive
  // the server. nullptr: Pods are read-only (405).
  PodWriter* pods = nullptr;
  // Bookmark, heartbeat and resourceVersion-wait timings of watches.
  WatchTimings watch = {};
};

class ResourceApiServer {
 public:
  // `store` is borrowed and must outlive the server.
  ResourceApiServer(ObjectStore* store, ResourceApiServerOptions options);
  // Stops the server if running.
  ~ResourceApiServer();
  ResourceApiServer(const ResourceApiServer&) = delete;
  ResourceApiServer& operator=(const ResourceApiServer&) = delete;

  // Binds and starts serving; returns once the listener accepts connections. INVALID_ARGUMENT
  // without a token, or when the TLS certificate, key or CA do not parse or do not match;
  // FAILED_PRECONDITION when already started (or stopped: a server runs once);
  // UNAVAILABLE when the address cannot be bound (port taken).
  [[nodiscard]] absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends open watches (each stream finishes cleanly within ~200 ms), stops accepting, finishes
  // in-flight requests and joins the server thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // The bound port once Start succeeded; 0 before.
  int port() const ABSL_LOCKS_EXCLUDED(mu_);
  // "https://127.0.0.1:<port>".
  std::string url() const ABSL_LOCKS_EXCLUDED(mu_);
  // Serves `tls` from the next TLS handshake on (connections already open keep theirs); its CA
  // is trusted for client certificates besides the earlier ones. INVALID_ARGUMENT when it does
  // not parse or the key is not the certificate's; nothing changes then.
  [[nodiscard]] absl::Status SetServingCertificates(const ServingCertificates& tls)
      ABSL_LOCKS_EXCLUDED(tls_mu_);
  // Watches being served now.
  int active_watches() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Handle(const httplib::Request& request, httplib::Response& response);
  bool Authenticated(const httplib::Request& request) const;
  // The certificate and key the next handshake serves (OpenSSL's certificate callback).
  std::shared_ptr<const TlsIdentity> Identity() const ABSL_LOCKS_EXCLUDED(tls_mu_);
  static int SelectCertificate(::ssl_st* ssl, void* server);
  void ServePatch(const httplib::Request& request, const Route& route, httplib::Response& response);
  void ServeList(const Route& route, const ListWatchOptions& options, httplib::Response& response);
  void ServeWatch(const Route& route, ListWatchOptions options, httplib::Response& response)
      ABSL_LOCKS_EXCLUDED(mu_);
  int MaxWatches() const;
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  void EndWatch() ABSL_LOCKS_EXCLUDED(mu_);

  ObjectStore* const store_;
  const ResourceApiServerOptions options_;
  mutable absl::Mutex tls_mu_;
  std::shared_ptr<const TlsIdentity> identity_ ABSL_GUARDED_BY(tls_mu_);
  absl::Status identity_status_ ABSL_GUARDED_BY(tls_mu_);  // why options_.tls was refused
  const std::unique_ptr<httplib::SSLServer> http_;

  mutable absl::Mutex mu_;
  int port_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // watches must end
  int active_watches_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_SERVER_H_
