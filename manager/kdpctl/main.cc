// kdpctl: the command-line client of kdp-manager's admin API (kdp.admin.v1.Admin on
// <kubelet-root>/kdp/manager.sock). Output formats, flags and exit statuses are a contract that
// tests and users script against; docs/kdpctl.md documents them and manager/kdpctl/render.h
// renders every message.
//
// Exit statuses: 0 success; 1 failure (rejected admission, NOT_FOUND, any other RPC error, an
// unreadable manifest file); 2 bad usage or a manifest the manager refuses as INVALID_ARGUMENT;
// 3 kdp-manager not reachable on its socket.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_server.h"
#include "common/unix_socket.h"
#include "kdp/admin/v1/admin.grpc.pb.h"
#include "manager/kdpctl/checkpoint_command.h"
#include "manager/kdpctl/render.h"
#include "manager/src/admin/topology_render.h"

namespace kdp::kdpctl {
namespace {

namespace admin = ::kdp::admin::v1;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

// Flags shared by every command.
struct GlobalFlags {
  // The kubelet's root directory; the manager's socket is <root>/kdp/manager.sock.
  std::string kubelet_root = "/var/lib/kubelet";
  // Deadline for each RPC: plain seconds ("10", "2.5") or an absl duration ("500ms", "1m").
  std::string timeout = "10s";
  // "text" or "json".
  std::string output = "text";
};

// Parses --timeout: a positive, finite number of seconds or absl duration.
absl::StatusOr<absl::Duration> ParseTimeout(const std::string& text) {
  absl::Duration duration;
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid duration '", text, "' (want seconds, e.g. 10, 2.5s or 500ms)"));
  }
  if (duration <= absl::ZeroDuration() || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("timeout must be positive, got '", text, "'"));
  }
  return duration;
}

// One connection to the manager; every RPC gets its own deadline of `timeout`.
class AdminClient {
 public:
  AdminClient(std::string socket_path, absl::Duration timeout)
      : socket_path_(std::move(socket_path)),
        timeout_(timeout),
        channel_(DialUnixSocket(socket_path_)),
        stub_(admin::Admin::NewStub(channel_)) {}

  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  // A context whose deadline is now + timeout.
  std::unique_ptr<grpc::ClientContext> NewContext() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout_));
    return context;
  }

  admin::Admin::Stub& stub() { return *stub_; }

  // Before any RPC: a missing path or a non-socket is reported without waiting for gRPC.
  // Returns kExitOk or kExitUnreachable (after printing why).
  int CheckSocket() const {
    struct stat st {};
    if (::stat(socket_path_.c_str(), &st) != 0) {
      const int error = errno;
      return Unreachable(error == ENOENT ? std::string("no such socket (is kdp-manager running?)")
                                         : std::string(std::strerror(error)));
    }
    if (!S_ISSOCK(st.st_mode)) return Unreachable("not a unix socket");
    return kExitOk;
  }

  // Prints a failed RPC's status on stderr and returns the exit status for it.
  int ReportError(const grpc::Status& status) const {
    switch (status.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
        // Connected, and the manager answered UNAVAILABLE: a peer of the manager's is down (a
        // DRA driver NodeUnprepareResources could not reach), not the manager.
        if (channel_->GetState(false) == GRPC_CHANNEL_READY) {
          std::cerr << "kdpctl: " << status.error_message() << "\n";
          return kExitFailure;
        }
        return Unreachable(status.error_message());
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        // Never connected within the deadline: the manager is not there (or hung in accept).
        if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
          return Unreachable(absl::StrCat("no connection within ", absl::FormatDuration(timeout_)));
        }
        std::cerr << "kdpctl: no answer from kdp-manager within " << absl::FormatDuration(timeout_)
                  << "\n";
        return kExitFailure;
      case grpc::StatusCode::INVALID_ARGUMENT:
        std::cerr << "kdpctl: " << status.error_message() << "\n";
        return kExitUsage;
      default:
        std::cerr << "kdpctl: " << status.error_message() << "\n";
        return kExitFailure;
    }
  }

 private:
  int Unreachable(const std::string& why) const {
    std::cerr << "kdpctl: cannot reach kdp-manager at " << socket_path_ << ": " << why << "\n";
    return kExitUnreachable;
  }

  const std::string socket_path_;
  const absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<admin::Admin::Stub> stub_;
};

