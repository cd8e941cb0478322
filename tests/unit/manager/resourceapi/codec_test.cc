#include "manager/src/controlplane/resourceapi/codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json ValidSlice() {
  return Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu.example.com-abcde"},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0",
                          "attributes": {"index": {"int": 0}, "model": {"string": "LATEST"},
                                         "driverVersion": {"version": "1.0.0"},
                                         "gpu.example.com/healthy": {"bool": true}},
                          "capacity": {"memory": {"value": "80Gi"}}}]}})");
}

Json ValidClaim() {
  return Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "claim-1", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})");
}

// Expects an Invalid (422) error whose message names `text`.
void ExpectInvalid(const absl::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok()) << "expected: " << text;
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Reason(status), "Invalid") << status.message();
  EXPECT_EQ(HttpCode(status), 422);
  EXPECT_THAT(std::string(status.message()), HasSubstr(text));
}

TEST(Codec, DecodesValidSlice) {
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(ValidSlice());
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->spec.driver, "gpu.example.com");
  EXPECT_EQ(slice->spec.node_name, "node-1");
  EXPECT_EQ(slice->spec.pool.resource_slice_count, 1);
  ASSERT_EQ(slice->spec.devices.size(), 1u);
  const Device& d = slice->spec.devices[0];
  EXPECT_EQ(d.attributes.at("index").int_value, 0);
  EXPECT_EQ(d.attributes.at("model").string_value, "LATEST");
  EXPECT_EQ(d.attributes.at("driverVersion").version_value, "1.0.0");
  EXPECT_EQ(d.attributes.at("gpu.example.com/healthy").bool_value, true);
  EXPECT_EQ(d.capacity.at("memory").value, "80Gi");
}

TEST(Codec, SliceEncodeDecodeRoundTrip) {
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(ValidSlice());
  ASSERT_TRUE(slice.ok());
  absl::StatusOr<ResourceSlice> again = DecodeResourceSlice(EncodeResourceSlice(*slice));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *slice);
}

TEST(Codec, ErrorNamesKindNameAndField) {
  Json slice = ValidSlice();
  slice["spec"]["devices"][0]["name"] = "GPU_0";
  absl::Status s = DecodeResourceSlice(slice).status();
  ExpectInvalid(s,
                "ResourceSlice.resource.k8s.io \"node-1-gpu.example.com-abcde\" is invalid: "
                "spec.devices[0].name: Invalid value: \"GPU_0\": a lowercase RFC 1123 label");
  Json status = ToStatusObject(s);
  EXPECT_EQ(status["details"]["kind"], "ResourceSlice");
  EXPECT_EQ(status["details"]["causes"][0]["field"], "spec.devices[0].name");
  EXPECT_EQ(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
}

TEST(Codec, SeveralErrorsAreAggregatedInBrackets) {
  Json slice = ValidSlice();
  slice["spec"]["driver"] = "";
  slice["spec"]["pool"]["resourceSliceCount"] = 0;
  absl::Status s = DecodeResourceSlice(slice).status();
  ExpectInvalid(s,
                "is invalid: [spec.driver: Required value, spec.pool.resourceSliceCount: "
                "Invalid value: 0: must be greater than zero]");
}

TEST(Codec, SliceNameRules) {
  Json slice = ValidSlice();
  slice["metadata"]["name"] = "Bad_Name";
  ExpectInvalid(DecodeResourceSlice(slice).status(), "metadata.name: Invalid value: \"Bad_Name\"");
  slice["metadata"].erase("name");
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "metadata.name: Required value: name or generateName is required");
}

TEST(Codec, DriverNameRules) {
  Json slice = ValidSlice();
  slice["spec"]["driver"] = "not_a_domain";
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.driver: Invalid value: \"not_a_domain\"");
  slice["spec"]["driver"] = std::string(64, 'a');
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.driver: Too long: may not be more than 63 bytes");
  // Upper case is accepted: upstream lower-cases before the subdomain check.
  slice["spec"]["driver"] = "GPU.example.com";
  EXPECT_TRUE(DecodeResourceSlice(slice).ok());
}

