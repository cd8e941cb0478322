#include "manager/src/conformance/dra_answers.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/durable_file.h"
#include "kdp/cdi.h"
#include "manager/src/admin/manifest.h"
#include "yaml-cpp/yaml.h"

namespace kdp::manager::conformance {
namespace {

using json = nlohmann::json;
using k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse;

constexpr size_t kMostProblems = 4;

// Collects problems, keeping the first kMostProblems.
class Problems {
 public:
  void Add(std::string problem) {
    if (problems_.size() < kMostProblems) {
      problems_.push_back(std::move(problem));
    } else {
      more_ = true;
    }
  }
  std::string Joined() const {
    std::string joined = absl::StrJoin(problems_, "; ");
    if (more_) absl::StrAppend(&joined, "; …");
    return joined;
  }

 private:
  std::vector<std::string> problems_;
  bool more_ = false;
};

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}
std::string Text(const json& value) { return value.is_string() ? value.get<std::string>() : ""; }
int64_t Number(const json& value) { return value.is_number_integer() ? value.get<int64_t>() : 0; }

std::string SliceName(const json& slice) { return Text(Field(Field(slice, "metadata"), "name")); }
std::string PoolName(const json& slice) {
  return Text(Field(Field(Field(slice, "spec"), "pool"), "name"));
}
int64_t Generation(const json& slice) {
  return Number(Field(Field(Field(slice, "spec"), "pool"), "generation"));
}
int64_t SliceCount(const json& slice) {
  return Number(Field(Field(Field(slice, "spec"), "pool"), "resourceSliceCount"));
}

// Pool → its slices.
std::map<std::string, std::vector<const json*>> ByPool(const std::vector<json>& slices) {
  std::map<std::string, std::vector<const json*>> pools;
  for (const json& slice : slices) pools[PoolName(slice)].push_back(&slice);
  return pools;
}

int64_t HighestGeneration(const std::vector<const json*>& slices) {
  int64_t highest = 0;
  for (const json* slice : slices) highest = std::max(highest, Generation(*slice));
  return highest;
}

// The spec at `path` parsed (JSON, or YAML converted as sigs.k8s.io/yaml does) and validated.
absl::StatusOr<cdi::Spec> LoadSpec(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ::kdp::ReadFile(path.string());
  if (!text.ok()) return text.status();
  std::string as_json = *text;
  if (path.extension() == ".yaml") {
    YAML::Node node;
    try {
      node = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("not YAML: ", e.what()));
    }
    absl::StatusOr<json> converted = YamlToJson(node, path.filename().string());
    if (!converted.ok()) return converted.status();
    as_json = converted->dump();
  }
  absl::StatusOr<cdi::Spec> spec = cdi::ParseJson(as_json, path.filename().string());
  if (!spec.ok()) return spec.status();
  if (absl::Status valid = cdi::Validate(*spec); !valid.ok()) return valid;
  return spec;
}

}  // namespace

std::set<PoolDevice> PublishedDevices(const std::vector<json>& slices) {
  std::set<PoolDevice> devices;
  for (const json& slice : slices) {
    const json& listed = Field(Field(slice, "spec"), "devices");
    if (!listed.is_array()) continue;
    for (const json& device : listed) devices.emplace(PoolName(slice), Text(Field(device, "name")));
  }
  return devices;
}

bool PoolsComplete(const std::vector<json>& slices) {
  for (const auto& [pool, members] : ByPool(slices)) {
    const int64_t generation = HighestGeneration(members);
    int64_t current = 0;
    int64_t expected = 0;
    for (const json* slice : members) {
      if (Generation(*slice) != generation) continue;
      ++current;
      expected = SliceCount(*slice);
    }
    if (current != expected) return false;
  }
  return true;
}

std::string SliceProblems(const std::vector<json>& slices, const std::string& node_name,
                          const std::string& node_uid) {
  Problems problems;
  if (PublishedDevices(slices).empty()) problems.Add("no device in any slice");
  for (const json& slice : slices) {
    const json& owners = Field(Field(slice, "metadata"), "ownerReferences");
    bool owned = false;
    if (owners.is_array()) {
      for (const json& owner : owners) {
        owned = owned ||
                (Text(Field(owner, "kind")) == "Node" && Text(Field(owner, "apiVersion")) == "v1" &&
                 Text(Field(owner, "name")) == node_name && Text(Field(owner, "uid")) == node_uid);
      }
    }
    if (!owned) {
      problems.Add(absl::StrCat("slice ", SliceName(slice), " has no ownerReference to Node ",
                                node_name, " (uid ", node_uid, ")"));
    }
  }
  for (const auto& [pool, members] : ByPool(slices)) {
    const int64_t generation = HighestGeneration(members);
    std::set<int64_t> counts;
    int64_t current = 0;
    std::set<std::string> names;
    for (const json* slice : members) {
      if (Generation(*slice) != generation) {
        problems.Add(absl::StrCat("pool ", pool, ": slice ", SliceName(*slice), " of generation ",
                                  Generation(*slice), " left beside generation ", generation));
        continue;
      }
      ++current;
      counts.insert(SliceCount(*slice));
      const json& devices = Field(Field(*slice, "spec"), "devices");
      if (!devices.is_array()) continue;
      for (const json& device : devices) {
        const std::string name = Text(Field(device, "name"));
        if (!names.insert(name).second) {
          problems.Add(absl::StrCat("pool ", pool, ": device ", name, " published twice"));
        }
      }
    }
    if (counts.size() > 1) {
      problems.Add(absl::StrCat("pool ", pool, ": the slices of generation ", generation,
                                " disagree on resourceSliceCount (", absl::StrJoin(counts, ", "),
                                ")"));
    } else if (!counts.empty() && *counts.begin() != current) {
      problems.Add(absl::StrCat("pool ", pool, ": resourceSliceCount ", *counts.begin(), " but ",
                                current, " slice", current == 1 ? "" : "s", " of generation ",
                                generation, " (an incomplete pool is never allocated from)"));
    }
  }
  return problems.Joined();
}

