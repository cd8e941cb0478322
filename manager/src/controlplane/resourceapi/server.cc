#include "manager/src/controlplane/resourceapi/server.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/discovery.h"
#include "manager/src/controlplane/resourceapi/event_validation.h"
#include "manager/src/controlplane/resourceapi/field_validation.h"
#include "manager/src/controlplane/resourceapi/openapi.h"
#include "manager/src/controlplane/resourceapi/patch.h"
#include "manager/src/controlplane/resourceapi/protobuf_codec.h"
#include "manager/src/controlplane/resourceapi/request_options.h"
#include "manager/src/controlplane/resourceapi/selectors.h"
#include "manager/src/controlplane/resourceapi/server_request.h"
#include "manager/src/controlplane/resourceapi/table.h"
#include "manager/src/controlplane/resourceapi/watch.h"

namespace kdp::manager::resourceapi {

struct TlsIdentity {
  struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
  };
  struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  std::unique_ptr<X509, X509Free> cert;
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  std::unique_ptr<X509, X509Free> ca;
};

namespace {

// httplib's ThreadPool starts all its workers at construction: 64 threads that wait at rest, most
// of kdp-manager's threads (issue 19). This pool starts a worker only when a request finds none
// idle, up to `max_threads` (so watches and short requests have the same room as before), and a
// worker that stays idle for kIdleExit ends: at rest the server holds no worker thread.
// Thread-safe.
class ElasticThreadPool final : public httplib::TaskQueue {
 public:
  static constexpr absl::Duration kIdleExit = absl::Seconds(10);

  explicit ElasticThreadPool(int max_threads)
      : max_threads_(static_cast<size_t>(std::max(1, max_threads))) {}
  ~ElasticThreadPool() override { shutdown(); }

  ElasticThreadPool(const ElasticThreadPool&) = delete;
  ElasticThreadPool& operator=(const ElasticThreadPool&) = delete;

  void enqueue(std::function<void()> fn) override ABSL_LOCKS_EXCLUDED(mu_) {
    std::list<Worker> ended;
    {
      absl::MutexLock lock(&mu_);
      if (shutdown_) return;  // the server stopped listening before shutdown()
      jobs_.push_back(std::move(fn));
      ended = TakeEndedLocked();
      if (jobs_.size() > idle_ && live_ < max_threads_) {
        ++live_;
        auto worker = workers_.emplace(workers_.end());
        worker->thread = std::thread([this, worker] { Work(worker); });
      }
    }
    for (Worker& worker : ended) worker.thread.join();
  }

  // Runs the queued jobs, then joins every worker (as httplib's ThreadPool). Idempotent.
  void shutdown() override ABSL_LOCKS_EXCLUDED(mu_) {
    std::list<Worker> all;
    {
      absl::MutexLock lock(&mu_);
      shutdown_ = true;
      auto none_live = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_ == 0; };
      mu_.Await(absl::Condition(&none_live));
      all.swap(workers_);
    }
    for (Worker& worker : all) {
      if (worker.thread.joinable()) worker.thread.join();
    }
  }

 private:
  struct Worker {
    std::thread thread;
    bool ended = false;
  };

  std::list<Worker> TakeEndedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::list<Worker> ended;
    for (auto it = workers_.begin(); it != workers_.end();) {
      auto next = std::next(it);
      if (it->ended) ended.splice(ended.end(), workers_, it);
      it = next;
    }
    return ended;
  }

  void Work(std::list<Worker>::iterator self) ABSL_LOCKS_EXCLUDED(mu_) {
    while (true) {
      std::function<void()> job;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !jobs_.empty() || shutdown_; };
        ++idle_;
        mu_.AwaitWithTimeout(absl::Condition(&ready), kIdleExit);
        --idle_;
        if (jobs_.empty()) {
          // Idle for kIdleExit, or shutting down: joined by the next enqueue() or shutdown().
          self->ended = true;
          --live_;
          return;
        }
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const size_t max_threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);
  size_t live_ ABSL_GUARDED_BY(mu_) = 0;  // workers started and not ended
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // workers waiting for a job
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

