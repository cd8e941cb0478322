// The resource.k8s.io/v1 (1.35) device model of kdp/dra_device.h: the JSON of every new field as
// upstream writes it, and each validation rule with the API server's message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kdp/dra_device.h"
#include "sdk/src/dra/pool_validation.h"
#include "sdk/src/dra/resource_slice.h"
#include "tests/unit/sdk/validate_one.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using ::kdp::testing::ValidateOne;

DraDevice Plain(const std::string& name) {
  return DraDevice{.name = name, .attributes = {}, .capacity = {{"memory", "16Gi"}}};
}

TEST(DeviceModelJson, EveryNewFieldWithUpstreamNames) {
  DraDevice device = Plain("gpu-0");
  device.allow_multiple_allocations = true;
  device.request_policies["memory"] = {
      .default_value = "1Gi",
      .valid_values = {},
      .valid_range = CapacityRange{.min = "1Gi", .max = "8Gi", .step = "1Gi"}};
  device.consumes_counters = {{.counter_set = "gpu-0-set", .counters = {{"memory", "16Gi"}}}};
  device.taints = {{.key = "gpu.example.com/xid",
                    .value = "79",
                    .effect = TaintEffect::kNoExecute,
                    .time_added = "2025-01-02T03:04:05Z"},
                   {.key = "maintenance", .value = "", .effect = TaintEffect::kNone}};
  device.binds_to_node = true;
  device.binding_conditions = {"dra.example.com/attached"};
  device.binding_failure_conditions = {"dra.example.com/failed"};
  device.node_selector = NodeSelector{
      .terms = {{.match_expressions = {{.key = "rack", .op = "In", .values = {"r1", "r2"}},
                                       {.key = "gpu", .op = "Exists", .values = {}}},
                 .match_fields = {}}}};
  EXPECT_EQ(DeviceJson(device), json::parse(R"({
    "name": "gpu-0",
    "capacity": {"memory": {"value": "16Gi", "requestPolicy": {
      "default": "1Gi", "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"}}}},
    "allowMultipleAllocations": true,
    "consumesCounters": [{"counterSet": "gpu-0-set", "counters": {"memory": {"value": "16Gi"}}}],
    "taints": [
      {"key": "gpu.example.com/xid", "value": "79", "effect": "NoExecute",
       "timeAdded": "2025-01-02T03:04:05Z"},
      {"key": "maintenance", "effect": "None"}],
    "bindsToNode": true,
    "bindingConditions": ["dra.example.com/attached"],
    "bindingFailureConditions": ["dra.example.com/failed"],
    "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "rack", "operator": "In", "values": ["r1", "r2"]},
      {"key": "gpu", "operator": "Exists"}]}]}
  })"));
}

TEST(DeviceModelJson, OmitsUnsetFieldsAsOmitemptyDoes) {
  DraDevice device = Plain("gpu-0");
  device.request_policies["memory"] = {.default_value = "", .valid_values = {"1Gi", "2Gi"}};
  device.node_name = "node-1";
  device.all_nodes = false;
  json out = DeviceJson(device);
  EXPECT_EQ(out["capacity"]["memory"]["requestPolicy"],
            json::parse(R"({"validValues": ["1Gi", "2Gi"]})"));
  EXPECT_EQ(out["nodeName"], "node-1");
  for (const char* absent :
       {"allowMultipleAllocations", "consumesCounters", "taints", "bindsToNode",
        "bindingConditions", "bindingFailureConditions", "nodeSelector", "allNodes"}) {
    EXPECT_FALSE(out.contains(absent)) << absent;
  }
}

TEST(CounterSetJson, NameAndCounterValues) {
  EXPECT_EQ(CounterSetJson({.name = "gpu-0", .counters = {{"memory", "80Gi"}, {"compute", "7"}}}),
            json::parse(R"({"name": "gpu-0", "counters": {"memory": {"value": "80Gi"},
                                                          "compute": {"value": "7"}}})"));
}

TEST(ValidateDeviceModel, RequestPolicyNeedsAllowMultipleAllocations) {
  DraDevice device = Plain("gpu-0");
  device.request_policies["memory"] = {.default_value = "1Gi"};
  EXPECT_EQ(ValidateOne(device).message(),
            "device \"gpu-0\": capacity[\"memory\"].requestPolicy: Forbidden: "
            "allowMultipleAllocations must be true");
  device.allow_multiple_allocations = true;
  EXPECT_TRUE(ValidateOne(device).ok());
  device.request_policies["cores"] = {.default_value = "1"};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("the device has no capacity of this name"));
}

