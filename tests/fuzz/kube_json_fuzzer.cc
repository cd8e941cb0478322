// Fuzzes the SDK's decoding of what the Kubernetes API server (or kdp-manager's local resource
// API) answers a DRA driver, and of the kubeconfig that says where that server is:
//   - a ResourceClaim (sdk/src/dra/claim_json.h DecodeClaim), as NodePrepareResources reads it;
//   - a ResourceSlice list, as ReconcileResourceSlices (sdk/src/dra/slice_publisher.h) reads it
//     before it creates, updates and deletes the driver's slices (through a fake client);
//   - a kubeconfig (sdk/src/kube/kube_client.h LoadKubeConfigFile), written to a per-process file.
// The same input is used for all three (JSON is YAML, so one seed serves every reader).
//
// Properties checked beyond "no crash": errors carry the documented codes; a decoded claim holds
// only this driver's results, keeps the requested reference and orders FromClass configs first;
// every write the reconciler sends names a single slice ("/resourceslices/<name>", never the
// collection) and serializes without throwing.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"
#include "sdk/src/dra/claim_json.h"
#include "sdk/src/dra/slice_publisher.h"
#include "sdk/src/kube/kube_client.h"
#include "yaml-cpp/yaml.h"

namespace {

using nlohmann::json;
namespace ki = kdp::internal;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kSlicesPath[] = "/apis/resource.k8s.io/v1/resourceslices";

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kube_json_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckClaim(const json& object) {
  const kdp::ClaimRef ref{.namespace_ = "default", .name = "claim-1", .uid = "uid-1"};
  absl::StatusOr<kdp::Claim> claim = ki::DecodeClaim(object, ref, kDriver);
  if (!claim.ok()) {
    const absl::StatusCode code = claim.status().code();
    if (code != absl::StatusCode::kInvalidArgument &&
        code != absl::StatusCode::kFailedPrecondition) {
      Fail("DecodeClaim failed with an undocumented code", claim.status().ToString());
    }
    if (!absl::StrContains(claim.status().message(), "default/claim-1")) {
      Fail("DecodeClaim's error does not name the claim", claim.status().ToString());
    }
    return;
  }
  if (!(claim->ref == ref)) Fail("DecodeClaim changed the claim reference", object.dump());
  for (const kdp::AllocatedDevice& device : claim->results) {
    if (device.driver != kDriver) Fail("DecodeClaim kept another driver's result", device.driver);
  }
  bool seen_claim = false;
  for (const kdp::OpaqueConfig& config : claim->configs) {
    if (config.source != "FromClass" && config.source != "FromClaim") {
      Fail("DecodeClaim kept a config of unknown source", config.source);
    }
    if (config.source == "FromClaim") seen_claim = true;
    if (config.source == "FromClass" && seen_claim) Fail("FromClass after FromClaim", "");
    if (json::parse(config.parameters_json, nullptr, false).is_discarded()) {
      Fail("a config's parameters are not JSON", config.parameters_json);
    }
  }
}

// A KubeClient whose LIST answer is the fuzz input and which accepts every write, checking that
// each one names one slice.
class FakeClient final : public ki::KubeClient {
 public:
  explicit FakeClient(json list) : list_(std::move(list)) {}
  int writes = 0;

  absl::StatusOr<json> Get(const std::string& path) override {
    if (!path.starts_with(std::string(kSlicesPath) + "?")) Fail("unexpected GET", path);
    return list_;
  }
  absl::StatusOr<json> Post(const std::string& path, const json& body) override {
    if (path != kSlicesPath) Fail("unexpected POST", path);
    (void)body.dump();  // the client serializes what it sends: must not throw
    ++writes;
    return json{{"metadata", {{"name", "created"}}}};
  }
  absl::StatusOr<json> Put(const std::string& path, const json& body) override {
    CheckOneSlice("PUT", path);
    (void)body.dump();
    ++writes;
    return body;
  }
  absl::StatusOr<json> Delete(const std::string& path) override {
    CheckOneSlice("DELETE", path);
    ++writes;
    return json::object();
  }

 private:
  static void CheckOneSlice(const char* method, const std::string& path) {
    const std::string prefix = std::string(kSlicesPath) + "/";
    if (!path.starts_with(prefix)) Fail("a write outside the slices collection", path);
    const std::string name = path.substr(prefix.size());
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of("/?#%") != std::string::npos) {
      Fail(method, "does not name a single ResourceSlice: " + path);
    }
  }

  json list_;
};

void CheckReconcile(const json& list) {
  static const std::vector<kdp::DraDevice>* const kDevices = [] {
    auto* devices = new std::vector<kdp::DraDevice>();
    kdp::DraDevice gpu{.name = "gpu-0", .attributes = {}, .capacity = {}};
    gpu.attributes["model"] = std::string("A100");
    gpu.attributes["index"] = int64_t{0};
    gpu.capacity["memory"] = "80Gi";
    devices->push_back(gpu);
    gpu.name = "gpu-1";
    gpu.attributes["index"] = int64_t{1};
    devices->push_back(gpu);
    return devices;
  }();
  const ki::SliceTarget target{.driver = kDriver, .node_name = "node-1", .node_uid = "node-uid"};
  FakeClient client(list);
  (void)ki::ReconcileResourceSlices(client, target, *kDevices);
}

// The kubeconfig reader takes a path: one file per process, rewritten for each input. File
// references in the input (certificate-authority, tokenFile, ...) are read relative to it; inputs
// that could name a device, a FIFO or a pseudo-file that never ends are skipped.
bool MayReadFiles(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      for (const char* risky : {"dev", "proc", "sys", "run", "tmp", "fd", "std", "initctl"}) {
        if (absl::StrContains(s, risky)) return true;
      }
      return false;
    }
    case YAML::NodeType::Sequence:
    case YAML::NodeType::Map:
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (node.IsMap() ? MayReadFiles(it->first) || MayReadFiles(it->second)
                         : MayReadFiles(*it)) {
          return true;
        }
      }
      return false;
    default:
      return false;
  }
}

void CheckKubeconfig(std::string_view text) {
  static const std::string* const kDir = [] {
    char dir[] = "/tmp/kdp-kube-json-fuzz-XXXXXX";
    if (::mkdtemp(dir) == nullptr) Fail("mkdtemp", "");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*kDir, ec);
    });
    return new std::string(dir);
  }();
  try {
    // yaml-cpp shares aliased nodes; the walk is bounded by the 64 KiB input only without them.
    if (text.find('*') != std::string_view::npos) return;
    if (MayReadFiles(YAML::Load(std::string(text)))) return;
  } catch (const YAML::Exception&) {
    // LoadKubeConfigFile reports it; nothing is read from other files.
  }
  const std::string path = *kDir + "/kubeconfig";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  absl::StatusOr<ki::KubeConfig> config = ki::LoadKubeConfigFile(path);
  if (!config.ok() && config.status().code() != absl::StatusCode::kInvalidArgument) {
    Fail("LoadKubeConfigFile failed with a code other than INVALID_ARGUMENT",
         config.status().ToString());
  }
  if (config.ok() && config->server.empty()) Fail("a kubeconfig without a server loaded", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool kQuiet = [] {
    kdp::log::SetMinLevel(kdp::log::Level::kError);  // the reconciler logs every write
    return true;
  }();
  (void)kQuiet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!object.is_discarded()) {
    CheckClaim(object);
    CheckReconcile(object);
  }
  CheckKubeconfig(text);
  return 0;
}
