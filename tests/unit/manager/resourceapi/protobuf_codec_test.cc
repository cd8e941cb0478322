#include "manager/src/controlplane/resourceapi/protobuf_codec.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "k8s/api/resource/v1/generated.pb.h"
#include "k8s/api/resource/v1beta1/generated.pb.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "tests/unit/manager/resourceapi/protobuf_body_builder.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
using ::kdp::testing::ProtobufBody;

// A protobuf wire writer, so the bodies below are written byte by byte from the upstream field
// numbers rather than by the generated classes under test.
class Wire {
 public:
  Wire& Varint(int field, uint64_t value) {
    Key(field, 0);
    PutVarint(value);
    return *this;
  }
  Wire& Int(int field, int64_t value) { return Varint(field, static_cast<uint64_t>(value)); }
  Wire& Bool(int field, bool value) { return Varint(field, value ? 1 : 0); }
  Wire& Bytes(int field, std::string_view value) {
    Key(field, 2);
    PutVarint(value.size());
    bytes_.append(value);
    return *this;
  }
  Wire& Msg(int field, const Wire& message) { return Bytes(field, message.bytes_); }
  Wire& Append(const Wire& fields) {
    bytes_ += fields.bytes_;
    return *this;
  }
  // One map entry {key = 1, value = 2}.
  Wire& Entry(int field, std::string_view key, const Wire& value) {
    return Msg(field, Wire().Bytes(1, key).Msg(2, value));
  }
  Wire& Entry(int field, std::string_view key, std::string_view value) {
    return Msg(field, Wire().Bytes(1, key).Bytes(2, value));
  }
  const std::string& str() const { return bytes_; }

 private:
  void Key(int field, int wire_type) { PutVarint(static_cast<uint64_t>(field) << 3 | wire_type); }
  void PutVarint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes_.push_back(static_cast<char>(v | 0x80));
    bytes_.push_back(static_cast<char>(v));
  }
  std::string bytes_;
};

constexpr char kV1[] = "resource.k8s.io/v1";
constexpr char kV1beta1[] = "resource.k8s.io/v1beta1";
const std::string kMagic("k8s\0", 4);

// "k8s\0" + Unknown{typeMeta{apiVersion = 1, kind = 2} = 1, raw = 2}.
std::string Body(std::string_view api_version, std::string_view kind, const std::string& raw) {
  return kMagic + Wire().Msg(1, Wire().Bytes(1, api_version).Bytes(2, kind)).Bytes(2, raw).str();
}
Wire Quantity(std::string_view text) { return Wire().Bytes(1, text); }
Wire Pool() { return Wire().Bytes(1, "node-1").Int(2, 1).Int(3, 1); }
// ResourceSlice{metadata = 1, spec = 2}.
std::string Slice(const Wire& meta, const Wire& spec) {
  return Wire().Msg(1, meta).Msg(2, spec).str();
}
// A v1 spec: driver = 1, pool = 2, nodeName = 3, then the fields of `rest`.
Wire SpecV1(const Wire& rest = Wire()) {
  return Wire().Bytes(1, "gpu.example.com").Msg(2, Pool()).Bytes(3, "node-1").Append(rest);
}
Wire Name(std::string_view name) { return Wire().Bytes(1, name); }

Json Decode(std::string_view version, const std::string& body) {
  absl::StatusOr<Json> json = DecodeProtobufBody(Kind::kResourceSlice, version, body);
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : Json();
}

void ExpectBadRequest(const absl::StatusOr<Json>& result, const std::string& message) {
  ASSERT_FALSE(result.ok()) << "expected: " << message;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCode(result.status()), 400);
  EXPECT_EQ(Reason(result.status()), "BadRequest");
  EXPECT_EQ(result.status().message(), message);
}

const Json kMinimalSpec = Json::parse(R"({"driver": "gpu.example.com", "nodeName": "node-1",
    "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1}})");

TEST(ProtobufWire, BuilderWritesUpstreamEncoding) {
  EXPECT_EQ(Wire().Varint(1, 300).str(), "\x08\xac\x02");
  EXPECT_EQ(Wire().Int(7, -1).str(), "\x38" + std::string(9, '\xff') + "\x01");
  EXPECT_EQ(Wire().Bytes(2, "ab").str(),
            "\x12\x02"
            "ab");
}

