// The REST half of GoStyleDriver (go_style_driver.h): the HTTP client a Go DRA driver's client-go
// clientset is, reduced to what the kubelet-plugin helper sends, with every call recorded for the
// test to assert on. Request headers as client-go writes them (seen from real Go DRA drivers):
// `Authorization: Bearer <token>`, `User-Agent: <binary>/v0.0.0 (linux/amd64) kubernetes/$Format`,
// `Accept: application/vnd.kubernetes.protobuf,application/json` and, as Go's http.Transport adds
// it, `Accept-Encoding: gzip`. Unary requests share one keep-alive connection (client-go's pooled
// transport); a watch holds a connection of its own until it ends or CancelStream() is called.
//
// cpp-httplib is compiled here with the definitions of its pkg-config file (the integration
// targets do not get them: kdp_sdk links PkgConfig::HTTPLIB privately), so the class layouts match
// Debian's shared library; the library itself reaches the link line through kdp_sdk.
//
// Thread-safety: thread-safe. Unary requests from several threads are serialized on the one
// connection; Stream runs on one thread at a time and CancelStream may be called from any other.
#ifndef KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_HTTP_H_
#define KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_HTTP_H_

#if !defined(CPPHTTPLIB_OPENSSL_SUPPORT)
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#if !defined(CPPHTTPLIB_ZLIB_SUPPORT)
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#if !defined(CPPHTTPLIB_BROTLI_SUPPORT)
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/testing/local_servers.h"

namespace kdp::testing {

inline constexpr char kKubernetesProtobuf[] = "application/vnd.kubernetes.protobuf";
inline constexpr char kGoAccept[] = "application/vnd.kubernetes.protobuf,application/json";

// One request the driver made, as the server saw it.
struct ApiCall {
  std::string method = {};        // "GET", "POST", "PUT"
  std::string path = {};          // with the query, as sent
  std::string content_type = {};  // the request's Content-Type; "" without a body
  std::string accept = {};
  std::string user_agent = {};
  int status = 0;                              // the answer's HTTP status; 0 when none came
  std::string response_content_type = {};      // the answer's Content-Type
  std::string response_content_encoding = {};  // the answer's Content-Encoding ("gzip")
  std::string response = {};                   // the answer's body (for a watch: only when not 200)
  absl::Time at = absl::InfinitePast();
};

// What a request got back: `status` 0 and `error` set when no answer came (connection refused,
// cancelled), otherwise the HTTP status and the body (JSON parsed into `json` when it is JSON).
struct ApiResponse {
  int status = 0;
  std::string body = {};
  nlohmann::json json = nullptr;
  std::string error = {};
};

class GoRestClient {
 public:
  struct Options {
    std::string server = {};  // "https://127.0.0.1:<port>"
    std::string token = {};
    // The kubeconfig's certificate-authority-data (PEM): the server is verified against it.
    std::string ca_pem = {};
    std::string user_agent = "go-style-kubelet-plugin/v0.0.0 (linux/amd64) kubernetes/$Format";
    // Sent as Go's http.Transport sends it unless compression is disabled; "" sends none.
    std::string accept_encoding = "gzip";
  };

  explicit GoRestClient(Options options)
      : options_(std::move(options)), unary_(options_.server), stream_(options_.server) {
    // Go ignores SIGPIPE on sockets; OpenSSL writes with write(2), which raises it when the
    // server closed a kept connection.
    ::signal(SIGPIPE, SIG_IGN);
    // As client-go's transport: the kubeconfig's CA, the server's name (an IP SAN) checked.
    for (httplib::Client* client : {&unary_, &stream_}) {
      client->enable_server_certificate_verification(true);
      client->set_ca_cert_store(CaStore(options_.ca_pem));
    }
    unary_.set_keep_alive(true);
    unary_.set_connection_timeout(5, 0);
    unary_.set_read_timeout(30, 0);
    // A watch is idle between events (the server sends a newline every few seconds); client-go
    // sets no read deadline on it, only the request's `timeout`.
    stream_.set_connection_timeout(5, 0);
    stream_.set_read_timeout(120, 0);
  }
  GoRestClient(const GoRestClient&) = delete;
  GoRestClient& operator=(const GoRestClient&) = delete;

  // A unary request; `content_type` only with a body.
  ApiResponse Do(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& content_type = "") ABSL_LOCKS_EXCLUDED(unary_mu_, calls_mu_) {
    ApiCall call = NewCall(method, path, body.empty() ? "" : content_type);
    ApiResponse response;
    {
      absl::MutexLock lock(&unary_mu_);
      auto send = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(unary_mu_) {
        return method == "POST"     ? unary_.Post(path, Headers(), body, content_type)
               : method == "PUT"    ? unary_.Put(path, Headers(), body, content_type)
               : method == "DELETE" ? unary_.Delete(path, Headers())
                                    : unary_.Get(path, Headers());
      };
      // Go's transport notices a kept connection the server closed (its read loop sees the EOF)
      // and never sends on it; httplib's TLS client cannot tell (the close_notify reads as data).
      // So a POST, which must not be sent twice, goes on a new connection, and an idempotent
      // request that failed on the kept one is sent once more on a new one, as Go retries it.
      if (method == "POST") unary_.stop();
      httplib::Result result = send();
      if (!result && method != "POST") result = send();
      if (result) {
        response.status = result->status;
        response.body = result->body;
        call.response_content_type = result->get_header_value("Content-Type");
        call.response_content_encoding = result->get_header_value("Content-Encoding");
      } else {
        response.error = httplib::to_string(result.error());
      }
    }
    response.json = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    call.status = response.status;
    call.response = response.body;
    Record(std::move(call));
    return response;
  }