TEST(ValidateDeviceModel, RequestPolicyRules) {
  auto check = [](CapacityRequestPolicy policy) {
    DraDevice device = Plain("gpu-0");
    device.allow_multiple_allocations = true;
    device.request_policies["memory"] = std::move(policy);
    return std::string(ValidateOne(device).message());
  };
  EXPECT_THAT(check({.default_value = "1Gi",
                     .valid_values = {"1Gi"},
                     .valid_range = CapacityRange{.min = "1Gi"}}),
              HasSubstr("cannot specify \"validValues\" and \"validRange\" at the same time"));
  EXPECT_THAT(check({.valid_values = {"1Gi"}}),
              HasSubstr("default: Required value: required when validValues is defined"));
  EXPECT_THAT(check({.default_value = "1Gi", .valid_values = {"2Gi", "1Gi"}}),
              HasSubstr("validValues[1]: Invalid value: \"1Gi\": values must be sorted in "
                        "ascending order"));
  EXPECT_THAT(check({.default_value = "1Gi", .valid_values = {"1Gi", "32Gi"}}),
              HasSubstr("option is larger than capacity value: 16Gi"));
  EXPECT_THAT(check({.default_value = "3Gi", .valid_values = {"1Gi", "2Gi"}}),
              HasSubstr("default value is not valid according to the requestPolicy"));
  EXPECT_THAT(check({.default_value = "1",
                     .valid_values = {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}}),
              HasSubstr("Too many: 11: must have at most 10 items"));
  EXPECT_THAT(check({.valid_range = CapacityRange{.min = "1Gi"}}),
              HasSubstr("required when validRange is defined"));
  EXPECT_THAT(check({.default_value = "1Gi", .valid_range = CapacityRange{.min = "32Gi"}}),
              HasSubstr("min is larger than capacity value: 16Gi"));
  EXPECT_THAT(check({.default_value = "1Gi", .valid_range = CapacityRange{.min = "2Gi"}}),
              HasSubstr("default is less than min: 2Gi"));
  EXPECT_THAT(
      check({.default_value = "4Gi", .valid_range = CapacityRange{.min = "1Gi", .max = "2Gi"}}),
      HasSubstr("default is more than max: 2Gi"));
  EXPECT_THAT(
      check({.default_value = "1Gi", .valid_range = CapacityRange{.min = "1Gi", .max = "32Gi"}}),
      HasSubstr("max is larger than capacity value: 16Gi"));
  EXPECT_THAT(
      check({.default_value = "1Gi", .valid_range = CapacityRange{.min = "1Gi", .step = "0"}}),
      HasSubstr("step: Invalid value: \"0\": must be greater than zero"));
  EXPECT_THAT(
      check({.default_value = "1536Mi", .valid_range = CapacityRange{.min = "1Gi", .step = "1Gi"}}),
      HasSubstr("value is not a multiple of a given step (1Gi) from (1Gi)"));
  EXPECT_EQ(check({.default_value = "2Gi",
                   .valid_range = CapacityRange{.min = "1Gi", .max = "8Gi", .step = "1Gi"}}),
            "");
}

TEST(ValidateDeviceModel, CounterConsumptionRules) {
  DraDevice device = Plain("gpu-0");
  device.consumes_counters = {{.counter_set = "a", .counters = {{"memory", "1"}}},
                              {.counter_set = "b", .counters = {{"memory", "1"}}},
                              {.counter_set = "c", .counters = {{"memory", "1"}}}};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("consumesCounters: Too many: 3: must have at most 2 items"));
  device.consumes_counters = {{.counter_set = "a", .counters = {{"memory", "1"}}},
                              {.counter_set = "a", .counters = {{"memory", "1"}}}};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("consumesCounters[1]: Duplicate value: \"a\""));
  device.consumes_counters = {{.counter_set = "Bad_Set", .counters = {{"memory", "1"}}}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("consumesCounters[0].counterSet: Invalid"));
  device.consumes_counters = {{.counter_set = "a", .counters = {}}};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("consumesCounters[0].counters: Required value"));
  device.consumes_counters = {{.counter_set = "a", .counters = {{"Memory", "1"}}}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("counters[\"Memory\"]: Invalid value"));
  device.consumes_counters = {{.counter_set = "a", .counters = {{"memory", "lots"}}}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("\"lots\" is not a quantity"));
}