using Json = nlohmann::json;

constexpr char kWatchContentType[] = "application/json;stream=watch";

// The certificate, key and CA of `tls`, each null when it does not parse.
TlsIdentity ParsePems(const ServingCertificates& tls) {
  TlsIdentity identity;
  auto read = [](const std::string& pem, auto reader) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    auto* out = bio == nullptr ? nullptr : reader(bio);
    BIO_free(bio);
    return out;
  };
  identity.cert.reset(
      read(tls.cert_pem, [](BIO* b) { return PEM_read_bio_X509(b, nullptr, nullptr, nullptr); }));
  identity.key.reset(read(
      tls.key_pem, [](BIO* b) { return PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr); }));
  identity.ca.reset(
      read(tls.ca_pem, [](BIO* b) { return PEM_read_bio_X509(b, nullptr, nullptr, nullptr); }));
  return identity;
}

// Client certificates signed by `ca` verify from now on, and the handshake names it among the
// acceptable issuers. X509_STORE is locked internally; a CA added twice is refused harmlessly.
void TrustClientCa(SSL_CTX* context, X509* ca) {
  X509_STORE_add_cert(SSL_CTX_get_cert_store(context), ca);
  SSL_CTX_add_client_CA(context, ca);
  ERR_clear_error();
}

absl::StatusOr<std::shared_ptr<const TlsIdentity>> ParseIdentity(const ServingCertificates& tls) {
  auto identity = std::make_shared<TlsIdentity>(ParsePems(tls));
  std::string problem;
  if (identity->cert == nullptr) {
    problem = "the serving certificate is not a PEM certificate";
  } else if (identity->key == nullptr) {
    problem = "the serving key is not a PEM private key";
  } else if (identity->ca == nullptr) {
    problem = "the CA is not a PEM certificate";
  } else if (X509_check_private_key(identity->cert.get(), identity->key.get()) != 1) {
    problem = "the serving key does not match the serving certificate";
  }
  ERR_clear_error();
  if (!problem.empty()) return absl::InvalidArgumentError("resource API server: " + problem);
  return std::shared_ptr<const TlsIdentity>(std::move(identity));
}

void Reply(httplib::Response& response, int code, const Json& body) {
  response.status = code;
  response.set_content(body.dump(), kJsonMediaType);
}

void ReplyError(httplib::Response& response, const absl::Status& status) {
  Json object = ToStatusObject(status);
  Reply(response, object.value("code", 500), object);
}

// The resource ToTable prints `info` as: events.k8s.io's Events ("events.events.k8s.io") come in
// their own shape, printed with the core Event's columns.
std::string TableResource(const KindInfo& info) {
  return info.group == std::string_view(kEventsGroup) ? QualifiedResource(info) : info.resource;
}

// The answer's form of a stored v1 object: converted to the URL's version.
Json Outgoing(const Route& route, Json object) {
  return FromV1(route.kind, route.version, std::move(object));
}

// The list object of `list.items[begin, end)`; `continue_token` non-empty when more follow. A Table
// of them when the route asks for one.
Json ListObject(const Route& route, const ListResult& list, size_t begin, size_t end,
                const std::string& continue_token = "") {
  const KindInfo& info = InfoOf(route.kind, route.version);
  Json meta = {{"resourceVersion", std::to_string(list.resource_version)}};
  if (!continue_token.empty()) {
    meta["continue"] = continue_token;
    meta["remainingItemCount"] = list.items.size() - end;
  }
  std::vector<Json> objects;
  objects.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) objects.push_back(Outgoing(route, list.items[i]));
  if (route.table_version) {
    return ToTable(TableResource(info), objects, meta, *route.table_version,
                   {.include_object = route.include_object, .now = absl::Now()});
  }
  Json items = Json::array();
  for (Json& out : objects) {
    // The API server writes list items without their TypeMeta.
    out.erase("apiVersion");
    out.erase("kind");
    items.push_back(std::move(out));
  }
  return {{"kind", info.list_kind},
          {"apiVersion", ApiVersion(info, route.version)},
          {"metadata", std::move(meta)},
          {"items", std::move(items)}};
}

