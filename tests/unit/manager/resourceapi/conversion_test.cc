#include "manager/src/controlplane/resourceapi/conversion.h"

#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/codec.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

const char kV1beta1Slice[] = R"({
  "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
  "metadata": {"generateName": "node-1-gpu.example.com-"},
  "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "allNodes": false,
           "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
           "devices": [{"name": "gpu-0", "basic": {"attributes": {"index": {"int": 0}},
                                                   "capacity": {"memory": {"value": "80Gi"}},
                                                   "taints": [{"key": "k", "effect": "NoSchedule"}]}}]}})";

const char kV1beta1Claim[] = R"({
  "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
  "metadata": {"name": "c", "namespace": "default"},
  "spec": {"devices": {
    "requests": [
      {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
       "count": 2, "adminAccess": true,
       "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].index == 0"}}]},
      {"name": "alt", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com",
                                          "allocationMode": "All"}]}],
    "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]}},
  "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                                     "pool": "node-1", "device": "gpu-0"}]}},
             "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}})";

TEST(Conversion, SliceV1beta1FlattensBasicIntoV1) {
  Json v1 = ToV1(Kind::kResourceSlice, "v1beta1", Json::parse(kV1beta1Slice));
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  const Json& device = v1["spec"]["devices"][0];
  EXPECT_FALSE(device.contains("basic"));
  EXPECT_EQ(device["attributes"]["index"]["int"], 0);
  EXPECT_EQ(device["capacity"]["memory"]["value"], "80Gi");
  EXPECT_EQ(device["taints"][0]["key"], "k");  // fields kdp does not type move too
  EXPECT_EQ(v1["spec"]["allNodes"], false);
  Json with_name = v1;
  with_name["metadata"]["name"] = "s";
  EXPECT_TRUE(DecodeResourceSlice(with_name).ok()) << DecodeResourceSlice(with_name).status();
}

TEST(Conversion, SliceRoundTripsBothWays) {
  Json beta = Json::parse(kV1beta1Slice);
  EXPECT_EQ(FromV1(Kind::kResourceSlice, "v1beta1", ToV1(Kind::kResourceSlice, "v1beta1", beta)),
            beta);
  Json v1 = ToV1(Kind::kResourceSlice, "v1beta1", beta);
  EXPECT_EQ(ToV1(Kind::kResourceSlice, "v1beta1", FromV1(Kind::kResourceSlice, "v1beta1", v1)), v1);
}

TEST(Conversion, ClaimFlatRequestBecomesExactly) {
  Json v1 = ToV1(Kind::kResourceClaim, "v1beta1", Json::parse(kV1beta1Claim));
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  const Json& gpu = v1["spec"]["devices"]["requests"][0];
  EXPECT_EQ(gpu, Json::parse(R"({"name": "gpu", "exactly": {
      "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
      "adminAccess": true,
      "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].index == 0"}}]}})"));
  const Json& alt = v1["spec"]["devices"]["requests"][1];
  EXPECT_FALSE(alt.contains("exactly"));
  EXPECT_EQ(alt["firstAvailable"][0]["name"], "big");
  EXPECT_EQ(v1["status"], Json::parse(kV1beta1Claim)["status"]);
  absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(v1);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->spec.devices.requests[0].exactly->count, 2);
  EXPECT_TRUE(claim->spec.devices.requests[0].exactly->admin_access);
}

TEST(Conversion, ClaimRoundTripsBothWays) {
  Json beta = Json::parse(kV1beta1Claim);
  EXPECT_EQ(FromV1(Kind::kResourceClaim, "v1beta1", ToV1(Kind::kResourceClaim, "v1beta1", beta)),
            beta);
  Json v1 = ToV1(Kind::kResourceClaim, "v1beta1", beta);
  EXPECT_EQ(ToV1(Kind::kResourceClaim, "v1beta1", FromV1(Kind::kResourceClaim, "v1beta1", v1)), v1);
}

TEST(Conversion, TemplateConvertsItsInnerSpec) {
  Json beta = {{"apiVersion", "resource.k8s.io/v1beta1"},
               {"kind", "ResourceClaimTemplate"},
               {"metadata", {{"name", "t"}, {"namespace", "default"}}},
               {"spec", {{"spec", Json::parse(kV1beta1Claim)["spec"]}}}};
  Json v1 = ToV1(Kind::kResourceClaimTemplate, "v1beta1", beta);
  EXPECT_EQ(v1["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"], 2);
  EXPECT_TRUE(DecodeResourceClaimTemplate(v1).ok());
  EXPECT_EQ(FromV1(Kind::kResourceClaimTemplate, "v1beta1", v1), beta);
}

