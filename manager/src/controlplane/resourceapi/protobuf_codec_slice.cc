// The object half of protobuf_codec.h: a ResourceSlice's protobuf encoding (v1 or v1beta1) to the
// JSON client-go's JSON encoding writes for the same Go object. Which fields appear follows the Go
// types of k8s.io/api/resource/{v1,v1beta1} and metav1: pointer fields (`*bool`, `*string`,
// `*int64`, `*Time`, `*NodeSelector`) carry presence on the wire, because gogo's generated
// marshaller writes them only when non-nil; value fields are written by that marshaller even when
// zero, so their presence means nothing and `omitempty` decides, as in encoding/json.
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "k8s/api/core/v1/generated.pb.h"
#include "k8s/api/resource/v1/generated.pb.h"
#include "k8s/api/resource/v1beta1/generated.pb.h"
#include "k8s/apimachinery/pkg/api/resource/generated.pb.h"
#include "k8s/apimachinery/pkg/apis/meta/v1/generated.pb.h"
#include "manager/src/controlplane/resourceapi/protobuf_codec.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
namespace corev1 = ::k8s::io::api::core::v1;
namespace metav1 = ::k8s::io::apimachinery::pkg::apis::meta::v1;
namespace resv1 = ::k8s::io::api::resource::v1;
namespace resv1beta1 = ::k8s::io::api::resource::v1beta1;
using ::k8s::io::apimachinery::pkg::api::resource::Quantity;

// The wire type number of an unknown field, as Go's "proto: wrong wireType = N" prints it.
int WireType(google::protobuf::UnknownField::Type type) {
  switch (type) {
    case google::protobuf::UnknownField::TYPE_VARINT:
      return 0;
    case google::protobuf::UnknownField::TYPE_FIXED64:
      return 1;
    case google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED:
      return 2;
    case google::protobuf::UnknownField::TYPE_GROUP:
      return 3;
    case google::protobuf::UnknownField::TYPE_FIXED32:
      return 5;
  }
  return -1;
}