Json ListObject(const Route& route, const ListResult& list) {
  return ListObject(route, list, 0, list.items.size());
}

// Orders list keys as the store does: by namespace, then name.
std::pair<std::string, std::string> SplitListKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

}  // namespace

ResourceApiServer::ResourceApiServer(ObjectStore* store, ResourceApiServerOptions options)
    : store_(store),
      options_(std::move(options)),
      http_(std::make_unique<httplib::SSLServer>([this](SSL_CTX& context) {
        // TLS 1.2 at least, as kube-apiserver's default; the certificate is chosen per
        // handshake (SelectCertificate), so a renewed one is served without a restart. A client
        // certificate is asked for but not required (Go's VerifyClientCertIfGiven, what
        // kube-apiserver does): one that does not verify against the CA ends the handshake.
        SSL_CTX_set_min_proto_version(&context, TLS1_2_VERSION);
        SSL_CTX_set_options(&context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
        SSL_CTX_set_cert_cb(&context, &ResourceApiServer::SelectCertificate, this);
        SSL_CTX_set_verify(&context, SSL_VERIFY_PEER, nullptr);
        return true;
      })) {
  absl::StatusOr<std::shared_ptr<const TlsIdentity>> identity = ParseIdentity(options_.tls);
  {
    absl::MutexLock lock(&tls_mu_);
    if (identity.ok()) {
      identity_ = *identity;
    } else {
      identity_status_ = identity.status();
    }
  }
  if (identity.ok()) TrustClientCa(http_->ssl_context(), (*identity)->ca.get());
  const int threads = options_.threads;
  http_->new_task_queue = [threads] { return new ElasticThreadPool(threads); };
  // httplib's default sets SO_REUSEPORT, which would let a second process bind the same port and
  // take a share of the drivers' requests (and their bearer token). SO_REUSEADDR alone still
  // allows a quick restart over TIME_WAIT but makes a live port a bind error.
  http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Clients keep connections (client-go does): answers must not wait for delayed ACKs.
  http_->set_tcp_nodelay(true);
  // An idle kept connection holds a worker until this passes, and Stop() waits for the workers:
  // httplib's default (5 s) would make every shutdown with a connected driver take 5 s.
  http_->set_keep_alive_timeout(1);
  // httplib closes a kept connection after 5 requests by default, so a driver that GETs a claim
  // per NodePrepareResources paid a TLS handshake every fifth call (half the client's CPU in the
  // DRA admission); the API server sets no such limit.
  http_->set_keep_alive_max_count(std::numeric_limits<int>::max());
  auto handler = [this](const httplib::Request& request, httplib::Response& response) {
    Handle(request, response);
  };
  http_->Get(".*", handler);
  http_->Post(".*", handler);
  http_->Put(".*", handler);
  http_->Delete(".*", handler);
  http_->Patch(".*", handler);
}

ResourceApiServer::~ResourceApiServer() { Stop(); }

absl::Status ResourceApiServer::Start() {
  if (options_.token.empty()) {
    return absl::InvalidArgumentError("resource API server: a bearer token is required");
  }
  {
    absl::MutexLock lock(&tls_mu_);
    if (!identity_status_.ok()) return identity_status_;
  }
  if (!http_->is_valid()) {
    return absl::InternalError("resource API server: the TLS context could not be set up");
  }
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("resource API server: already started");
  }
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) port = 0;
  } else if (!http_->bind_to_port(options_.host, port)) {
    port = 0;
  }
  if (port == 0) {
    return absl::UnavailableError(
        absl::StrCat("resource API server: cannot listen on ", options_.host, ":", options_.port));
  }
  port_ = port;
  started_ = true;
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() only acts once the accept loop runs; wait for it so Stop never misses it.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!http_->is_running() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  KDP_LOG_INFO("Local resource API listening", "address",
               absl::StrCat("https://", options_.host, ":", port));
  return absl::OkStatus();
}