TEST(Conversion, RequestWithBothFormsKeepsBothForValidation) {
  Json beta = Json::parse(kV1beta1Claim);
  beta["spec"]["devices"]["requests"][1]["deviceClassName"] = "x";
  Json v1 = ToV1(Kind::kResourceClaim, "v1beta1", beta);
  EXPECT_TRUE(v1["spec"]["devices"]["requests"][1].contains("exactly"));
  EXPECT_FALSE(DecodeResourceClaim(v1).ok());
}

TEST(Conversion, DeviceClassOnlyRewritesApiVersion) {
  Json cls = {{"apiVersion", "resource.k8s.io/v1beta1"},
              {"kind", "DeviceClass"},
              {"metadata", {{"name", "c"}}},
              {"spec", {{"selectors", {{{"cel", {{"expression", "true"}}}}}}}}};
  Json v1 = ToV1(Kind::kDeviceClass, "v1beta1", cls);
  Json expected = cls;
  expected["apiVersion"] = "resource.k8s.io/v1";
  EXPECT_EQ(v1, expected);
  EXPECT_EQ(FromV1(Kind::kDeviceClass, "v1beta1", v1), cls);
}

TEST(Conversion, V1ToV1IsIdentityApartFromApiVersion) {
  Json v1 = ToV1(Kind::kResourceSlice, "v1beta1", Json::parse(kV1beta1Slice));
  EXPECT_EQ(ToV1(Kind::kResourceSlice, "v1", v1), v1);
  EXPECT_EQ(FromV1(Kind::kResourceSlice, "v1", v1), v1);
}

// A core/v1 Event as the API server writes it (every field Go always writes present).
const char kCoreEvent[] = R"({
  "apiVersion": "v1", "kind": "Event",
  "metadata": {"name": "p.1", "namespace": "default", "uid": "u", "resourceVersion": "7"},
  "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "pu",
                     "fieldPath": "spec.containers{c}"},
  "reason": "Started", "message": "Started container c",
  "source": {"component": "kubelet", "host": "node-1"},
  "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:09Z", "count": 3,
  "type": "Normal", "eventTime": null, "action": "Start",
  "related": {"kind": "Node", "name": "node-1"},
  "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:09.000000Z"},
  "reportingComponent": "kubelet", "reportingInstance": "node-1"})";

TEST(Conversion, CoreEventToEventsK8sIoAndBack) {
  const Json core = Json::parse(kCoreEvent);
  const Json events = FromV1(Kind::kEvent, kEventsV1, core);
  EXPECT_EQ(events, Json::parse(R"({
    "apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "p.1", "namespace": "default", "uid": "u", "resourceVersion": "7"},
    "regarding": {"kind": "Pod", "name": "p", "namespace": "default", "uid": "pu",
                  "fieldPath": "spec.containers{c}"},
    "reason": "Started", "note": "Started container c",
    "deprecatedSource": {"component": "kubelet", "host": "node-1"},
    "deprecatedFirstTimestamp": "2026-01-02T03:04:05Z",
    "deprecatedLastTimestamp": "2026-01-02T03:04:09Z", "deprecatedCount": 3,
    "type": "Normal", "eventTime": null, "action": "Start",
    "related": {"kind": "Node", "name": "node-1"},
    "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:09.000000Z"},
    "reportingController": "kubelet", "reportingInstance": "node-1"})"));
  EXPECT_EQ(ToV1(Kind::kEvent, kEventsV1, events), core);
  // Core/v1 to core/v1 changes nothing.
  EXPECT_EQ(FromV1(Kind::kEvent, "v1", core), core);
  EXPECT_EQ(ToV1(Kind::kEvent, "v1", core), core);
}

TEST(Conversion, EventsK8sIoEventGetsTheFieldsCoreV1AlwaysWrites) {
  const Json events = Json::parse(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "e"}, "eventTime": "2026-01-02T03:04:05.000001Z", "note": "n",
    "reportingController": "example.com/c", "reportingInstance": "i"})");
  const Json core = ToV1(Kind::kEvent, kEventsV1, events);
  EXPECT_EQ(core, Json::parse(R"({"apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "e"}, "eventTime": "2026-01-02T03:04:05.000001Z", "message": "n",
    "reportingComponent": "example.com/c", "reportingInstance": "i",
    "involvedObject": {}, "source": {}})"));
  // And back: what events.k8s.io always writes, and nothing of core/v1's names.
  Json back = FromV1(Kind::kEvent, kEventsV1, core);
  EXPECT_EQ(back["regarding"], Json::object());
  EXPECT_EQ(back["deprecatedSource"], Json::object());
  EXPECT_EQ(back["note"], "n");
  EXPECT_FALSE(back.contains("involvedObject"));
  EXPECT_FALSE(back.contains("source"));
}

}  // namespace
}  // namespace kdp::manager::resourceapi
