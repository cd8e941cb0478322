#include "manager/src/resourceapi/server.h"

#include <openssl/crypto.h>
#include <sys/socket.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "httplib.h"
#include "manager/src/resourceapi/api_errors.h"
#include "manager/src/resourceapi/conversion.h"
#include "manager/src/resourceapi/discovery.h"
#include "manager/src/resourceapi/protobuf_codec.h"
#include "manager/src/resourceapi/request_options.h"
#include "manager/src/resourceapi/selectors.h"
#include "manager/src/resourceapi/watch.h"

namespace kdp::manager::resourceapi {

// A request for an object or a collection, resolved from the URL.
struct Route {
  Kind kind = Kind::kResourceSlice;
  std::string version;     // "v1", "v1beta1"
  std::string namespace_;  // from /namespaces/<ns>/; empty otherwise
  std::string name;        // empty: the collection
  bool status = false;     // the /status subresource
};

namespace {

using Json = nlohmann::json;

constexpr char kJson[] = "application/json";
constexpr char kWatchContentType[] = "application/json;stream=watch";

// What a path names: a discovery document, an object route, or nothing (404).
struct Resolved {
  std::optional<Json> document;
  std::optional<Route> route;
};

Resolved Resolve(const std::string& path, const std::string& kubernetes_version) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  Resolved r;
  if (parts.size() == 1 && parts[0] == "version") {
    r.document = VersionInfo(kubernetes_version);
    return r;
  }
  if (!parts.empty() && parts[0] == "api") {
    if (parts.size() == 1) r.document = CoreApiVersions();
    if (parts.size() == 2 && parts[1] == "v1") r.document = CoreApiResourceList();
    if (parts.size() >= 3 && parts.size() <= 4 && parts[1] == "v1" && parts[2] == "nodes") {
      r.route = Route{.kind = Kind::kNode,
                      .version = "v1",
                      .namespace_ = "",
                      .name = parts.size() == 4 ? parts[3] : "",
                      .status = false};
    }
    return r;
  }
  if (parts.empty() || parts[0] != "apis") return r;
  if (parts.size() == 1) {
    r.document = ApiGroupList();
    return r;
  }
  if (parts[1] != kGroup) return r;
  if (parts.size() == 2) {
    r.document = ApiGroup();
    return r;
  }
  if (!IsServedVersion(parts[2])) return r;
  if (parts.size() == 3) {
    r.document = ApiResourceList(parts[2]);
    return r;
  }
  Route route;
  route.version = parts[2];
  size_t i = 3;
  if (parts[i] == "namespaces" && parts.size() >= 6) {
    route.namespace_ = parts[4];
    i = 5;
  }
  std::optional<Kind> kind = KindForResource(parts[i]);
  if (!kind) return r;
  route.kind = *kind;
  const KindInfo& info = InfoOf(*kind);
  // A namespaced kind is served under /namespaces/<ns>/ and, for lists, across all namespaces;
  // a cluster-scoped kind never under a namespace.
  if (!route.namespace_.empty() && !info.namespaced) return r;
  const size_t rest = parts.size() - i - 1;  // segments after the resource
  if (rest >= 1) {
    if (info.namespaced && route.namespace_.empty()) return r;
    route.name = parts[i + 1];
  }
  if (rest == 2) {
    if (parts[i + 2] != "status" || !info.has_status) return r;
    route.status = true;
  }
  if (rest > 2) return r;
  r.route = route;
  return r;
}

void Reply(httplib::Response& response, int code, const Json& body) {
  response.status = code;
  response.set_content(body.dump(), kJson);
}

void ReplyError(httplib::Response& response, const absl::Status& status) {
  Json object = ToStatusObject(status);
  Reply(response, object.value("code", 500), object);
}

// The answer's form of a stored v1 object: converted to the URL's version.
Json Outgoing(const Route& route, Json object) {
  return FromV1(route.kind, route.version, std::move(object));
}

// The list object of `list.items[begin, end)`; `continue_token` non-empty when more follow.
Json ListObject(const Route& route, const ListResult& list, size_t begin, size_t end,
                const std::string& continue_token = "") {
  const KindInfo& info = InfoOf(route.kind);
  Json items = Json::array();
  for (size_t i = begin; i < end; ++i) {
    Json out = Outgoing(route, list.items[i]);
    // The API server writes list items without their TypeMeta.
    out.erase("apiVersion");
    out.erase("kind");
    items.push_back(std::move(out));
  }
  Json meta = {{"resourceVersion", std::to_string(list.resource_version)}};
  if (!continue_token.empty()) {
    meta["continue"] = continue_token;
    meta["remainingItemCount"] = list.items.size() - end;
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

// Go's url.QueryUnescape for one key or value: %XX decoded, '+' is a space; a malformed escape is
// kept as written.
std::string QueryUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() &&
               absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// The request's query parameters as url.ParseQuery reads them: each `key=value` split at its
// FIRST '=' (httplib's own parser splits at every '=', which garbles an unescaped
// fieldSelector=spec.nodeName=a,spec.driver=b), first occurrence of a key wins.
std::map<std::string, std::string> QueryParams(const httplib::Request& request) {
  std::map<std::string, std::string> params;
  const std::size_t mark = request.target.find('?');
  if (mark == std::string::npos) return params;
  const std::string query = request.target.substr(mark + 1);
  for (absl::string_view piece : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const std::string_view pair(piece.data(), piece.size());
    const std::size_t eq = pair.find('=');
    std::string key = QueryUnescape(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : QueryUnescape(pair.substr(eq + 1));
    params.emplace(std::move(key), std::move(value));
  }
  return params;
}

// Decodes a request body for `route` into the v1 form the store takes.
absl::StatusOr<Json> Incoming(const httplib::Request& request, const Route& route) {
  const KindInfo& info = InfoOf(route.kind);
  std::string content_type = request.get_header_value("Content-Type");
  content_type =
      std::string(absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';'))));
  Json body;
  if (content_type == kProtobufMediaType) {
    // client-go's default for generated clients (gentype.PrefersProtobuf), whatever the
    // kubeconfig says: ResourceSlice bodies arrive this way from every Go driver.
    absl::StatusOr<Json> decoded = DecodeProtobufBody(route.kind, route.version, request.body);
    if (!decoded.ok()) return decoded.status();
    body = *std::move(decoded);
  } else if (content_type.empty() || content_type == kJson) {
    body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  } else {
    return UnsupportedMediaTypeError(content_type);
  }
  if (body.is_discarded() || !body.is_object()) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name,
                                        ": the request body is not a JSON object"));
  }
  const std::string expected = ApiVersion(info, route.version);
  if (body.contains("apiVersion") && body["apiVersion"] != expected) {
    return BadRequestError(
        absl::StrCat("the API version in the data (",
                     body["apiVersion"].is_string() ? body["apiVersion"].get<std::string>()
                                                    : body["apiVersion"].dump(),
                     ") does not match the expected API version (", expected, ")"));
  }
  if (body.contains("kind") && body["kind"] != info.name) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name, ": kind ",
                                        body["kind"].dump(), " does not match"));
  }
  Json& meta = body["metadata"];
  if (meta.is_null()) meta = Json::object();
  if (!meta.is_object()) {
    return BadRequestError(absl::StrCat(info.name, " in version \"", route.version,
                                        "\" cannot be handled as a ", info.name,
                                        ": metadata must be an object"));
  }
  if (info.namespaced) {
    // rest.BeforeCreate / checkName: a body namespace must match the URL's.
    if (meta.contains("namespace") && meta["namespace"] != "" &&
        meta["namespace"] != route.namespace_) {
      return BadRequestError(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    meta["namespace"] = route.namespace_;
  }
  return ToV1(route.kind, route.version, std::move(body));
}

}  // namespace