// Reads a whole file ("-" is stdin); an error's message names the file and the errno text.
absl::StatusOr<std::string> ReadManifest(const std::string& path) {
  const bool from_stdin = path == "-";
  const int fd = from_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string contents;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (!from_stdin) ::close(fd);
      return absl::UnknownError(
          absl::StrCat("cannot read ", from_stdin ? "stdin" : path, ": ", std::strerror(error)));
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  if (!from_stdin) ::close(fd);
  return contents;
}

int RunStatus(AdminClient& client, const GlobalFlags& flags) {
  admin::NodeStatus status;
  auto context = client.NewContext();
  grpc::Status rpc = client.stub().GetStatus(context.get(), admin::GetStatusRequest(), &status);
  if (!rpc.ok()) return client.ReportError(rpc);
  std::cout << (flags.output == "json" ? DumpJson(NodeStatusJson(status)) : NodeStatusText(status));
  return kExitOk;
}

int RunApply(AdminClient& client, const GlobalFlags& flags, const std::string& file,
             std::string manifest) {
  admin::ApplyRequest request;
  request.set_manifest(std::move(manifest));
  request.set_source(file == "-" ? "<stdin>" : file);
  admin::ApplyResponse response;
  auto context = client.NewContext();
  grpc::Status rpc = client.stub().Apply(context.get(), request, &response);
  if (!rpc.ok()) return client.ReportError(rpc);
  std::cout << (flags.output == "json" ? DumpJson(ApplyJson(response)) : ApplyText(response));
  for (const auto& object : response.objects()) {
    if (object.kind() == "Pod" && !object.pod().admitted()) return kExitFailure;
  }
  return kExitOk;
}

int RunGetPods(AdminClient& client, const GlobalFlags& flags) {
  admin::ListPodsResponse response;
  auto context = client.NewContext();
  grpc::Status rpc = client.stub().ListPods(context.get(), admin::ListPodsRequest(), &response);
  if (!rpc.ok()) return client.ReportError(rpc);
  std::cout << (flags.output == "json" ? DumpJson(PodListJson(response)) : PodListText(response));
  return kExitOk;
}

int RunDeletePod(AdminClient& client, const GlobalFlags& flags, const std::string& pod_namespace,
                 const std::string& name) {
  admin::DeletePodRequest request;
  request.set_namespace_(pod_namespace);
  request.set_name(name);
  admin::DeletePodResponse response;
  auto context = client.NewContext();
  grpc::Status rpc = client.stub().DeletePod(context.get(), request, &response);
  if (!rpc.ok()) return client.ReportError(rpc);
  if (!response.warning().empty()) std::cerr << "kdpctl: warning: " << response.warning() << "\n";
  if (flags.output == "json") {
    std::cout << DumpJson(DeletedPodJson(pod_namespace, name, response.uid()));
  } else {
    std::cout << "pod " << pod_namespace << "/" << name << " deleted\n";
  }
  return kExitOk;
}