// The whole body written out by hand: k8s\0, Unknown{typeMeta{apiVersion, kind}, raw}, where raw
// is ResourceSlice{metadata{name "s"}, spec{driver "d.io", pool{"n", 1, 1}, nodeName "n"}}.
TEST(ProtobufCodec, DecodesLiteralBody) {
  constexpr char kBytes[] =
      "k8s\0"
      "\x0a\x23"                                         // typeMeta, 35 bytes
      "\x0a\x12resource.k8s.io/v1\x12\x0dResourceSlice"  // apiVersion, kind
      "\x12\x19"                                         // raw, 25 bytes
      "\x0a\x03\x0a\x01s"                                // metadata{name}
      "\x12\x12\x0a\x04"
      "d.io"                               // spec{driver
      "\x12\x07\x0a\x01n\x10\x01\x18\x01"  //   pool{name, generation, count}
      "\x1a\x01n";                         //   nodeName}
  const std::string body(kBytes, sizeof(kBytes) - 1);
  EXPECT_EQ(Decode("v1", body), Json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
      "spec": {"driver": "d.io", "nodeName": "n",
               "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1}}})"));
  // The test helper writes the same envelope (plus Go's empty contentEncoding and contentType).
  ::k8s::io::api::resource::v1::ResourceSlice slice;
  slice.mutable_metadata()->set_name("s");
  EXPECT_EQ(ProtobufBody(kV1, "ResourceSlice", slice),
            std::string(kBytes, 41) + std::string("\x12\x05\x0a\x03\x0a\x01s\x1a\x00\x22\x00", 11));
}

TEST(ProtobufCodec, DecodesObjectMeta) {
  const Wire time = Wire().Int(1, 1767323045).Int(2, 999);  // nanos are dropped, as upstream
  const Wire meta =
      Wire()
          .Bytes(1, "")  // Go's marshaller writes empty value fields: they stay absent
          .Bytes(2, "00000-gpu.example.com-node-1-")
          .Bytes(3, "")
          .Bytes(4, "")
          .Bytes(5, "uid-1")
          .Bytes(6, "42")
          .Int(7, int64_t{1} << 40)
          .Msg(8, time)
          .Msg(9, Wire().Int(1, -1))
          .Int(10, 30)
          .Entry(11, "app", "gpu")
          .Entry(11, "tier", "")
          .Entry(12, "example.com/note", "x")
          .Msg(13, Wire()
                       .Bytes(1, "Node")
                       .Bytes(3, "node-1")
                       .Bytes(4, "n-uid")
                       .Bytes(5, "v1")
                       .Bool(6, true))
          .Msg(13,
               Wire().Bytes(1, "Pod").Bytes(3, "p").Bytes(4, "p-uid").Bytes(5, "v1").Bool(7, false))
          .Bytes(14, "example.com/a")
          .Bytes(14, "example.com/b")
          .Msg(17, Wire()
                       .Bytes(1, "driver")
                       .Bytes(2, "Update")
                       .Bytes(3, kV1)
                       .Msg(4, time)
                       .Bytes(6, "FieldsV1")
                       .Msg(7, Wire().Bytes(1, R"({"f:spec":{"f:driver":{}}})")));
  const Json json = Decode("v1", Body(kV1, "ResourceSlice", Slice(meta, SpecV1())));
  EXPECT_EQ(json["metadata"], Json::parse(R"({
      "generateName": "00000-gpu.example.com-node-1-", "uid": "uid-1", "resourceVersion": "42",
      "generation": 1099511627776, "creationTimestamp": "2026-01-02T03:04:05Z",
      "deletionTimestamp": "1969-12-31T23:59:59Z", "deletionGracePeriodSeconds": 30,
      "labels": {"app": "gpu", "tier": ""}, "annotations": {"example.com/note": "x"},
      "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "n-uid", "controller": true},
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "p-uid",
         "blockOwnerDeletion": false}],
      "finalizers": ["example.com/a", "example.com/b"],
      "managedFields": [{"manager": "driver", "operation": "Update",
                         "apiVersion": "resource.k8s.io/v1", "time": "2026-01-02T03:04:05Z",
                         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:driver": {}}}}]})"));
  EXPECT_EQ(json["spec"], kMinimalSpec);
}

// Go's marshaller writes a zero Time as an empty message; JSON omits it.
TEST(ProtobufCodec, ZeroTimeIsOmitted) {
  const Json json =
      Decode("v1", Body(kV1, "ResourceSlice", Slice(Name("s").Msg(8, Wire()), SpecV1())));
  EXPECT_EQ(json["metadata"], Json::parse(R"({"name": "s"})"));
}

