#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sdk/src/dra/resource_slice.h"
#include "tests/unit/sdk/validate_one.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using ::kdp::testing::ValidateOne;

DraDevice Gpu(const std::string& name) {
  return DraDevice{.name = name,
                   .attributes = {{"index", int64_t{0}},
                                  {"uuid", std::string("gpu-1234")},
                                  {"model", std::string("LATEST-GPU-MODEL")},
                                  {"driverVersion", VersionValue{"1.0.0"}},
                                  {"gpu.example.com/healthy", true}},
                   .capacity = {{"memory", "80Gi"}}};
}

TEST(ValidateDraDevices, AcceptsTheExampleDriversDevices) {
  EXPECT_TRUE(ValidateDraDevices({Gpu("gpu-0"), Gpu("gpu-1")}).ok());
  EXPECT_TRUE(ValidateDraDevices({}).ok());
}

TEST(ValidateDraDevices, RejectsBadNames) {
  for (const char* name : {"", "GPU-0", "gpu_0", "gpu.0", "-gpu"}) {
    absl::Status status = ValidateOne(Gpu(name));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), HasSubstr("name must be a DNS label")) << name;
  }
  absl::Status status = ValidateDraDevices({Gpu("gpu-0"), Gpu("gpu-0")});
  EXPECT_THAT(status.message(), HasSubstr("\"gpu-0\": name is used by more than one device"));
}

TEST(ValidateDraDevices, RejectsBadAttributes) {
  DraDevice device = Gpu("gpu-0");
  device.attributes["1bad"] = true;
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("attribute name \"1bad\""));

  device = Gpu("gpu-0");
  device.attributes["Bad_Domain/x"] = true;
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("attribute name"));

  device = Gpu("gpu-0");
  device.attributes[std::string(33, 'a')] = true;
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("attribute name"));

  device = Gpu("gpu-0");
  device.attributes["long"] = std::string(65, 'x');
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("string value longer than 64"));

  device = Gpu("gpu-0");
  device.attributes["driverVersion"] = VersionValue{"1.0"};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("must be a semantic version"));

  device = Gpu("gpu-0");
  for (int i = 0; i < 32; ++i) device.attributes["a" + std::to_string(i)] = int64_t{i};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("at most 32 are allowed"));
}

TEST(ValidateDraDevices, RejectsBadCapacities) {
  DraDevice device = Gpu("gpu-0");
  device.capacity["memory"] = "80 GiB";
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("is not a quantity"));

  device = Gpu("gpu-0");
  device.capacity["model"] = "1";
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("both an attribute and a capacity"));
}

TEST(IsQuantity, KubernetesGrammar) {
  for (const char* ok : {"1", "80Gi", "500m", "1.5", ".5", "+2k", "-1", "1e3", "1E-3", "4Ei"}) {
    EXPECT_TRUE(IsQuantity(ok)) << ok;
  }
  for (const char* bad : {"", "Gi", "1.5.5", "1 Gi", "1GiB", "1e", "1e+", "0x10", "1i"}) {
    EXPECT_FALSE(IsQuantity(bad)) << bad;
  }
}

TEST(IsSemver, SemanticVersioning200) {
  for (const char* ok : {"1.0.0", "0.0.1", "10.20.30", "1.0.0-rc.1", "1.0.0-alpha-1+build.5",
                         "1.0.0+20130313144700", "1.0.0-0A.is.legal"}) {
    EXPECT_TRUE(IsSemver(ok)) << ok;
  }
  for (const char* bad : {"", "1", "1.0", "1.0.0.0", "01.0.0", "1.0.0-", "1.0.0+", "1.0.0-01",
                          "v1.0.0", "1.0.0-a..b"}) {
    EXPECT_FALSE(IsSemver(bad)) << bad;
  }
}

TEST(ValidateDriverName, DnsSubdomainOfAtMost63) {
  EXPECT_TRUE(ValidateDriverName("gpu.example.com").ok());
  EXPECT_FALSE(ValidateDriverName("").ok());
  EXPECT_FALSE(ValidateDriverName("GPU.example.com").ok());
  EXPECT_FALSE(ValidateDriverName("gpu/example").ok());
  EXPECT_FALSE(ValidateDriverName(std::string(60, 'a') + ".com").ok());
}

TEST(DeviceJson, ResourceV1Shape) {
  EXPECT_EQ(DeviceJson(Gpu("gpu-0")), json::parse(R"({
    "name": "gpu-0",
    "attributes": {"index": {"int": 0}, "uuid": {"string": "gpu-1234"},
                   "model": {"string": "LATEST-GPU-MODEL"},
                   "driverVersion": {"version": "1.0.0"},
                   "gpu.example.com/healthy": {"bool": true}},
    "capacity": {"memory": {"value": "80Gi"}}
  })"));
  EXPECT_EQ(DeviceJson(DraDevice{.name = "bare"}), json({{"name", "bare"}}));
}

TEST(SplitDevices, AtMost128PerSlice) {
  std::vector<DraDevice> devices;
  for (int i = 0; i < 300; ++i) devices.push_back(DraDevice{.name = "d" + std::to_string(i)});
  std::vector<json> slices = SplitDevices(devices);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].size(), 128u);
  EXPECT_EQ(slices[1].size(), 128u);
  EXPECT_EQ(slices[2].size(), 44u);
  EXPECT_EQ(slices[1][0]["name"], "d128");

  std::vector<json> none = SplitDevices({});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0], json::array());
}

TEST(SliceJson, OwnedByTheNodeWithOnePoolPerNode) {
  json slice = SliceJson({.driver = "gpu.example.com", .node_name = "node-1", .node_uid = "n-uid"},
                         3, 2, json::array({DeviceJson(DraDevice{.name = "gpu-0"})}));
  EXPECT_EQ(slice, json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"generateName": "node-1-gpu.example.com-",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                      "uid": "n-uid", "controller": true}]},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
             "devices": [{"name": "gpu-0"}]}
  })"));
}

TEST(SliceJson, GenerateNameLeavesRoomForTheSuffix) {
  std::string node(250, 'n');
  json slice = SliceJson({.driver = "gpu.example.com", .node_name = node, .node_uid = "u"}, 1, 1,
                         json::array());
  EXPECT_EQ(slice["metadata"]["generateName"].get<std::string>().size(), 248u);
}

}  // namespace
}  // namespace kdp::internal
