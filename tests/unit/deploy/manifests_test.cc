// Static checks of the Kubernetes manifests in deploy/kubernetes: what the API server and the
// kubelet require of them (kinds and API versions, selectors, volumes), and that they agree with
// the binaries and the SDK they deploy: host paths equal the paths the binaries derive from their
// flags, probes use the metrics port, RBAC covers every API call the SDK makes and no more, the
// DeviceClass selects the example driver. No cluster is needed (none is available in CI).
#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "examples/dra-driver/gpu_dra_driver.h"
#include "examples/gpu-plugin/gpu_plugin.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kdp/dra_driver.h"
#include "kdp/plugin_runner.h"
#include "tests/unit/deploy/deploy_files.h"
#include "yaml-cpp/yaml.h"

namespace kdp::deploy_test {
namespace {

namespace fs = std::filesystem;

struct Doc {
  std::string file = {};  // relative to the repository root
  YAML::Node node = {};
};

struct Manifests {
  std::vector<Doc> docs = {};
  std::vector<std::string> files = {};   // every YAML file under deploy/
  std::vector<std::string> errors = {};  // files that did not parse
};

const Manifests& Load() {
  static const Manifests* manifests = [] {
    auto* m = new Manifests();
    const fs::path root(Root());
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root / "deploy", ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
        m->files.push_back(fs::relative(it->path(), root).string());
      }
    }
    std::sort(m->files.begin(), m->files.end());
    for (const std::string& file : m->files) {
      try {
        for (const YAML::Node& node : YAML::LoadAllFromFile((root / file).string())) {
          if (!node.IsNull()) m->docs.push_back({.file = file, .node = node});
        }
      } catch (const YAML::Exception& e) {
        m->errors.push_back(file + ": " + e.what());
      }
    }
    return m;
  }();
  return *manifests;
}

// node[k0][k1]...; a null node when a key is missing or a value on the way is not a map
// (yaml-cpp throws when a missing key's node is indexed again).
YAML::Node At(const YAML::Node& node, std::initializer_list<std::string> keys) {
  // reset(), not operator=: assigning a YAML::Node overwrites the node it refers to.
  YAML::Node at;
  at.reset(node);
  for (const std::string& key : keys) {
    if (!at.IsMap()) return YAML::Node();
    const YAML::Node& map = at;
    const YAML::Node value = map[key];
    if (!value.IsDefined()) return YAML::Node();
    at.reset(value);
  }
  return at;
}

std::string Str(const YAML::Node& node) { return node.IsScalar() ? node.Scalar() : ""; }
std::string Kind(const Doc& d) { return Str(At(d.node, {"kind"})); }
std::string Name(const YAML::Node& n) { return Str(At(n, {"metadata", "name"})); }
std::string Namespace(const YAML::Node& n) { return Str(At(n, {"metadata", "namespace"})); }
std::string Where(const Doc& d) { return d.file + ": " + Kind(d) + " " + Name(d.node); }

std::vector<Doc> OfKind(const std::string& kind) {
  std::vector<Doc> out;
  for (const Doc& d : Load().docs) {
    if (Kind(d) == kind) out.push_back(d);
  }
  return out;
}

std::vector<std::string> Strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  if (seq.IsSequence()) {
    for (const YAML::Node& item : seq) out.push_back(Str(item));
  }
  return out;
}

// The binary a DaemonSet runs, from its image's repository name ("REGISTRY/kdp-gpu-plugin:TAG").
std::string BinaryOf(const YAML::Node& container) {
  std::string image = Str(At(container, {"image"}));
  image = image.substr(0, image.find_first_of(":@"));
  return image.substr(image.find_last_of('/') + 1);
}
constexpr char kGpuPlugin[] = "kdp-gpu-plugin";
constexpr char kDraDriver[] = "kdp-dra-driver";

// The value of `--flag=value` or `--flag value` in a container's args.
std::optional<std::string> Flag(const YAML::Node& container, const std::string& flag) {
  const std::vector<std::string> args = Strings(At(container, {"args"}));
  for (size_t i = 0; i < args.size(); ++i) {
    if (StartsWith(args[i], flag + "=")) return args[i].substr(flag.size() + 1);
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
  }
  return std::nullopt;
}