TEST(ProtobufCodec, DecodesEveryAttributeKindAndCapacity) {
  const Wire device =
      Name("gpu-0")
          .Entry(2, "index", Wire().Int(2, 0))
          .Entry(2, "offset", Wire().Int(2, -5))
          .Entry(2, "healthy", Wire().Bool(3, false))
          .Entry(2, "model", Wire().Bytes(4, "H100"))
          .Entry(2, "driverVersion", Wire().Bytes(5, "1.2.3"))
          .Entry(2, "gpu.example.com/numa", Wire().Int(2, 1))
          .Entry(3, "memory", Wire().Msg(1, Quantity("80Gi")))
          .Entry(3, "zero", Wire())  // a value Quantity that is absent is Go's zero, "0"
          .Entry(3, "cores",
                 Wire()
                     .Msg(1, Quantity("8"))
                     .Msg(2, Wire()
                                 .Msg(1, Quantity("1"))
                                 .Msg(3, Quantity("1"))
                                 .Msg(3, Quantity("2"))
                                 .Msg(4, Wire().Msg(1, Quantity("1")).Msg(3, Quantity("1")))));
  const Json json =
      Decode("v1", Body(kV1, "ResourceSlice", Slice(Name("s"), SpecV1(Wire().Msg(6, device)))));
  EXPECT_EQ(json["spec"]["devices"], Json::parse(R"([{"name": "gpu-0",
      "attributes": {"index": {"int": 0}, "offset": {"int": -5}, "healthy": {"bool": false},
                     "model": {"string": "H100"}, "driverVersion": {"version": "1.2.3"},
                     "gpu.example.com/numa": {"int": 1}},
      "capacity": {"memory": {"value": "80Gi"}, "zero": {"value": "0"},
                   "cores": {"value": "8", "requestPolicy": {"default": "1",
                             "validValues": ["1", "2"], "validRange": {"min": "1", "step": "1"}}}}}])"));
}

TEST(ProtobufCodec, DecodesRepeatedDevicesInOrderWithV1Options) {
  const Wire selector = Wire().Msg(
      1, Wire().Msg(1, Wire().Bytes(1, "zone").Bytes(2, "In").Bytes(3, "a").Bytes(3, "b")));
  const Wire devices = Wire()
                           .Msg(6, Name("gpu-1"))
                           .Msg(6, Name("gpu-0")
                                       .Bytes(5, "node-1")
                                       .Bool(7, false)
                                       .Bool(9, true)
                                       .Bytes(10, "ready")
                                       .Bytes(11, "failed")
                                       .Bool(12, false))
                           .Msg(6, Name("gpu-2").Msg(6, selector));
  const Json json = Decode(
      "v1", Body(kV1, "ResourceSlice", Slice(Name("s"), SpecV1(Wire(devices).Bool(5, false)))));
  EXPECT_EQ(json["spec"]["allNodes"], false);  // v1's *bool keeps a present false
  EXPECT_EQ(json["spec"]["devices"], Json::parse(R"([{"name": "gpu-1"},
      {"name": "gpu-0", "nodeName": "node-1", "allNodes": false, "bindsToNode": true,
       "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"],
       "allowMultipleAllocations": false},
      {"name": "gpu-2", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
          {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}])"));
}

TEST(ProtobufCodec, DecodesCountersAndTaints) {
  const Wire counters = Wire().Entry(2, "memory", Wire().Msg(1, Quantity("40Gi")));
  const Wire shared = Wire()
                          .Bytes(1, "gpu.example.com")
                          .Msg(2, Pool())
                          .Bool(7, true)  // perDeviceNodeSelection
                          .Msg(8, Name("gpu-0-set").Append(counters))
                          .Msg(6, Name("gpu-0-mig")
                                      .Msg(4, Wire().Bytes(1, "gpu-0-set").Append(counters))
                                      .Bytes(5, "node-1")
                                      .Msg(8, Wire()
                                                  .Bytes(1, "example.com/unhealthy")
                                                  .Bytes(2, "")
                                                  .Bytes(3, "NoSchedule")
                                                  .Msg(4, Wire().Int(1, 1767323045)))
                                      .Msg(8, Wire().Bytes(1, "k").Bytes(2, "v").Bytes(3, "None")));
  const Json json = Decode("v1", Body(kV1, "ResourceSlice", Slice(Name("s"), shared)));
  EXPECT_EQ(json["spec"], Json::parse(R"({"driver": "gpu.example.com",
      "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
      "perDeviceNodeSelection": true,
      "sharedCounters": [{"name": "gpu-0-set", "counters": {"memory": {"value": "40Gi"}}}],
      "devices": [{"name": "gpu-0-mig", "nodeName": "node-1",
                   "consumesCounters": [{"counterSet": "gpu-0-set",
                                         "counters": {"memory": {"value": "40Gi"}}}],
                   "taints": [{"key": "example.com/unhealthy", "effect": "NoSchedule",
                               "timeAdded": "2026-01-02T03:04:05Z"},
                              {"key": "k", "value": "v", "effect": "None"}]}]})"));
}