// Fails when `message` or any message inside it kept a declared field number among its unknown
// fields: that happens only when the field arrived with a wire type other than its declared one.
absl::Status CheckWireTypes(const google::protobuf::Message& message) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (const google::protobuf::FieldDescriptor* known =
            descriptor->FindFieldByNumber(field.number())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "proto: wrong wireType = ", WireType(field.type()), " for field ", known->full_name()));
    }
  }
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      // Map fields are repeated entry messages to reflection.
      for (int j = 0; j < reflection->FieldSize(message, field); ++j) {
        absl::Status status = CheckWireTypes(reflection->GetRepeatedMessage(message, field, j));
        if (!status.ok()) return status;
      }
    } else if (reflection->HasField(message, field)) {
      absl::Status status = CheckWireTypes(reflection->GetMessage(message, field));
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

// metav1.Time's JSON range: Time.MarshalJSON refuses years outside [0, 9999].
constexpr int64_t kMinJsonSeconds = -62167219200;  // 0000-01-01T00:00:00Z
constexpr int64_t kMaxJsonSeconds = 253402300799;  // 9999-12-31T23:59:59Z

// Walks one decoded ResourceSlice and builds its JSON; the first error is kept in error().
class SliceConverter {
 public:
  const std::string& error() const { return error_; }

  Json Meta(const metav1::ObjectMeta& m) {
    const std::string p = "metadata";
    Json out = Json::object();
    PutNonEmpty(&out, "name", m.name());
    PutNonEmpty(&out, "generateName", m.generatename());
    PutNonEmpty(&out, "namespace", m.namespace_());
    PutNonEmpty(&out, "selfLink", m.selflink());
    PutNonEmpty(&out, "uid", m.uid());
    PutNonEmpty(&out, "resourceVersion", m.resourceversion());
    if (m.generation() != 0) out["generation"] = m.generation();
    PutTime(&out, "creationTimestamp", m.creationtimestamp(), p + ".creationTimestamp");
    if (m.has_deletiontimestamp()) {
      PutTime(&out, "deletionTimestamp", m.deletiontimestamp(), p + ".deletionTimestamp");
    }
    if (m.has_deletiongraceperiodseconds()) {
      out["deletionGracePeriodSeconds"] = m.deletiongraceperiodseconds();
    }
    PutStringMap(&out, "labels", m.labels());
    PutStringMap(&out, "annotations", m.annotations());
    if (!m.ownerreferences().empty()) {
      Json& refs = out["ownerReferences"] = Json::array();
      for (const metav1::OwnerReference& r : m.ownerreferences()) {
        // apiVersion, kind, name and uid have no omitempty; controller and blockOwnerDeletion
        // are *bool.
        Json ref = {{"apiVersion", r.apiversion()},
                    {"kind", r.kind()},
                    {"name", r.name()},
                    {"uid", r.uid()}};
        if (r.has_controller()) ref["controller"] = r.controller();
        if (r.has_blockownerdeletion()) ref["blockOwnerDeletion"] = r.blockownerdeletion();
        refs.push_back(std::move(ref));
      }
    }
    PutStrings(&out, "finalizers", m.finalizers());
    if (!m.managedfields().empty()) {
      Json& entries = out["managedFields"] = Json::array();
      for (int i = 0; i < m.managedfields_size(); ++i) {
        entries.push_back(
            ManagedFields(m.managedfields(i), absl::StrCat(p, ".managedFields[", i, "]")));
      }
    }
    return out;
  }

  template <typename Spec>
  Json SliceSpec(const Spec& s) {
    constexpr bool kV1 = std::is_same_v<Spec, resv1::ResourceSliceSpec>;
    const std::string p = "spec";
    Json out = {{"driver", s.driver()},
                {"pool",
                 {{"name", s.pool().name()},
                  {"generation", s.pool().generation()},
                  {"resourceSliceCount", s.pool().resourceslicecount()}}}};
    if constexpr (kV1) {
      // v1: NodeName *string, AllNodes *bool.
      if (s.has_nodename()) out["nodeName"] = s.nodename();
      if (s.has_allnodes()) out["allNodes"] = s.allnodes();
    } else {
      // v1beta1: NodeName string and AllNodes bool, both omitempty.
      PutNonEmpty(&out, "nodeName", s.nodename());
      if (s.allnodes()) out["allNodes"] = true;
    }
    if (s.has_nodeselector()) out["nodeSelector"] = NodeSelector(s.nodeselector());
    if (!s.devices().empty()) {
      Json& devices = out["devices"] = Json::array();
      for (int i = 0; i < s.devices_size(); ++i) {
        devices.push_back(Device(s.devices(i), absl::StrCat(p, ".devices[", i, "]")));
      }
    }
    if (s.has_perdevicenodeselection()) {
      out["perDeviceNodeSelection"] = s.perdevicenodeselection();
    }
    if (!s.sharedcounters().empty()) {
      Json& sets = out["sharedCounters"] = Json::array();
      for (const auto& set : s.sharedcounters()) {
        Json entry = {{"name", set.name()}};
        if (!set.counters().empty()) entry["counters"] = Counters(set.counters());
        sets.push_back(std::move(entry));
      }
    }
    return out;
  }

 private:
  Json Device(const resv1::Device& d, const std::string& p) {
    Json out = {{"name", d.name()}};
    DeviceFields(d, p, &out);
    return out;
  }

  Json Device(const resv1beta1::Device& d, const std::string& p) {
    Json out = {{"name", d.name()}};
    // Basic is *BasicDevice: an empty basic{} on the wire is still a basic.
    if (d.has_basic()) {
      Json basic = Json::object();
      DeviceFields(d.basic(), p + ".basic", &basic);
      out["basic"] = std::move(basic);
    }
    return out;
  }

  // The fields v1's Device and v1beta1's BasicDevice share (same names, other numbers).
  template <typename D>
  void DeviceFields(const D& d, const std::string& p, Json* out) {
    if (!d.attributes().empty()) {
      Json& attrs = (*out)["attributes"] = Json::object();
      for (const auto& [name, attr] : d.attributes()) attrs[name] = Attribute(attr);
    }
    if (!d.capacity().empty()) {
      Json& caps = (*out)["capacity"] = Json::object();
      for (const auto& [name, cap] : d.capacity()) caps[name] = Capacity(cap);
    }
    if (!d.consumescounters().empty()) {
      Json& consumes = (*out)["consumesCounters"] = Json::array();
      for (const auto& c : d.consumescounters()) {
        Json entry = {{"counterSet", c.counterset()}};
        if (!c.counters().empty()) entry["counters"] = Counters(c.counters());
        consumes.push_back(std::move(entry));
      }
    }
    if (d.has_nodename()) (*out)["nodeName"] = d.nodename();
    if (d.has_nodeselector()) (*out)["nodeSelector"] = NodeSelector(d.nodeselector());
    if (d.has_allnodes()) (*out)["allNodes"] = d.allnodes();
    if (!d.taints().empty()) {
      Json& taints = (*out)["taints"] = Json::array();
      for (int i = 0; i < d.taints_size(); ++i) {
        const auto& t = d.taints(i);
        Json taint = {{"key", t.key()}, {"effect", t.effect()}};
        PutNonEmpty(&taint, "value", t.value());
        if (t.has_timeadded()) {
          PutTime(&taint, "timeAdded", t.timeadded(),
                  absl::StrCat(p, ".taints[", i, "].timeAdded"));
        }
        taints.push_back(std::move(taint));
      }
    }
    if (d.has_bindstonode()) (*out)["bindsToNode"] = d.bindstonode();
    PutStrings(out, "bindingConditions", d.bindingconditions());
    PutStrings(out, "bindingFailureConditions", d.bindingfailureconditions());
    if (d.has_allowmultipleallocations()) {
      (*out)["allowMultipleAllocations"] = d.allowmultipleallocations();
    }
  }

  // DeviceAttribute: four pointers, so `{"int": 0}` and `{"bool": false}` keep their value.
  template <typename A>
  static Json Attribute(const A& a) {
    Json out = Json::object();
    if (a.has_int_()) out["int"] = a.int_();
    if (a.has_bool_()) out["bool"] = a.bool_();
    if (a.has_string()) out["string"] = a.string();
    if (a.has_version()) out["version"] = a.version();
    return out;
  }

  template <typename C>
  static Json Capacity(const C& c) {
    Json out = {{"value", QuantityString(c.value())}};
    if (c.has_requestpolicy()) {
      const auto& policy = c.requestpolicy();
      Json& pol = out["requestPolicy"] = Json::object();
      if (policy.has_default_()) pol["default"] = QuantityString(policy.default_());
      if (!policy.validvalues().empty()) {
        Json& values = pol["validValues"] = Json::array();
        for (const Quantity& q : policy.validvalues()) values.push_back(QuantityString(q));
      }
      if (policy.has_validrange()) {
        const auto& range = policy.validrange();
        Json& r = pol["validRange"] = Json::object();
        if (range.has_min()) r["min"] = QuantityString(range.min());
        if (range.has_max()) r["max"] = QuantityString(range.max());
        if (range.has_step()) r["step"] = QuantityString(range.step());
      }
    }
    return out;
  }

  // map<string, Counter>; Counter.Value is a value Quantity, always written.
  template <typename Map>
  static Json Counters(const Map& counters) {
    Json out = Json::object();
    for (const auto& [name, counter] : counters) {
      out[name] = {{"value", QuantityString(counter.value())}};
    }
    return out;
  }

  static Json NodeSelector(const corev1::NodeSelector& selector) {
    Json out = Json::object();
    if (!selector.nodeselectorterms().empty()) {
      Json& terms = out["nodeSelectorTerms"] = Json::array();
      for (const corev1::NodeSelectorTerm& term : selector.nodeselectorterms()) {
        Json t = Json::object();
        PutRequirements(&t, "matchExpressions", term.matchexpressions());
        PutRequirements(&t, "matchFields", term.matchfields());
        terms.push_back(std::move(t));
      }
    }
    return out;
  }

  template <typename List>
  static void PutRequirements(Json* out, const char* key, const List& requirements) {
    if (requirements.empty()) return;
    Json& list = (*out)[key] = Json::array();
    for (const corev1::NodeSelectorRequirement& r : requirements) {
      Json req = {{"key", r.key()}, {"operator", r.operator_()}};
      PutStrings(&req, "values", r.values());
      list.push_back(std::move(req));
    }
  }

  Json ManagedFields(const metav1::ManagedFieldsEntry& e, const std::string& p) {
    Json out = Json::object();
    PutNonEmpty(&out, "manager", e.manager());
    PutNonEmpty(&out, "operation", e.operation());
    PutNonEmpty(&out, "apiVersion", e.apiversion());
    if (e.has_time()) PutTime(&out, "time", e.time(), p + ".time");
    PutNonEmpty(&out, "fieldsType", e.fieldstype());
    // FieldsV1 is JSON text that its MarshalJSON writes as is.
    if (e.has_fieldsv1() && !e.fieldsv1().raw().empty()) {
      Json fields = Json::parse(e.fieldsv1().raw(), nullptr, /*allow_exceptions=*/false);
      if (fields.is_discarded()) {
        SetError(p + ".fieldsV1: not valid JSON");
      } else {
        out["fieldsV1"] = std::move(fields);
      }
    }
    PutNonEmpty(&out, "subresource", e.subresource());
    return out;
  }

  // A Quantity's string form; Go's zero Quantity (no string on the wire) prints as "0". A string
  // that does not parse is passed on for the codec to reject.
  static std::string QuantityString(const Quantity& q) { return q.has_string() ? q.string() : "0"; }

  // metav1.Time: an empty message is the zero Time, which JSON omits; otherwise whole seconds
  // (Time.Unmarshal drops nanos) in RFC 3339 UTC.
  void PutTime(Json* out, const char* key, const metav1::Time& t, const std::string& path) {
    if (t.ByteSizeLong() == 0) return;
    if (t.seconds() < kMinJsonSeconds || t.seconds() > kMaxJsonSeconds) {
      SetError(path + ": Time.MarshalJSON: year outside of range [0,9999]");
      return;
    }
    (*out)[key] = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t.seconds()),
                                   absl::UTCTimeZone());
  }

  static void PutNonEmpty(Json* out, const char* key, const std::string& value) {
    if (!value.empty()) (*out)[key] = value;
  }

  template <typename List>
  static void PutStrings(Json* out, const char* key, const List& values) {
    if (values.empty()) return;
    Json& list = (*out)[key] = Json::array();
    for (const std::string& v : values) list.push_back(v);
  }

  template <typename Map>
  static void PutStringMap(Json* out, const char* key, const Map& values) {
    if (values.empty()) return;
    Json& map = (*out)[key] = Json::object();
    for (const auto& [k, v] : values) map[k] = v;
  }

  void SetError(std::string error) {
    if (error_.empty()) error_ = std::move(error);
  }

  std::string error_;
};