// The env var's downward-API field ("" when it has none or is not declared).
std::string EnvField(const YAML::Node& container, const std::string& var) {
  for (const YAML::Node& env : At(container, {"env"})) {
    if (Str(At(env, {"name"})) == var) return Str(At(env, {"valueFrom", "fieldRef", "fieldPath"}));
  }
  return "";
}

// "$(VAR)" -> "VAR"; "" when `value` is not exactly one variable reference.
std::string VarRef(const std::string& value) {
  if (value.size() > 3 && StartsWith(value, "$(") && value.back() == ')') {
    return value.substr(2, value.size() - 3);
  }
  return "";
}

// Each DaemonSet's containers, with the DaemonSet's document.
std::vector<std::pair<Doc, YAML::Node>> DaemonSetContainers() {
  std::vector<std::pair<Doc, YAML::Node>> out;
  for (const Doc& ds : OfKind("DaemonSet")) {
    for (const YAML::Node& c : At(ds.node, {"spec", "template", "spec", "containers"})) {
      out.emplace_back(ds, c);
    }
  }
  return out;
}

// A Kubernetes quantity in base units (bytes, cores); nullopt when malformed.
std::optional<double> Quantity(const std::string& q) {
  static const std::map<std::string, double> kSuffixes = {
      {"", 1},    {"m", 1e-3},    {"k", 1e3},        {"M", 1e6},
      {"G", 1e9}, {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
  const size_t end = q.find_first_not_of("0123456789.");
  if (end == 0 || q.empty()) return std::nullopt;
  auto suffix = kSuffixes.find(q.substr(end == std::string::npos ? q.size() : end));
  if (suffix == kSuffixes.end()) return std::nullopt;
  return std::stod(q.substr(0, end)) * suffix->second;
}

TEST(DeployManifests, EveryFileParses) {
  EXPECT_THAT(Load().errors, ::testing::IsEmpty());
  EXPECT_THAT(Load().files, ::testing::Contains("deploy/kubernetes/kustomization.yaml"));
  EXPECT_GE(Load().docs.size(), 8u);
}

TEST(DeployManifests, KindsHaveTheirApiVersionsAndScopes) {
  struct KindInfo {
    std::string api_version = {};
    bool namespaced = false;
  };
  const std::map<std::string, KindInfo> kKinds = {
      {"Namespace", {"v1", false}},
      {"ResourceQuota", {"v1", true}},
      {"ServiceAccount", {"v1", true}},
      {"Pod", {"v1", true}},
      {"DaemonSet", {"apps/v1", true}},
      {"ClusterRole", {"rbac.authorization.k8s.io/v1", false}},
      {"ClusterRoleBinding", {"rbac.authorization.k8s.io/v1", false}},
      {"PriorityClass", {"scheduling.k8s.io/v1", false}},
      {"DeviceClass", {"resource.k8s.io/v1", false}},
      {"ResourceClaimTemplate", {"resource.k8s.io/v1", true}},
      {"Kustomization", {"kustomize.config.k8s.io/v1beta1", false}},
  };
  std::set<std::string> namespaces;
  for (const Doc& d : OfKind("Namespace")) namespaces.insert(Name(d.node));
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const Doc& d : Load().docs) {
    auto kind = kKinds.find(Kind(d));
    if (kind == kKinds.end()) {
      ADD_FAILURE() << Where(d) << ": kind not in the allowed list";
      continue;
    }
    EXPECT_EQ(Str(At(d.node, {"apiVersion"})), kind->second.api_version) << Where(d);
    if (Kind(d) == "Kustomization") {
      EXPECT_EQ(fs::path(d.file).filename(), "kustomization.yaml") << Where(d);
      continue;
    }
    EXPECT_NE(Name(d.node), "") << Where(d) << ": no metadata.name";
    EXPECT_TRUE(seen.insert({Kind(d), Namespace(d.node), Name(d.node)}).second)
        << Where(d) << ": declared twice";
    if (!kind->second.namespaced) {
      EXPECT_EQ(Namespace(d.node), "") << Where(d) << ": cluster-scoped, yet has a namespace";
    } else if (Namespace(d.node) != "default") {
      EXPECT_TRUE(namespaces.count(Namespace(d.node)) > 0)
          << Where(d) << ": namespace " << Namespace(d.node) << " is not declared in deploy/";
    } else {
      // Only the example workloads go to "default".
      EXPECT_THAT(d.file, ::testing::HasSubstr("/examples/")) << Where(d);
    }
  }
}

TEST(DeployManifests, KustomizationsListEveryManifestAndOnlyExistingOnes) {
  const fs::path root(Root());
  std::set<std::string> listed;
  std::set<std::string> images_named;
  for (const Doc& k : OfKind("Kustomization")) {
    const fs::path dir = fs::path(k.file).parent_path();
    for (const std::string& resource : Strings(At(k.node, {"resources"}))) {
      const fs::path path = (dir / resource).lexically_normal();
      EXPECT_TRUE(fs::is_regular_file(root / path)) << k.file << " lists missing " << resource;
      listed.insert(path.string());
    }
    for (const YAML::Node& image : At(k.node, {"images"}))
      images_named.insert(Str(At(image, {"name"})));
  }
  for (const std::string& file : Load().files) {
    if (fs::path(file).filename() == "kustomization.yaml") continue;
    EXPECT_TRUE(listed.count(file) > 0) << file << " is in no kustomization.yaml's resources";
  }
  // `kustomize edit set image NAME=...` must reach every container.
  for (const auto& [ds, container] : DaemonSetContainers()) {
    EXPECT_TRUE(images_named.count(BinaryOf(container)) > 0)
        << Where(ds) << ": image " << Str(At(container, {"image"})) << " not in any images: list";
  }
}

TEST(DeployManifests, DaemonSetSelectorsMatchTheirTemplateLabels) {
  ASSERT_EQ(OfKind("DaemonSet").size(), 2u);
  for (const Doc& ds : OfKind("DaemonSet")) {
    const YAML::Node selector = At(ds.node, {"spec", "selector"});
    const YAML::Node labels = At(ds.node, {"spec", "template", "metadata", "labels"});
    EXPECT_TRUE(At(selector, {"matchExpressions"}).IsNull()) << Where(ds) << ": only matchLabels";
    ASSERT_TRUE(At(selector, {"matchLabels"}).IsMap() && At(selector, {"matchLabels"}).size() > 0)
        << Where(ds);
    for (const auto& entry : At(selector, {"matchLabels"})) {
      const std::string key = entry.first.Scalar();
      EXPECT_EQ(Str(At(labels, {key})), Str(entry.second))
          << Where(ds) << ": selector " << key << " does not match the template's label";
    }
  }
}

TEST(DeployManifests, VolumeMountsNameDeclaredVolumes) {
  for (const Doc& ds : OfKind("DaemonSet")) {
    const YAML::Node spec = At(ds.node, {"spec", "template", "spec"});
    std::set<std::string> volumes;
    for (const YAML::Node& v : At(spec, {"volumes"})) {
      EXPECT_TRUE(volumes.insert(Str(At(v, {"name"}))).second) << Where(ds) << ": volume twice";
    }
    std::set<std::string> mounted;
    for (const YAML::Node& c : At(spec, {"containers"})) {
      for (const YAML::Node& m : At(c, {"volumeMounts"})) {
        EXPECT_TRUE(volumes.count(Str(At(m, {"name"}))) > 0)
            << Where(ds) << ": mount of undeclared volume " << Str(At(m, {"name"}));
        mounted.insert(Str(At(m, {"name"})));
      }
    }
    EXPECT_EQ(mounted, volumes) << Where(ds) << ": a declared volume is not mounted";
  }
}

TEST(DeployManifests, HostPathsAreThePathsTheBinariesUse) {
  std::set<std::string> binaries;
  for (const auto& [ds, container] : DaemonSetContainers()) {
    const std::string binary = BinaryOf(container);
    binaries.insert(binary);
    std::set<std::string> expected;
    if (binary == kGpuPlugin) {
      // kdp::RunnerOptions: sockets and kubelet.sock in <kubelet-root>/device-plugins/.
      const std::string root =
          Flag(container, "--kubelet-root").value_or(RunnerOptions{}.kubelet_root);
      expected = {root + "/device-plugins"};
    } else if (binary == kDraDriver) {
      // kdp::DraRunnerOptions: registration socket in <kubelet-root>/plugins_registry/, DRA
      // socket, lock and checkpoint in <kubelet-root>/plugins/<driver>/; CDI specs in --cdi-root.
      const std::string root =
          Flag(container, "--kubelet-root").value_or(DraRunnerOptions{}.kubelet_root);
      expected = {root + "/plugins_registry", root + "/plugins/" + example::kGpuDriverName,
                  Flag(container, "--cdi-root").value_or(example::GpuDraDriverOptions{}.cdi_root)};
    } else {
      ADD_FAILURE() << Where(ds) << ": runs an unknown binary " << binary;
      continue;
    }
    std::map<std::string, YAML::Node> volumes;
    for (const YAML::Node& v : At(ds.node, {"spec", "template", "spec", "volumes"})) {
      volumes.emplace(Str(At(v, {"name"})), v);
    }
    std::set<std::string> mounted;
    for (const YAML::Node& m : At(container, {"volumeMounts"})) {
      const YAML::Node host_path = At(volumes[Str(At(m, {"name"}))], {"hostPath"});
      if (host_path.IsNull()) continue;
      // The same path inside and outside: the DRA endpoint the kubelet dials is the path the
      // driver reports, and the kubelet's view of a socket must be the plugin's.
      EXPECT_EQ(Str(At(host_path, {"path"})), Str(At(m, {"mountPath"}))) << Where(ds);
      EXPECT_THAT(Str(At(host_path, {"type"})), ::testing::AnyOf("Directory", "DirectoryOrCreate"))
          << Where(ds) << ": " << Str(At(m, {"mountPath"}));
      EXPECT_NE(Str(At(m, {"readOnly"})), "true") << Where(ds) << ": sockets are created there";
      mounted.insert(Str(At(m, {"mountPath"})));
    }
    EXPECT_EQ(mounted, expected) << Where(ds);
  }
  EXPECT_EQ(binaries, (std::set<std::string>{kGpuPlugin, kDraDriver}));
}

TEST(DeployManifests, ArgsAreFlagsOfTheBinaryAndReferenceDeclaredEnv) {
  for (const auto& [ds, container] : DaemonSetContainers()) {
    const std::string dir = BinaryOf(container) == kGpuPlugin ? "gpu-plugin" : "dra-driver";
    const std::string main_cc = ReadFile("examples/" + dir + "/main.cc");
    std::set<std::string> env;
    for (const YAML::Node& e : At(container, {"env"})) env.insert(Str(At(e, {"name"})));
    for (const std::string& arg : Strings(At(container, {"args"}))) {
      const std::string flag = arg.substr(0, arg.find('='));
      // An unknown flag makes the binary exit 2 (CLI11): every pod would crash-loop.
      EXPECT_THAT(main_cc, ::testing::HasSubstr("\"" + flag + "\""))
          << Where(ds) << ": " << flag << " is not a flag of examples/" << dir << "/main.cc";
      // The kubelet leaves "$(VAR)" as it is when VAR is not declared.
      for (size_t at = arg.find("$("); at != std::string::npos; at = arg.find("$(", at + 2)) {
        const std::string var = arg.substr(at + 2, arg.find(')', at) - at - 2);
        EXPECT_TRUE(env.count(var) > 0) << Where(ds) << ": " << arg << " uses undeclared " << var;
      }
    }
    if (BinaryOf(container) == kDraDriver && !Flag(container, "--node-name")) {
      // The driver exits 2 without a node name; the downward API gives the pod's node.
      EXPECT_EQ(EnvField(container, "NODE_NAME"), "spec.nodeName") << Where(ds);
    }
  }
}

TEST(DeployManifests, ProbesAndScrapingUseTheMetricsPort) {
  for (const auto& [ds, container] : DaemonSetContainers()) {
    const std::optional<std::string> address = Flag(container, "--metrics-address");
    ASSERT_TRUE(address.has_value()) << Where(ds) << ": no --metrics-address";
    const size_t colon = address->rfind(':');
    ASSERT_NE(colon, std::string::npos) << Where(ds) << ": " << *address;
    const std::string host = address->substr(0, colon);
    const std::string port = address->substr(colon + 1);
    // The kubelet probes the pod IP: the loopback default would fail every probe.
    EXPECT_EQ(EnvField(container, VarRef(host)), "status.podIP")
        << Where(ds) << ": --metrics-address host " << host << " is not the pod IP";
    std::map<std::string, std::string> ports;  // name -> number
    std::set<std::string> numbers;
    for (const YAML::Node& p : At(container, {"ports"})) {
      ports[Str(At(p, {"name"}))] = Str(At(p, {"containerPort"}));
      numbers.insert(Str(At(p, {"containerPort"})));
    }
    EXPECT_TRUE(numbers.count(port) > 0) << Where(ds) << ": no containerPort " << port;
    for (const char* probe : {"livenessProbe", "readinessProbe"}) {
      const YAML::Node get = At(container, {probe, "httpGet"});
      if (std::string(probe) == "livenessProbe") {
        ASSERT_TRUE(!get.IsNull()) << Where(ds) << ": no httpGet liveness probe";
      }
      if (get.IsNull()) continue;
      // Liveness only on what a restart cures (/livez); readiness on every check (/readyz).
      EXPECT_EQ(Str(At(get, {"path"})),
                std::string(probe) == "livenessProbe" ? "/livez" : "/readyz")
          << Where(ds) << " " << probe;
      const std::string probe_port = Str(At(get, {"port"}));
      EXPECT_EQ(ports.count(probe_port) > 0 ? ports[probe_port] : probe_port, port)
          << Where(ds) << " " << probe << " port " << probe_port;
    }
    const YAML::Node annotations = At(ds.node, {"spec", "template", "metadata", "annotations"});
    if (!At(annotations, {"prometheus.io/port"}).IsNull()) {
      EXPECT_EQ(Str(At(annotations, {"prometheus.io/port"})), port) << Where(ds);
    }
  }
}

TEST(DeployManifests, SurgeUpdatesGiveEachPodSocketsOfItsOwn) {
  for (const auto& [ds, container] : DaemonSetContainers()) {
    const YAML::Node strategy = At(ds.node, {"spec", "updateStrategy"});
    EXPECT_EQ(Str(At(strategy, {"type"})), "RollingUpdate") << Where(ds);
    const std::string surge = Str(At(strategy, {"rollingUpdate", "maxSurge"}));
    if (surge.empty() || surge == "0" || surge == "0%") continue;
    EXPECT_EQ(Str(At(strategy, {"rollingUpdate", "maxUnavailable"})), "0") << Where(ds);
    // Two pods of one node at once: their socket names must differ, so each pod needs a
    // suffix unique to it (its name or UID from the downward API).
    const char* flag = BinaryOf(container) == kGpuPlugin ? "--socket-suffix" : "--instance-suffix";
    const std::string field = EnvField(container, VarRef(Flag(container, flag).value_or("")));
    EXPECT_THAT(field, ::testing::AnyOf("metadata.name", "metadata.uid"))
        << Where(ds) << ": maxSurge " << surge << " without a per-pod " << flag;
  }
}

TEST(DeployManifests, ResourcesFitTheMeasuredFootprint) {
  // docs/benchmarks.md, footprint_benchmark: VmRSS of kdp-gpu-plugin with 1,000 devices and of
  // kdp-dra-driver with 64 devices. Requests must cover it; limits leave at least 2x.
  const std::map<std::string, double> kMeasuredMiB = {{kGpuPlugin, 14.3}, {kDraDriver, 19.3}};
  for (const auto& [ds, container] : DaemonSetContainers()) {
    const YAML::Node requests = At(container, {"resources", "requests"});
    const YAML::Node limits = At(container, {"resources", "limits"});
    for (const auto& entry : limits) {
      const std::string resource = entry.first.Scalar();
      std::optional<double> limit = Quantity(Str(entry.second));
      std::optional<double> request = Quantity(Str(At(requests, {resource})));
      ASSERT_TRUE(limit && request) << Where(ds) << ": " << resource << " request or limit";
      EXPECT_LE(*request, *limit) << Where(ds) << ": " << resource << " request above limit";
    }
    const std::optional<double> request = Quantity(Str(At(requests, {"memory"})));
    const std::optional<double> limit = Quantity(Str(At(limits, {"memory"})));
    ASSERT_TRUE(request && limit) << Where(ds) << ": memory request and limit are required";
    ASSERT_TRUE(Quantity(Str(At(requests, {"cpu"})))) << Where(ds) << ": no cpu request";
    const double measured = kMeasuredMiB.at(BinaryOf(container)) * 1048576.0;
    EXPECT_GE(*request, measured) << Where(ds);
    EXPECT_GE(*limit, 2 * measured) << Where(ds);
  }
}

TEST(DeployManifests, PodsAreCriticalTolerantAndLocked) {
  std::set<std::string> priority_classes = {"system-node-critical", "system-cluster-critical"};
  for (const Doc& d : OfKind("PriorityClass")) priority_classes.insert(Name(d.node));
  for (const Doc& ds : OfKind("DaemonSet")) {
    const YAML::Node spec = At(ds.node, {"spec", "template", "spec"});
    const std::string priority = Str(At(spec, {"priorityClassName"}));
    EXPECT_TRUE(priority_classes.count(priority) > 0) << Where(ds) << ": priority " << priority;
    if (StartsWith(priority, "system-")) {
      // For clusters that limit the critical classes to namespaces with a quota naming them.
      bool quota = false;
      for (const Doc& q : OfKind("ResourceQuota")) {
        for (const YAML::Node& e : At(q.node, {"spec", "scopeSelector", "matchExpressions"})) {
          const std::vector<std::string> values = Strings(At(e, {"values"}));
          quota = quota || (Namespace(q.node) == Namespace(ds.node) &&
                            Str(At(e, {"scopeName"})) == "PriorityClass" &&
                            std::count(values.begin(), values.end(), priority) > 0);
        }
      }
      EXPECT_TRUE(quota) << Where(ds) << ": no ResourceQuota for " << priority;
    }
    std::set<std::string> tolerated;
    for (const YAML::Node& t : At(spec, {"tolerations"})) {
      if (Str(At(t, {"operator"})) == "Exists") tolerated.insert(Str(At(t, {"key"})));
    }
    EXPECT_TRUE(tolerated.count("CriticalAddonsOnly") > 0) << Where(ds);
    EXPECT_TRUE(tolerated.count(example::GpuPluginOptions{}.resource_name) > 0)
        << Where(ds) << ": GPU nodes tainted with the resource name would not run it";
    for (const YAML::Node& c : At(spec, {"containers"})) {
      const YAML::Node security = At(c, {"securityContext"});
      EXPECT_EQ(Str(At(security, {"allowPrivilegeEscalation"})), "false") << Where(ds);
      EXPECT_NE(Str(At(security, {"privileged"})), "true") << Where(ds);
      EXPECT_THAT(Strings(At(security, {"capabilities", "drop"})), ::testing::Contains("ALL"))
          << Where(ds);
    }
  }
}

// Every Kubernetes API call the SDK makes (sdk/src), and the RBAC verb it needs. `literal` is the
// path literal in `file` that the call is built from; SdkApiPathsAreAllInTheTable keeps the
// table complete.
struct ApiCall {
  std::string verb = {};
  std::string group = {};
  std::string resource = {};
  std::string file = {};
  std::string literal = {};
};
const std::vector<ApiCall>& SdkApiCalls() {
  static const auto* calls = new std::vector<ApiCall>{
      // DraNodeServer::NodePrepareResources: client_->Get of each claim to prepare.
      {"get", "resource.k8s.io", "resourceclaims", "sdk/src/dra/node_server.cc",
       "/apis/resource.k8s.io/v1/namespaces/"},
      // ReconcileResourceSlices: client.Get(ResourceSliceListPath(...)), a list with
      // fieldSelector spec.nodeName and spec.driver.
      {"list", "resource.k8s.io", "resourceslices", "sdk/src/dra/slice_publisher.cc",
       "/apis/resource.k8s.io/v1/resourceslices"},
      // ReconcileResourceSlices: client.Post(kSlicesPath, ...) for each missing slice.
      {"create", "resource.k8s.io", "resourceslices", "sdk/src/dra/slice_publisher.cc",
       "/apis/resource.k8s.io/v1/resourceslices"},
      // ReconcileResourceSlices: client.Put(kSlicesPath/<name>, ...) for each changed slice.
      {"update", "resource.k8s.io", "resourceslices", "sdk/src/dra/slice_publisher.cc",
       "/apis/resource.k8s.io/v1/resourceslices"},
      // DeleteSlice (from ReconcileResourceSlices): client.Delete(kSlicesPath/<name>).
      {"delete", "resource.k8s.io", "resourceslices", "sdk/src/dra/slice_publisher.cc",
       "/apis/resource.k8s.io/v1/resourceslices"},
      // ResourceSlicePublisher::PublishOnce: client_->Get of the Node, for its UID (owner).
      {"get", "", "nodes", "sdk/src/dra/slice_publisher.cc", "/api/v1/nodes/"},
  };
  return *calls;
}

TEST(DeployManifests, SdkApiPathsAreAllInTheTable) {
  std::set<std::pair<std::string, std::string>> in_table;
  for (const ApiCall& call : SdkApiCalls()) {
    EXPECT_THAT(ReadFile(call.file), ::testing::HasSubstr("\"" + call.literal + "\""))
        << call.file << " no longer builds " << call.verb << " " << call.resource
        << " from that literal: update the table";
    in_table.insert({call.file, call.literal});
  }
  std::error_code ec;
  int scanned = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(Root()) / "sdk/src", ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = fs::relative(entry.path(), Root()).string();
    ++scanned;
    const std::string text = ReadFile(file);
    for (const char* prefix : {"\"/api/", "\"/apis/"}) {
      for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
        const size_t line_start = text.rfind('\n', at) + 1;  // npos + 1 == 0
        if (text.substr(line_start, at - line_start).find("//") != std::string::npos) continue;
        const std::string literal = text.substr(at + 1, text.find('"', at + 1) - at - 1);
        EXPECT_TRUE(in_table.count({file, literal}) > 0)
            << file << " calls the API server at \"" << literal
            << "\": add the call to SdkApiCalls() and its verb to the ClusterRole";
      }
    }
  }
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_GT(scanned, 20) << "sdk/src's files were not found";
}

