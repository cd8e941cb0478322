// The real clients are the judges: the kubectl binaries this machine image ships (1.27 … 1.33,
// under /usr/lib/google-cloud-sdk/bin) and Debian's Python client (python3-kubernetes), unchanged,
// against a running kdp-manager with nothing but the kubeconfig it wrote (https, its CA, its
// token). The manager runs the example GPU plugin and the example DRA driver on the bundled
// dual-socket fixture; a pod holding two GPUs is admitted with kdpctl.
//
// A version that is not installed is skipped with a message (scripts/deps does not install
// kubectl: it comes with the image); the Python client is installed by scripts/deps.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/resource_slice_publisher.h"
#include "tests/integration/dra_fixture.h"
#include "tests/testing/wait.h"

namespace kdp::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kKubectlDir[] = "/usr/lib/google-cloud-sdk/bin";

// The installed kubectl versions among 1.27 … 1.33, as "1.NN"; only those listed in
// $KDP_KUBECTL_VERSIONS ("1.27,1.33") when it is set (the ThreadSanitizer run takes two: the
// manager's threads are what it checks, and every version drives the same server code).
std::vector<std::string> InstalledKubectls() {
  std::vector<std::string> versions;
  const char* only = std::getenv("KDP_KUBECTL_VERSIONS");
  const std::vector<std::string> wanted =
      only == nullptr ? std::vector<std::string>{}
                      : std::vector<std::string>(absl::StrSplit(only, ',', absl::SkipEmpty()));
  for (int minor = 27; minor <= 33; ++minor) {
    const std::string version = absl::StrCat("1.", minor);
    if (only != nullptr && std::find(wanted.begin(), wanted.end(), version) == wanted.end()) {
      continue;
    }
    if (::access(absl::StrCat(kKubectlDir, "/kubectl.", version).c_str(), X_OK) == 0) {
      versions.push_back(version);
    }
  }
  return versions;
}

class KubectlE2E : public DraE2ETest {
 protected:
  void SetUp() override {
    versions_ = InstalledKubectls();
    if (versions_.empty()) GTEST_SKIP() << "no kubectl under " << kKubectlDir;
  }

  std::string Kubeconfig() const { return Root() + "/kdp/kubeconfig"; }

  // `kubectl.<version> --kubeconfig <the manager's> <args>`, with a discovery cache of its own.
  CommandResult Kubectl(const std::string& version, std::vector<std::string> args,
                        const std::string& kubeconfig = "") {
    std::vector<std::string> argv = {absl::StrCat(kKubectlDir, "/kubectl.", version),
                                     "--kubeconfig", kubeconfig.empty() ? Kubeconfig() : kubeconfig,
                                     "--cache-dir", root_.Path("kube-cache-" + version)};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> run =
        RunCommand(argv, absl::Seconds(60), {{"HOME", Root()}, {"KUBECONFIG", ""}});
    if (!run.ok()) return CommandResult{.exit_code = -1, .out = "", .err = run.status().ToString()};
    return *run;
  }

  // The manager, both example drivers, and a pod with two GPUs of the device plugin.
  void StartNode() {
    ASSERT_NO_FATAL_FAILURE(StartAll());
    ASSERT_NO_FATAL_FAILURE(StartGpuPlugin());
    ASSERT_TRUE(WaitForAllocatable("example.com/gpu", 8)) << DriverLogs();
    // The device manager knows the devices at once; the Node object gets them at the node status
    // loop's next sync (every second, later on a loaded machine), as with the kubelet. A kubectl
    // user waits for them the same way.
    ASSERT_TRUE(WaitUntil([&] {
      CommandResult gpus = Kubectl(
          versions_.front(),
          {"get", "node", "node-a", "-o", "jsonpath={.status.allocatable.example\\.com/gpu}"});
      return gpus.exit_code == 0 && gpus.out == "8";
    })) << DriverLogs();
    KdpctlResult applied =
        Kdpctl({"apply", "-f", absl::StrCat(KDP_SOURCE_DIR, "/examples/pods/gpu-pod.yaml")});
    ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  }

  std::vector<std::string> versions_;
};