template <typename Slice>
absl::StatusOr<Json> SliceToJson(std::string_view raw) {
  Slice slice;
  absl::Status parsed = internal::ParseMessage(raw, &slice);
  if (!parsed.ok()) return parsed;
  SliceConverter converter;
  // metadata is a value ObjectMeta and spec a value ResourceSliceSpec: always written.
  Json out = {{"metadata", converter.Meta(slice.metadata())},
              {"spec", converter.SliceSpec(slice.spec())}};
  if (!converter.error().empty()) return absl::InvalidArgumentError(converter.error());
  return out;
}

}  // namespace

namespace internal {

absl::Status ParseMessage(std::string_view bytes, google::protobuf::Message* message) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("proto: cannot parse ",
                                                   message->GetDescriptor()->full_name(),
                                                   ": truncated or malformed wire data"));
  }
  return CheckWireTypes(*message);
}

absl::StatusOr<nlohmann::json> ResourceSliceToJson(std::string_view version, std::string_view raw) {
  if (version == kVersionV1) return SliceToJson<resv1::ResourceSlice>(raw);
  if (version == kVersionV1beta1) return SliceToJson<resv1beta1::ResourceSlice>(raw);
  return absl::InvalidArgumentError(
      absl::StrCat("no protobuf decoder for version ", std::string(version)));
}

}  // namespace internal
}  // namespace kdp::manager::resourceapi
