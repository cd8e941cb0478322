#include "manager/src/devicemanager/run_options.h"

#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

void AddMount(v1beta1::ContainerAllocateResponse* response, const std::string& container_path,
              const std::string& host_path, bool read_only) {
  v1beta1::Mount* mount = response->add_mounts();
  mount->set_container_path(container_path);
  mount->set_host_path(host_path);
  mount->set_read_only(read_only);
}

void AddDevice(v1beta1::ContainerAllocateResponse* response, const std::string& container_path,
               const std::string& host_path, const std::string& permissions) {
  v1beta1::DeviceSpec* device = response->add_devices();
  device->set_container_path(container_path);
  device->set_host_path(host_path);
  device->set_permissions(permissions);
}

void AddCdi(v1beta1::ContainerAllocateResponse* response, const std::string& name) {
  response->add_cdi_devices()->set_name(name);
}

TEST(MergeRunContainerOptions, NoResponsesGiveEmptyOptions) {
  RunContainerOptions options = MergeRunContainerOptions({});
  EXPECT_THAT(options.envs, IsEmpty());
  EXPECT_THAT(options.mounts, IsEmpty());
  EXPECT_THAT(options.devices, IsEmpty());
  EXPECT_THAT(options.annotations, IsEmpty());
  EXPECT_THAT(options.cdi_devices, IsEmpty());
}

TEST(MergeRunContainerOptions, EmptyResponseGivesEmptyOptions) {
  v1beta1::ContainerAllocateResponse empty;
  RunContainerOptions options = MergeRunContainerOptions({&empty});
  EXPECT_THAT(options.envs, IsEmpty());
  EXPECT_THAT(options.mounts, IsEmpty());
  EXPECT_THAT(options.devices, IsEmpty());
  EXPECT_THAT(options.annotations, IsEmpty());
  EXPECT_THAT(options.cdi_devices, IsEmpty());
}

TEST(MergeRunContainerOptions, CopiesOneResponse) {
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())["VISIBLE"] = "0,1";
  (*response.mutable_annotations())["vendor/x"] = "y";
  AddMount(&response, "/usr/lib/drv", "/opt/drv", true);
  AddDevice(&response, "/dev/gpu0", "/dev/dri/card0", "rw");
  AddCdi(&response, "vendor.com/gpu=0");
  RunContainerOptions options = MergeRunContainerOptions({&response});
  EXPECT_THAT(options.envs, ElementsAre(Pair("VISIBLE", "0,1")));
  EXPECT_THAT(options.annotations, ElementsAre(Pair("vendor/x", "y")));
  ASSERT_EQ(options.mounts.size(), 1u);
  EXPECT_EQ(options.mounts[0].container_path(), "/usr/lib/drv");
  EXPECT_EQ(options.mounts[0].host_path(), "/opt/drv");
  EXPECT_TRUE(options.mounts[0].read_only());
  ASSERT_EQ(options.devices.size(), 1u);
  EXPECT_EQ(options.devices[0].container_path(), "/dev/gpu0");
  EXPECT_EQ(options.devices[0].host_path(), "/dev/dri/card0");
  EXPECT_EQ(options.devices[0].permissions(), "rw");
  EXPECT_THAT(options.cdi_devices, ElementsAre("vendor.com/gpu=0"));
}

TEST(MergeRunContainerOptions, FirstEnvAndAnnotationWin) {
  v1beta1::ContainerAllocateResponse first, second;
  (*first.mutable_envs())["SHARED"] = "first";
  (*first.mutable_envs())["A"] = "a";
  (*second.mutable_envs())["SHARED"] = "second";
  (*second.mutable_envs())["B"] = "b";
  (*first.mutable_annotations())["note"] = "first";
  (*second.mutable_annotations())["note"] = "second";
  (*second.mutable_annotations())["other"] = "o";
  RunContainerOptions options = MergeRunContainerOptions({&first, &second});
  EXPECT_THAT(options.envs, ElementsAre(Pair("A", "a"), Pair("B", "b"), Pair("SHARED", "first")));
  EXPECT_THAT(options.annotations, ElementsAre(Pair("note", "first"), Pair("other", "o")));

  // The order of the responses decides.
  RunContainerOptions reversed = MergeRunContainerOptions({&second, &first});
  EXPECT_EQ(reversed.envs.at("SHARED"), "second");
  EXPECT_EQ(reversed.annotations.at("note"), "second");
}