void ResourceApiServer::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) {
      stopped_ = true;
      return;
    }
    stopped_ = true;
    // Watches end cleanly first (their streams finish with the last chunk), then the listener.
    stopping_ = true;
    auto watches_ended = [this]()
                             ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_watches_ == 0; };
    mu_.AwaitWithTimeout(absl::Condition(&watches_ended), absl::Seconds(2));
    thread = std::move(thread_);
  }
  http_->stop();
  if (thread.joinable()) thread.join();
}

int ResourceApiServer::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

std::string ResourceApiServer::url() const {
  return absl::StrCat("https://", options_.host, ":", port());
}

absl::Status ResourceApiServer::SetServingCertificates(const ServingCertificates& tls) {
  absl::StatusOr<std::shared_ptr<const TlsIdentity>> identity = ParseIdentity(tls);
  if (!identity.ok()) return identity.status();
  TrustClientCa(http_->ssl_context(), (*identity)->ca.get());
  absl::MutexLock lock(&tls_mu_);
  identity_ = *std::move(identity);
  identity_status_ = absl::OkStatus();
  return absl::OkStatus();
}

std::shared_ptr<const TlsIdentity> ResourceApiServer::Identity() const {
  absl::MutexLock lock(&tls_mu_);
  return identity_;
}

int ResourceApiServer::SelectCertificate(SSL* ssl, void* server) {
  std::shared_ptr<const TlsIdentity> identity =
      static_cast<const ResourceApiServer*>(server)->Identity();
  if (identity == nullptr) return 0;  // fails the handshake
  // Both take their own reference: the identity may be replaced during the handshake.
  if (SSL_use_certificate(ssl, identity->cert.get()) != 1 ||
      SSL_use_PrivateKey(ssl, identity->key.get()) != 1) {
    return 0;
  }
  return 1;
}

bool ResourceApiServer::Authenticated(const httplib::Request& request) const {
  const std::string expected = "Bearer " + options_.token;
  const std::string given = request.get_header_value("Authorization");
  if (given.size() == expected.size() &&
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0) {
    return true;
  }
  // No (right) token: a client certificate the handshake verified against the CA.
  if (request.ssl == nullptr) return false;
  X509* peer = SSL_get1_peer_certificate(request.ssl);
  const bool verified = peer != nullptr && SSL_get_verify_result(request.ssl) == X509_V_OK;
  X509_free(peer);
  return verified;
}

void ResourceApiServer::ServeList(const Route& route, const ListWatchOptions& options,
                                  httplib::Response& response) {
  if (options.resource_version_number) {
    const int64_t wanted = *options.resource_version_number;
    if (options.resource_version_match == kResourceVersionMatchExact) {
      // The state at exactly `wanted` is the current one when nothing of the kind changed since.
      absl::StatusOr<std::vector<WatchEvent>> since = store_->EventsSince(wanted, route.kind);
      if (wanted > store_->ResourceVersion() || !since.ok() || !since->empty()) {
        return ReplyError(response,
                          ExpiredError(absl::StrCat("too old resource version: ", wanted, " (",
                                                    store_->ResourceVersion(), ")")));
      }
    } else if (store_->ResourceVersion() < wanted &&
               !store_->WaitForEvents(wanted - 1, options_.watch.future_resource_version_wait)) {
      // NotOlderThan (also the meaning of a bare resourceVersion) a version not reached yet.
      return ReplyError(response,
                        TimeoutError(absl::StrCat("Too large resource version: ", wanted,
                                                  ", current: ", store_->ResourceVersion()),
                                     1));
    }
  }
  ListResult list = store_->List(route.kind, route.namespace_, options.selectors);
  size_t begin = 0;
  if (!options.continue_token.empty()) {
    absl::StatusOr<ContinuePoint> point = DecodeContinueToken(options.continue_token);
    if (!point.ok()) return ReplyError(response, point.status());
    // The next page is consistent with the first only when nothing of the kind changed since
    // (the store keeps no older states); otherwise 410, and the client lists again.
    absl::StatusOr<std::vector<WatchEvent>> since =
        store_->EventsSince(point->resource_version, route.kind);
    if (!since.ok() || !since->empty()) {
      return ReplyError(
          response,
          ExpiredError("The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter."));
    }
    list.resource_version = point->resource_version;
    const auto last = SplitListKey(point->last_key);
    while (begin < list.items.size() && SplitListKey(ListKey(list.items[begin])) <= last) {
      ++begin;
    }
  }
  size_t end = list.items.size();
  // resourceVersion=0 is served from the watch cache, which ignores limit (client-go's
  // reflector asks limit=500&resourceVersion=0 and gets everything at once).
  if (options.limit > 0 && options.resource_version != "0" &&
      end - begin > static_cast<size_t>(options.limit)) {
    end = begin + static_cast<size_t>(options.limit);
    return Reply(
        response, 200,
        ListObject(route, list, begin, end,
                   EncodeContinueToken(list.resource_version, ListKey(list.items[end - 1]))));
  }
  return Reply(response, 200, ListObject(route, list, begin, end));
}