// Writes `contents` to `path` (created with mode 0644 or truncated); the error names the file.
absl::Status WriteFile(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnknownError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return absl::UnknownError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return absl::UnknownError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// `kdpctl topology`: the tree (or JSON) on stdout; with `svg_file`, the SVG written there too
// ("-": the SVG on stdout instead of the tree).
int RunTopology(AdminClient& client, const GlobalFlags& flags, const std::string& svg_file,
                bool ascii) {
  admin::NodeTopology topology;
  auto context = client.NewContext();
  grpc::Status rpc =
      client.stub().GetTopology(context.get(), admin::GetTopologyRequest(), &topology);
  if (!rpc.ok()) return client.ReportError(rpc);
  if (svg_file == "-") {
    std::cout << manager::TopologySvg(topology);
    return kExitOk;
  }
  if (!svg_file.empty()) {
    if (absl::Status written = WriteFile(svg_file, manager::TopologySvg(topology)); !written.ok()) {
      std::cerr << "kdpctl: " << written.message() << "\n";
      return kExitFailure;
    }
  }
  std::cout << (flags.output == "json" ? DumpJson(manager::TopologyJson(topology))
                                       : manager::TopologyTree(topology, {.ascii = ascii}));
  return kExitOk;
}

void AddOutputFlag(CLI::App* command, GlobalFlags* flags) {
  command->add_option("-o,--output", flags->output, "Output format: text (default) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT");
}

int Main(int argc, char** argv) {
  GlobalFlags flags;
  CLI::App app(
      "kdpctl: command-line client of kdp-manager's admin API (kdp.admin.v1.Admin).\n"
      "Exit status: 0 ok; 1 failure (pod rejected, not found, RPC error, unreadable file);\n"
      "2 bad usage or invalid manifest (INVALID_ARGUMENT); 3 kdp-manager not reachable.",
      "kdpctl");
  app.footer(
      "Commands:\n"
      "  kdpctl status [-o json]                          GetStatus\n"
      "  kdpctl apply -f FILE|- [-o json]                 Apply: Pods, DeviceClasses, "
      "ResourceClaims,\n"
      "                                                   ResourceClaimTemplates (exit 1 when a "
      "pod\n"
      "                                                   is rejected)\n"
      "  kdpctl get pods [-o json]                        ListPods\n"
      "  kdpctl delete pod NAME [-n NAMESPACE] [-o json]  DeletePod (exit 1 when not found)\n"
      "  kdpctl checkpoint inspect FILE [-o json]         read a kubelet checkpoint (device "
      "manager\n"
      "                                                   or dra_manager_state)\n"
      "                                                   (exit 2 when not one or checksum bad)\n"
      "  kdpctl checkpoint convert --to v2 IN OUT         rewrite a v1/v2 checkpoint as v2\n"
      "  kdpctl topology [--svg FILE] [-o json]           the node as a tree (--ascii): NUMA "
      "nodes,\n"
      "                                                   CPUs, devices, health and holders;\n"
      "                                                   --svg also draws it (GetTopology)\n"
      "Global flags may follow the command. 'kdpctl COMMAND --help' lists a command's flags;\n"
      "docs/kdpctl.md documents the JSON printed with -o json.");
  app.fallthrough();
  app.require_subcommand(1);
  app.add_option("--kubelet-root", flags.kubelet_root,
                 "Kubelet root directory; the manager's socket is <DIR>/kdp/manager.sock")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("--timeout", flags.timeout,
                 "Deadline for each RPC: seconds (10, 2.5) or a duration (10s, 500ms, 1m)")
      ->type_name("DURATION")
      ->capture_default_str()
      ->check([](const std::string& text) {
        absl::StatusOr<absl::Duration> parsed = ParseTimeout(text);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      });

  CLI::App* status = app.add_subcommand(
      "status", "Show every device-plugin resource: capacity, allocatable, devices (GetStatus)");
  AddOutputFlag(status, &flags);

  std::string file;
  CLI::App* apply =
      app.add_subcommand("apply",
                         "Apply a manifest of one or more documents: admit Pods and show their "
                         "allocation; create DeviceClasses, ResourceClaims and "
                         "ResourceClaimTemplates (Apply)");
  apply
      ->add_option("-f,--filename", file,
                   "Manifest (YAML or JSON, documents separated by ---); '-' reads stdin")
      ->required()
      ->type_name("FILE");
  AddOutputFlag(apply, &flags);

  CLI::App* get = app.add_subcommand("get", "List objects");
  get->require_subcommand(1);
  CLI::App* get_pods =
      get->add_subcommand("pods", "List admitted pods and their allocations (ListPods)");
  get_pods->alias("pod");
  AddOutputFlag(get_pods, &flags);

  std::string pod_name;
  std::string pod_namespace = "default";
  CLI::App* del = app.add_subcommand("delete", "Delete objects");
  del->require_subcommand(1);
  CLI::App* delete_pod =
      del->add_subcommand("pod", "Delete a pod and release its devices (DeletePod)");
  delete_pod->alias("pods");
  delete_pod->add_option("NAME", pod_name, "Pod name")->required();
  delete_pod->add_option("-n,--namespace", pod_namespace, "Pod namespace")
      ->type_name("NAMESPACE")
      ->capture_default_str();
  AddOutputFlag(delete_pod, &flags);

  std::string svg_file;
  bool ascii = false;
  CLI::App* topology = app.add_subcommand(
      "topology",
      "Show the node as a tree: NUMA nodes with their CPUs, then each resource's devices with "
      "health and the pod/container holding them ('free'); devices without NUMA affinity on "
      "their own branch (GetTopology)");
  topology
      ->add_option("--svg", svg_file,
                   "Also write the node as an SVG picture to FILE (NUMA nodes as boxes, devices "
                   "coloured by health and labelled with their holder); '-' prints the SVG "
                   "instead of the tree")
      ->type_name("FILE");
  topology->add_flag("--ascii", ascii,
                     "Draw the tree with ASCII instead of box-drawing characters");
  AddOutputFlag(topology, &flags);

  std::string checkpoint_file, convert_to = "v2", convert_in, convert_out;
  CLI::App* checkpoint = app.add_subcommand(
      "checkpoint", "Offline tools for kubelet_internal_checkpoint and dra_manager_state files");
  checkpoint->require_subcommand(1);
  CLI::App* inspect = checkpoint->add_subcommand(
      "inspect", "Detect the format, verify the checksum and print the entries");
  inspect->add_option("FILE", checkpoint_file, "Checkpoint file")->required();
  AddOutputFlag(inspect, &flags);
  CLI::App* convert = checkpoint->add_subcommand("convert", "Rewrite a checkpoint as v2");
  convert->add_option("--to", convert_to, "Target layout (only v2 is written)")
      ->check(CLI::IsMember({"v2"}))
      ->capture_default_str();
  convert->add_option("IN", convert_in, "Checkpoint to read (v1 or v2)")->required();
  convert->add_option("OUT", convert_out, "File to write")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == static_cast<int>(CLI::ExitCodes::Success) ? kExitOk : kExitUsage;
  }

  // Offline commands: no manager involved.
  if (inspect->parsed()) return InspectCheckpoint(checkpoint_file, flags.output == "json");
  if (convert->parsed()) return ConvertCheckpoint(convert_in, convert_out);

  const absl::Duration timeout = *ParseTimeout(flags.timeout);  // Validated by the check.
  // Local inputs first: an unreadable manifest is reported whether or not the manager runs.
  std::string manifest;
  if (apply->parsed()) {
    absl::StatusOr<std::string> contents = ReadManifest(file);
    if (!contents.ok()) {
      std::cerr << "kdpctl: " << contents.status().message() << "\n";
      return kExitFailure;
    }
    manifest = *std::move(contents);
  }
  AdminClient client(absl::StrCat(flags.kubelet_root, "/kdp/manager.sock"), timeout);
  if (int code = client.CheckSocket(); code != kExitOk) return code;

  if (status->parsed()) return RunStatus(client, flags);
  if (apply->parsed()) return RunApply(client, flags, file, std::move(manifest));
  if (get_pods->parsed()) return RunGetPods(client, flags);
  if (delete_pod->parsed()) return RunDeletePod(client, flags, pod_namespace, pod_name);
  if (topology->parsed()) return RunTopology(client, flags, svg_file, ascii);
  std::cerr << app.help();
  return kExitUsage;
}

}  // namespace
}  // namespace kdp::kdpctl

int main(int argc, char** argv) { return kdp::kdpctl::Main(argc, argv); }