TEST(MergeRunContainerOptions, FirstMountPerContainerPathWins) {
  v1beta1::ContainerAllocateResponse first, second;
  AddMount(&first, "/lib", "/host/lib-a", true);
  AddMount(&second, "/lib", "/host/lib-b", false);  // Conflict: dropped (logged).
  AddMount(&second, "/bin", "/host/bin", false);
  AddMount(&second, "/bin", "/host/bin", false);  // Same host path: a plain duplicate.
  RunContainerOptions options = MergeRunContainerOptions({&first, &second});
  ASSERT_EQ(options.mounts.size(), 2u);
  EXPECT_EQ(options.mounts[0].container_path(), "/lib");
  EXPECT_EQ(options.mounts[0].host_path(), "/host/lib-a");
  EXPECT_TRUE(options.mounts[0].read_only());
  EXPECT_EQ(options.mounts[1].container_path(), "/bin");
  EXPECT_EQ(options.mounts[1].host_path(), "/host/bin");
  EXPECT_FALSE(options.mounts[1].read_only());
}

TEST(MergeRunContainerOptions, FirstDevicePerContainerPathWins) {
  v1beta1::ContainerAllocateResponse first, second;
  AddDevice(&first, "/dev/x", "/dev/a", "rw");
  AddDevice(&second, "/dev/x", "/dev/b", "r");  // Conflict: dropped (logged).
  AddDevice(&second, "/dev/y", "/dev/y", "mrw");
  AddDevice(&second, "/dev/x", "/dev/a", "r");  // Same host path: duplicate, first kept.
  RunContainerOptions options = MergeRunContainerOptions({&first, &second});
  ASSERT_EQ(options.devices.size(), 2u);
  EXPECT_EQ(options.devices[0].container_path(), "/dev/x");
  EXPECT_EQ(options.devices[0].host_path(), "/dev/a");
  EXPECT_EQ(options.devices[0].permissions(), "rw");
  EXPECT_EQ(options.devices[1].container_path(), "/dev/y");
  EXPECT_EQ(options.devices[1].permissions(), "mrw");
}

// TestDeviceRunContainerOptions (upstream pod_devices_test.go): CDI devices of every resource's
// answer, concatenated in order, each name once (first appearance wins, across and within
// answers).
TEST(MergeRunContainerOptions, TestDeviceRunContainerOptions) {
  struct Case {
    std::string description;
    std::vector<std::vector<std::string>> responses;  // CDI names per resource's answer
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"empty response", {{}}, {}},
      {"cdi devices are handled when only one resource",
       {{"vendor1.com/class1=device1", "vendor1.com/class1=device2"}},
       {"vendor1.com/class1=device1", "vendor1.com/class1=device2"}},
      {"cdi devices from multiple resources are concatenated",
       {{"vendor1.com/class1=device1", "vendor1.com/class1=device2"},
        {"vendor2.com/class2=device1", "vendor2.com/class2=device2"}},
       {"vendor1.com/class1=device1", "vendor1.com/class1=device2", "vendor2.com/class2=device1",
        "vendor2.com/class2=device2"}},
      {"duplicate cdi devices are skipped",
       {{"vendor1.com/class1=device1", "vendor1.com/class1=device2"},
        {"vendor1.com/class1=device2", "vendor2.com/class2=device1"}},
       {"vendor1.com/class1=device1", "vendor1.com/class1=device2", "vendor2.com/class2=device1"}},
      {"duplicates within one answer are skipped too",
       {{"vendor.com/dev=a", "vendor.com/dev=b", "vendor.com/dev=a"},
        {"vendor.com/dev=c", "vendor.com/dev=b"}},
       {"vendor.com/dev=a", "vendor.com/dev=b", "vendor.com/dev=c"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.description);
    std::vector<v1beta1::ContainerAllocateResponse> responses(c.responses.size());
    std::vector<const v1beta1::ContainerAllocateResponse*> pointers;
    for (size_t i = 0; i < c.responses.size(); ++i) {
      for (const std::string& name : c.responses[i]) AddCdi(&responses[i], name);
      pointers.push_back(&responses[i]);
    }
    RunContainerOptions options = MergeRunContainerOptions(pointers);
    EXPECT_EQ(options.cdi_devices, c.want);
    EXPECT_THAT(options.envs, IsEmpty());
    EXPECT_THAT(options.mounts, IsEmpty());
    EXPECT_THAT(options.devices, IsEmpty());
  }
}

}  // namespace
}  // namespace kdp::manager