void ResourceApiServer::ServeWatch(const Route& route, ListWatchOptions options,
                                   httplib::Response& response) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      // What an API server's shutdown filter answers: client-go waits and retries.
      return ReplyError(
          response,
          TooManyRequestsError("The apiserver is shutting down, please try again later.", 1));
    }
    if (active_watches_ >= MaxWatches()) {
      // Each watch holds a worker thread; the rest must stay free for short requests (a
      // driver's claim GET during NodePrepareResources). client-go retries after the delay.
      return ReplyError(
          response,
          TooManyRequestsError(
              absl::StrCat("too many watches (", active_watches_, "), please try again later"), 1));
    }
    ++active_watches_;
  }
  WatchTarget target{.kind = route.kind, .version = route.version, .namespace_ = route.namespace_};
  if (route.table_version) {
    // kubectl get -w: each event's object is a one-row Table, the column definitions in the
    // first only (the API server's NoHeaders for the rest).
    auto first = std::make_shared<std::atomic<bool>>(true);
    target.transform = [resource = TableResource(InfoOf(route.kind, route.version)),
                        version = *route.table_version, include = route.include_object,
                        first](Json object) {
      Json meta = {{"resourceVersion", object["metadata"].value("resourceVersion", "")}};
      return ToTable(
          resource, {std::move(object)}, meta, version,
          {.include_object = include, .now = absl::Now(), .no_headers = !first->exchange(false)});
    };
  }
  auto stream =
      std::make_shared<WatchStream>(store_, std::move(target), std::move(options), options_.watch);
  if (absl::Status started = stream->Start(); !started.ok()) {
    EndWatch();
    return ReplyError(response, started);
  }
  response.status = 200;
  // Not plain application/json: httplib gzips that for clients that accept it (Go's HTTP client
  // always does) and holds compressed chunks back, so a watch would deliver nothing. client-go
  // reads the media type without its parameters.
  response.set_chunked_content_provider(
      kWatchContentType,
      [this, stream](size_t /*offset*/, httplib::DataSink& sink) {
        // Called again and again by the worker until done(); each call waits a little, so a
        // stopping server is noticed within that time.
        if (Stopping()) {
          sink.done();
          return true;
        }
        WatchStream::Output out = stream->Next(absl::Milliseconds(200));
        if (!out.data.empty() && !sink.write(out.data.data(), out.data.size())) return false;
        if (out.ended) sink.done();
        return true;
      },
      [this](bool /*success*/) { EndWatch(); });
}

int ResourceApiServer::MaxWatches() const {
  return options_.max_watches > 0 ? options_.max_watches : std::max(1, options_.threads - 8);
}

bool ResourceApiServer::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void ResourceApiServer::EndWatch() {
  absl::MutexLock lock(&mu_);
  --active_watches_;
}

int ResourceApiServer::active_watches() const {
  absl::MutexLock lock(&mu_);
  return active_watches_;
}