TEST(Codec, ExactlyOneNodeSelection) {
  Json slice = ValidSlice();
  slice["spec"].erase("nodeName");
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`");
  slice["spec"]["nodeName"] = "node-1";
  slice["spec"]["allNodes"] = true;
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of");
  slice["spec"].erase("nodeName");
  EXPECT_TRUE(DecodeResourceSlice(slice).ok());
}

TEST(Codec, DeviceNamesUniqueAndAtMost128) {
  Json slice = ValidSlice();
  slice["spec"]["devices"].push_back({{"name", "gpu-0"}});
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[1].name: Duplicate value: \"gpu-0\"");
  slice["spec"]["devices"] = Json::array();
  for (int i = 0; i < 129; ++i)
    slice["spec"]["devices"].push_back({{"name", "d" + std::to_string(i)}});
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices: Too many: 129: must have at most 128 items");
  slice["spec"]["devices"].erase(128);
  EXPECT_TRUE(DecodeResourceSlice(slice).ok());
}

TEST(Codec, AttributeNeedsExactlyOneValue) {
  Json slice = ValidSlice();
  slice["spec"]["devices"][0]["attributes"]["index"] = {{"int", 1}, {"string", "x"}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].attributes[index]: Invalid value: \"{int, string}\": exactly one "
                "value must be specified");
  slice["spec"]["devices"][0]["attributes"]["index"] = Json::object();
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].attributes[index]: Required value: exactly one value must be "
                "specified");
}

TEST(Codec, AttributeValueRules) {
  Json slice = ValidSlice();
  slice["spec"]["devices"][0]["attributes"]["driverVersion"] = {{"version", "1.0"}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "attributes[driverVersion].version: Invalid value: \"1.0\": must be a string "
                "compatible with semver.org spec 2.0.0");
  slice = ValidSlice();
  slice["spec"]["devices"][0]["attributes"]["model"] = {{"string", std::string(65, 'x')}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "attributes[model].string: Too long: may not be more than 64 bytes");
}

TEST(Codec, QualifiedNames) {
  Json slice = ValidSlice();
  auto& attrs = slice["spec"]["devices"][0]["attributes"];
  attrs["9lives"] = {{"int", 1}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].attributes[9lives]: Invalid value: \"9lives\": a valid C "
                "identifier");
  attrs.erase("9lives");
  attrs["a/b/c"] = {{"int", 1}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "must be either a C identifier or a domain followed by a slash");
  attrs.erase("a/b/c");
  attrs["/x"] = {{"int", 1}};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "attributes[/x]: Required value: the domain must not be empty");
  attrs.erase("/x");
  attrs["example.com/ok_name"] = {{"int", 1}};
  EXPECT_TRUE(DecodeResourceSlice(slice).ok());
}

TEST(Codec, AtMost32AttributesAndCapacities) {
  Json slice = ValidSlice();
  Json& device = slice["spec"]["devices"][0];
  for (int i = 0; i < 28; ++i) device["attributes"]["a" + std::to_string(i)] = {{"int", i}};
  ASSERT_EQ(device["attributes"].size() + device["capacity"].size(), 33u);
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0]: Invalid value: 33: the total number of attributes and "
                "capacities must not exceed 32");
  device["attributes"].erase("a0");
  EXPECT_TRUE(DecodeResourceSlice(slice).ok());
}

TEST(Codec, BadQuantityIsBadRequest) {
  Json slice = ValidSlice();
  slice["spec"]["devices"][0]["capacity"]["memory"]["value"] = "80GB";
  absl::Status s = DecodeResourceSlice(slice).status();
  EXPECT_EQ(Reason(s), "BadRequest");
  EXPECT_EQ(HttpCode(s), 400);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: "
                        "spec.devices[0].capacity[memory].value: quantity \"80GB\" is invalid"));
}

TEST(Codec, WrongJsonTypeIsBadRequest) {
  Json claim = ValidClaim();
  claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = "2";
  absl::Status s = DecodeResourceClaim(claim).status();
  EXPECT_EQ(Reason(s), "BadRequest");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cannot unmarshal string into Go struct field "
                        "spec.devices.requests[0].exactly.count of type int64"));
}

TEST(Codec, NormalizeCanonicalizesQuantitiesAndDefaultsRequests) {
  Json slice = ValidSlice();
  slice["spec"]["devices"][0]["capacity"]["cores"] = {{"value", 1000}};
  Normalize(Kind::kResourceSlice, &slice);
  EXPECT_EQ(slice["spec"]["devices"][0]["capacity"]["cores"]["value"], "1k");
  EXPECT_EQ(slice["spec"]["devices"][0]["capacity"]["memory"]["value"], "80Gi");

  Json claim = ValidClaim();
  claim["spec"]["devices"]["requests"].push_back(
      {{"name", "alt"},
       {"firstAvailable", {{{"name", "a"}, {"deviceClassName", "c"}, {"allocationMode", "All"}}}}});
  Normalize(Kind::kResourceClaim, &claim);
  const Json& exactly = claim["spec"]["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(exactly["allocationMode"], "ExactCount");
  EXPECT_EQ(exactly["count"], 1);
  const Json& sub = claim["spec"]["devices"]["requests"][1]["firstAvailable"][0];
  EXPECT_EQ(sub["allocationMode"], "All");
  EXPECT_FALSE(sub.contains("count"));
}

TEST(Codec, ClaimDefaultsAndDecodes) {
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(ValidClaim());
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_EQ(claim->spec.devices.requests.size(), 1u);
  const ExactDeviceRequest& r = *claim->spec.devices.requests[0].exactly;
  EXPECT_EQ(r.device_class_name, "gpu.example.com");
  EXPECT_EQ(r.allocation_mode, kAllocationModeExactCount);
  EXPECT_EQ(r.count, 1);
}

TEST(Codec, ExactlyOneOfExactlyAndFirstAvailable) {
  Json claim = ValidClaim();
  Json& req = claim["spec"]["devices"]["requests"][0];
  req["firstAvailable"] = {{{"name", "a"}, {"deviceClassName", "c"}}};
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0]: Forbidden: exactly one of `exactly` or "
                "`firstAvailable` is required, but multiple fields are set");
  req.erase("exactly");
  req.erase("firstAvailable");
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
                "`firstAvailable` is required");
}

TEST(Codec, AllocationModeAndCount) {
  Json claim = ValidClaim();
  Json& exactly = claim["spec"]["devices"]["requests"][0]["exactly"];
  exactly["count"] = -1;
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than "
                "zero");
  exactly["allocationMode"] = "All";
  exactly["count"] = 2;
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified "
                "when allocationMode is 'All'");
  exactly.erase("count");
  EXPECT_TRUE(DecodeResourceClaim(claim).ok());
  exactly["allocationMode"] = "Some";
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Some\": "
                "supported values: \"All\", \"ExactCount\"");
  exactly["allocationMode"] = "ExactCount";
  exactly["count"] = 0;  // omitempty: 0 is "unset" and defaults to 1
  absl::StatusOr<ResourceClaim> decoded = DecodeResourceClaim(claim);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->spec.devices.requests[0].exactly->count, 1);
}

TEST(Codec, RequestNamesAndClassNames) {
  Json claim = ValidClaim();
  claim["spec"]["devices"]["requests"].push_back(claim["spec"]["devices"]["requests"][0]);
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[1].name: Duplicate value: \"gpu\"");
  claim = ValidClaim();
  claim["spec"]["devices"]["requests"][0]["exactly"].erase("deviceClassName");
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.requests[0].exactly.deviceClassName: Required value");
}

TEST(Codec, ConfigAndConstraintReferences) {
  Json claim = ValidClaim();
  claim["spec"]["devices"]["config"] = {
      {{"requests", {"nope"}},
       {"opaque", {{"driver", "gpu.example.com"}, {"parameters", {{"a", 1}}}}}}};
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.config[0].requests[0]: Invalid value: \"nope\": must be the name of "
                "a request in the claim");
  claim["spec"]["devices"]["config"][0]["requests"] = {"gpu"};
  claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = "text";
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.config[0].opaque.parameters: Invalid value: \"<value omitted>\": "
                "parameters must be a valid JSON object");
  claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {{"a", 1}};
  claim["spec"]["devices"]["constraints"] = {{{"matchAttribute", "model"}}};
  ExpectInvalid(DecodeResourceClaim(claim).status(),
                "spec.devices.constraints[0].matchAttribute: Required value: must include a "
                "domain");
  claim["spec"]["devices"]["constraints"][0]["matchAttribute"] = "gpu.example.com/model";
  EXPECT_TRUE(DecodeResourceClaim(claim).ok()) << DecodeResourceClaim(claim).status();
}

TEST(Codec, ClaimStatusRoundTripAndRules) {
  ResourceClaim claim = *DecodeResourceClaim(ValidClaim());
  AllocationResult alloc;
  alloc.results.push_back({.request = "gpu",
                           .driver = "gpu.example.com",
                           .pool = "node-1",
                           .device = "gpu-0",
                           .admin_access = std::nullopt,
                           .share_id = std::nullopt});
  alloc.config.push_back({.source = kConfigSourceFromClass,
                          .requests = {},
                          .opaque = {.driver = "gpu.example.com", .parameters = {{"k", "v"}}}});
  alloc.node_selector = Json{{"nodeSelectorTerms", Json::array()}};
  claim.status.allocation = alloc;
  claim.status.reserved_for.push_back(
      {.api_group = "", .resource = "pods", .name = "pod-1", .uid = "uid-1"});
  Json encoded = EncodeResourceClaim(claim);
  EXPECT_EQ(encoded["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-0");
  EXPECT_EQ(encoded["status"]["allocation"]["devices"]["config"][0]["source"], "FromClass");
  EXPECT_EQ(encoded["status"]["reservedFor"][0]["uid"], "uid-1");
  absl::StatusOr<ResourceClaim> again = DecodeResourceClaim(encoded);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, claim);

  Json bad = encoded;
  bad["status"]["reservedFor"].push_back(bad["status"]["reservedFor"][0]);
  ExpectInvalid(DecodeResourceClaim(bad).status(),
                "status.reservedFor[1].uid: Duplicate value: \"uid-1\"");
  bad = encoded;
  bad["status"].erase("allocation");
  ExpectInvalid(DecodeResourceClaim(bad).status(),
                "status.reservedFor: Forbidden: may not be specified when `allocated` is not set");
  bad = encoded;
  bad["status"]["allocation"]["devices"]["config"][0]["source"] = "FromNowhere";
  ExpectInvalid(DecodeResourceClaim(bad).status(),
                "status.allocation.devices.config[0].source: Unsupported value");
  bad = encoded;
  bad["status"]["allocation"]["devices"]["results"][0]["request"] = "other";
  ExpectInvalid(DecodeResourceClaim(bad).status(),
                "status.allocation.devices.results[0].request: Invalid value: \"other\"");
}

TEST(Codec, DeviceClassAndTemplate) {
  Json cls = {
      {"metadata", {{"name", "gpu.example.com"}}},
      {"spec",
       {{"selectors", {{{"cel", {{"expression", "device.driver == 'gpu.example.com'"}}}}}},
        {"config", {{{"opaque", {{"driver", "gpu.example.com"}, {"parameters", {{"x", 1}}}}}}}}}}};
  absl::StatusOr<DeviceClass> decoded = DecodeDeviceClass(cls);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.selectors[0].cel_expression, "device.driver == 'gpu.example.com'");
  EXPECT_EQ(*DecodeDeviceClass(EncodeDeviceClass(*decoded)), *decoded);
  cls["spec"]["selectors"][0]["cel"]["expression"] = "";
  ExpectInvalid(DecodeDeviceClass(cls).status(),
                "spec.selectors[0].cel.expression: Required value");

  Json tmpl = {
      {"metadata", {{"name", "t"}, {"namespace", "default"}}},
      {"spec", {{"metadata", {{"labels", {{"a", "b"}}}}}, {"spec", ValidClaim()["spec"]}}}};
  absl::StatusOr<ResourceClaimTemplate> t = DecodeResourceClaimTemplate(tmpl);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->spec.metadata.labels.at("a"), "b");
  EXPECT_EQ(*DecodeResourceClaimTemplate(EncodeResourceClaimTemplate(*t)), *t);
  tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = -3;
  ExpectInvalid(DecodeResourceClaimTemplate(tmpl).status(),
                "spec.spec.devices.requests[0].exactly.count: Invalid value: -3");
  tmpl["metadata"].erase("namespace");
  ExpectInvalid(DecodeResourceClaimTemplate(tmpl).status(), "metadata.namespace: Required value");
}

// ---- The 1.35 device model: counters, consumable capacity, taints, node selection ----

Json CounterSlice() {
  return Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu.example.com-counters"},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
             "sharedCounters": [{"name": "gpu-0-counters",
                                 "counters": {"memory": {"value": "40Gi"}, "slices": {"value": 7}}}]}})");
}

Json PartitionSlice() {
  Json slice = ValidSlice();
  slice["spec"]["pool"]["resourceSliceCount"] = 2;
  Json& d = slice["spec"]["devices"][0];
  d["consumesCounters"] = Json::parse(
      R"([{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "20Gi"}}}])");
  d["taints"] = Json::parse(
      R"([{"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule",
           "timeAdded": "2026-11-29T10:00:00Z"}])");
  d["allowMultipleAllocations"] = true;
  d["capacity"]["memory"]["requestPolicy"] = Json::parse(
      R"({"default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}})");
  d["bindsToNode"] = true;
  d["bindingConditions"] = {"example.com/attached"};
  d["bindingFailureConditions"] = {"example.com/failed"};
  return slice;
}

TEST(CodecDevices, DecodesCountersTaintsAndCapacityPolicy) {
  absl::StatusOr<ResourceSlice> counters = DecodeResourceSlice(CounterSlice());
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_EQ(counters->spec.shared_counters.size(), 1u);
  EXPECT_EQ(counters->spec.shared_counters[0].counters.at("slices").value, "7");

  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(PartitionSlice());
  ASSERT_TRUE(slice.ok()) << slice.status();
  const Device& d = slice->spec.devices[0];
  ASSERT_EQ(d.consumes_counters.size(), 1u);
  EXPECT_EQ(d.consumes_counters[0].counter_set, "gpu-0-counters");
  EXPECT_EQ(d.consumes_counters[0].counters.at("memory").value, "20Gi");
  ASSERT_EQ(d.taints.size(), 1u);
  EXPECT_EQ(d.taints[0].effect, "NoSchedule");
  EXPECT_EQ(d.taints[0].time_added, "2026-11-29T10:00:00Z");
  EXPECT_TRUE(d.allow_multiple_allocations);
  ASSERT_TRUE(d.capacity.at("memory").request_policy.has_value());
  EXPECT_EQ(d.capacity.at("memory").request_policy->valid_range->step, "1Gi");
  EXPECT_TRUE(d.binds_to_node);

  // Encode writes every field back as the API does, and decodes to the same object.
  for (const ResourceSlice& s : {*counters, *slice}) {
    absl::StatusOr<ResourceSlice> again = DecodeResourceSlice(EncodeResourceSlice(s));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, s);
  }
}

TEST(CodecDevices, SharedCountersAndDevicesAreExclusive) {
  Json slice = CounterSlice();
  slice["spec"]["devices"] = ValidSlice()["spec"]["devices"];
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed");
}

TEST(CodecDevices, CounterRules) {
  Json slice = CounterSlice();
  slice["spec"]["sharedCounters"][0]["name"] = "Not_A_Label";
  ExpectInvalid(DecodeResourceSlice(slice).status(), "spec.sharedCounters[0].name: Invalid value");
  slice = CounterSlice();
  slice["spec"]["sharedCounters"][0]["counters"] = Json::object();
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.sharedCounters[0].counters: Required value");
  slice = CounterSlice();
  for (int i = 0; i < 8; ++i) {
    Json set = slice["spec"]["sharedCounters"][0];
    set["name"] = "set-" + std::to_string(i);
    slice["spec"]["sharedCounters"].push_back(set);
  }
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.sharedCounters: Too many: 9: must have at most 8 items");
  slice = PartitionSlice();
  Json consumption = slice["spec"]["devices"][0]["consumesCounters"][0];
  slice["spec"]["devices"][0]["consumesCounters"].push_back(consumption);
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].consumesCounters[1]: Duplicate value: \"gpu-0-counters\"");
}

TEST(CodecDevices, SixtyFourDevicesWhenTaintsOrCountersAreUsed) {
  Json slice = PartitionSlice();
  Json device = slice["spec"]["devices"][0];
  slice["spec"]["devices"] = Json::array();
  for (int i = 0; i < 65; ++i) {
    device["name"] = "d" + std::to_string(i);
    slice["spec"]["devices"].push_back(device);
  }
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices: Too many: 65: must have at most 64 items");
}

TEST(CodecDevices, RequestPolicyRules) {
  Json slice = PartitionSlice();
  slice["spec"]["devices"][0]["allowMultipleAllocations"] = false;
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].capacity[memory].requestPolicy: Forbidden: "
                "allowMultipleAllocations must be true");
  slice = PartitionSlice();
  Json& policy = slice["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"];
  policy["validValues"] = {"1Gi"};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "cannot specify \"validValues\" and \"validRange\" at the same time");
  policy.erase("validRange");
  policy["validValues"] = {"2Gi", "1Gi", "100Gi"};
  absl::Status s = DecodeResourceSlice(slice).status();
  ExpectInvalid(s,
                "validValues[1]: Invalid value: \"1Gi\": values must be sorted in ascending order");
  ExpectInvalid(
      s, "validValues[2]: Invalid value: \"100Gi\": option is larger than capacity value: 80Gi");
  policy["validValues"] = {"2Gi", "4Gi"};
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "validValues: Invalid value: \"1Gi\": default value is not valid according to the "
                "requestPolicy");
}

TEST(CodecDevices, TaintAndTolerationRules) {
  Json slice = PartitionSlice();
  slice["spec"]["devices"][0]["taints"][0]["effect"] = "PreferNoSchedule";
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].taints[0].effect: Unsupported value: \"PreferNoSchedule\"");
  slice["spec"]["devices"][0]["taints"][0].erase("key");
  slice["spec"]["devices"][0]["taints"][0]["effect"] = "NoExecute";
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0].taints[0].key: Required value");

  Json claim = ValidClaim();
  Json& exactly = claim["spec"]["devices"]["requests"][0]["exactly"];
  exactly["tolerations"] = Json::parse(R"([{"key": "k", "operator": "Exists", "value": "v"}])");
  ExpectInvalid(
      DecodeResourceClaim(claim).status(),
      "tolerations[0].value: Invalid value: \"v\": value must be empty when `operator` is "
      "'Exists'");
  exactly["tolerations"] = Json::parse(R"([{"key": "k", "value": "v", "effect": "NoExecute",
                                            "tolerationSeconds": 30}])");
  Normalize(Kind::kResourceClaim, &claim);
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["operator"],
            "Equal");
  absl::StatusOr<ResourceClaim> decoded = DecodeResourceClaim(claim);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.devices.requests[0].exactly->tolerations[0].toleration_seconds, 30);
}

TEST(CodecDevices, PerDeviceNodeSelection) {
  Json slice = ValidSlice();
  slice["spec"].erase("nodeName");
  slice["spec"]["perDeviceNodeSelection"] = true;
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
                "`allNodes` is required when `perDeviceNodeSelection` is set to true");
  slice["spec"]["devices"][0]["nodeName"] = "node-2";
  absl::StatusOr<ResourceSlice> ok = DecodeResourceSlice(slice);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->spec.per_device_node_selection);
  EXPECT_EQ(ok->spec.devices[0].node_name, "node-2");
  slice = ValidSlice();
  slice["spec"]["devices"][0]["allNodes"] = true;
  ExpectInvalid(DecodeResourceSlice(slice).status(),
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true");
}

TEST(CodecDevices, CapacityRequestsDistinctAttributeAndSharedResults) {
  Json claim = ValidClaim();
  claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
      {"requests", {{"memory", "1024Mi"}}}};
  claim["spec"]["devices"]["constraints"] =
      Json::parse(R"([{"distinctAttribute": "gpu.example.com/index"}])");
  claim["status"] = Json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
       "shareID": "0b4f6c1e-8d2a-4c3b-9f1e-2a3b4c5d6e7f", "consumedCapacity": {"memory": "1Gi"},
       "tolerations": [{"key": "k", "operator": "Exists"}]}]}}})");
  Normalize(Kind::kResourceClaim, &claim);
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"]["memory"],
            "1Gi");
  absl::StatusOr<ResourceClaim> decoded = DecodeResourceClaim(claim);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.devices.constraints[0].distinct_attribute, "gpu.example.com/index");
  const DeviceRequestAllocationResult& r = decoded->status.allocation->results[0];
  EXPECT_EQ(r.consumed_capacity.at("memory"), "1Gi");
  EXPECT_EQ(r.tolerations[0].operator_, "Exists");
  Json status = EncodeClaimStatus(decoded->status);
  EXPECT_EQ(status["allocation"]["devices"]["results"][0]["shareID"],
            "0b4f6c1e-8d2a-4c3b-9f1e-2a3b4c5d6e7f");
  EXPECT_EQ(status["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"], "1Gi");
  Json spec = EncodeClaimSpec(decoded->spec);
  EXPECT_EQ(spec["devices"]["constraints"][0]["distinctAttribute"], "gpu.example.com/index");
  EXPECT_FALSE(spec["devices"]["constraints"][0].contains("matchAttribute"));
}

TEST(CodecDevices, NormalizeCanonicalizesCountersAndPolicies) {
  Json slice = PartitionSlice();
  slice["spec"]["devices"][0]["consumesCounters"][0]["counters"]["slices"] = {{"value", 3000}};
  slice["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["validRange"]["max"] =
      85899345920;
  Normalize(Kind::kResourceSlice, &slice);
  EXPECT_EQ(slice["spec"]["devices"][0]["consumesCounters"][0]["counters"]["slices"]["value"],
            "3k");
  EXPECT_EQ(slice["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["validRange"]["max"],
            "85899345920");
  Json counters = CounterSlice();
  Normalize(Kind::kResourceSlice, &counters);
  EXPECT_EQ(counters["spec"]["sharedCounters"][0]["counters"]["slices"]["value"], "7");
}

}  // namespace
}  // namespace kdp::manager::resourceapi
