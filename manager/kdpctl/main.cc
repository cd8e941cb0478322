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
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/cli_flags.h"
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
  // The command's deadline; zero: none of kdpctl's own (kdpctl waits as long as kdp-manager waits
  // on its plugins and drivers, whose calls have deadlines of the manager's).
  absl::Duration timeout = absl::ZeroDuration();
  // "text" or "json".
  std::string output = "text";
};

// How often kdpctl asks the manager what it waits on while an answer is outstanding, and how
// long, without a --timeout, it waits for an answer while the manager answers nothing (not even
// that question) or waits on no plugin or driver.
constexpr absl::Duration kPollInterval = absl::Seconds(1);
constexpr absl::Duration kPatience = absl::Seconds(10);

// "example.com/gpu's Allocate for pod default/x (12s of 30s)".
std::string DescribeCall(const admin::PeerCall& call) {
  std::string out = absl::StrCat(call.peer(), "'s ", call.method());
  if (!call.pod().empty()) absl::StrAppend(&out, " for pod ", call.pod());
  const absl::Duration elapsed = absl::Seconds(call.elapsed_ms() / 1000);
  absl::StrAppend(&out, " (", absl::FormatDuration(elapsed));
  if (call.timeout_ms() > 0) {
    absl::StrAppend(&out, " of ", absl::FormatDuration(absl::Milliseconds(call.timeout_ms())));
  }
  absl::StrAppend(&out, ")");
  return out;
}

// "kdp-manager is waiting on A (1s of 30s) and B (…)".
std::string DescribeCalls(const std::vector<admin::PeerCall>& calls) {
  std::vector<std::string> parts;
  for (const admin::PeerCall& call : calls) parts.push_back(DescribeCall(call));
  return absl::StrCat("kdp-manager is waiting on ", absl::StrJoin(parts, " and "));
}

// One connection to the manager. Every command's RPC waits until the manager answers, while it
// keeps asking the manager (ListPeerCalls) what the manager itself is waiting on: it prints the
// plugin and driver calls it finds, and gives up only when --timeout passes or, without one,
// when the manager stops answering or waits on nothing for kPatience.
class AdminClient {
 public:
  AdminClient(std::string socket_path, absl::Duration timeout)
      : socket_path_(std::move(socket_path)),
        timeout_(timeout),
        channel_(DialUnixSocket(socket_path_)),
        stub_(admin::Admin::NewStub(channel_)) {}

  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  admin::Admin::Stub& stub() { return *stub_; }

