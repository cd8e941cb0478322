// KubeClient over cpp-httplib: one connection per request (no shared connection state, hence
// thread-safe), TLS verified by OpenSSL during the handshake, errors mapped the way client-go's
// k8s.io/apimachinery/pkg/api/errors reasons are.
//
// TLS is configured on the SSL_CTX directly instead of through httplib's own verification:
// httplib 0.11 adds the system trust store to any CA store it is given (so a kubeconfig's CA
// would not be the only trust anchor, unlike client-go) and cannot verify against a name other
// than the one it connects to (tls-server-name). With SSL_VERIFY_PEER and an
// X509_VERIFY_PARAM host or IP, OpenSSL fails the handshake itself on a wrong CA or name.
#include "sdk/src/kube/kube_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "httplib.h"

namespace kdp::internal {
namespace {

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyDeleter>;
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

// The OpenSSL errors queued on this thread, as text, and the queue cleared.
std::string DrainOpenSslErrors() {
  std::string text;
  while (unsigned long error = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(error, buffer, sizeof(buffer));
    if (!text.empty()) text += "; ";
    text += buffer;
  }
  return text;
}

// Every certificate in `pem`; INVALID_ARGUMENT when there is none or one is malformed.
absl::StatusOr<std::vector<X509Ptr>> ParseCertificates(const std::string& pem,
                                                       const std::string& what) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> certs;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs.push_back(std::move(cert));
  }
  // The loop ends with "no start line" at the end of the data; anything else is a real error.
  unsigned long last = ERR_peek_last_error();
  bool clean_end = ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  std::string errors = DrainOpenSslErrors();
  if (certs.empty() || (!clean_end && !errors.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no valid PEM certificate", errors.empty() ? "" : ": ", errors));
  }
  return certs;
}

absl::StatusOr<KeyPtr> ParsePrivateKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("client key: no valid PEM private key: ", DrainOpenSslErrors()));
  }
  return key;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// "scheme://host[:port][/prefix]"; a URL without a scheme is https, as client-go assumes for a
// host with TLS settings.
struct ServerUrl {
  bool https = true;
  std::string host;  // without IPv6 brackets
  int port = 443;
  std::string authority;  // host[:port] as written, for the Host header
  std::string prefix;     // path prefix without trailing '/', e.g. "/k8s/clusters/c-1"
};

absl::StatusOr<ServerUrl> ParseServerUrl(const std::string& server) {
  auto invalid = [&server](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat("API server URL \"", server, "\": ", rule));
  };
  ServerUrl url;
  absl::string_view rest = server;
  if (absl::ConsumePrefix(&rest, "https://")) {
    url.https = true;
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    url.https = false;
  } else if (rest.find("://") != absl::string_view::npos) {
    return invalid("only http and https are supported");
  }
  url.port = url.https ? 443 : 80;
  size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  if (slash != absl::string_view::npos) {
    url.prefix = std::string(rest.substr(slash));
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  if (authority.empty()) return invalid("no host");
  url.authority = std::string(authority);
  absl::string_view port_text;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == absl::string_view::npos) return invalid("unterminated IPv6 address");
    url.host = std::string(authority.substr(1, close - 1));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return invalid("unexpected text after the IPv6 address");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (url.host.empty()) return invalid("no host");
  if (!port_text.empty() || authority.back() == ':') {
    if (!absl::SimpleAtoi(port_text, &url.port) || url.port <= 0 || url.port > 65535) {
      return invalid("invalid port");
    }
  }
  return url;
}

// A numeric address for `host` (httplib's host-to-address map needs one).
absl::StatusOr<std::string> ResolveHost(const std::string& host) {
  if (IsIpAddress(host)) return host;
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    return absl::UnavailableError(absl::StrCat("resolve ", host, ": ", gai_strerror(rc)));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      result->ai_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(result->ai_addr)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr);
  inet_ntop(result->ai_family, address, text, sizeof(text));
  freeaddrinfo(result);
  return std::string(text);
}

// client-go's apierrors reason → canonical code, with the HTTP code when there is no reason.
// Blocks SIGPIPE in the calling thread for its scope and discards one raised meanwhile: OpenSSL
// writes with write(2), so a request on a kept connection the API server has closed would raise
// SIGPIPE and kill a process that never asked for SIGPIPE handling (a library must not change
// the process's dispositions; this is the per-thread dance libraries such as libcurl do). The
// write then fails with EPIPE and the request is retried on a new connection or reported.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigset_t pipe = PipeSet();
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~ScopedSigpipeBlock() {
    if (!was_pending_) {
      sigset_t pipe = PipeSet();
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero = {0, 0};
        sigtimedwait(&pipe, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  static sigset_t PipeSet() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    return set;
  }
  sigset_t old_;
  bool was_pending_ = false;
};

absl::StatusCode CodeFor(int http_status, const std::string& reason, const std::string& method) {
  switch (http_status) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      if (reason == "AlreadyExists") return absl::StatusCode::kAlreadyExists;
      if (reason == "Conflict") return absl::StatusCode::kAborted;
      // NewGenericServerResponse: a 409 on POST is AlreadyExists, otherwise Conflict.
      return method == "POST" ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kAborted;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kUnknown;
  }
}