void ResourceApiServer::Handle(const httplib::Request& request, httplib::Response& response) {
  if (!Authenticated(request)) {
    Reply(response, 401, StatusObject(401, "Unauthorized", "Unauthorized"));
    return;
  }
  if (std::optional<OpenApiAnswer> openapi =
          ServeOpenApi(request.path, request.get_header_value("Accept"))) {
    if (request.method != "GET") {
      return ReplyError(response, absl::UnimplementedError("the server does not allow this "
                                                           "method on the requested resource"));
    }
    response.status = openapi->code;
    response.set_content(openapi->body, openapi->content_type.c_str());
    return;
  }
  Resolved resolved = Resolve(request.path, options_.kubernetes_version);
  if (resolved.document) {
    if (request.method != "GET") {
      ReplyError(response, absl::UnimplementedError("the server does not allow this method on "
                                                    "the requested resource"));
      return;
    }
    Reply(response, 200, *resolved.document);
    return;
  }
  if (!resolved.route) {
    ReplyError(response, UnknownResourceError());
    return;
  }
  Route& route = *resolved.route;
  const KindInfo& info = InfoOf(route.kind, route.version);
  if (route.log) {
    // kubectl logs: there is no container runtime, so no container has ever written a line.
    absl::StatusOr<Json> pod = store_->Get(route.kind, route.namespace_, route.name);
    if (!pod.ok()) return ReplyError(response, pod.status());
    return ReplyError(response, BadRequestError(absl::StrCat(
                                    "pod \"", route.name,
                                    "\" has no logs: kdp-manager runs no containers (its devices, "
                                    "environment and CDI device IDs are in kdpctl get pods)")));
  }
  const std::string& method = request.method;
  const bool collection = route.name.empty();

  if (method == "GET") {
    std::map<std::string, std::string> params = QueryParams(request);
    route.table_version = TableVersionFromAccept(request.get_header_value("Accept"));
    if (route.table_version) {
      absl::StatusOr<TableOptions::IncludeObject> include =
          ParseIncludeObject(params.contains("includeObject") ? params["includeObject"] : "");
      if (!include.ok()) return ReplyError(response, include.status());
      route.include_object = *include;
    }
    const auto watch = params.find("watch");
    if (!collection && (watch == params.end() || !QueryBool(watch->second))) {
      absl::StatusOr<Json> object = store_->Get(route.kind, route.namespace_, route.name);
      if (!object.ok()) return ReplyError(response, object.status());
      Json out = Outgoing(route, *std::move(object));
      if (route.table_version) {
        // The API server's single-object Table carries the object's resourceVersion.
        Json meta = {{"resourceVersion", out["metadata"].value("resourceVersion", "")}};
        out = ToTable(TableResource(info), {std::move(out)}, meta, *route.table_version,
                      {.include_object = route.include_object, .now = absl::Now()});
      }
      return Reply(response, 200, out);
    }
    if (!collection) {
      // GET <object>?watch=true: the API server watches the collection with the name as a
      // field selector.
      std::string& selector = params["fieldSelector"];
      selector = absl::StrCat(selector, selector.empty() ? "" : ",", "metadata.name=", route.name);
    }
    absl::StatusOr<ListWatchOptions> options = ParseListWatchOptions(params, info, route.version);
    if (!options.ok()) return ReplyError(response, options.status());
    if (options->watch) return ServeWatch(route, *std::move(options), response);
    return ServeList(route, *options, response);
  }
  // The Node and the Pods' status are the manager's to write (node status, admission): read-only
  // here. Pods are created and deleted through the manager's admission (options_.pods).
  if (route.kind == Kind::kNode ||
      (route.kind == Kind::kPod && (options_.pods == nullptr || route.status))) {
    return ReplyError(response, MethodNotAllowedError(info, absl::AsciiStrToLower(method)));
  }
  if (route.kind == Kind::kPod && method == "POST") {
    if (!collection || route.namespace_.empty()) {
      return ReplyError(response, MethodNotAllowedError(info, "create"));
    }
    absl::StatusOr<Json> body = Incoming(request, route);
    if (!body.ok()) return ReplyError(response, body.status());
    if (absl::Status fields = CheckFields(request, route, *body, response); !fields.ok()) {
      return ReplyError(response, fields);
    }
    absl::StatusOr<Json> created = options_.pods->CreatePod(*std::move(body));
    if (!created.ok()) return ReplyError(response, created.status());
    return Reply(response, 201, Outgoing(route, *std::move(created)));
  }
  if (route.kind == Kind::kPod && method == "DELETE") {
    if (collection) return ReplyError(response, MethodNotAllowedError(info, "deletecollection"));
    absl::StatusOr<Json> deleted =
        options_.pods->DeletePod(route.namespace_, route.name, DeletePreconditions(request).uid);
    if (!deleted.ok()) return ReplyError(response, deleted.status());
    return Reply(response, 200, Outgoing(route, *std::move(deleted)));
  }

  if (method == "POST") {
    if (!collection || (info.namespaced && route.namespace_.empty())) {
      return ReplyError(response, MethodNotAllowedError(info, "create"));
    }
    absl::StatusOr<Json> body = Incoming(request, route);
    if (!body.ok()) return ReplyError(response, body.status());
    if (absl::Status fields = CheckFields(request, route, *body, response); !fields.ok()) {
      return ReplyError(response, fields);
    }
    if (route.kind == Kind::kEvent) {
      // Which rules apply depends on the API the event came through (event_validation.h).
      if (absl::Status valid = ValidateEventCreate(*body, route.version); !valid.ok()) {
        return ReplyError(response, valid);
      }
    }
    absl::StatusOr<Json> created = store_->Create(route.kind, *std::move(body));
    if (!created.ok()) return ReplyError(response, created.status());
    return Reply(response, 201, Outgoing(route, *std::move(created)));
  }
  if (method == "PUT") {
    if (collection) return ReplyError(response, MethodNotAllowedError(info, "update"));
    absl::StatusOr<Json> body = Incoming(request, route);
    if (!body.ok()) return ReplyError(response, body.status());
    if (absl::Status fields = CheckFields(request, route, *body, response); !fields.ok()) {
      return ReplyError(response, fields);
    }
    const Json& name = (*body)["metadata"]["name"];
    if (name != route.name) {
      return ReplyError(
          response, BadRequestError(absl::StrCat(
                        "the name of the object (", name.is_string() ? name.get<std::string>() : "",
                        ") does not match the name on the URL (", route.name, ")")));
    }
    if (route.kind == Kind::kPod) {
      absl::StatusOr<Json> stored = store_->Get(route.kind, route.namespace_, route.name);
      if (!stored.ok()) return ReplyError(response, stored.status());
      if (absl::Status allowed = CheckPodUpdate(*stored, *body); !allowed.ok()) {
        return ReplyError(response, allowed);
      }
    }
    absl::StatusOr<Json> updated = route.status ? store_->UpdateStatus(route.kind, *std::move(body))
                                                : store_->Update(route.kind, *std::move(body));
    if (!updated.ok()) return ReplyError(response, updated.status());
    return Reply(response, 200, Outgoing(route, *std::move(updated)));
  }
  if (method == "DELETE") {
    if (route.status) return ReplyError(response, MethodNotAllowedError(info, "delete"));
    if (collection) {
      absl::StatusOr<ListWatchOptions> options =
          ParseListWatchOptions(QueryParams(request), info, route.version);
      if (!options.ok()) return ReplyError(response, options.status());
      return Reply(response, 200,
                   ListObject(route, store_->DeleteCollection(route.kind, route.namespace_,
                                                              options->selectors)));
    }
    absl::StatusOr<DeleteResult> deleted =
        store_->Delete(route.kind, route.namespace_, route.name, DeletePreconditions(request));
    if (!deleted.ok()) return ReplyError(response, deleted.status());
    if (!deleted->deleted) return Reply(response, 200, Outgoing(route, deleted->object));
    // genericregistry.Store.Delete: a Status naming what went, so the client knows it is gone.
    const Json& meta = deleted->object["metadata"];
    return Reply(response, 200,
                 {{"kind", "Status"},
                  {"apiVersion", "v1"},
                  {"metadata", Json::object()},
                  {"status", "Success"},
                  {"details",
                   {{"name", meta.value("name", "")},
                    {"group", info.group},
                    {"kind", info.resource},
                    {"uid", meta.value("uid", "")}}}});
  }
  if (method == "PATCH") {
    if (collection) return ReplyError(response, MethodNotAllowedError(info, "patch"));
    return ServePatch(request, route, response);
  }
  ReplyError(response, MethodNotAllowedError(info, method));
}