TEST_F(KubectlE2E, EveryVersionReadsTheNodeItsDevicesAndItsPods) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const std::string pod = "trainer";  // examples/pods/gpu-pod.yaml
  for (const std::string& version : versions_) {
    SCOPED_TRACE("kubectl " + version);
    CommandResult server = Kubectl(version, {"version", "-o", "json"});
    ASSERT_EQ(server.exit_code, 0) << server.err;
    EXPECT_THAT(server.out, HasSubstr("\"gitVersion\": \"v1.34.0\""));

    // Server-side printing: the API server's columns, the node Ready.
    CommandResult nodes = Kubectl(version, {"get", "nodes"});
    ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
    EXPECT_THAT(nodes.out, ContainsRegex("NAME +STATUS +ROLES +AGE +VERSION"));
    EXPECT_THAT(nodes.out, ContainsRegex("node-a +Ready +<none> +[0-9]+[smhd] +v1.34.0"));

    // Capacity is every device, allocatable the healthy ones, as the kubelet reports them.
    CommandResult gpus =
        Kubectl(version, {"get", "node", "node-a", "-o",
                          "jsonpath={.status.capacity.example\\.com/gpu} "
                          "{.status.allocatable.example\\.com/gpu} {.status.capacity.cpu}"});
    ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
    EXPECT_THAT(gpus.out, ContainsRegex("^8 8 [0-9]+$"));

    // describe node: capacity, the pod that runs, and its GPUs in Allocated resources.
    CommandResult described = Kubectl(version, {"describe", "node", "node-a"});
    ASSERT_EQ(described.exit_code, 0) << described.err;
    EXPECT_THAT(described.out, ContainsRegex("Capacity:(.|\n)*example.com/gpu: +8"));
    EXPECT_THAT(described.out, ContainsRegex("Allocatable:(.|\n)*example.com/gpu: +8"));
    EXPECT_THAT(described.out, HasSubstr("Ready "));
    EXPECT_THAT(described.out, HasSubstr("KubeletReady"));
    EXPECT_THAT(described.out, ContainsRegex("Non-terminated Pods: +\\(1 in total\\)"));
    EXPECT_THAT(described.out, HasSubstr(pod));
    // The trainer and its sidecar hold 2 + 1 GPUs (the init container's 2 are reused); kubectl
    // before 1.29 does not know sidecars and sums them as init containers (max 2).
    const bool knows_sidecars = version >= "1.29";
    EXPECT_THAT(described.out,
                ContainsRegex(knows_sidecars ? "example.com/gpu +3 +3" : "example.com/gpu +2 +2"));

    // The pod, Running, with its Scheduled event.
    CommandResult pods = Kubectl(version, {"get", "pods", "-A"});
    ASSERT_EQ(pods.exit_code, 0) << pods.err;
    EXPECT_THAT(pods.out, ContainsRegex("NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE"));
    EXPECT_THAT(pods.out, ContainsRegex(absl::StrCat("default +", pod, " +2/2 +Running +0")));
    CommandResult describe_pod = Kubectl(version, {"describe", "pod", pod});
    ASSERT_EQ(describe_pod.exit_code, 0) << describe_pod.err;
    EXPECT_THAT(describe_pod.out, ContainsRegex("Status: +Running"));
    EXPECT_THAT(describe_pod.out, ContainsRegex("Normal +Scheduled .*Successfully assigned"));
    // kubectl wait sees the Ready condition; kubectl logs gets a clear refusal.
    CommandResult ready = Kubectl(
        version, {"wait", "--for=condition=Ready", absl::StrCat("pod/", pod), "--timeout=30s"});
    EXPECT_EQ(ready.exit_code, 0) << ready.out << ready.err;
    EXPECT_THAT(ready.out, HasSubstr("condition met"));
    CommandResult logs = Kubectl(version, {"logs", pod});
    EXPECT_NE(logs.exit_code, 0);
    EXPECT_THAT(logs.err, HasSubstr("kdp-manager runs no containers"));

    // The DRA objects, with the API server's columns.
    CommandResult slices = Kubectl(version, {"get", "resourceslices"});
    ASSERT_EQ(slices.exit_code, 0) << slices.err;
    EXPECT_THAT(slices.out, ContainsRegex("NAME +NODE +DRIVER +POOL +AGE"));
    EXPECT_THAT(slices.out, ContainsRegex("node-a +gpu.example.com +node-a"));

    CommandResult resources = Kubectl(version, {"api-resources"});
    ASSERT_EQ(resources.exit_code, 0) << resources.err;
    for (const char* line :
         {"pods +po +v1 +true +Pod", "nodes +no +v1 +false +Node",
          "namespaces +ns +v1 +false +Namespace",
          "resourceslices +resource.k8s.io/v1 +false +ResourceSlice", "events +ev +v1 +true +Event",
          "events +events.k8s.io/v1 +true +Event"}) {
      EXPECT_THAT(resources.out, ContainsRegex(line));
    }

    // The same events through events.k8s.io/v1: the core columns, the group's own shape, and
    // explain from its schema.
    CommandResult new_events = Kubectl(version, {"get", "events.events.k8s.io", "-A"});
    ASSERT_EQ(new_events.exit_code, 0) << new_events.err;
    EXPECT_THAT(new_events.out, ContainsRegex("NAMESPACE +LAST SEEN +TYPE +REASON +OBJECT"));
    EXPECT_THAT(new_events.out,
                ContainsRegex(absl::StrCat("default +[0-9]+[smhd] +Normal +Scheduled +pod/", pod)));
    CommandResult yaml =
        Kubectl(version, {"get", "events.v1.events.k8s.io", "-n", "default", "-o", "yaml"});
    ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
    EXPECT_THAT(yaml.out, HasSubstr("apiVersion: events.k8s.io/v1"));
    EXPECT_THAT(yaml.out, ContainsRegex("regarding:(.|\n)*name: " + pod));
    EXPECT_THAT(yaml.out, HasSubstr("note: Successfully assigned"));
    EXPECT_THAT(yaml.out, Not(HasSubstr("involvedObject")));
    // kubectl's explain parser takes "events.events.k8s.io" as the core `events` (discovery
    // lists the core group first, and "events" prefixes the name) followed by the fields
    // events.k8s.io, on any cluster: the group's schema is explained with --api-version.
    CommandResult explained =
        Kubectl(version, {"explain", "events", "--api-version=events.k8s.io/v1"});
    ASSERT_EQ(explained.exit_code, 0) << explained.out << explained.err;
    EXPECT_THAT(explained.out, HasSubstr("events.k8s.io"));
    EXPECT_THAT(explained.out, HasSubstr("regarding"));
    EXPECT_THAT(explained.out, HasSubstr("reportingController"));
    CommandResult namespaces = Kubectl(version, {"get", "ns"});
    ASSERT_EQ(namespaces.exit_code, 0) << namespaces.err;
    EXPECT_THAT(namespaces.out, ContainsRegex("kube-system +Active"));
  }
}