class HttpKubeClient final : public KubeClient {
 public:
  HttpKubeClient(KubeConfig config, ServerUrl url, std::vector<X509Ptr> ca, X509Ptr client_cert,
                 KeyPtr client_key)
      : config_(std::move(config)),
        url_(std::move(url)),
        ca_(std::move(ca)),
        client_cert_(std::move(client_cert)),
        client_key_(std::move(client_key)),
        token_(config_.bearer_token) {}

  HttpKubeClient(const HttpKubeClient&) = delete;
  HttpKubeClient& operator=(const HttpKubeClient&) = delete;

  absl::StatusOr<nlohmann::json> Get(const std::string& path) override {
    return Send("GET", path, nullptr);
  }
  absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                      const nlohmann::json& body) override {
    return Send("POST", path, &body);
  }
  absl::StatusOr<nlohmann::json> Put(const std::string& path, const nlohmann::json& body) override {
    return Send("PUT", path, &body);
  }
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) override {
    return Send("DELETE", path, nullptr);
  }

 private:
  // The bearer token, re-read from bearer_token_file at most once a minute (client-go's
  // cachingTokenSource); a failed read keeps the last token.
  std::string Token() ABSL_LOCKS_EXCLUDED(mu_) {
    if (config_.bearer_token_file.empty()) return config_.bearer_token;
    {
      absl::MutexLock lock(&mu_);
      if (absl::Now() - token_read_ < absl::Minutes(1)) return token_;
    }
    absl::StatusOr<std::string> content =
        ReadFile(config_.bearer_token_file, kMaxKubeConfigFileBytes);  // no lock held
    absl::MutexLock lock(&mu_);
    token_read_ = absl::Now();
    if (content.ok()) {
      token_ = std::string(absl::StripAsciiWhitespace(*content));
    } else {
      KDP_LOG_WARNING("Keeping the previous API token", "path", config_.bearer_token_file, "err",
                      content.status().ToString());
    }
    return token_;
  }

  // NewClient with the request settings: deadlines, keep-alive, no redirects.
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewConfiguredClient() {
    KDP_ASSIGN_OR_RETURN(std::unique_ptr<httplib::ClientImpl> client, NewClient());
    const auto timeout = std::chrono::microseconds(absl::ToInt64Microseconds(config_.timeout));
    client->set_connection_timeout(timeout);
    client->set_read_timeout(timeout);
    client->set_write_timeout(timeout);
    client->set_keep_alive(true);
    // Without it a kept connection waits out delayed ACKs (40 ms) on every request.
    client->set_tcp_nodelay(true);
    client->set_follow_location(false);
    return client;
  }

  // A fresh client for one request.
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewClient() {
    if (!url_.https) return std::make_unique<httplib::ClientImpl>(url_.host, url_.port);
    // With tls-server-name, connect to the server's address but send SNI and verify the
    // certificate for the configured name.
    const std::string& name = config_.tls_server_name.empty() ? url_.host : config_.tls_server_name;
    std::unique_ptr<httplib::SSLClient> client =
        client_cert_ != nullptr ? std::make_unique<httplib::SSLClient>(
                                      name, url_.port, client_cert_.get(), client_key_.get())
                                : std::make_unique<httplib::SSLClient>(name, url_.port);
    SSL_CTX* ctx = client->ssl_context();
    if (ctx == nullptr || !client->is_valid()) {
      return absl::InternalError(
          absl::StrCat("TLS client setup for ", config_.server, ": ", DrainOpenSslErrors()));
    }
    if (name != url_.host) {
      KDP_ASSIGN_OR_RETURN(std::string address, ResolveHost(url_.host));
      client->set_hostname_addr_map({{name, address}});
    }
    client->enable_server_certificate_verification(false);  // done by OpenSSL below
    if (config_.insecure_skip_tls_verify) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      return client;
    }
    if (ca_.empty()) {
      SSL_CTX_set_default_verify_paths(ctx);
    } else {
      X509_STORE* store = X509_STORE_new();
      for (const X509Ptr& cert : ca_) X509_STORE_add_cert(store, cert.get());
      SSL_CTX_set_cert_store(ctx, store);  // takes ownership
    }
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    int ok = IsIpAddress(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                               : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (ok != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot verify the API server certificate for \"", name, "\""));
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    return client;
  }

  absl::StatusOr<nlohmann::json> Send(const std::string& method, const std::string& path,
                                      const nlohmann::json* body) {
    const std::string what = absl::StrCat(method, " ", path);
    // A connection kept from an earlier request when there is one (a new TCP, and for HTTPS TLS,
    // handshake costs about 0.4 ms on loopback: each NodePrepareResources GETs its claims).
    // A POST, which must not be sent twice, never takes a kept connection that the server may
    // have closed meanwhile (see below): it costs one handshake, and POSTs are rare.
    std::unique_ptr<httplib::ClientImpl> client = method == "POST" ? nullptr : TakeIdle();
    const bool reused = client != nullptr;
    if (client == nullptr) {
      KDP_ASSIGN_OR_RETURN(client, NewConfiguredClient());
    }
    if (std::string token = Token(); !token.empty()) client->set_bearer_token_auth(token);
    httplib::Headers headers = {
        {"Accept", "application/json"}, {"Host", url_.authority}, {"User-Agent", "kdp-sdk"}};
    const std::string full_path = url_.prefix + path;
    std::string payload = body != nullptr ? body->dump() : "";
    auto send = [&](httplib::ClientImpl& c) {
      ERR_clear_error();
      const ScopedSigpipeBlock no_sigpipe;
      return method == "GET"    ? c.Get(full_path, headers)
             : method == "POST" ? c.Post(full_path, headers, payload, "application/json")
             : method == "PUT"  ? c.Put(full_path, headers, payload, "application/json")
                                : c.Delete(full_path, headers);
    };
    httplib::Result result = send(*client);
    if (!result && reused) {
      // The server closed the kept connection while it was idle (over TLS its close_notify reads
      // as data, so httplib's liveness check passes). An idempotent request is sent once more on
      // a new connection, as Go's transport retries one that failed on a reused connection.
      DrainOpenSslErrors();
      KDP_ASSIGN_OR_RETURN(client, NewConfiguredClient());
      if (std::string token = Token(); !token.empty()) client->set_bearer_token_auth(token);
      result = send(*client);
    }
    if (!result) {
      std::string tls = DrainOpenSslErrors();
      return absl::UnavailableError(absl::StrCat(what, ": ", config_.server, ": ",
                                                 httplib::to_string(result.error()),
                                                 tls.empty() ? "" : ": ", tls));
    }
    const int status = result->status;
    // The connection answered: it may serve the next request (httplib reconnects by itself when
    // the server closed it meanwhile).
    GiveBackIdle(std::move(client));
    nlohmann::json json = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (status >= 200 && status < 300) {
      if (result->body.empty()) return nlohmann::json::object();
      if (json.is_discarded()) {
        return absl::UnknownError(absl::StrCat(what, ": HTTP ", status, ": the body is not JSON"));
      }
      return json;
    }
    std::string message;
    std::string reason;
    if (!json.is_discarded() && json.is_object() && json.value("kind", "") == "Status") {
      message = json.value("message", "");
      reason = json.value("reason", "");
    } else {
      message = result->body.substr(0, 512);
    }
    return absl::Status(CodeFor(status, reason, method),
                        absl::StrCat(what, ": HTTP ", status, ": ", message));
  }

  const KubeConfig config_;
  const ServerUrl url_;
  const std::vector<X509Ptr> ca_;
  const X509Ptr client_cert_;
  const KeyPtr client_key_;
  std::unique_ptr<httplib::ClientImpl> TakeIdle() ABSL_LOCKS_EXCLUDED(idle_mu_) {
    absl::MutexLock lock(&idle_mu_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<httplib::ClientImpl> client = std::move(idle_.back());
    idle_.pop_back();
    return client;
  }
  void GiveBackIdle(std::unique_ptr<httplib::ClientImpl> client) ABSL_LOCKS_EXCLUDED(idle_mu_) {
    absl::MutexLock lock(&idle_mu_);
    if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(client));
  }

  // Idle keep-alive connections; each is used by one request at a time.
  static constexpr std::size_t kMaxIdleConnections = 4;

  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  absl::Time token_read_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Mutex idle_mu_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_ ABSL_GUARDED_BY(idle_mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(KubeConfig config) {
  KDP_ASSIGN_OR_RETURN(ServerUrl url, ParseServerUrl(config.server));
  std::vector<X509Ptr> ca;
  X509Ptr cert;
  KeyPtr key;
  if (url.https) {
    if (!config.certificate_authority_pem.empty()) {
      KDP_ASSIGN_OR_RETURN(
          ca, ParseCertificates(config.certificate_authority_pem, "certificate authority"));
    }
    if (config.client_certificate_pem.empty() != config.client_key_pem.empty()) {
      return absl::InvalidArgumentError("client certificate and client key must be given together");
    }
    if (!config.client_certificate_pem.empty()) {
      KDP_ASSIGN_OR_RETURN(std::vector<X509Ptr> certs,
                           ParseCertificates(config.client_certificate_pem, "client certificate"));
      cert = std::move(certs.front());
      KDP_ASSIGN_OR_RETURN(key, ParsePrivateKey(config.client_key_pem));
      if (X509_check_private_key(cert.get(), key.get()) != 1) {
        DrainOpenSslErrors();
        return absl::InvalidArgumentError("the client key does not match the client certificate");
      }
    }
  } else if (!config.client_certificate_pem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("API server URL \"", config.server, "\": a client certificate needs https"));
  }
  return std::unique_ptr<KubeClient>(std::make_unique<HttpKubeClient>(
      std::move(config), std::move(url), std::move(ca), std::move(cert), std::move(key)));
}

}  // namespace kdp::internal
