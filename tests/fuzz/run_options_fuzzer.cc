// Fuzzes the merge of device plugins' Allocate answers into a container's runtime options
// (manager/src/devicemanager/run_options.h MergeRunContainerOptions). The input is a plugin's
// v1beta1.AllocateResponse (what a plugin sends back, and what the checkpoint's AllocResp holds):
// its container_responses are merged in order, as the answers of several resources would be.
//
// Property checked beyond "no crash": the result equals a plain model of the kubelet's rules:
// envs and annotations by name and mounts and devices by container path, the first one winning;
// CDI device names de-duplicated in order of first appearance.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/logging.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "manager/src/devicemanager/run_options.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "run_options_fuzzer: the merge differs from the model in %s\n", what);
  std::abort();
}

// First value per key, over `maps` in order.
template <typename GetMap>
std::map<std::string, std::string> FirstWins(
    const std::vector<const v1beta1::ContainerAllocateResponse*>& responses, GetMap get) {
  std::map<std::string, std::string> out;
  for (const auto* response : responses) {
    for (const auto& [key, value] : get(*response)) out.emplace(key, value);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool kQuiet = [] {
    kdp::log::SetMinLevel(kdp::log::Level::kError);  // every conflict is a warning
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)kQuiet;
  v1beta1::AllocateResponse answer;
  if (!answer.ParseFromArray(data, static_cast<int>(size))) return 0;
  std::vector<const v1beta1::ContainerAllocateResponse*> responses;
  for (const auto& response : answer.container_responses()) responses.push_back(&response);

  const kdp::manager::RunContainerOptions merged =
      kdp::manager::MergeRunContainerOptions(responses);

  if (merged.envs != FirstWins(responses, [](const auto& r) { return r.envs(); })) Fail("envs");
  if (merged.annotations != FirstWins(responses, [](const auto& r) { return r.annotations(); })) {
    Fail("annotations");
  }
  std::vector<const v1beta1::Mount*> mounts;
  std::vector<const v1beta1::DeviceSpec*> devices;
  std::vector<std::string> cdi;
  std::set<std::string> mount_paths, device_paths, cdi_names;
  for (const auto* response : responses) {
    for (const auto& mount : response->mounts()) {
      if (mount_paths.insert(mount.container_path()).second) mounts.push_back(&mount);
    }
    for (const auto& device : response->devices()) {
      if (device_paths.insert(device.container_path()).second) devices.push_back(&device);
    }
    for (const auto& device : response->cdi_devices()) {
      if (cdi_names.insert(device.name()).second) cdi.push_back(device.name());
    }
  }
  if (merged.mounts.size() != mounts.size()) Fail("the number of mounts");
  for (size_t i = 0; i < mounts.size(); ++i) {
    if (merged.mounts[i].SerializeAsString() != mounts[i]->SerializeAsString()) Fail("mounts");
  }
  if (merged.devices.size() != devices.size()) Fail("the number of devices");
  for (size_t i = 0; i < devices.size(); ++i) {
    if (merged.devices[i].SerializeAsString() != devices[i]->SerializeAsString()) Fail("devices");
  }
  if (merged.cdi_devices != cdi) Fail("CDI devices");
  return 0;
}