// kubectl apply as a user runs it: validation on (OpenAPI v2 for 1.27, v3 with fieldValidation
// after), created, then unchanged, then configured through a patch; explain from the schemas.
TEST_F(KubectlE2E, EveryVersionAppliesTheDraManifestsTwiceAndExplains) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  const std::string manifests = ManifestsDir();
  for (const std::string& version : versions_) {
    SCOPED_TRACE("kubectl " + version);
    for (const char* file : {"deviceclass.yaml", "claim-template.yaml"}) {
      const std::string path = absl::StrCat(manifests, "/", file);
      CommandResult first = Kubectl(version, {"apply", "-f", path});
      ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
      EXPECT_THAT(first.out, ContainsRegex(" (created|unchanged)\n"));
      CommandResult second = Kubectl(version, {"apply", "-f", path});
      ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
      EXPECT_THAT(second.out, HasSubstr(" unchanged"));
    }
    // A changed label is a patch: configured, and the change is there.
    CommandResult labelled =
        Kubectl(version, {"label", "deviceclass", "gpu.example.com",
                          absl::StrCat("tried-", version, "=yes"), "--overwrite"});
    ASSERT_EQ(labelled.exit_code, 0) << labelled.err;
    EXPECT_THAT(labelled.out, HasSubstr("labeled"));
    CommandResult classes = Kubectl(version, {"get", "deviceclasses", "--show-labels"});
    ASSERT_EQ(classes.exit_code, 0) << classes.err;
    EXPECT_THAT(classes.out, HasSubstr(absl::StrCat("tried-", version, "=yes")));
    // A JSON patch whose test does not hold decoded and failed to apply: 422, in the API
    // server's words (patch.go), and nothing changed; one that holds applies.
    CommandResult failed_test =
        Kubectl(version, {"patch", "deviceclass", "gpu.example.com", "--type=json", "-p",
                          R"([{"op": "test", "path": "/metadata/labels/absent", "value": "x"}])"});
    EXPECT_NE(failed_test.exit_code, 0) << failed_test.out;
    EXPECT_THAT(failed_test.err,
                HasSubstr("the server rejected our request due to an error in our request"));
    CommandResult json_patched = Kubectl(
        version,
        {"patch", "deviceclass", "gpu.example.com", "--type=json", "-p",
         absl::StrCat(R"([{"op": "test", "path": "/metadata/labels/tried-)", version,
                      R"(", "value": "yes"}, {"op": "add", "path": "/metadata/labels/json-)",
                      absl::StrReplaceAll(version, {{".", ""}}), R"(", "value": "yes"}])")});
    ASSERT_EQ(json_patched.exit_code, 0) << json_patched.out << json_patched.err;
    EXPECT_THAT(json_patched.out, HasSubstr("patched"));
    CommandResult templates = Kubectl(version, {"get", "resourceclaimtemplates"});
    ASSERT_EQ(templates.exit_code, 0) << templates.err;
    EXPECT_THAT(templates.out, ContainsRegex("two-gpus +[0-9]+[smhd]"));

    CommandResult explained = Kubectl(version, {"explain", "resourceclaims.spec.devices"});
    ASSERT_EQ(explained.exit_code, 0) << explained.out << explained.err;
    EXPECT_THAT(explained.out, HasSubstr("requests"));
    CommandResult pods = Kubectl(version, {"explain", "pods.spec.containers.resources"});
    ASSERT_EQ(pods.exit_code, 0) << pods.out << pods.err;
    EXPECT_THAT(pods.out, HasSubstr("limits"));
  }
  // Server-side apply is refused cleanly.
  CommandResult ssa = Kubectl(versions_.back(), {"apply", "--server-side", "-f",
                                                 absl::StrCat(manifests, "/deviceclass.yaml")});
  EXPECT_NE(ssa.exit_code, 0);
  EXPECT_THAT(ssa.err, HasSubstr("Server-side apply not available on the server"));
}