  // Runs `rpc` (one unary call on stub(), given its context) as described above. The status is
  // the call's; when kdpctl gave up, ReportError() prints why.
  grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
    const absl::Time start = absl::Now();
    grpc::ClientContext context;
    if (timeout_ > absl::ZeroDuration()) {
      context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout_));
    }
    absl::Notification done;
    grpc::Status status;
    std::thread call([&] {
      status = rpc(&context);
      done.Notify();
    });
    absl::Time answered = start;  // the manager's last answer to ListPeerCalls
    absl::Time busy = start;      // the last time it waited on a plugin or driver
    std::set<std::string> announced;
    while (!done.WaitForNotificationWithTimeout(kPollInterval)) {
      const absl::Time now = absl::Now();
      if (timeout_ > absl::ZeroDuration() && now - start >= timeout_) continue;  // fires itself
      absl::StatusOr<std::vector<admin::PeerCall>> calls = PeerCalls(kPollInterval);
      if (calls.ok()) {
        answered = now;
        if (!calls->empty()) busy = now;
        for (const admin::PeerCall& waited : *calls) {
          // Once per call: the peer, method and pod name it.
          if (announced
                  .insert(absl::StrCat(waited.peer(), "\n", waited.method(), "\n", waited.pod()))
                  .second) {
            std::cerr << "kdpctl: " << DescribeCalls({waited}) << "\n";
          }
        }
      }
      if (timeout_ > absl::ZeroDuration()) continue;
      if (now - answered >= kPatience) {
        gave_up_ =
            absl::StrCat("no answer from kdp-manager within ", absl::FormatDuration(kPatience));
      } else if (now - busy >= kPatience) {
        gave_up_ =
            absl::StrCat("kdp-manager answered nothing within ", absl::FormatDuration(now - start),
                         " and is not waiting on any device plugin or DRA driver");
      }
      if (!gave_up_.empty()) context.TryCancel();
    }
    call.join();
    return status;
  }

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
  int ReportError(const grpc::Status& status) {
    if (!gave_up_.empty()) {
      // Never connected: the manager is not there (or hung in accept).
      if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
        return Unreachable(absl::StrCat("no connection within ", absl::FormatDuration(kPatience)));
      }
      std::cerr << "kdpctl: " << gave_up_ << "\n";
      return kExitFailure;
    }
    switch (status.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
        // Connected, and the manager answered UNAVAILABLE: a peer of the manager's is down (a
        // DRA driver NodeUnprepareResources could not reach), not the manager.
        if (channel_->GetState(false) == GRPC_CHANNEL_READY) {
          std::cerr << "kdpctl: " << status.error_message() << "\n";
          return kExitFailure;
        }
        return Unreachable(status.error_message());
      case grpc::StatusCode::DEADLINE_EXCEEDED: {
        // Never connected within the deadline: the manager is not there (or hung in accept).
        if (channel_->GetState(false) != GRPC_CHANNEL_READY) {
          return Unreachable(absl::StrCat("no connection within ", absl::FormatDuration(timeout_)));
        }
        // Connected: say what the manager is waiting on, if it still answers that.
        const std::string within = absl::StrCat("within ", absl::FormatDuration(timeout_));
        absl::StatusOr<std::vector<admin::PeerCall>> calls = PeerCalls(kPollInterval);
        if (!calls.ok()) {
          std::cerr << "kdpctl: no answer from kdp-manager " << within << "\n";
        } else if (calls->empty()) {
          std::cerr << "kdpctl: no answer " << within
                    << " (kdp-manager is not waiting on any device plugin or DRA driver)\n";
        } else {
          std::cerr << "kdpctl: gave up after " << absl::FormatDuration(timeout_) << ": "
                    << DescribeCalls(*calls) << "\n";
        }
        return kExitFailure;
      }
      case grpc::StatusCode::INVALID_ARGUMENT:
        std::cerr << "kdpctl: " << status.error_message() << "\n";
        return kExitUsage;
      default:
        std::cerr << "kdpctl: " << status.error_message() << "\n";
        return kExitFailure;
    }
  }

 private:
  // What the manager waits on now; the RPC's error when it does not answer within `deadline`
  // (an older manager without ListPeerCalls: none).
  absl::StatusOr<std::vector<admin::PeerCall>> PeerCalls(absl::Duration deadline) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(deadline));
    admin::ListPeerCallsResponse response;
    grpc::Status status = stub_->ListPeerCalls(&context, admin::ListPeerCallsRequest(), &response);
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return std::vector<admin::PeerCall>{};
    }
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    return std::vector<admin::PeerCall>(response.calls().begin(), response.calls().end());
  }

  int Unreachable(const std::string& why) const {
    std::cerr << "kdpctl: cannot reach kdp-manager at " << socket_path_ << ": " << why << "\n";
    return kExitUnreachable;
  }

  const std::string socket_path_;
  const absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<admin::Admin::Stub> stub_;
  // Why kdpctl cancelled the call; empty when it did not.
  std::string gave_up_;
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
  grpc::Status rpc = client.Call([&](grpc::ClientContext* context) {
    return client.stub().GetStatus(context, admin::GetStatusRequest(), &status);
  });
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
  grpc::Status rpc = client.Call([&](grpc::ClientContext* context) {
    return client.stub().Apply(context, request, &response);
  });
  if (!rpc.ok()) return client.ReportError(rpc);
  std::cout << (flags.output == "json" ? DumpJson(ApplyJson(response)) : ApplyText(response));
  for (const auto& object : response.objects()) {
    if (object.kind() == "Pod" && !object.pod().admitted()) return kExitFailure;
  }
  return kExitOk;
}

int RunGetPods(AdminClient& client, const GlobalFlags& flags) {
  admin::ListPodsResponse response;
  grpc::Status rpc = client.Call([&](grpc::ClientContext* context) {
    return client.stub().ListPods(context, admin::ListPodsRequest(), &response);
  });
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
  grpc::Status rpc = client.Call([&](grpc::ClientContext* context) {
    return client.stub().DeletePod(context, request, &response);
  });
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
  grpc::Status rpc = client.Call([&](grpc::ClientContext* context) {
    return client.stub().GetTopology(context, admin::GetTopologyRequest(), &topology);
  });
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
  kdp::cli::AddVersionFlag(app, "kdpctl");
  kdp::cli::AddDurationOption(
      app, "--timeout", &flags.timeout,
      "How long a command may wait for kdp-manager's answer: a duration (10s, 500ms, 1m) or "
      "seconds (2.5). 0 (the default): as long as kdp-manager waits on a device plugin's or "
      "DRA driver's call (each has a deadline of the manager's), and at most 10s while it "
      "answers nothing else. While waiting, kdpctl prints on stderr which plugin or driver call "
      "kdp-manager waits on",
      kdp::cli::DurationRule::kNonNegative);

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
  AdminClient client(absl::StrCat(flags.kubelet_root, "/kdp/manager.sock"), flags.timeout);
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