CdiIndex ReadCdiSpecs(const std::string& dir) {
  CdiIndex index;
  std::error_code error;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::filesystem::path& path = entry.path();
    const std::string name = path.filename().string();
    if (absl::StartsWith(name, ".")) continue;
    if (path.extension() != ".json" && path.extension() != ".yaml") continue;
    paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  for (const std::filesystem::path& path : paths) {
    const std::string name = path.filename().string();
    index.files.insert(name);
    absl::StatusOr<cdi::Spec> spec = LoadSpec(path);
    if (!spec.ok()) {
      index.invalid.push_back(absl::StrCat(name, ": ", spec.status().message()));
      continue;
    }
    for (const cdi::Device& device : spec->devices) {
      index.devices[cdi::QualifiedName(spec->kind, device.name)].push_back(name);
    }
  }
  return index;
}

std::string CdiConflicts(const CdiIndex& cdi) {
  Problems problems;
  for (const auto& [device, files] : cdi.devices) {
    if (files.size() > 1) {
      problems.Add(absl::StrCat("CDI device ", device, " is defined by ", files.size(), " specs (",
                                absl::StrJoin(files, ", "), ")"));
    }
  }
  return problems.Joined();
}

std::string PrepareProblems(const json& allocation_results, const std::string& driver,
                            const NodePrepareResourceResponse& answer, const CdiIndex& cdi) {
  if (!answer.error().empty()) return absl::StrCat("the claim failed: ", answer.error());
  Problems problems;
  std::map<PoolDevice, std::set<std::string>> allocated;  // device → its requests
  if (allocation_results.is_array()) {
    for (const json& result : allocation_results) {
      if (Text(Field(result, "driver")) != driver) continue;
      allocated[{Text(Field(result, "pool")), Text(Field(result, "device"))}].insert(
          Text(Field(result, "request")));
    }
  }
  std::set<PoolDevice> answered;
  for (const auto& device : answer.devices()) {
    const PoolDevice key{device.pool_name(), device.device_name()};
    const std::string named = absl::StrCat(key.first, "/", key.second);
    if (!answered.insert(key).second) problems.Add(absl::StrCat("device ", named, " twice"));
    auto it = allocated.find(key);
    if (it == allocated.end()) {
      problems.Add(absl::StrCat("device ", named, ", which the claim was not allocated"));
    } else {
      for (const std::string& request : device.request_names()) {
        // A subrequest's result is "<request>/<subrequest>"; the answer may name either.
        const bool known = std::any_of(it->second.begin(), it->second.end(), [&](const auto& r) {
          return r == request || absl::StartsWith(r, absl::StrCat(request, "/"));
        });
        if (!known) problems.Add(absl::StrCat("device ", named, " for unknown request ", request));
      }
    }
    for (const std::string& id : device.cdi_device_ids()) {
      if (absl::Status parsed = cdi::ParseQualifiedName(id, nullptr, nullptr); !parsed.ok()) {
        problems.Add(
            absl::StrCat("CDI device ID ", id, " is not fully qualified: ", parsed.message()));
      } else if (cdi.devices.find(id) == cdi.devices.end()) {
        problems.Add(absl::StrCat("CDI device ", id,
                                  " is defined by no valid spec in the CDI "
                                  "directory"));
      }
    }
  }
  for (const auto& [key, requests] : allocated) {
    if (answered.count(key) == 0) {
      problems.Add(absl::StrCat("allocated device ", key.first, "/", key.second, " missing"));
    }
  }
  return problems.Joined();
}

std::vector<std::string> CdiIds(const NodePrepareResourceResponse& answer) {
  std::vector<std::string> ids;
  for (const auto& device : answer.devices()) {
    ids.insert(ids.end(), device.cdi_device_ids().begin(), device.cdi_device_ids().end());
  }
  return ids;
}

std::vector<std::string> AnswerDevices(const NodePrepareResourceResponse& answer) {
  std::vector<std::string> devices;
  for (const auto& device : answer.devices()) {
    std::vector<std::string> requests(device.request_names().begin(), device.request_names().end());
    std::vector<std::string> ids(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
    std::sort(requests.begin(), requests.end());
    std::sort(ids.begin(), ids.end());
    devices.push_back(absl::StrCat(device.pool_name(), "/", device.device_name(), " [",
                                   absl::StrJoin(requests, ","), "] {", absl::StrJoin(ids, ","),
                                   "}"));
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

}  // namespace kdp::manager::conformance
