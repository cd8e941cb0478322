#include "manager/src/conformance/session.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/durable_file.h"
#include "common/grpc_status.h"
#include "common/unix_socket.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/kubeconfig.h"
#include "manager/src/node/node.h"

namespace kdp::manager::conformance {
namespace {

constexpr size_t kOutputTail = 16 * 1024;

// The last `limit` bytes of `text`, from a character boundary (a UTF-8 sequence is not cut).
std::string Tail(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t from = text.size() - limit;
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  return absl::StrCat("…", text.substr(from));
}

// `text` as one shell word: single-quoted, a quote inside written '\''.
std::string ShellQuote(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// The absolute socket a Register call names: an endpoint is a file name in the device-plugins
// directory (kubelet.sock), or already absolute (plugins_registry).
std::string SocketOf(const v1beta1::RegisterRequest& request, const std::string& plugins_dir) {
  if (absl::StartsWith(request.endpoint(), "/")) return request.endpoint();
  return absl::StrCat(plugins_dir, "/", request.endpoint());
}

// The first registration accepted after `since` (of `resource` unless empty) whose socket then
// sent a ListAndWatch message. The first message may come before the answer is recorded (the
// stream starts before the Register handler returns): a list counts from the dial-back that
// preceded the answer.
std::optional<Registration> FindRegistration(const PluginRecord& record,
                                             const std::string& plugins_dir, absl::Time since,
                                             absl::string_view resource) {
  for (const RecordedRegistration& registration : record.registrations) {
    if (registration.at < since || !registration.answer.ok()) continue;
    if (!resource.empty() && registration.request.resource_name() != resource) continue;
    const std::string socket = SocketOf(registration.request, plugins_dir);
    const RecordedConnection* dial = nullptr;
    for (const RecordedConnection& connection : record.connections) {
      if (connection.socket == socket && connection.at >= since &&
          connection.at <= registration.at) {
        dial = &connection;
      }
    }
    if (dial == nullptr) continue;
    for (const RecordedList& list : record.lists) {
      if (list.at < dial->at || list.socket != socket) continue;
      return Registration{.at = registration.at,
                          .request = registration.request,
                          .socket = socket,
                          .options = dial->options,
                          .first_list = list.response};
    }
  }
  return std::nullopt;
}

// "2 refused (the manager answered: …), 1 accepted without a device list" and the like.
std::string DescribeRegistrations(const PluginRecord& record, absl::Time since) {
  std::vector<std::string> seen;
  for (const RecordedRegistration& registration : record.registrations) {
    if (registration.at < since) continue;
    seen.push_back(registration.answer.ok()
                       ? absl::StrCat("Register(", registration.request.resource_name(),
                                      ", endpoint ", registration.request.endpoint(), ") accepted")
                       : absl::StrCat("Register(version \"", registration.request.version(),
                                      "\", \"", registration.request.resource_name(),
                                      "\", endpoint \"", registration.request.endpoint(),
                                      "\") refused: ", registration.answer.message()));
  }
  if (seen.empty()) return "no Register call";
  return absl::StrJoin(seen, "; ");
}

// Every live Session, for AbandonSessions. Held while a Session swaps its program, so that a
// signal's thread never kills a process group another thread is reaping.
absl::Mutex sessions_mu(absl::kConstInit);
std::set<Session*>& LiveSessions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sessions_mu) {
  static auto* const sessions = new std::set<Session*>();
  return *sessions;
}

}  // namespace

void AbandonSessions() {
  absl::MutexLock lock(&sessions_mu);
  for (Session* session : LiveSessions()) session->Abandon();
}

void Session::Abandon() {
  if (program_ != nullptr) (void)program_->SignalGroup(SIGKILL);
  if (temporary_root_) {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(SessionOptions options) {
  if (options.command.empty()) {
    return absl::InvalidArgumentError("no command to run: give the program under test after --");
  }
  std::string root = options.kubelet_root;
  const bool temporary = root.empty();
  if (temporary) {
    const char* tmpdir = std::getenv("TMPDIR");
    // Short: socket paths under it must stay below the 107-byte unix socket limit.
    root = absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/kdpc-XXXXXX");
    if (mkdtemp(root.data()) == nullptr) {
      return absl::InternalError(
          absl::StrCat("cannot make a temporary kubelet root ", root, ": ", std::strerror(errno)));
    }
  } else {
    std::error_code error;
    std::filesystem::create_directories(root, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kubelet-root ", root, ": cannot create it: ", error.message()));
    }
    root = std::filesystem::absolute(root).lexically_normal().string();
    if (root.size() > 1 && root.back() == '/') root.pop_back();
  }
  std::unique_ptr<Session> session(new Session(std::move(options), root, temporary));
  for (const char* dir : {"/kdp-conformance", "/cdi", "/plugins", "/plugins_registry"}) {
    std::error_code error;
    std::filesystem::create_directories(root + dir, error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot create ", root, dir, ": ", error.message()));
    }
  }
  if (absl::StatusOr<std::string> earlier = ::kdp::ReadFile(root + "/kdp-conformance/program.log");
      earlier.ok()) {
    session->output_offset_ = earlier->size();
  }
  if (absl::Status started = session->StartManager(); !started.ok()) {
    return absl::Status(started.code(), absl::StrCat("the embedded kdp-manager did not start: ",
                                                     started.message()));
  }
  return session;
}

Session::Session(SessionOptions options, std::string root, bool temporary)
    : options_(std::move(options)),
      root_(std::move(root)),
      temporary_root_(temporary),
      deadline_(absl::Now() + options_.timeout) {
  absl::MutexLock lock(&sessions_mu);
  LiveSessions().insert(this);
}

Session::~Session() {
  {
    absl::MutexLock lock(&sessions_mu);
    LiveSessions().erase(this);
    program_.reset();  // SIGKILL to its process group, reaped
  }
  admin_.reset();
  if (node_ != nullptr) node_->Stop();
  node_.reset();
  if (temporary_root_) {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
}

absl::Status Session::StartManager() {
  ManagerOptions manager_options;
  manager_options.kubelet_root = root_;
  manager_options.node_name = options_.node_name;
  manager_options.metrics_address = "";
  // A restarted plugin's resource must not stay half there: the kubelet's grace period is 5
  // minutes, longer than any scenario.
  manager_options.compaction_delay = absl::Milliseconds(100);
  manager_options.dra_reconcile_period = absl::Seconds(1);
  manager_options.device_plugin_observer = &recorder_;
  manager_options.dra_driver_observer = &dra_recorder_;
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(manager_options);
  if (!node.ok()) return node.status();
  if (absl::Status started = (*node)->Start(); !started.ok()) return started;
  node_ = *std::move(node);
  admin_ = admin::v1::Admin::NewStub(
      grpc::CreateChannel(UnixTarget(node_->admin_socket()), grpc::InsecureChannelCredentials()));
  return absl::OkStatus();
}

absl::Status Session::RestartManager() {
  admin_.reset();
  node_->Stop();
  node_.reset();
  return StartManager();
}

std::string Session::Expand(absl::string_view text, absl::string_view device_id) const {
  return absl::StrReplaceAll(text, {{"{kubelet_root}", root_},
                                    {"{device_plugins_dir}", root_ + "/device-plugins"},
                                    {"{plugins_registry}", root_ + "/plugins_registry"},
                                    {"{plugins_dir}", root_ + "/plugins"},
                                    {"{kubeconfig}", root_ + "/kdp/kubeconfig"},
                                    {"{node_name}", options_.node_name},
                                    {"{cdi_root}", root_ + "/cdi"},
                                    {"{device_id}", device_id}});
}

absl::Status Session::StartProgram() {
  std::vector<std::string> argv;
  for (const std::string& arg : options_.command) argv.push_back(Expand(arg));
  absl::MutexLock lock(&sessions_mu);
  program_.reset();  // a previous instance's process group, killed
  program_started_ = absl::Now();
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(
      std::move(argv),
      {.env = {{"NODE_NAME", options_.node_name}, {"KUBECONFIG", root_ + "/kdp/kubeconfig"}},
       .output_path = root_ + "/kdp-conformance/program.log"});
  if (!started.ok()) {
    return absl::Status(
        started.status().code(),
        absl::StrCat("cannot start the program under test: ", started.status().message()));
  }
  program_ = *std::move(started);
  return absl::OkStatus();
}

std::string Session::ProgramOutput() const {
  absl::StatusOr<std::string> output = ::kdp::ReadFile(root_ + "/kdp-conformance/program.log");
  if (!output.ok() || output->size() <= output_offset_) return "";
  return Tail(output->substr(output_offset_), kOutputTail);
}

absl::StatusOr<Registration> Session::WaitForRegistration(absl::Time since, absl::Time window_start,
                                                          absl::string_view resource) {
  const absl::Time until = std::min(window_start + options_.register_timeout, deadline_);
  const std::string plugins_dir = device_plugins_dir();
  auto registered = [&](const PluginRecord& record) {
    return FindRegistration(record, plugins_dir, since, resource).has_value();
  };
  std::optional<int> failed;  // the program's non-zero exit status
  while (true) {
    // In slices, to notice a program that failed without waiting out the window.
    if (recorder_.WaitUntil(registered, std::min(until, absl::Now() + absl::Milliseconds(100)))) {
      return *FindRegistration(recorder_.Copy(), plugins_dir, since, resource);
    }
    if (absl::Now() >= until) break;
    failed = ProgramFailed();
    if (failed.has_value()) break;
  }
  std::string what = DescribeRegistrations(recorder_.Copy(), since);
  if (failed.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("the program exited with status ", *failed,
                                                      " before a registration was "
                                                      "accepted with a first device list: ",
                                                      what));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no accepted registration with a first device list within ",
                   absl::FormatDuration(until - window_start), ": ", what));
}

std::optional<int> Session::ProgramFailed() {
  if (program_ == nullptr || program_->Running()) return std::nullopt;
  absl::StatusOr<int> code = program_->Wait(absl::ZeroDuration());
  if (!code.ok() || *code == 0) return std::nullopt;
  return *code;
}

absl::StatusOr<admin::v1::NodeStatus> Session::NodeStatus() {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline_));
  admin::v1::NodeStatus status;
  grpc::Status answer = admin_->GetStatus(&context, admin::v1::GetStatusRequest(), &status);
  if (!answer.ok()) return FromGrpcStatus(answer);
  return status;
}