// v1beta1 as helpers v0.32/v0.33 send it: spec.nodeName and spec.allNodes are value fields (a
// written false stays out, as omitempty drops it); each device's fields sit in `basic`, whose
// allNodes is a *bool (a written false stays in).
TEST(ProtobufCodec, DecodesV1beta1BasicWrapper) {
  const Wire spec =
      Wire()
          .Bytes(1, "gpu.example.com")
          .Msg(2, Pool())
          .Bytes(3, "node-1")
          .Bool(5, false)
          .Msg(6, Name("gpu-0").Msg(2, Wire()
                                           .Entry(1, "model", Wire().Bytes(4, "H100"))
                                           .Entry(1, "index", Wire().Int(2, 0))
                                           .Entry(2, "memory", Wire().Msg(1, Quantity("80Gi")))
                                           .Bool(6, false)))
          .Msg(6, Name("gpu-1").Msg(2, Wire()))
          .Msg(6, Name("gpu-2"));
  EXPECT_EQ(Decode("v1beta1", Body(kV1beta1, "ResourceSlice", Slice(Name("s"), spec))),
            Json::parse(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
      "metadata": {"name": "s"},
      "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
               "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
               "devices": [
                 {"name": "gpu-0", "basic": {"attributes": {"model": {"string": "H100"},
                                                            "index": {"int": 0}},
                                             "capacity": {"memory": {"value": "80Gi"}},
                                             "allNodes": false}},
                 {"name": "gpu-1", "basic": {}},
                 {"name": "gpu-2"}]}})"));
}

TEST(ProtobufCodec, V1beta1SpecAllNodesTrue) {
  const Wire spec = Wire().Bytes(1, "d.io").Msg(2, Pool()).Bytes(3, "").Bool(5, true);
  const Json json = Decode("v1beta1", Body(kV1beta1, "ResourceSlice", Slice(Name("s"), spec)));
  EXPECT_EQ(json["spec"]["allNodes"], true);
  EXPECT_FALSE(json["spec"].contains("nodeName"));
}

// Fields this decoder does not declare are skipped, as the API server skips unknown fields.
TEST(ProtobufCodec, SkipsUnknownFields) {
  const Wire meta = Name("s").Bytes(15, "cluster").Varint(200, 1);
  const Wire spec = SpecV1(
      Wire()
          .Msg(50, Wire().Bytes(1, "x"))
          .Msg(6, Name("gpu-0").Varint(99, 7).Entry(2, "a", Wire().Int(2, 1).Bytes(9, "future"))));
  const Json json = Decode("v1", Body(kV1, "ResourceSlice", Slice(meta, spec)));
  Json want = kMinimalSpec;
  want["devices"] = Json::parse(R"([{"name": "gpu-0", "attributes": {"a": {"int": 1}}}])");
  EXPECT_EQ(json["spec"], want);
  EXPECT_EQ(json["metadata"], Json::parse(R"({"name": "s"})"));
}

// The C++ parser would keep a declared field with another wire type as unknown; Go fails.
TEST(ProtobufCodec, RejectsDeclaredFieldWithWrongWireType) {
  const Wire spec = Wire().Varint(1, 5).Msg(2, Pool());
  ExpectBadRequest(DecodeProtobufBody(Kind::kResourceSlice, "v1",
                                      Body(kV1, "ResourceSlice", Slice(Name("s"), spec))),
                   "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: proto: "
                   "wrong wireType = 0 for field k8s.io.api.resource.v1.ResourceSliceSpec.driver");
  const Wire attr = SpecV1(Wire().Msg(6, Name("g").Entry(2, "a", Wire().Bytes(2, "1"))));
  ExpectBadRequest(DecodeProtobufBody(Kind::kResourceSlice, "v1",
                                      Body(kV1, "ResourceSlice", Slice(Name("s"), attr))),
                   "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: proto: "
                   "wrong wireType = 2 for field k8s.io.api.resource.v1.DeviceAttribute.int");
}