  // A streaming GET (a watch): `on_data` gets the body's bytes as they arrive (decompressed)
  // when the answer is 200 and returns false to end the stream. Returns when the stream ended
  // (the server finished it, the connection broke, CancelStream, or on_data returned false);
  // for any other status the whole body is in the result.
  ApiResponse Stream(const std::string& path, const std::function<bool(std::string_view)>& on_data)
      ABSL_LOCKS_EXCLUDED(calls_mu_) {
    ApiCall call = NewCall("GET", path, "");
    ApiResponse response;
    size_t index = 0;
    bool ok_status = false;
    httplib::Result result = stream_.Get(
        path, Headers(),
        [&](const httplib::Response& head) {
          response.status = head.status;
          ok_status = head.status == 200;
          call.status = head.status;
          call.response_content_type = head.get_header_value("Content-Type");
          call.response_content_encoding = head.get_header_value("Content-Encoding");
          index = Record(call);  // recorded when the answer starts, in request order
          return !cancelled();
        },
        [&](const char* data, size_t size) {
          if (!ok_status) {
            response.body.append(data, size);
            return true;
          }
          return !cancelled() && on_data(std::string_view(data, size));
        });
    if (!result && response.status == 0) {
      response.error = httplib::to_string(result.error());
      Record(std::move(call));
    } else if (!ok_status) {
      response.json = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
      absl::MutexLock lock(&calls_mu_);
      calls_[index].response = response.body;
    }
    return response;
  }

  // Ends the stream in progress, now and whenever one starts later (the watch thread's stop).
  void CancelStream() ABSL_LOCKS_EXCLUDED(calls_mu_) {
    {
      absl::MutexLock lock(&calls_mu_);
      cancelled_ = true;
    }
    // httplib's only thread-safe way to interrupt a request: shut the socket down.
    stream_.stop();
  }
  bool cancelled() const ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    return cancelled_;
  }

  std::vector<ApiCall> calls() const ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    return calls_;
  }

 private:
  // A new store holding the PEM certificate `pem` (httplib takes ownership).
  static X509_STORE* CaStore(const std::string& pem) {
    X509_STORE* store = X509_STORE_new();
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (ca != nullptr) X509_STORE_add_cert(store, ca);
    X509_free(ca);
    return store;
  }

  httplib::Headers Headers() const {
    httplib::Headers headers = {{"Authorization", "Bearer " + options_.token},
                                {"User-Agent", options_.user_agent},
                                {"Accept", kGoAccept}};
    if (!options_.accept_encoding.empty()) {
      headers.emplace("Accept-Encoding", options_.accept_encoding);
    }
    return headers;
  }

  ApiCall NewCall(const std::string& method, const std::string& path,
                  const std::string& content_type) const {
    return ApiCall{.method = method,
                   .path = path,
                   .content_type = content_type,
                   .accept = kGoAccept,
                   .user_agent = options_.user_agent,
                   .at = absl::Now()};
  }

  size_t Record(ApiCall call) ABSL_LOCKS_EXCLUDED(calls_mu_) {
    absl::MutexLock lock(&calls_mu_);
    calls_.push_back(std::move(call));
    return calls_.size() - 1;
  }

  const Options options_;
  absl::Mutex unary_mu_;
  httplib::Client unary_ ABSL_GUARDED_BY(unary_mu_);
  httplib::Client stream_;  // used by the one Stream caller; stop() is thread-safe
  mutable absl::Mutex calls_mu_;
  std::vector<ApiCall> calls_ ABSL_GUARDED_BY(calls_mu_);
  bool cancelled_ ABSL_GUARDED_BY(calls_mu_) = false;
};

// Go's url.QueryEscape of a query value ("spec.driver=a,spec.nodeName=b" →
// "spec.driver%3Da%2Cspec.nodeName%3Db").
inline std::string GoQueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Go's time.Duration.String() for whole seconds: "8m37s", "45s", "1h0m5s".
inline std::string GoDurationString(int64_t seconds) {
  std::string out;
  if (seconds >= 3600) absl::StrAppend(&out, seconds / 3600, "h");
  if (seconds >= 60) absl::StrAppend(&out, (seconds % 3600) / 60, "m");
  absl::StrAppend(&out, seconds % 60, "s");
  return out;
}

}  // namespace kdp::testing

#endif  // KDP_TESTS_INTEGRATION_GO_STYLE_DRIVER_HTTP_H_