ResourceApiServer::ResourceApiServer(ObjectStore* store, ResourceApiServerOptions options)
    : store_(store), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  const int threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
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
               absl::StrCat("http://", options_.host, ":", port));
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
  return absl::StrCat("http://", options_.host, ":", port());
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
  auto stream = std::make_shared<WatchStream>(
      store_,
      WatchTarget{.kind = route.kind, .version = route.version, .namespace_ = route.namespace_},
      std::move(options), options_.watch);
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
  const std::string expected = "Bearer " + options_.token;
  const std::string given = request.get_header_value("Authorization");
  if (given.size() != expected.size() ||
      CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    Reply(response, 401, StatusObject(401, "Unauthorized", "Unauthorized"));
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
  const Route& route = *resolved.route;
  const KindInfo& info = InfoOf(route.kind);
  const std::string& method = request.method;
  const bool collection = route.name.empty();

  if (method == "GET") {
    std::map<std::string, std::string> params = QueryParams(request);
    const auto watch = params.find("watch");
    if (!collection && (watch == params.end() || !QueryBool(watch->second))) {
      absl::StatusOr<Json> object = store_->Get(route.kind, route.namespace_, route.name);
      if (!object.ok()) return ReplyError(response, object.status());
      return Reply(response, 200, Outgoing(route, *std::move(object)));
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
  if (route.kind == Kind::kNode) return ReplyError(response, MethodNotAllowedError(info, method));

  if (method == "POST") {
    if (!collection || (info.namespaced && route.namespace_.empty())) {
      return ReplyError(response, MethodNotAllowedError(info, "create"));
    }
    absl::StatusOr<Json> body = Incoming(request, route);
    if (!body.ok()) return ReplyError(response, body.status());
    absl::StatusOr<Json> created = store_->Create(route.kind, *std::move(body));
    if (!created.ok()) return ReplyError(response, created.status());
    return Reply(response, 201, Outgoing(route, *std::move(created)));
  }
  if (method == "PUT") {
    if (collection) return ReplyError(response, MethodNotAllowedError(info, "update"));
    absl::StatusOr<Json> body = Incoming(request, route);
    if (!body.ok()) return ReplyError(response, body.status());
    const Json& name = (*body)["metadata"]["name"];
    if (name != route.name) {
      return ReplyError(
          response, BadRequestError(absl::StrCat(
                        "the name of the object (", name.is_string() ? name.get<std::string>() : "",
                        ") does not match the name on the URL (", route.name, ")")));
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
    // DeleteOptions in the body may carry preconditions.
    Preconditions preconditions;
    if (!request.body.empty()) {
      Json options = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
      if (options.is_object() && options.contains("preconditions") &&
          options["preconditions"].is_object()) {
        preconditions.uid = options["preconditions"].value("uid", std::string());
        preconditions.resource_version =
            options["preconditions"].value("resourceVersion", std::string());
      }
    }
    absl::StatusOr<DeleteResult> deleted =
        store_->Delete(route.kind, route.namespace_, route.name, preconditions);
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
  ReplyError(response, MethodNotAllowedError(info, method == "PATCH" ? "patch" : method));
}

}  // namespace kdp::manager::resourceapi
