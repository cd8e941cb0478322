// The rules kdp-conformance holds a device plugin's answers to (plugin_answers.h): each answer
// that keeps them yields "", each broken rule is named with the device, path or ID at fault.
#include "manager/src/conformance/plugin_answers.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager::conformance {
namespace {

using ::testing::HasSubstr;

v1beta1::ListAndWatchResponse ListOf(
    std::initializer_list<std::tuple<std::string, std::string, int>> devices) {
  v1beta1::ListAndWatchResponse list;
  for (const auto& [id, health, numa] : devices) {
    v1beta1::Device* device = list.add_devices();
    device->set_id(id);
    device->set_health(health);
    device->mutable_topology()->add_nodes()->set_id(numa);
  }
  return list;
}

TEST(DeviceListProblems, AValidListHasNone) {
  EXPECT_EQ(DeviceListProblems(ListOf({{"gpu0", "Healthy", 0}, {"gpu1", "Unhealthy", 1}})), "");
  EXPECT_EQ(DeviceListProblems(v1beta1::ListAndWatchResponse()), "");
}

TEST(DeviceListProblems, NamesEachBrokenRule) {
  EXPECT_EQ(DeviceListProblems(ListOf({{"gpu0", "Healthy", 0}, {"gpu0", "Healthy", 0}})),
            "device gpu0 listed twice");
  EXPECT_EQ(DeviceListProblems(ListOf({{"", "Healthy", 0}})), "a device with an empty ID");
  EXPECT_EQ(DeviceListProblems(ListOf({{"gpu0", "healthy", 0}})),
            "device gpu0 with health \"healthy\"");
  EXPECT_EQ(DeviceListProblems(ListOf({{"gpu0", "Healthy", -1}})), "device gpu0 on NUMA node -1");
}

TEST(DeviceListProblems, NamesAtMostFourThenAnEllipsis) {
  EXPECT_EQ(DeviceListProblems(ListOf(
                {{"a", "x", 0}, {"b", "x", 0}, {"c", "x", 0}, {"d", "x", 0}, {"e", "x", 0}})),
            "device a with health \"x\"; device b with health \"x\"; device c with health \"x\"; "
            "device d with health \"x\"; …");
}

v1beta1::AllocateRequest OneContainer() {
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("gpu0");
  return request;
}

TEST(AllocateProblems, AnAnswerTheRuntimeCanApplyHasNone) {
  v1beta1::AllocateResponse response;
  v1beta1::ContainerAllocateResponse* container = response.add_container_responses();
  v1beta1::DeviceSpec* device = container->add_devices();
  device->set_container_path("/dev/nvidia0");
  device->set_host_path("/dev/nvidia0");
  device->set_permissions("rwm");
  v1beta1::Mount* mount = container->add_mounts();
  mount->set_container_path("/usr/lib/driver");
  mount->set_host_path("/opt/driver");
  (*container->mutable_envs())["VISIBLE_DEVICES"] = "gpu0";
  container->add_cdi_devices()->set_name("example.com/gpu=gpu0");
  EXPECT_EQ(AllocateProblems(OneContainer(), response), "");
}

TEST(AllocateProblems, NamesEachBrokenRule) {
  v1beta1::AllocateResponse none;
  EXPECT_EQ(AllocateProblems(OneContainer(), none),
            "0 container responses for 1 container requests");

  v1beta1::AllocateResponse response;
  v1beta1::ContainerAllocateResponse* container = response.add_container_responses();
  v1beta1::DeviceSpec* device = container->add_devices();
  device->set_container_path("dev/x");
  device->set_host_path("/dev/x");
  device->set_permissions("rwx");
  v1beta1::Mount* mount = container->add_mounts();
  mount->set_container_path("/in");
  mount->set_host_path("relative");
  (*container->mutable_envs())["A=B"] = "c";
  container->add_cdi_devices()->set_name("gpu0");
  container->add_cdi_devices()->set_name("example.com/gpu=");
  const std::string problems = AllocateProblems(OneContainer(), response);
  EXPECT_THAT(problems, HasSubstr("device \"/dev/x\" → \"dev/x\": paths must be absolute"));
  EXPECT_THAT(problems, HasSubstr("device \"dev/x\" permissions \"rwx\": one or more of r, w, m"));
  EXPECT_THAT(problems, HasSubstr("mount \"relative\" → \"/in\": paths must be absolute"));
  EXPECT_THAT(problems, HasSubstr("environment variable name \"A=B\""));
  EXPECT_THAT(problems, HasSubstr("CDI device \"gpu0\": not a fully qualified"));
  EXPECT_THAT(problems, HasSubstr("CDI device \"example.com/gpu=\": not a fully qualified"));

  v1beta1::AllocateResponse empty_permissions;
  v1beta1::DeviceSpec* bare = empty_permissions.add_container_responses()->add_devices();
  bare->set_container_path("/dev/x");
  bare->set_host_path("/dev/x");
  EXPECT_THAT(AllocateProblems(OneContainer(), empty_permissions),
              HasSubstr("permissions \"\": one or more of r, w, m"));
}

v1beta1::ContainerPreferredAllocationRequest Ask(std::initializer_list<std::string> available,
                                                 std::initializer_list<std::string> must,
                                                 int size) {
  v1beta1::ContainerPreferredAllocationRequest request;
  for (const std::string& id : available) request.add_available_deviceids(id);
  for (const std::string& id : must) request.add_must_include_deviceids(id);
  request.set_allocation_size(size);
  return request;
}

v1beta1::PreferredAllocationResponse Answer(std::initializer_list<std::string> ids) {
  v1beta1::PreferredAllocationResponse response;
  v1beta1::ContainerPreferredAllocationResponse* container = response.add_container_responses();
  for (const std::string& id : ids) container->add_deviceids(id);
  return response;
}

TEST(PreferredProblems, AnAnswerWithMustIncludeOfTheSizeHasNone) {
  EXPECT_EQ(PreferredProblems(Ask({"a", "b", "c"}, {"c"}, 2), Answer({"c", "a"})), "");
}

TEST(PreferredProblems, NamesEachBrokenRule) {
  const auto request = Ask({"a", "b", "c"}, {"c"}, 2);
  EXPECT_EQ(PreferredProblems(request, Answer({"a", "b"})),
            "[a, b] with must_include [c]: without c");
  EXPECT_EQ(PreferredProblems(request, Answer({"c"})),
            "[c] with must_include [c]: not 2 distinct devices");
  EXPECT_EQ(PreferredProblems(request, Answer({"c", "c"})),
            "[c, c] with must_include [c]: not 2 distinct devices");
  EXPECT_EQ(PreferredProblems(request, Answer({"c", "z"})),
            "[c, z] with must_include [c]: z was not available");
  EXPECT_EQ(PreferredProblems(request, v1beta1::PreferredAllocationResponse()),
            "0 container responses for 1 request");
}

}  // namespace
}  // namespace kdp::manager::conformance