absl::StatusOr<admin::v1::ApplyPodResponse> Session::ApplyPod(const std::string& manifest) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline_));
  admin::v1::ApplyPodRequest request;
  request.set_manifest(manifest);
  request.set_source("kdp-conformance");
  admin::v1::ApplyPodResponse response;
  grpc::Status answer = admin_->ApplyPod(&context, request, &response);
  if (!answer.ok()) return FromGrpcStatus(answer);
  return response;
}

absl::StatusOr<admin::v1::ApplyResponse> Session::Apply(const std::string& manifest) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline_));
  admin::v1::ApplyRequest request;
  request.set_manifest(manifest);
  request.set_source("kdp-conformance");
  admin::v1::ApplyResponse response;
  grpc::Status answer = admin_->Apply(&context, request, &response);
  if (!answer.ok()) return FromGrpcStatus(answer);
  return response;
}

absl::Status Session::DeletePod(const std::string& namespace_, const std::string& name) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline_));
  admin::v1::DeletePodRequest request;
  request.set_namespace_(namespace_);
  request.set_name(name);
  admin::v1::DeletePodResponse response;
  grpc::Status answer = admin_->DeletePod(&context, request, &response);
  if (!answer.ok()) return FromGrpcStatus(answer);
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> Session::ApiGet(const std::string& path) {
  std::optional<resourceapi::KubeconfigCredentials> credentials =
      resourceapi::ReadKubeconfigCredentials(root_);
  if (!credentials.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no kubeconfig of the embedded manager in ", root_, "/kdp"));
  }
  // The manager's own server on loopback, in this process: its certificate is not what is
  // judged, so it is not verified.
  httplib::SSLClient client("127.0.0.1", credentials->port);
  client.enable_server_certificate_verification(false);
  client.set_bearer_token_auth(credentials->token);
  const absl::Duration left = std::max(deadline_ - absl::Now(), absl::Milliseconds(1));
  const absl::Duration wait = std::min(left, absl::Seconds(10));
  client.set_connection_timeout(absl::ToChronoMicroseconds(wait));
  client.set_read_timeout(absl::ToChronoMicroseconds(wait));
  httplib::Result result = client.Get(path, {{"Accept", "application/json"}});
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat("GET ", path, ": ", httplib::to_string(result.error())));
  }
  nlohmann::json body = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (result->status != 200) {
    const std::string message =
        body.is_object() ? body.value("message", result->body) : result->body;
    return absl::Status(
        result->status == 404 ? absl::StatusCode::kNotFound : absl::StatusCode::kUnavailable,
        absl::StrCat("GET ", path, ": HTTP ", result->status, ": ", message));
  }
  if (body.is_discarded()) {
    return absl::InternalError(absl::StrCat("GET ", path, ": the answer is not JSON"));
  }
  return body;
}

absl::Status Session::RunHealthTrigger(absl::string_view device_id) {
  const std::string command = Expand(options_.health_trigger, ShellQuote(device_id));
  const absl::Duration left = deadline_ - absl::Now();
  if (left <= absl::ZeroDuration()) {
    return absl::DeadlineExceededError("no time left to run --health-trigger");
  }
  absl::StatusOr<CommandResult> result =
      RunCommand({"/bin/sh", "-c", command}, left, {{"KDP_DEVICE_ID", std::string(device_id)}});
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("--health-trigger \"", command,
                                                      "\" exited with status ", result->exit_code,
                                                      ": ", result->out, result->err));
  }
  return absl::OkStatus();
}

}  // namespace kdp::manager::conformance