TEST(ProtobufCodec, EnvelopeErrorsNameTheBody) {
  auto decode = [](const std::string& body) {
    return DecodeProtobufBody(Kind::kResourceSlice, "v1", body);
  };
  const std::string prefix =
      "the object provided is unrecognized (must be of type ResourceSlice): ";
  ExpectBadRequest(decode(""), prefix + "empty data (<empty>)");
  ExpectBadRequest(decode(R"({"kind":"ResourceSlice"})"),
                   prefix +
                       "provided data does not appear to be a protobuf message, expected prefix "
                       "[107 56 115 0] ({\"kind\":\"ResourceSlice\"})");
  ExpectBadRequest(decode(std::string(40, '\x01')),
                   prefix +
                       "provided data does not appear to be a protobuf message, expected prefix "
                       "[107 56 115 0] (" +
                       "010101010101010101010101010101010101010101010101010101010101" + " ...)");
  ExpectBadRequest(decode(kMagic), prefix + "empty body (6b387300)");
  ExpectBadRequest(decode(kMagic + "\x0a\x05\x0a"),
                   prefix +
                       "proto: cannot parse k8s.io.apimachinery.pkg.runtime.Unknown: truncated or "
                       "malformed wire data (6b3873000a050a)");
}

TEST(ProtobufCodec, TypeMetaMustMatchTheUrl) {
  const std::string raw = Slice(Name("s"), SpecV1());
  ExpectBadRequest(
      DecodeProtobufBody(Kind::kResourceSlice, "v1", Body(kV1, "DeviceClass", raw)),
      "DeviceClass in version \"v1\" cannot be handled as a ResourceSlice: the kind in "
      "the data (DeviceClass) does not match the expected kind (ResourceSlice)");
  ExpectBadRequest(
      DecodeProtobufBody(Kind::kResourceSlice, "v1", Body(kV1beta1, "ResourceSlice", raw)),
      "the API version in the data (resource.k8s.io/v1beta1) does not match the expected API "
      "version (resource.k8s.io/v1)");
  ExpectBadRequest(
      DecodeProtobufBody(Kind::kResourceSlice, "v1beta1", Body("v1", "ResourceSlice", raw)),
      "the API version in the data (v1) does not match the expected API version "
      "(resource.k8s.io/v1beta1)");
}