bool Grants(const YAML::Node& rule, const std::string& verb, const std::string& group,
            const std::string& resource) {
  auto has = [](const YAML::Node& list, const std::string& value) {
    const std::vector<std::string> values = Strings(list);
    return std::count(values.begin(), values.end(), value) > 0 ||
           std::count(values.begin(), values.end(), "*") > 0;
  };
  return has(At(rule, {"verbs"}), verb) && has(At(rule, {"apiGroups"}), group) &&
         has(At(rule, {"resources"}), resource);
}

TEST(DeployManifests, RbacCoversEverySdkCallAndNoMore) {
  // The DRA driver's ServiceAccount, the ClusterRoles bound to it.
  std::vector<Doc> drivers;
  for (const auto& [ds, container] : DaemonSetContainers()) {
    if (BinaryOf(container) == kDraDriver) drivers.push_back(ds);
  }
  ASSERT_EQ(drivers.size(), 1u);
  const std::string account =
      Str(At(drivers[0].node, {"spec", "template", "spec", "serviceAccountName"}));
  const std::string ns = Namespace(drivers[0].node);
  ASSERT_NE(account, "") << Where(drivers[0]) << ": no serviceAccountName";
  std::vector<YAML::Node> rules;
  for (const Doc& binding : OfKind("ClusterRoleBinding")) {
    bool ours = false;
    for (const YAML::Node& s : At(binding.node, {"subjects"})) {
      ours = ours || (Str(At(s, {"kind"})) == "ServiceAccount" && Str(At(s, {"name"})) == account &&
                      Str(At(s, {"namespace"})) == ns);
    }
    if (!ours) continue;
    for (const Doc& role : OfKind("ClusterRole")) {
      if (Name(role.node) != Str(At(binding.node, {"roleRef", "name"}))) continue;
      for (const YAML::Node& rule : At(role.node, {"rules"})) rules.push_back(rule);
    }
  }
  for (const ApiCall& call : SdkApiCalls()) {
    EXPECT_TRUE(std::any_of(rules.begin(), rules.end(),
                            [&call](const YAML::Node& rule) {
                              return Grants(rule, call.verb, call.group, call.resource);
                            }))
        << ns << "/" << account << " may not " << call.verb << " " << call.resource << " ("
        << call.file << ")";
  }
  // Least privilege: nothing the SDK does not call.
  for (const YAML::Node& rule : rules) {
    for (const std::string& verb : Strings(At(rule, {"verbs"}))) {
      for (const std::string& group : Strings(At(rule, {"apiGroups"}))) {
        for (const std::string& resource : Strings(At(rule, {"resources"}))) {
          EXPECT_TRUE(std::any_of(SdkApiCalls().begin(), SdkApiCalls().end(),
                                  [&](const ApiCall& c) {
                                    return c.verb == verb && c.group == group &&
                                           c.resource == resource;
                                  }))
              << "granted but never called: " << verb << " " << group << "/" << resource;
        }
      }
    }
  }
}