// One admission path: a Pod created with kubectl is admitted as kdpctl admits one (its claim made
// from the template, allocated, prepared: Running with status.resourceClaimStatuses and a CDI
// spec), applied again it is unchanged, a pod that cannot fit is Failed with the kubelet's reason
// and a Warning event, and kubectl delete frees the devices and the CDI spec.
TEST_F(KubectlE2E, EveryVersionRunsAPodWithAClaimAndDeleteFreesIt) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  const std::string manifests = ManifestsDir();
  for (const std::string& version : versions_) {
    SCOPED_TRACE("kubectl " + version);
    for (const char* file : {"deviceclass.yaml", "claim-template.yaml"}) {
      CommandResult applied = Kubectl(version, {"apply", "-f", absl::StrCat(manifests, "/", file)});
      ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
    }
    // examples/dra-driver/manifests/pod.yaml under a name of this version's.
    const std::string pod = absl::StrCat("dra-trainer-", absl::StrReplaceAll(version, {{".", ""}}));
    const std::string path = root_.Path(pod + ".yaml");
    {
      std::ofstream out(path);
      out << absl::StrReplaceAll(ReadFile(manifests + "/pod.yaml"),
                                 {{"name: dra-trainer", "name: " + pod}});
    }
    // kubectl get -w (server-side printing of watch events) shows the pod as it comes.
    absl::StatusOr<std::unique_ptr<Subprocess>> watching = Subprocess::Start(
        {absl::StrCat(kKubectlDir, "/kubectl.", version), "--kubeconfig", Kubeconfig(),
         "--cache-dir", root_.Path("kube-cache-" + version), "get", "pods", "-w"},
        {.env = {{"HOME", Root()}, {"KUBECONFIG", ""}}});
    ASSERT_TRUE(watching.ok()) << watching.status();
    CommandResult created = Kubectl(version, {"apply", "-f", path});
    ASSERT_EQ(created.exit_code, 0) << created.out << created.err << DriverLogs();
    EXPECT_TRUE(WaitUntil(
        [&] {
          return ::testing::Value((*watching)->Output(),
                                  ContainsRegex(absl::StrCat(pod, " +1/1 +Running +0")));
        },
        absl::Seconds(20)))
        << (*watching)->Output();
    EXPECT_THAT((*watching)->Output(), ContainsRegex("NAME +READY +STATUS +RESTARTS +AGE"));
    watching->reset();
    EXPECT_THAT(created.out, HasSubstr(absl::StrCat("pod/", pod, " created")));
    CommandResult again = Kubectl(version, {"apply", "-f", path});
    ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_THAT(again.out, HasSubstr(absl::StrCat("pod/", pod, " unchanged")));
    CommandResult ready = Kubectl(
        version, {"wait", "--for=condition=Ready", absl::StrCat("pod/", pod), "--timeout=30s"});
    EXPECT_EQ(ready.exit_code, 0) << ready.out << ready.err;
    CommandResult status =
        Kubectl(version, {"get", "pod", pod, "-o",
                          "jsonpath={.status.phase} {.status.resourceClaimStatuses[0].name} "
                          "{.status.resourceClaimStatuses[0].resourceClaimName}"});
    ASSERT_EQ(status.exit_code, 0) << status.err;
    EXPECT_THAT(status.out, ContainsRegex(absl::StrCat("^Running gpus ", pod, "-gpus-[a-z0-9]+$")));
    EXPECT_EQ(CdiSpecs().size(), 1u);
    // kdpctl sees the same pod, with its CDI devices.
    KdpctlResult listed = Kdpctl({"get", "pods"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_THAT(listed.out, HasSubstr(pod));

    CommandResult deleted = Kubectl(version, {"delete", "pod", pod});
    ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
    EXPECT_THAT(deleted.out, HasSubstr(absl::StrCat("pod \"", pod, "\" deleted")));
    EXPECT_TRUE(CdiSpecs().empty());
    CommandResult gone = Kubectl(version, {"get", "pod", pod});
    EXPECT_NE(gone.exit_code, 0);
    EXPECT_THAT(gone.err, HasSubstr(absl::StrCat("pods \"", pod, "\" not found")));
  }

  // A misspelt field is refused (kubectl's default --validate=strict asks for server-side
  // Strict): `limts` would have asked for no device.
  const std::string typo = root_.Path("typo.yaml");
  {
    std::ofstream out(typo);
    out << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containers:\n"
           "  - name: main\n    image: x\n    resources:\n      limts:\n"
           "        example.com/gpu: 1\n";
  }
  for (const std::string& version : versions_) {
    SCOPED_TRACE("kubectl " + version);
    CommandResult refused = Kubectl(version, {"apply", "-f", typo});
    EXPECT_NE(refused.exit_code, 0) << refused.out;
    EXPECT_THAT(refused.err, HasSubstr("strict decoding error: unknown field "
                                       "\"spec.containers[0].resources.limts\""));
  }
  EXPECT_NE(Kubectl(versions_.back(), {"get", "pod", "typo"}).exit_code, 0);

  // A pod asking for a device-plugin resource no plugin serves: Failed, OutOf<resource>, with the
  // kubelet's Warning event, shown by describe; deleting it is allowed as for any pod.
  const std::string version = versions_.back();
  const std::string big = root_.Path("big.yaml");
  {
    std::ofstream out(big);
    out << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n"
           "  - name: main\n    image: x\n    resources:\n      limits:\n"
           "        example.com/gpu: 1\n";
  }
  CommandResult created = Kubectl(version, {"create", "-f", big});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  CommandResult pods = Kubectl(version, {"get", "pod", "big"});
  ASSERT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_THAT(pods.out, ContainsRegex("big +0/1 +OutOfexample.com/gpu +0"));
  CommandResult events = Kubectl(
      version, {"get", "events", "--field-selector", "involvedObject.name=big,type=Warning"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out, ContainsRegex("Warning +OutOfexample.com/gpu +pod/big"));
  CommandResult described = Kubectl(version, {"describe", "pod", "big"});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  EXPECT_THAT(described.out, ContainsRegex("Status: +Failed"));
  EXPECT_THAT(described.out, ContainsRegex("Warning +OutOfexample.com/gpu"));
  // What the API acknowledged survives a crash of the manager: the refused pod is still there,
  // Failed, and a pod kubectl created keeps its labels and kubectl's last-applied configuration,
  // so applying it again is unchanged.
  const std::string kept = root_.Path("kept.yaml");
  {
    std::ofstream out(kept);
    out << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kept\n  labels:\n    app: kept\n"
           "spec:\n  containers:\n  - name: main\n    image: x\n";
  }
  CommandResult kept_created = Kubectl(version, {"apply", "-f", kept});
  ASSERT_EQ(kept_created.exit_code, 0) << kept_created.out << kept_created.err;
  ASSERT_NO_FATAL_FAILURE(StopManager(SIGKILL));
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  ASSERT_TRUE(WaitUntil([&] {
    return Kubectl(version, {"get", "pod", "kept"}).exit_code == 0;
  })) << DriverLogs();
  CommandResult after = Kubectl(version, {"get", "pod", "big", "kept", "--show-labels"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_THAT(after.out, ContainsRegex("big +0/1 +OutOfexample.com/gpu +0"));
  EXPECT_THAT(after.out, ContainsRegex("kept +1/1 +Running +0 +[0-9]+[smhd] +app=kept"));
  CommandResult kept_again = Kubectl(version, {"apply", "-f", kept});
  ASSERT_EQ(kept_again.exit_code, 0) << kept_again.out << kept_again.err;
  EXPECT_THAT(kept_again.out, HasSubstr("pod/kept unchanged"));

  CommandResult twice = Kubectl(version, {"create", "-f", big});
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_THAT(twice.err, HasSubstr("pods \"big\" already exists"));
  CommandResult deleted = Kubectl(version, {"delete", "pod", "big"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
}

TEST_F(KubectlE2E, AWrongTokenOrAnUntrustedServerIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  const KubeconfigParts api = ReadKubeconfigParts(Kubeconfig());
  std::string text;
  {
    std::ifstream in(Kubeconfig());
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The same file with another token.
  std::string wrong_token = text;
  const size_t at = wrong_token.find(api.token);
  ASSERT_NE(at, std::string::npos);
  wrong_token.replace(at, api.token.size(), std::string(64, 'f'));
  const std::string wrong_token_path = root_.Path("wrong-token.kubeconfig");
  std::ofstream(wrong_token_path) << wrong_token;
  // The same file without its CA: the server's certificate is not trusted.
  std::string no_ca;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StrContains(line, "certificate-authority-data")) absl::StrAppend(&no_ca, line, "\n");
  }
  const std::string no_ca_path = root_.Path("no-ca.kubeconfig");
  std::ofstream(no_ca_path) << no_ca;

  const std::string& version = versions_.back();
  CommandResult refused = Kubectl(version, {"get", "nodes"}, wrong_token_path);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("You must be logged in to the server"));
  CommandResult untrusted = Kubectl(version, {"get", "nodes"}, no_ca_path);
  EXPECT_NE(untrusted.exit_code, 0);
  EXPECT_THAT(untrusted.err, HasSubstr("certificate signed by unknown authority"));
  CommandResult ok = Kubectl(version, {"get", "nodes"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Debian's python3-kubernetes (the client the Python world uses) with the kubeconfig alone.
TEST_F(KubectlE2E, ThePythonClientListsWatchesReadsEventsAndCreatesAndDeletesAPod) {
  if (::access("/usr/lib/python3/dist-packages/kubernetes/__init__.py", R_OK) != 0) {
    GTEST_SKIP() << "python3-kubernetes is not installed (scripts/deps installs it)";
  }
  ASSERT_NO_FATAL_FAILURE(StartNode());
  absl::StatusOr<CommandResult> run =
      RunCommand({"/usr/bin/python3",
                  absl::StrCat(KDP_SOURCE_DIR, "/tests/integration/python_client_check.py"),
                  Kubeconfig(), "node-a"},
                 absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 0) << run->out << run->err;
  EXPECT_THAT(run->out, HasSubstr("node node-a Ready example.com/gpu=8/8"));
  EXPECT_THAT(run->out, ContainsRegex("pod default/[a-z0-9-]+ Running"));
  EXPECT_THAT(run->out, ContainsRegex("watch ADDED default/[a-z0-9-]+"));
  EXPECT_THAT(run->out, ContainsRegex("event Scheduled Pod default/[a-z0-9-]+"));
  EXPECT_THAT(run->out, ContainsRegex("events.k8s.io Scheduled Pod default/[a-z0-9-]+"));
  EXPECT_THAT(run->out, HasSubstr("events.k8s.io created from-python.check Checked by python: "
                                  "written through events.k8s.io example.com/python"));
  EXPECT_THAT(run->out, HasSubstr("created from-python Running node-a python"));
  EXPECT_THAT(run->out, HasSubstr("gone 404"));
}

// Issue 18, partitionable devices: the example driver publishes each GPU whole and as MIG-like
// partitions sharing its counters (in a slice of their own); kubectl shows the counters; a pod
// with two 1g partitions of GPU 0 and a pod with the whole GPU 0 are never admitted together.
TEST_F(KubectlE2E, PartitionsAndTheWholeGpuShareCountersAndAreNeverAllocatedTogether) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  ASSERT_NO_FATAL_FAILURE(StartDriver({"--layout", "partitions"}));
  // 8 GPUs, each whole and as 4 x 1g and 2 x 2g partitions.
  ASSERT_TRUE(WaitForDriver(kGpuDriver, 8 * 7)) << DriverLogs();
  const std::string kubectl = versions_.back();
  CommandResult yaml = Kubectl(kubectl, {"get", "resourceslices", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("sharedCounters:"));
  EXPECT_THAT(yaml.out, HasSubstr("consumesCounters:"));
  EXPECT_THAT(yaml.out, HasSubstr("counterSet: gpu0"));
  EXPECT_THAT(yaml.out, HasSubstr("resourceSliceCount: 2"));

  const std::string gpu0 = "device.attributes[\"gpu.example.com\"].index == 0";
  const std::string whole =
      absl::StrCat(gpu0, " && !has(device.attributes[\"gpu.example.com\"].profile)");
  // A partition carries "profile"; a whole GPU does not (a missing key is a CEL error: has()).
  const std::string part =
      absl::StrCat(gpu0, " && has(device.attributes[\"gpu.example.com\"].profile) && ",
                   "device.attributes[\"gpu.example.com\"].profile == \"1g\"");
  KdpctlResult objects = Apply(absl::StrCat(DeviceClass(kGpuDriver, kGpuDriver), "---\n",
                                            ClaimTemplate("whole", 1, whole), "---\n",
                                            ClaimTemplate("two-parts", 2, part)));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;

  nlohmann::json parts = ApplyPod(ClaimPod("parts", "two-parts"));
  ASSERT_EQ(parts["admitted"], true) << parts << DriverLogs();
  std::vector<std::string> devices;
  for (const auto& device : parts["claims"][0]["devices"]) devices.push_back(device["device"]);
  EXPECT_THAT(devices, ::testing::ElementsAre("gpu0-1g-0", "gpu0-1g-1"));
  nlohmann::json refused = ApplyPod(ClaimPod("whole", "whole"));
  EXPECT_EQ(refused["admitted"], false) << refused;
  EXPECT_EQ(refused["reason"], "FailedScheduling") << refused;
  EXPECT_THAT(refused.value("message", ""),
              HasSubstr("without enough capacity or shared counters left"));

  // Once the partitions go, the whole GPU fits, and then no partition of it does.
  ASSERT_EQ(Kdpctl({"delete", "pod", "parts"}).exit_code, 0);
  nlohmann::json admitted = ApplyPod(ClaimPod("whole-2", "whole"));
  ASSERT_EQ(admitted["admitted"], true) << admitted << DriverLogs();
  EXPECT_EQ(admitted["claims"][0]["devices"][0]["device"], "gpu0");
  nlohmann::json again = ApplyPod(ClaimPod("parts-2", "two-parts"));
  EXPECT_EQ(again["admitted"], false) << again;
}

// Issue 18, consumable capacity: two claims share GPU 0 of the shareable layout, each allocated
// with its own shareID and consumedCapacity, which the driver's Prepare received (its CDI device
// and env carry them) and the pod's status shows.
TEST_F(KubectlE2E, TwoClaimsShareOneGpuEachWithItsOwnShareId) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  ASSERT_NO_FATAL_FAILURE(StartDriver({"--layout", "shareable"}));
  ASSERT_TRUE(WaitForDriver()) << DriverLogs();
  const std::string kubectl = versions_.back();
  CommandResult yaml = Kubectl(kubectl, {"get", "resourceslices", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("allowMultipleAllocations: true"));
  EXPECT_THAT(yaml.out, HasSubstr("requestPolicy:"));

  const std::string template_yaml = absl::StrCat(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: gpu0-4gi\n"
      "  namespace: default\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n"
      "        exactly:\n          deviceClassName: gpu.example.com\n          selectors:\n"
      "          - cel:\n              expression: 'device.attributes[\"gpu.example.com\"].index "
      "== 0'\n"
      "          capacity:\n            requests:\n              memory: 4Gi\n");
  KdpctlResult objects =
      Apply(absl::StrCat(DeviceClass(kGpuDriver, kGpuDriver), "---\n", template_yaml));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;
  std::vector<std::string> shares;
  for (const char* name : {"share-a", "share-b"}) {
    nlohmann::json pod = ApplyPod(ClaimPod(name, "gpu0-4gi"));
    ASSERT_EQ(pod["admitted"], true) << pod << DriverLogs();
    const nlohmann::json& device = pod["claims"][0]["devices"][0];
    EXPECT_EQ(device["device"], "gpu0") << device;
    ASSERT_TRUE(device.contains("share_id")) << device;
    const std::string share = device["share_id"];
    shares.push_back(share);
    // The driver prepared the share: its CDI device ID names it.
    ASSERT_EQ(device["cdi_device_ids"].size(), 1u) << device;
    EXPECT_THAT(device["cdi_device_ids"][0].get<std::string>(), HasSubstr(share));
    // The claim's allocation records the share and what it consumes.
    const std::string claim = pod["claims"][0]["claim_name"];
    CommandResult got = Kubectl(kubectl, {"get", "resourceclaim", claim, "-o", "json"});
    ASSERT_EQ(got.exit_code, 0) << got.err;
    nlohmann::json result =
        nlohmann::json::parse(got.out)["status"]["allocation"]["devices"]["results"][0];
    EXPECT_EQ(result["shareID"], share) << result;
    EXPECT_EQ(result["consumedCapacity"]["memory"], "4Gi") << result;
  }
  EXPECT_NE(shares[0], shares[1]);
  // The CDI specs hold each share's env for the container.
  std::string specs;
  for (const std::string& name : CdiSpecs()) specs += ReadFile(CdiRoot() + "/" + name);
  for (const std::string& share : shares) {
    EXPECT_THAT(specs, HasSubstr(absl::StrCat("GPU_DEVICE_0_SHARE_ID=", share)));
  }
  EXPECT_THAT(specs, HasSubstr("GPU_DEVICE_0_MEMORY=4Gi"));
}

// Issue 18, network-attached devices and taints: a controller process (kdp::ResourceSlicePublisher,
// no node) publishes an allNodes pool of two NICs, one tainted NoSchedule; kubectl shows the pool;
// a claim without a toleration is never allocated the tainted NIC, and one whose request
// tolerates the taint gets past allocation (it then fails only for want of a driver to prepare).
TEST_F(KubectlE2E, AControllerPublishesANetworkPoolAndATaintedDeviceNeedsAToleration) {
  ASSERT_NO_FATAL_FAILURE(StartDraManager());
  absl::StatusOr<std::unique_ptr<kdp::ResourceSlicePublisher>> publisher =
      kdp::ResourceSlicePublisher::Create(
          {.driver = "fabric.example.com", .kubeconfig = Kubeconfig()});
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  kdp::DraDevice tainted{.name = "nic-0", .attributes = {{"rdma", true}}};
  tainted.taints.push_back(
      {.key = "example.com/maintenance", .effect = kdp::TaintEffect::kNoSchedule});
  kdp::DraDevice other{.name = "nic-1", .attributes = {{"rdma", false}}};
  ASSERT_TRUE((*publisher)
                  ->Publish({kdp::DraPool{
                      .name = "fabric", .devices = {tainted, other}, .all_nodes = true}})
                  .ok());
  ASSERT_TRUE((*publisher)->WaitUntilPublished(absl::Seconds(30))) << DriverLogs();
  const std::string kubectl = versions_.back();
  CommandResult yaml = Kubectl(kubectl, {"get", "resourceslices", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("allNodes: true"));
  EXPECT_THAT(yaml.out, HasSubstr("key: example.com/maintenance"));
  EXPECT_THAT(yaml.out, HasSubstr("effect: NoSchedule"));
  EXPECT_THAT(yaml.out, HasSubstr("timeAdded:"));  // stamped by the SDK

  const std::string rdma = "device.attributes[\"fabric.example.com\"].rdma";
  const std::string tolerating = absl::StrCat(
      "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: tolerating\n"
      "  namespace: default\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n"
      "        exactly:\n          deviceClassName: fabric.example.com\n          selectors:\n"
      "          - cel:\n              expression: '",
      rdma,
      "'\n          tolerations:\n"
      "          - key: example.com/maintenance\n            operator: Exists\n");
  KdpctlResult objects = Apply(
      absl::StrCat(DeviceClass("fabric.example.com", "fabric.example.com"), "---\n",
                   ClaimTemplate("rdma", 1, rdma, "fabric.example.com"), "---\n", tolerating));
  ASSERT_EQ(objects.exit_code, 0) << objects.out << objects.err;

  nlohmann::json refused = ApplyPod(ClaimPod("untolerating", "rdma"));
  EXPECT_EQ(refused["admitted"], false) << refused;
  EXPECT_EQ(refused["reason"], "FailedScheduling") << refused;
  EXPECT_THAT(refused.value("message", ""), HasSubstr("1 tainted without a matching toleration"));
  nlohmann::json allocated = ApplyPod(ClaimPod("tolerating", "tolerating"));
  EXPECT_EQ(allocated["admitted"], false) << allocated;  // no driver serves fabric.example.com
  EXPECT_THAT(allocated.value("message", ""), Not(HasSubstr("tainted"))) << allocated;
  EXPECT_THAT(allocated.value("message", ""), HasSubstr("fabric.example.com")) << allocated;
  (*publisher)->Stop();
}

}  // namespace
}  // namespace kdp::testing