// protobuf.Serializer's copyKindDefaults: an empty kind or apiVersion is the URL's.
TEST(ProtobufCodec, EmptyTypeMetaDefaultsToTheUrl) {
  const std::string body = kMagic + Wire().Bytes(2, Slice(Name("s"), SpecV1())).str();
  const Json json = Decode("v1beta1", body);
  EXPECT_EQ(json["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(json["kind"], "ResourceSlice");
}

TEST(ProtobufCodec, RawErrors) {
  const Wire type_meta = Wire().Bytes(1, kV1).Bytes(2, "ResourceSlice");
  const std::string raw = Slice(Name("s"), SpecV1());
  const std::string handled =
      "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: ";
  ExpectBadRequest(
      DecodeProtobufBody(Kind::kResourceSlice, "v1",
                         kMagic + Wire().Msg(1, type_meta).Bytes(2, raw).Bytes(3, "gzip").str()),
      handled + "unsupported content encoding \"gzip\"");
  ExpectBadRequest(
      DecodeProtobufBody(Kind::kResourceSlice, "v1", Body(kV1, "ResourceSlice", "\x0a\x10\x0a")),
      handled +
          "proto: cannot parse k8s.io.api.resource.v1.ResourceSlice: truncated or malformed wire "
          "data");
  const Wire far_future = Name("s").Msg(8, Wire().Int(1, 253402300800));
  ExpectBadRequest(DecodeProtobufBody(Kind::kResourceSlice, "v1",
                                      Body(kV1, "ResourceSlice", Slice(far_future, SpecV1()))),
                   handled +
                       "metadata.creationTimestamp: Time.MarshalJSON: year outside of range "
                       "[0,9999]");
  const Wire bad_fields = Name("s").Msg(17, Wire().Msg(7, Wire().Bytes(1, "{")));
  ExpectBadRequest(DecodeProtobufBody(Kind::kResourceSlice, "v1",
                                      Body(kV1, "ResourceSlice", Slice(bad_fields, SpecV1()))),
                   handled + "metadata.managedFields[0].fieldsV1: not valid JSON");
  // An empty contentEncoding and contentType, as Go writes them, are fine.
  EXPECT_TRUE(DecodeProtobufBody(
                  Kind::kResourceSlice, "v1",
                  kMagic + Wire().Msg(1, type_meta).Bytes(2, raw).Bytes(3, "").Bytes(4, "").str())
                  .ok());
}

TEST(ProtobufCodec, OtherKindsAndVersionsAreUnsupportedMediaType) {
  const std::string body = Body(kV1, "DeviceClass", "");
  for (const absl::StatusOr<Json>& result :
       {DecodeProtobufBody(Kind::kDeviceClass, "v1", body),
        DecodeProtobufBody(Kind::kResourceClaim, "v1", body),
        DecodeProtobufBody(Kind::kResourceSlice, "v1beta2", body)}) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(HttpCode(result.status()), 415);
    EXPECT_EQ(Reason(result.status()), "UnsupportedMediaType");
    EXPECT_THAT(std::string(result.status().message()),
                ::testing::HasSubstr("(got \"application/vnd.kubernetes.protobuf\")"));
  }
}

// Strings are bytes on the wire; invalid UTF-8 becomes U+FFFD as Go's encoding/json writes it.
TEST(ProtobufCodec, InvalidUtf8IsReplaced) {
  const Wire meta = Name("a\xff").Entry(11, "k\xfe", "v");
  const Json json = Decode("v1", Body(kV1, "ResourceSlice", Slice(meta, SpecV1())));
  EXPECT_EQ(json["metadata"]["name"], "a\xef\xbf\xbd");
  EXPECT_EQ(json["metadata"]["labels"], Json::parse(R"({"k\ufffd": "v"})"));
  EXPECT_NO_THROW((void)json.dump());
  // Error texts that quote the body stay valid UTF-8 too (the Status object is JSON).
  const std::string raw = Slice(Name("s"), SpecV1());
  ExpectBadRequest(DecodeProtobufBody(Kind::kResourceSlice, "v1", Body(kV1, "Slice\xff", raw)),
                   "Slice\xef\xbf\xbd in version \"v1\" cannot be handled as a ResourceSlice: the "
                   "kind in the data (Slice\xef\xbf\xbd) does not match the expected kind "
                   "(ResourceSlice)");
  const std::string cut = "{\"kind\":\"" + std::string(20, 'a') + "\xc3\xa9";  // byte 30 splits
  absl::StatusOr<Json> result = DecodeProtobufBody(Kind::kResourceSlice, "v1", cut);
  ASSERT_FALSE(result.ok());
  EXPECT_NO_THROW((void)ToStatusObject(result.status()).dump());
}

// Round trip through the generated classes: what the test helper builds decodes to the JSON a
// JSON client would send for the same object.
TEST(ProtobufCodec, RoundTripV1) {
  namespace v1 = ::k8s::io::api::resource::v1;
  v1::ResourceSlice slice;
  auto* meta = slice.mutable_metadata();
  meta->set_name("");
  meta->set_generatename("00000-gpu.example.com-node-1-");
  auto* owner = meta->add_ownerreferences();
  owner->set_apiversion("v1");
  owner->set_kind("Node");
  owner->set_name("node-1");
  owner->set_uid("n-uid");
  owner->set_controller(true);
  (*meta->mutable_labels())["app"] = "gpu";
  meta->mutable_creationtimestamp();  // a zero Time, as Go writes it
  v1::ResourceSliceSpec* spec = slice.mutable_spec();
  spec->set_driver("gpu.example.com");
  spec->set_nodename("node-1");
  spec->mutable_pool()->set_name("node-1");
  spec->mutable_pool()->set_generation(1);
  spec->mutable_pool()->set_resourceslicecount(1);
  for (const char* name : {"gpu-0", "gpu-1"}) {
    v1::Device* device = spec->add_devices();
    device->set_name(name);
    (*device->mutable_attributes())["index"].set_int_(name[4] - '0');
    (*device->mutable_attributes())["healthy"].set_bool_(true);
    (*device->mutable_attributes())["model"].set_string("H100");
    (*device->mutable_attributes())["driverVersion"].set_version("580.1.0");
    (*device->mutable_capacity())["memory"].mutable_value()->set_string("80Gi");
  }
  EXPECT_EQ(Decode("v1", ProtobufBody(kV1, "ResourceSlice", slice)), Json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": {"generateName": "00000-gpu.example.com-node-1-", "labels": {"app": "gpu"},
                   "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                        "uid": "n-uid", "controller": true}]},
      "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
               "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
               "devices": [
                 {"name": "gpu-0", "attributes": {"index": {"int": 0}, "healthy": {"bool": true},
                    "model": {"string": "H100"}, "driverVersion": {"version": "580.1.0"}},
                  "capacity": {"memory": {"value": "80Gi"}}},
                 {"name": "gpu-1", "attributes": {"index": {"int": 1}, "healthy": {"bool": true},
                    "model": {"string": "H100"}, "driverVersion": {"version": "580.1.0"}},
                  "capacity": {"memory": {"value": "80Gi"}}}]}})"));
}