TEST(DeployManifests, BindingsAndAccountsReferenceObjectsThatExist) {
  ASSERT_FALSE(OfKind("ClusterRoleBinding").empty());
  auto exists = [](const std::string& kind, const std::string& ns, const std::string& name) {
    const std::vector<Doc> docs = OfKind(kind);
    return std::any_of(docs.begin(), docs.end(), [&](const Doc& d) {
      return Name(d.node) == name && Namespace(d.node) == ns;
    });
  };
  for (const Doc& b : OfKind("ClusterRoleBinding")) {
    EXPECT_EQ(Str(At(b.node, {"roleRef", "kind"})), "ClusterRole") << Where(b);
    EXPECT_EQ(Str(At(b.node, {"roleRef", "apiGroup"})), "rbac.authorization.k8s.io") << Where(b);
    EXPECT_TRUE(exists("ClusterRole", "", Str(At(b.node, {"roleRef", "name"})))) << Where(b);
    ASSERT_TRUE(At(b.node, {"subjects"}).IsSequence()) << Where(b);
    for (const YAML::Node& s : At(b.node, {"subjects"})) {
      EXPECT_EQ(Str(At(s, {"kind"})), "ServiceAccount") << Where(b);
      EXPECT_TRUE(exists("ServiceAccount", Str(At(s, {"namespace"})), Str(At(s, {"name"}))))
          << Where(b) << ": subject " << Str(At(s, {"namespace"})) << "/" << Str(At(s, {"name"}));
    }
  }
  for (const Doc& ds : OfKind("DaemonSet")) {
    const std::string account =
        Str(At(ds.node, {"spec", "template", "spec", "serviceAccountName"}));
    if (account.empty()) continue;
    EXPECT_TRUE(exists("ServiceAccount", Namespace(ds.node), account)) << Where(ds);
  }
}