void ResourceApiServer::ServePatch(const httplib::Request& request, const Route& route,
                                   httplib::Response& response) {
  const KindInfo& info = InfoOf(route.kind, route.version);
  std::string content_type = request.get_header_value("Content-Type");
  std::optional<PatchType> type = PatchTypeFromContentType(content_type);
  if (!type) {
    return ReplyError(response,
                      UnsupportedMediaTypeError(content_type, UnsupportedPatchMediaTypeMessage()));
  }
  if (*type == PatchType::kApplyPatch) {
    // kubectl prints "Server-side apply not available on the server: (<message>)" for a 415.
    return ReplyError(response,
                      UnsupportedMediaTypeError(
                          content_type,
                          "server-side apply is not supported by kdp-manager's local API; use "
                          "kubectl apply without --server-side (client-side apply)"));
  }
  const StrategicMergeSchema& schema = route.kind == Kind::kPod             ? PodSchema()
                                       : route.kind == Kind::kNamespace     ? NamespaceSchema()
                                       : route.kind == Kind::kEvent         ? EventSchema()
                                       : route.kind == Kind::kResourceClaim ? ResourceClaimSchema()
                                                                            : GenericSchema();
  // The API server applies a patch to the latest object and retries when a write raced it.
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Json> stored = store_->Get(route.kind, route.namespace_, route.name);
    if (!stored.ok()) return ReplyError(response, stored.status());
    const Json current = Outgoing(route, *stored);
    // ApplyPatch's errors are the API server's: 400 for a body that does not decode, 422 for a
    // JSON patch that decodes but does not apply, 413 for too many operations.
    absl::StatusOr<Json> patched = ApplyPatch(current, request.body, *type, schema);
    if (!patched.ok()) return ReplyError(response, patched.status());
    if (!patched->is_object() || patched->value("kind", "") != info.name ||
        patched->value("apiVersion", "") != ApiVersion(info, route.version)) {
      return ReplyError(response,
                        BadRequestError("a patch may not change the object's kind or apiVersion"));
    }
    Json& meta = (*patched)["metadata"];
    if (!meta.is_object() || meta.value("name", "") != route.name ||
        (info.namespaced && meta.value("namespace", "") != route.namespace_)) {
      return ReplyError(response,
                        BadRequestError("a patch may not change the object's name or namespace"));
    }
    if (absl::Status fields = CheckFields(request, route, *patched, response); !fields.ok()) {
      return ReplyError(response, fields);
    }
    // A resourceVersion the patch itself set is a precondition; otherwise the one read.
    const bool precondition =
        meta.value("resourceVersion", "") != current["metadata"].value("resourceVersion", "");
    Json v1 = ToV1(route.kind, route.version, *std::move(patched));
    if (route.kind == Kind::kPod) {
      if (absl::Status allowed = CheckPodUpdate(*stored, v1); !allowed.ok()) {
        return ReplyError(response, allowed);
      }
    }
    absl::StatusOr<Json> updated = route.status ? store_->UpdateStatus(route.kind, std::move(v1))
                                                : store_->Update(route.kind, std::move(v1));
    if (absl::IsAborted(updated.status()) && !precondition && attempt < 5) continue;
    if (!updated.ok()) return ReplyError(response, updated.status());
    return Reply(response, 200, Outgoing(route, *std::move(updated)));
  }
}

}  // namespace kdp::manager::resourceapi