TEST(ValidateDeviceModel, TaintRules) {
  DraDevice device = Plain("gpu-0");
  device.taints.resize(17, DeviceTaint{.key = "k"});
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("taints: Too many: 17: must have at most 16 items"));
  device.taints = {{.key = ""}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("taints[0].key: Required value"));
  device.taints = {{.key = "bad key"}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("taints[0].key: Invalid value"));
  device.taints = {{.key = "k", .value = "-bad"}};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("a valid label must be an empty string or consist of alphanumeric"));
  device.taints = {{.key = "k", .value = "v", .effect = static_cast<TaintEffect>(7)}};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("supported values: \"NoExecute\", \"NoSchedule\", \"None\""));
  device.taints = {{.key = "k", .value = "v", .time_added = "yesterday"}};
  EXPECT_THAT(ValidateOne(device).message(), HasSubstr("timeAdded"));
}

TEST(ValidateDeviceModel, BindingConditionRules) {
  DraDevice device = Plain("gpu-0");
  device.binding_conditions = {"a", "b", "c", "d", "e"};
  device.binding_failure_conditions = {"f"};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("bindingConditions: Too many: 5: must have at most 4 items"));
  device.binding_conditions = {"a", "a"};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("bindingConditions[1]: Duplicate value: \"a\""));
  device.binding_conditions = {"a"};
  device.binding_failure_conditions = {"a"};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("bindingFailureConditions must not overlap with bindingConditions"));
  device.binding_failure_conditions = {};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("bindingFailureConditions are required to use bindingConditions"));
  device.binding_conditions = {};
  device.binding_failure_conditions = {"f"};
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("bindingConditions are required to use bindingFailureConditions"));
}