TEST(DeployManifests, DeviceClassSelectsTheDriversDevices) {
  const std::string expression =
      std::string("device.driver == \"") + example::kGpuDriverName + "\"";
  std::set<std::string> classes;
  for (const Doc& d : OfKind("DeviceClass")) {
    classes.insert(Name(d.node));
    std::vector<std::string> expressions;
    for (const YAML::Node& s : At(d.node, {"spec", "selectors"})) {
      expressions.push_back(Str(At(s, {"cel", "expression"})));
    }
    EXPECT_THAT(expressions, ::testing::Contains(expression)) << Where(d);
  }
  EXPECT_EQ(classes, std::set<std::string>{example::kGpuDriverName});
  // The examples use what is deployed.
  std::set<std::string> templates;
  for (const Doc& t : OfKind("ResourceClaimTemplate")) {
    templates.insert(Name(t.node));
    for (const YAML::Node& r : At(t.node, {"spec", "spec", "devices", "requests"})) {
      EXPECT_TRUE(classes.count(Str(At(r, {"exactly", "deviceClassName"}))) > 0) << Where(t);
    }
  }
  for (const Doc& p : OfKind("Pod")) {
    for (const YAML::Node& c : At(p.node, {"spec", "resourceClaims"})) {
      EXPECT_TRUE(templates.count(Str(At(c, {"resourceClaimTemplateName"}))) > 0) << Where(p);
    }
    for (const YAML::Node& c : At(p.node, {"spec", "containers"})) {
      for (const auto& limit : At(c, {"resources", "limits"})) {
        EXPECT_EQ(limit.first.Scalar(), example::GpuPluginOptions{}.resource_name) << Where(p);
      }
    }
  }
}

}  // namespace
}  // namespace kdp::deploy_test