::k8s::io::api::resource::v1beta1::ResourceSlice DriverSliceV1beta1() {
  namespace v1beta1 = ::k8s::io::api::resource::v1beta1;
  v1beta1::ResourceSlice slice;
  slice.mutable_metadata()->set_generatename("node-1-gpu.example.com-");
  auto* owner = slice.mutable_metadata()->add_ownerreferences();
  owner->set_apiversion("v1");
  owner->set_kind("Node");
  owner->set_name("node-1");
  owner->set_uid("n-uid");
  owner->set_controller(true);
  v1beta1::ResourceSliceSpec* spec = slice.mutable_spec();
  spec->set_driver("gpu.example.com");
  spec->set_nodename("node-1");
  spec->set_allnodes(false);
  spec->mutable_pool()->set_name("node-1");
  spec->mutable_pool()->set_generation(1);
  spec->mutable_pool()->set_resourceslicecount(1);
  v1beta1::Device* device = spec->add_devices();
  device->set_name("gpu-0");
  v1beta1::BasicDevice* basic = device->mutable_basic();
  (*basic->mutable_attributes())["index"].set_int_(0);
  (*basic->mutable_attributes())["model"].set_string("H100");
  (*basic->mutable_capacity())["memory"].mutable_value()->set_string("80Gi");
  return slice;
}

TEST(ProtobufCodec, RoundTripV1beta1) {
  EXPECT_EQ(Decode("v1beta1", ProtobufBody(kV1beta1, "ResourceSlice", DriverSliceV1beta1())),
            Json::parse(R"({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
      "metadata": {"generateName": "node-1-gpu.example.com-",
                   "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                        "uid": "n-uid", "controller": true}]},
      "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
               "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
               "devices": [{"name": "gpu-0", "basic": {
                   "attributes": {"index": {"int": 0}, "model": {"string": "H100"}},
                   "capacity": {"memory": {"value": "80Gi"}}}}]}})"));
}

// The decoded v1beta1 JSON takes the JSON path unchanged: conversion to v1, then the codec.
TEST(ProtobufCodec, V1beta1BodyConvertsAndValidatesAsV1) {
  const Json decoded =
      Decode("v1beta1", ProtobufBody(kV1beta1, "ResourceSlice", DriverSliceV1beta1()));
  Json v1 = ToV1(Kind::kResourceSlice, "v1beta1", decoded);
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(v1["spec"]["devices"], Json::parse(R"([{"name": "gpu-0",
      "attributes": {"index": {"int": 0}, "model": {"string": "H100"}},
      "capacity": {"memory": {"value": "80Gi"}}}])"));
  v1["metadata"]["name"] = "node-1-gpu.example.com-abcde";  // the store's generateName
  Normalize(Kind::kResourceSlice, &v1);
  absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(v1);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->spec.node_name, "node-1");
  ASSERT_EQ(slice->spec.devices.size(), 1u);
  EXPECT_EQ(slice->spec.devices[0].attributes.at("index").int_value, 0);
  EXPECT_EQ(slice->spec.devices[0].capacity.at("memory").value, "80Gi");
  ASSERT_EQ(slice->metadata.owner_references.size(), 1u);
  EXPECT_TRUE(slice->metadata.owner_references[0].controller);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