TEST(ValidateDeviceModel, PerDeviceNodeSelection) {
  DraDevice device = Plain("nic-0");
  device.all_nodes = true;
  EXPECT_THAT(ValidateOne(device).message(),
              HasSubstr("`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
  EXPECT_TRUE(ValidateDraDevicesIn({device}, true).ok());
  device.node_name = "node-1";
  EXPECT_THAT(ValidateDraDevicesIn({device}, true).message(),
              HasSubstr("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
                        "when `perDeviceNodeSelection` is set to true"));
  device = Plain("nic-0");
  EXPECT_THAT(ValidateDraDevicesIn({device}, true).message(), HasSubstr("exactly one of"));
  device.node_selector = NodeSelector{.terms = {{}, {}}};
  EXPECT_THAT(
      ValidateDraDevicesIn({device}, true).message(),
      HasSubstr("nodeSelector.nodeSelectorTerms: must have exactly one node selector term"));
}

DraPool ClusterPool(const std::string& name) {
  return DraPool{.name = name, .devices = {Plain("nic-0")}, .all_nodes = true};
}

TEST(ValidateDraPools, NodeSelectionPerScope) {
  EXPECT_TRUE(ValidateDraPools({ClusterPool("fabric")}, PoolScope::kCluster).ok());
  EXPECT_THAT(ValidateDraPools({ClusterPool("fabric")}, PoolScope::kNodeLocal).message(),
              HasSubstr("pool \"fabric\": spec: a node plugin's pool gets the node's `nodeName`"));
  DraPool none = ClusterPool("fabric");
  none.all_nodes = false;
  EXPECT_EQ(ValidateDraPools({none}, PoolScope::kCluster).message(),
            "pool \"fabric\": spec: Required value: exactly one of `nodeName`, `nodeSelector`, "
            "`allNodes`, `perDeviceNodeSelection` is required");
  DraPool two = ClusterPool("fabric");
  two.per_device_node_selection = true;
  EXPECT_THAT(ValidateDraPools({two}, PoolScope::kCluster).message(),
              HasSubstr("is required, but multiple fields are set"));
  DraPool selector = ClusterPool("fabric");
  selector.all_nodes = false;
  selector.node_selector =
      NodeSelector{.terms = {{.match_expressions = {{.key = "rack", .op = "Near", .values = {}}}}}};
  EXPECT_THAT(ValidateDraPools({selector}, PoolScope::kCluster).message(),
              HasSubstr("matchExpressions[0].operator: Invalid value: \"Near\""));
  selector.node_selector->terms[0].match_expressions[0] = {.key = "rack", .op = "In", .values = {}};
  EXPECT_THAT(ValidateDraPools({selector}, PoolScope::kCluster).message(),
              HasSubstr("must be specified when `operator` is 'In' or 'NotIn'"));
}

TEST(ValidateDraPools, NamesAndCounterSets) {
  EXPECT_THAT(ValidateDraPools({ClusterPool("")}, PoolScope::kCluster).message(),
              HasSubstr("pool.name: Required value"));
  EXPECT_THAT(ValidateDraPools({ClusterPool("Bad_Pool")}, PoolScope::kCluster).message(),
              HasSubstr("must be DNS subdomains separated by '/'"));
  EXPECT_TRUE(ValidateDraPools({ClusterPool("a.example.com/rack-1")}, PoolScope::kCluster).ok());
  EXPECT_THAT(ValidateDraPools({ClusterPool("a"), ClusterPool("a")}, PoolScope::kCluster).message(),
              HasSubstr("pool.name: Duplicate value"));

  DraPool pool{.name = {}, .shared_counters = {{.name = "gpu-0", .counters = {{"memory", "4"}}}}};
  pool.devices = {Plain("gpu-0")};
  pool.devices[0].consumes_counters = {{.counter_set = "gpu-9", .counters = {{"memory", "1"}}}};
  EXPECT_THAT(ValidateDraPools({pool}, PoolScope::kNodeLocal).message(),
              HasSubstr("device \"gpu-0\": consumesCounters[0].counterSet: \"gpu-9\" is not a "
                        "counter set of this pool: a device may only consume counter sets of "
                        "its own pool"));
  pool.devices[0].consumes_counters = {{.counter_set = "gpu-0", .counters = {{"cores", "1"}}}};
  EXPECT_THAT(ValidateDraPools({pool}, PoolScope::kNodeLocal).message(),
              HasSubstr("counter \"cores\" is not in counter set \"gpu-0\""));
  pool.devices[0].consumes_counters = {{.counter_set = "gpu-0", .counters = {{"memory", "1"}}}};
  EXPECT_TRUE(ValidateDraPools({pool}, PoolScope::kNodeLocal).ok());
  pool.shared_counters.push_back(pool.shared_counters[0]);
  EXPECT_THAT(ValidateDraPools({pool}, PoolScope::kNodeLocal).message(),
              HasSubstr("sharedCounters[1].name: Duplicate value: \"gpu-0\""));
  pool.shared_counters = {{.name = "gpu-0", .counters = {}}};
  EXPECT_THAT(ValidateDraPools({pool}, PoolScope::kNodeLocal).message(),
              HasSubstr("sharedCounters[0].counters: Required value"));
  Quantities many;
  for (int i = 0; i < 33; ++i) many["c" + std::to_string(i)] = "1";
  pool.shared_counters = {{.name = "gpu-0", .counters = many}};
  EXPECT_THAT(ValidateDraPools({pool}, PoolScope::kNodeLocal).message(),
              HasSubstr("Too many: 33: must have at most 32 items"));
}

TEST(QuantityMilli, ScalesSuffixes) {
  EXPECT_EQ(QuantityMilli("1Gi"), int64_t{1073741824000});
  EXPECT_EQ(QuantityMilli("500m"), 500);
  EXPECT_EQ(QuantityMilli("1.5k"), 1500000);
  EXPECT_EQ(QuantityMilli("2e3"), 2000000);
  EXPECT_EQ(QuantityMilli("0.0001"), std::nullopt);
  EXPECT_EQ(QuantityMilli("9E"), std::nullopt);
  EXPECT_EQ(QuantityMilli("lots"), std::nullopt);
}

TEST(PartitionedPool, WholeDeviceAndPartitionsShareOneCounterSet) {
  DraDevice gpu = Plain("gpu0");
  gpu.attributes["model"] = std::string("example-gpu");
  const Quantities total = {{"memory", "4"}};
  DraPool pool =
      PartitionedPool({gpu}, total, {{.name = "1g", .count = 2, .counters = {{"memory", "1"}}}});
  ASSERT_EQ(pool.shared_counters.size(), 1u);
  EXPECT_EQ(pool.shared_counters[0], (CounterSet{.name = "gpu0", .counters = total}));
  ASSERT_EQ(pool.devices.size(), 3u);
  EXPECT_EQ(pool.devices[0].name, "gpu0");
  EXPECT_EQ(pool.devices[0].consumes_counters[0].counters, total);
  EXPECT_EQ(pool.devices[2].name, "gpu0-1g-1");
  EXPECT_EQ(pool.devices[2].attributes.at("profile"), AttributeValue(std::string("1g")));
  EXPECT_EQ(pool.devices[2].attributes.at("model"), AttributeValue(std::string("example-gpu")));
  EXPECT_TRUE(ValidateDraPools({pool}, PoolScope::kNodeLocal).ok());
}

TEST(MakeShareable, ConsumableCapacityInSteps) {
  DraDevice gpu = Plain("gpu0");
  MakeShareable(gpu, "memory", "1Gi");
  EXPECT_TRUE(gpu.allow_multiple_allocations);
  EXPECT_EQ(DeviceJson(gpu)["capacity"]["memory"]["requestPolicy"],
            json::parse(R"({"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}})"));
  EXPECT_TRUE(ValidateOne(gpu).ok());
}

}  // namespace
}  // namespace kdp::internal
