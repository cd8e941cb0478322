// Independent check of kdp's upstream wire contracts. The tables below are written by hand after
// the upstream APIs (k8s.io/kubelet's pkg/apis/*/api.proto), not taken from kdp's .proto
// files, and are compared with the descriptors compiled into kdp_proto: every service method
// (full gRPC name, request/response types, streaming), every message of each package, and every
// field's name, number, type and label, in both directions (nothing missing, nothing extra).
// A few byte-exact encodings pin what the descriptors cannot show on their own.
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "drahealth/v1/api.pb.h"
#include "drahealth/v1alpha1/api.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "gtest/gtest.h"
#include "pluginregistration/v1/api.pb.h"
#include "podresources/v1/api.pb.h"

namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::MethodDescriptor;
using ::google::protobuf::ServiceDescriptor;

// How a field is declared. kOptional is proto3's explicit `optional` (field presence).
enum class Label { kSingular, kOptional, kRepeated, kMap };

const char* LabelName(Label label) {
  switch (label) {
    case Label::kSingular:
      return "singular";
    case Label::kOptional:
      return "optional";
    case Label::kRepeated:
      return "repeated";
    case Label::kMap:
      return "map";
  }
  return "?";
}

// `type` is a scalar keyword ("string", "bool", "int32", "int64", "uint64"), a map written
// "map<string,string>", or the short name of a message in the same package.
struct FieldSpec {
  const char* name;
  int number;
  const char* type;
  Label label;
};

struct MessageSpec {
  const char* name;
  std::vector<FieldSpec> fields;
};

struct MethodSpec {
  const char* service;
  const char* method;
  const char* request;
  const char* response;
  bool server_streaming;
  const char* full_method;  // The full gRPC name, e.g. "/v1beta1.DevicePlugin/Allocate".
};

constexpr Label kS = Label::kSingular;
constexpr Label kO = Label::kOptional;
constexpr Label kR = Label::kRepeated;
constexpr Label kM = Label::kMap;

// Device plugin API v1beta1 (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto).
const std::vector<MethodSpec>& DevicePluginMethods() {
  static const auto* const kMethods = new std::vector<MethodSpec>{
      {"Registration", "Register", "RegisterRequest", "Empty", false,
       "/v1beta1.Registration/Register"},
      {"DevicePlugin", "GetDevicePluginOptions", "Empty", "DevicePluginOptions", false,
       "/v1beta1.DevicePlugin/GetDevicePluginOptions"},
      {"DevicePlugin", "ListAndWatch", "Empty", "ListAndWatchResponse", true,
       "/v1beta1.DevicePlugin/ListAndWatch"},
      {"DevicePlugin", "GetPreferredAllocation", "PreferredAllocationRequest",
       "PreferredAllocationResponse", false, "/v1beta1.DevicePlugin/GetPreferredAllocation"},
      {"DevicePlugin", "Allocate", "AllocateRequest", "AllocateResponse", false,
       "/v1beta1.DevicePlugin/Allocate"},
      {"DevicePlugin", "PreStartContainer", "PreStartContainerRequest", "PreStartContainerResponse",
       false, "/v1beta1.DevicePlugin/PreStartContainer"},
  };
  return *kMethods;
}

const std::vector<MessageSpec>& DevicePluginMessages() {
  static const auto* const kMessages = new std::vector<MessageSpec>{
      {"DevicePluginOptions",
       {{"pre_start_required", 1, "bool", kS},
        {"get_preferred_allocation_available", 2, "bool", kS}}},
      {"RegisterRequest",
       {{"version", 1, "string", kS},
        {"endpoint", 2, "string", kS},
        {"resource_name", 3, "string", kS},
        {"options", 4, "DevicePluginOptions", kS}}},
      {"Empty", {}},
      {"ListAndWatchResponse", {{"devices", 1, "Device", kR}}},
      {"TopologyInfo", {{"nodes", 1, "NUMANode", kR}}},
      {"NUMANode", {{"ID", 1, "int64", kS}}},
      {"Device",
       {{"ID", 1, "string", kS}, {"health", 2, "string", kS}, {"topology", 3, "TopologyInfo", kS}}},
      {"PreStartContainerRequest", {{"devices_ids", 1, "string", kR}}},
      {"PreStartContainerResponse", {}},
      {"PreferredAllocationRequest",
       {{"container_requests", 1, "ContainerPreferredAllocationRequest", kR}}},
      {"ContainerPreferredAllocationRequest",
       {{"available_deviceIDs", 1, "string", kR},
        {"must_include_deviceIDs", 2, "string", kR},
        {"allocation_size", 3, "int32", kS}}},
      {"PreferredAllocationResponse",
       {{"container_responses", 1, "ContainerPreferredAllocationResponse", kR}}},
      {"ContainerPreferredAllocationResponse", {{"deviceIDs", 1, "string", kR}}},
      {"AllocateRequest", {{"container_requests", 1, "ContainerAllocateRequest", kR}}},
      {"ContainerAllocateRequest", {{"devices_ids", 1, "string", kR}}},
      {"CDIDevice", {{"name", 1, "string", kS}}},
      {"AllocateResponse", {{"container_responses", 1, "ContainerAllocateResponse", kR}}},
      {"ContainerAllocateResponse",
       {{"envs", 1, "map<string,string>", kM},
        {"mounts", 2, "Mount", kR},
        {"devices", 3, "DeviceSpec", kR},
        {"annotations", 4, "map<string,string>", kM},
        {"cdi_devices", 5, "CDIDevice", kR}}},
      {"Mount",
       {{"container_path", 1, "string", kS},
        {"host_path", 2, "string", kS},
        {"read_only", 3, "bool", kS}}},
      {"DeviceSpec",
       {{"container_path", 1, "string", kS},
        {"host_path", 2, "string", kS},
        {"permissions", 3, "string", kS}}},
  };
  return *kMessages;
}

// Plugin registration API v1 (k8s.io/kubelet/pkg/apis/pluginregistration/v1, proto package
// `pluginregistration`).
const std::vector<MethodSpec>& PluginRegistrationMethods() {
  static const auto* const kMethods = new std::vector<MethodSpec>{
      {"Registration", "GetInfo", "InfoRequest", "PluginInfo", false,
       "/pluginregistration.Registration/GetInfo"},
      {"Registration", "NotifyRegistrationStatus", "RegistrationStatus",
       "RegistrationStatusResponse", false,
       "/pluginregistration.Registration/NotifyRegistrationStatus"},
  };
  return *kMethods;
}

const std::vector<MessageSpec>& PluginRegistrationMessages() {
  static const auto* const kMessages = new std::vector<MessageSpec>{
      {"PluginInfo",
       {{"type", 1, "string", kS},
        {"name", 2, "string", kS},
        {"endpoint", 3, "string", kS},
        {"supported_versions", 4, "string", kR}}},
      {"RegistrationStatus", {{"plugin_registered", 1, "bool", kS}, {"error", 2, "string", kS}}},
      {"RegistrationStatusResponse", {}},
      {"InfoRequest", {}},
  };
  return *kMessages;
}

// A string that lives as long as the process, for the tables' `const char*` fields (a deque
// never moves its elements).
const char* Intern(std::string text) {
  static auto* const kStrings = new std::deque<std::string>;
  kStrings->push_back(std::move(text));
  return kStrings->back().c_str();
}

// The DRA kubelet plugin API (k8s.io/kubelet/pkg/apis/dra/v1beta1 and v1, kubelet 1.32+ and
// 1.34+); v1beta1 and v1 share every message, v1 adds Device.share_id (1.35+). Map value types are
// written out with the package.
std::vector<MethodSpec> DraMethods(const std::string& package) {
  return {
      {"DRAPlugin", "NodePrepareResources", "NodePrepareResourcesRequest",
       "NodePrepareResourcesResponse", false,
       Intern(absl::StrCat("/", package, ".DRAPlugin/NodePrepareResources"))},
      {"DRAPlugin", "NodeUnprepareResources", "NodeUnprepareResourcesRequest",
       "NodeUnprepareResourcesResponse", false,
       Intern(absl::StrCat("/", package, ".DRAPlugin/NodeUnprepareResources"))},
  };
}

std::vector<MessageSpec> DraMessages(const std::string& package, bool with_share_id) {
  std::vector<FieldSpec> device = {{"request_names", 1, "string", kR},
                                   {"pool_name", 2, "string", kS},
                                   {"device_name", 3, "string", kS},
                                   {"cdi_device_ids", 4, "string", kR}};
  if (with_share_id) device.push_back({"share_id", 5, "string", kO});
  return {
      {"NodePrepareResourcesRequest", {{"claims", 1, "Claim", kR}}},
      {"NodePrepareResourcesResponse",
       {{"claims", 1, Intern(absl::StrCat("map<string,", package, ".NodePrepareResourceResponse>")),
         kM}}},
      {"NodePrepareResourceResponse", {{"devices", 1, "Device", kR}, {"error", 2, "string", kS}}},
      {"Device", device},
      {"NodeUnprepareResourcesRequest", {{"claims", 1, "Claim", kR}}},
      {"NodeUnprepareResourcesResponse",
       {{"claims", 1,
         Intern(absl::StrCat("map<string,", package, ".NodeUnprepareResourceResponse>")), kM}}},
      {"NodeUnprepareResourceResponse", {{"error", 1, "string", kS}}},
      {"Claim",
       {{"namespace", 1, "string", kS}, {"uid", 2, "string", kS}, {"name", 3, "string", kS}}},
  };
}

// The DRA resource health API of KEP-4680 (k8s.io/kubelet/pkg/apis/dra-health): v1alpha1 (proto
// package `v1alpha1`) and v1 (package `v1`, identical messages).
std::vector<MethodSpec> DraHealthMethods(absl::string_view package) {
  return {{"DRAResourceHealth", "NodeWatchResources", "NodeWatchResourcesRequest",
           "NodeWatchResourcesResponse", true,
           Intern(absl::StrCat("/", package, ".DRAResourceHealth/NodeWatchResources"))}};
}

const std::vector<MessageSpec>& DraHealthMessages() {
  static const auto* const kMessages = new std::vector<MessageSpec>{
      {"NodeWatchResourcesRequest", {}},
      {"NodeWatchResourcesResponse", {{"devices", 1, "DeviceHealth", kR}}},
      {"DeviceIdentifier", {{"pool_name", 1, "string", kS}, {"device_name", 2, "string", kS}}},
      {"DeviceHealth",
       {{"device", 1, "DeviceIdentifier", kS},
        {"health", 2, "HealthStatus", kS},
        {"last_updated_time", 3, "int64", kS},
        {"health_check_timeout_seconds", 4, "int64", kS},
        {"message", 5, "string", kS}}},
  };
  return *kMessages;
}

// Pod resources API v1 (k8s.io/kubelet/pkg/apis/podresources/v1, proto package `v1`).
const std::vector<MethodSpec>& PodResourcesMethods() {
  static const auto* const kMethods = new std::vector<MethodSpec>{
      {"PodResourcesLister", "List", "ListPodResourcesRequest", "ListPodResourcesResponse", false,
       "/v1.PodResourcesLister/List"},
      {"PodResourcesLister", "GetAllocatableResources", "AllocatableResourcesRequest",
       "AllocatableResourcesResponse", false, "/v1.PodResourcesLister/GetAllocatableResources"},
      {"PodResourcesLister", "Get", "GetPodResourcesRequest", "GetPodResourcesResponse", false,
       "/v1.PodResourcesLister/Get"},
  };
  return *kMethods;
}

const std::vector<MessageSpec>& PodResourcesMessages() {
  static const auto* const kMessages = new std::vector<MessageSpec>{
      {"AllocatableResourcesRequest", {}},
      {"AllocatableResourcesResponse",
       {{"devices", 1, "ContainerDevices", kR},
        {"cpu_ids", 2, "int64", kR},
        {"memory", 3, "ContainerMemory", kR}}},
      {"ListPodResourcesRequest", {}},
      {"ListPodResourcesResponse", {{"pod_resources", 1, "PodResources", kR}}},
      {"PodResources",
       {{"name", 1, "string", kS},
        {"namespace", 2, "string", kS},
        {"containers", 3, "ContainerResources", kR},
        {"cpu_ids", 4, "int64", kR},
        {"memory", 5, "ContainerMemory", kR}}},
      {"ContainerResources",
       {{"name", 1, "string", kS},
        {"devices", 2, "ContainerDevices", kR},
        {"cpu_ids", 3, "int64", kR},
        {"memory", 4, "ContainerMemory", kR},
        {"dynamic_resources", 5, "DynamicResource", kR}}},
      {"ContainerMemory",
       {{"memory_type", 1, "string", kS},
        {"size", 2, "uint64", kS},
        {"topology", 3, "TopologyInfo", kS}}},
      {"ContainerDevices",
       {{"resource_name", 1, "string", kS},
        {"device_ids", 2, "string", kR},
        {"topology", 3, "TopologyInfo", kS}}},
      {"TopologyInfo", {{"nodes", 1, "NUMANode", kR}}},
      {"NUMANode", {{"ID", 1, "int64", kS}}},
      // Field 1 (class_name) was tombstoned in 1.31; see DynamicResourceClassNameIsReserved.
      {"DynamicResource",
       {{"claim_name", 2, "string", kS},
        {"claim_namespace", 3, "string", kS},
        {"claim_resources", 4, "ClaimResource", kR}}},
      {"ClaimResource",
       {{"cdi_devices", 1, "CDIDevice", kR},
        {"driver_name", 2, "string", kS},
        {"pool_name", 3, "string", kS},
        {"device_name", 4, "string", kS},
        {"share_id", 5, "string", kO}}},
      {"CDIDevice", {{"name", 1, "string", kS}}},
      {"GetPodResourcesRequest",
       {{"pod_name", 1, "string", kS}, {"pod_namespace", 2, "string", kS}}},
      {"GetPodResourcesResponse", {{"pod_resources", 1, "PodResources", kS}}},
  };
  return *kMessages;
}

bool IsBuiltinType(absl::string_view type) {
  return type == "string" || type == "bool" || type == "int32" || type == "int64" ||
         type == "uint64" || type.substr(0, 4) == "map<";
}

// The table's type, resolved: message names are qualified with the package.
std::string ExpectedType(absl::string_view package, absl::string_view type) {
  if (IsBuiltinType(type)) return std::string(type);
  return absl::StrCat(package, ".", type);
}

std::string ValueTypeName(const FieldDescriptor* field) {
  if (field->type() == FieldDescriptor::TYPE_MESSAGE) return field->message_type()->full_name();
  if (field->type() == FieldDescriptor::TYPE_ENUM) return field->enum_type()->full_name();
  return FieldDescriptor::TypeName(field->type());
}

// The descriptor's type in the table's notation.
std::string ActualType(const FieldDescriptor* field) {
  if (field->is_map()) {
    const Descriptor* entry = field->message_type();
    return absl::StrCat("map<", ValueTypeName(entry->map_key()), ",",
                        ValueTypeName(entry->map_value()), ">");
  }
  return ValueTypeName(field);
}

Label ActualLabel(const FieldDescriptor* field) {
  if (field->is_map()) return Label::kMap;
  if (field->is_repeated()) return Label::kRepeated;
  if (field->has_optional_keyword()) return Label::kOptional;
  return Label::kSingular;
}

// `enums`: how many top-level enums the file declares (only the DRA health API has one).
void ExpectPackage(const FileDescriptor* file, absl::string_view package,
                   absl::string_view go_package, int enums = 0) {
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->package(), std::string(package)) << file->name();
  // Not on the wire, but it names the upstream Go package the file mirrors.
  EXPECT_EQ(file->options().go_package(), std::string(go_package)) << file->name();
  EXPECT_EQ(file->syntax(), FileDescriptor::SYNTAX_PROTO3) << file->name();
  EXPECT_EQ(file->enum_type_count(), enums) << file->name();
  EXPECT_EQ(file->extension_count(), 0) << file->name();
}

void ExpectMethods(const FileDescriptor* file, const std::vector<MethodSpec>& table) {
  ASSERT_NE(file, nullptr);
  const std::string& package = file->package();
  std::set<std::string> expected_services;
  for (const MethodSpec& spec : table) {
    SCOPED_TRACE(spec.full_method);
    expected_services.insert(spec.service);
    const ServiceDescriptor* service = file->FindServiceByName(spec.service);
    ASSERT_NE(service, nullptr) << "service missing: " << spec.service;
    const MethodDescriptor* method = service->FindMethodByName(spec.method);
    ASSERT_NE(method, nullptr) << "method missing";
    // gRPC C++ and Go both name a method "/" + service full name + "/" + method name.
    EXPECT_EQ(absl::StrCat("/", service->full_name(), "/", method->name()), spec.full_method);
    EXPECT_EQ(method->input_type()->full_name(), ExpectedType(package, spec.request));
    EXPECT_EQ(method->output_type()->full_name(), ExpectedType(package, spec.response));
    EXPECT_FALSE(method->client_streaming());
    EXPECT_EQ(method->server_streaming(), spec.server_streaming);
  }
  // Nothing the table lacks: every service and method the file declares is in the table.
  std::set<std::string> actual_services;
  for (int i = 0; i < file->service_count(); ++i) {
    const ServiceDescriptor* service = file->service(i);
    actual_services.insert(service->name());
    for (int j = 0; j < service->method_count(); ++j) {
      const std::string full =
          absl::StrCat("/", service->full_name(), "/", service->method(j)->name());
      bool in_table = false;
      for (const MethodSpec& spec : table) in_table = in_table || full == spec.full_method;
      EXPECT_TRUE(in_table) << "method not in the reference: " << full;
    }
  }
  EXPECT_EQ(actual_services, expected_services);
}

void ExpectMessages(const FileDescriptor* file, const std::vector<MessageSpec>& table) {
  ASSERT_NE(file, nullptr);
  const std::string& package = file->package();
  std::set<std::string> expected_messages;
  for (const MessageSpec& spec : table) {
    SCOPED_TRACE(absl::StrCat(package, ".", spec.name));
    EXPECT_TRUE(expected_messages.insert(spec.name).second) << "duplicate table entry";
    const Descriptor* message = file->FindMessageTypeByName(spec.name);
    ASSERT_NE(message, nullptr) << "message missing";
    std::set<int> expected_numbers;
    for (const FieldSpec& field_spec : spec.fields) {
      SCOPED_TRACE(field_spec.name);
      expected_numbers.insert(field_spec.number);
      const FieldDescriptor* field = message->FindFieldByName(field_spec.name);
      ASSERT_NE(field, nullptr) << "field missing";
      EXPECT_EQ(field->number(), field_spec.number);
      EXPECT_EQ(ActualType(field), ExpectedType(package, field_spec.type));
      EXPECT_EQ(LabelName(ActualLabel(field)), LabelName(field_spec.label));
      // proto3 packs repeated scalar numbers; a [packed = false] would change the bytes.
      if (field->is_repeated() && field->cpp_type() != FieldDescriptor::CPPTYPE_STRING &&
          field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        EXPECT_TRUE(field->is_packed());
      }
    }
    // Nothing the table lacks.
    for (int i = 0; i < message->field_count(); ++i) {
      EXPECT_EQ(expected_numbers.count(message->field(i)->number()), 1u)
          << "field not in the reference: " << message->field(i)->name() << " = "
          << message->field(i)->number();
    }
    // Only proto3 `optional` may introduce a (synthetic) oneof; only maps a nested type.
    EXPECT_EQ(message->real_oneof_decl_count(), 0);
    EXPECT_EQ(message->enum_type_count(), 0);
    for (int i = 0; i < message->nested_type_count(); ++i) {
      EXPECT_TRUE(message->nested_type(i)->options().map_entry())
          << "nested message not in the reference: " << message->nested_type(i)->full_name();
    }
  }
  std::set<std::string> actual_messages;
  for (int i = 0; i < file->message_type_count(); ++i) {
    actual_messages.insert(file->message_type(i)->name());
  }
  EXPECT_EQ(actual_messages, expected_messages);
}

const FileDescriptor* DevicePluginFile() { return v1beta1::Device::descriptor()->file(); }
const FileDescriptor* PluginRegistrationFile() {
  return pluginregistration::PluginInfo::descriptor()->file();
}
const FileDescriptor* PodResourcesFile() { return v1::PodResources::descriptor()->file(); }
namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
const FileDescriptor* DraV1File() { return drav1::Claim::descriptor()->file(); }
const FileDescriptor* DraV1beta1File() { return drav1beta1::Claim::descriptor()->file(); }
const FileDescriptor* DraHealthFile() { return v1alpha1::DeviceHealth::descriptor()->file(); }
const FileDescriptor* DraHealthV1File() { return v1::DeviceHealth::descriptor()->file(); }

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

TEST(WireContract, FilesAreProto3InTheirDocumentedPackages) {
  ExpectPackage(DevicePluginFile(), "v1beta1", "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1");
  ExpectPackage(PluginRegistrationFile(), "pluginregistration",
                "k8s.io/kubelet/pkg/apis/pluginregistration/v1");
  ExpectPackage(PodResourcesFile(), "v1", "k8s.io/kubelet/pkg/apis/podresources/v1");
  ExpectPackage(DraV1File(), "k8s.io.kubelet.pkg.apis.dra.v1", "k8s.io/kubelet/pkg/apis/dra/v1");
  ExpectPackage(DraV1beta1File(), "k8s.io.kubelet.pkg.apis.dra.v1beta1",
                "k8s.io/kubelet/pkg/apis/dra/v1beta1");
  ExpectPackage(DraHealthFile(), "v1alpha1", "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1",
                /*enums=*/1);
  ExpectPackage(DraHealthV1File(), "v1", "k8s.io/kubelet/pkg/apis/dra-health/v1", /*enums=*/1);
}

TEST(WireContract, FilesAreInTheGeneratedPool) {
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  EXPECT_EQ(pool->FindServiceByName("v1beta1.DevicePlugin"),
            DevicePluginFile()->FindServiceByName("DevicePlugin"));
  EXPECT_EQ(pool->FindServiceByName("pluginregistration.Registration"),
            PluginRegistrationFile()->FindServiceByName("Registration"));
  EXPECT_EQ(pool->FindServiceByName("v1.PodResourcesLister"),
            PodResourcesFile()->FindServiceByName("PodResourcesLister"));
  EXPECT_EQ(pool->FindServiceByName("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"),
            DraV1File()->FindServiceByName("DRAPlugin"));
  EXPECT_EQ(pool->FindServiceByName("k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"),
            DraV1beta1File()->FindServiceByName("DRAPlugin"));
  // The advertised health service name is the gRPC service's full name.
  EXPECT_EQ(pool->FindServiceByName("v1alpha1.DRAResourceHealth"),
            DraHealthFile()->FindServiceByName("DRAResourceHealth"));
  EXPECT_EQ(pool->FindServiceByName("v1.DRAResourceHealth"),
            DraHealthV1File()->FindServiceByName("DRAResourceHealth"));
}

TEST(WireContract, DevicePluginServicesMatchReference) {
  ExpectMethods(DevicePluginFile(), DevicePluginMethods());
}

TEST(WireContract, DevicePluginMessagesMatchReference) {
  ExpectMessages(DevicePluginFile(), DevicePluginMessages());
}

TEST(WireContract, PluginRegistrationServicesMatchReference) {
  ExpectMethods(PluginRegistrationFile(), PluginRegistrationMethods());
}

TEST(WireContract, PluginRegistrationMessagesMatchReference) {
  ExpectMessages(PluginRegistrationFile(), PluginRegistrationMessages());
}

TEST(WireContract, PodResourcesServicesMatchReference) {
  ExpectMethods(PodResourcesFile(), PodResourcesMethods());
}

TEST(WireContract, PodResourcesMessagesMatchReference) {
  ExpectMessages(PodResourcesFile(), PodResourcesMessages());
}

TEST(WireContract, DraV1ServicesMatchReference) {
  ExpectMethods(DraV1File(), DraMethods("k8s.io.kubelet.pkg.apis.dra.v1"));
}

TEST(WireContract, DraV1MessagesMatchReference) {
  ExpectMessages(DraV1File(), DraMessages("k8s.io.kubelet.pkg.apis.dra.v1", true));
}

TEST(WireContract, DraV1beta1ServicesMatchReference) {
  ExpectMethods(DraV1beta1File(), DraMethods("k8s.io.kubelet.pkg.apis.dra.v1beta1"));
}

TEST(WireContract, DraV1beta1MessagesMatchReference) {
  ExpectMessages(DraV1beta1File(), DraMessages("k8s.io.kubelet.pkg.apis.dra.v1beta1", false));
}

TEST(WireContract, DraHealthServicesMatchReference) {
  ExpectMethods(DraHealthFile(), DraHealthMethods("v1alpha1"));
  ExpectMethods(DraHealthV1File(), DraHealthMethods("v1"));
}

TEST(WireContract, DraHealthMessagesMatchReference) {
  ExpectMessages(DraHealthFile(), DraHealthMessages());
  ExpectMessages(DraHealthV1File(), DraHealthMessages());
}

TEST(WireContract, DraHealthStatusValuesMatchReference) {
  for (const FileDescriptor* file : {DraHealthFile(), DraHealthV1File()}) {
    SCOPED_TRACE(file->name());
    const auto* status = file->FindEnumTypeByName("HealthStatus");
    ASSERT_NE(status, nullptr);
    ASSERT_EQ(status->value_count(), 3);
    EXPECT_EQ(status->FindValueByName("UNKNOWN")->number(), 0);
    EXPECT_EQ(status->FindValueByName("HEALTHY")->number(), 1);
    EXPECT_EQ(status->FindValueByName("UNHEALTHY")->number(), 2);
  }
}

// The two DRA versions carry identical bytes for everything v1beta1 has: a kubelet may speak
// either to the same driver.
TEST(WireContract, DraPrepareResponseEncodesExactlyInBothVersions) {
  drav1::NodePrepareResourcesResponse v1_response;
  drav1::Device* device = (*v1_response.mutable_claims())["u"].add_devices();
  device->add_request_names("r");
  device->set_pool_name("p");
  device->set_device_name("d");
  device->add_cdi_device_ids("v/c=x");
  const std::string expected =
      "0a17"    // claims (1): map entry of 23 bytes
      "0a0175"  // key (1) "u"
      "1212"    // value (2): NodePrepareResourceResponse, 18 bytes
      "0a10"    // devices (1), 16 bytes
      "0a0172"  // request_names (1) "r"
      "120170"  // pool_name (2) "p"
      "1a0164"  // device_name (3) "d"
      "2205" +  // cdi_device_ids (4)
      Hex("v/c=x");
  EXPECT_EQ(Hex(v1_response.SerializeAsString()), expected);
  drav1beta1::NodePrepareResourcesResponse v1beta1_response;
  ASSERT_TRUE(v1beta1_response.ParseFromString(v1_response.SerializeAsString()));
  EXPECT_EQ(Hex(v1beta1_response.SerializeAsString()), expected);
}

TEST(WireContract, DraDeviceShareIdHasPresence) {
  drav1::Device device;
  EXPECT_FALSE(device.has_share_id());
  device.set_share_id("");
  EXPECT_EQ(Hex(device.SerializeAsString()), "2a00");
}

TEST(WireContract, DynamicResourceClassNameIsReserved) {
  const Descriptor* message = v1::DynamicResource::descriptor();
  EXPECT_EQ(message->FindFieldByNumber(1), nullptr);
  EXPECT_EQ(message->FindFieldByName("class_name"), nullptr);
  EXPECT_TRUE(message->IsReservedNumber(1));
  EXPECT_TRUE(message->IsReservedName("class_name"));
}

TEST(WireContract, ContainerAllocateResponseEnvEncodesExactly) {
  v1beta1::ContainerAllocateResponse response;
  (*response.mutable_envs())["FOO"] = "bar";
  const std::string bytes = response.SerializeAsString();
  EXPECT_EQ(Hex(bytes), "0a0a0a03464f4f1203626172");
  EXPECT_EQ(absl::Base64Escape(bytes), "CgoKA0ZPTxIDYmFy");
}

TEST(WireContract, ContainerAllocateResponseFieldsEncodeInNumberOrder) {
  v1beta1::ContainerAllocateResponse response;
  v1beta1::Mount* mount = response.add_mounts();
  mount->set_container_path("/c");
  mount->set_read_only(true);
  v1beta1::DeviceSpec* device = response.add_devices();
  device->set_host_path("/h");
  device->set_permissions("rw");
  (*response.mutable_annotations())["a"] = "b";
  response.add_cdi_devices()->set_name("v.com/gpu=0");
  EXPECT_EQ(Hex(response.SerializeAsString()),
            // mounts (2): container_path (1) "/c", read_only (3) true.
            "1206"
            "0a022f63"
            "1801"
            // devices (3): host_path (2) "/h", permissions (3) "rw".
            "1a08"
            "12022f68"
            "1a027277"
            // annotations (4): {key (1) "a", value (2) "b"}.
            "2206"
            "0a0161"
            "120162"
            // cdi_devices (5): name (1) "v.com/gpu=0".
            "2a0d"
            "0a0b762e636f6d2f6770753d30");
}

TEST(WireContract, ListAndWatchResponseParsesHandBuiltBytes) {
  // devices (1) { ID (1) "gpu0", health (2) "Healthy", topology (3) { nodes (1) { ID (1) 1 } } }.
  const std::string bytes = absl::HexStringToBytes(
      "0a15"
      "0a0467707530"
      "12074865616c746879"
      "1a04"
      "0a020801");
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(response.ParseFromString(bytes));
  ASSERT_EQ(response.devices_size(), 1);
  const v1beta1::Device& device = response.devices(0);
  EXPECT_EQ(device.id(), "gpu0");
  EXPECT_EQ(device.health(), "Healthy");
  ASSERT_TRUE(device.has_topology());
  ASSERT_EQ(device.topology().nodes_size(), 1);
  EXPECT_EQ(device.topology().nodes(0).id(), 1);
  EXPECT_EQ(Hex(response.SerializeAsString()), Hex(bytes));
}

TEST(WireContract, RegisterRequestEncodesExactly) {
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint("gpu.sock");
  request.set_resource_name("example.com/gpu");
  request.mutable_options()->set_get_preferred_allocation_available(true);
  EXPECT_EQ(Hex(request.SerializeAsString()), "0a07" + Hex("v1beta1") + "1208" + Hex("gpu.sock") +
                                                  "1a0f" + Hex("example.com/gpu") +
                                                  "2202"
                                                  "1001");
}

TEST(WireContract, PreferredAllocationRequestEncodesExactly) {
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  container->add_available_deviceids("a");
  container->add_available_deviceids("b");
  container->add_must_include_deviceids("a");
  container->set_allocation_size(2);
  EXPECT_EQ(Hex(request.SerializeAsString()),
            "0a0b"
            "0a0161"
            "0a0162"
            "120161"
            "1802");
}

TEST(WireContract, DefaultScalarsAreNotEncoded) {
  v1beta1::DevicePluginOptions options;
  EXPECT_EQ(options.SerializeAsString(), "");
  options.set_pre_start_required(true);
  EXPECT_EQ(Hex(options.SerializeAsString()), "0801");
  EXPECT_EQ(v1beta1::Empty().SerializeAsString(), "");
}

TEST(WireContract, PluginInfoEncodesExactly) {
  pluginregistration::PluginInfo info;
  info.set_type("DevicePlugin");
  info.set_name("r");
  info.set_endpoint("/s");
  info.add_supported_versions("v1beta1");
  EXPECT_EQ(Hex(info.SerializeAsString()), "0a0c" + Hex("DevicePlugin") + "1201" + Hex("r") +
                                               "1a02" + Hex("/s") + "2207" + Hex("v1beta1"));
}

TEST(WireContract, PodResourcesCpuIdsArePacked) {
  v1::ContainerResources container;
  container.add_cpu_ids(2);
  container.add_cpu_ids(3);
  EXPECT_EQ(Hex(container.SerializeAsString()), "1a020203");
}

TEST(WireContract, ClaimResourceShareIdHasPresence) {
  v1::ClaimResource claim;
  EXPECT_FALSE(claim.has_share_id());
  EXPECT_EQ(claim.SerializeAsString(), "");
  claim.set_share_id("");
  EXPECT_TRUE(claim.has_share_id());
  // An explicitly set empty string is still sent: field 5, length 0.
  EXPECT_EQ(Hex(claim.SerializeAsString()), "2a00");

  v1::ClaimResource parsed;
  ASSERT_TRUE(parsed.ParseFromString(absl::HexStringToBytes("2a00")));
  EXPECT_TRUE(parsed.has_share_id());
}

TEST(WireContract, GetPodResourcesResponseEncodesExactly) {
  v1::GetPodResourcesResponse response;
  v1::PodResources* pod = response.mutable_pod_resources();
  pod->set_name("p");
  pod->set_namespace_("n");
  v1::ContainerDevices* devices = pod->add_containers()->add_devices();
  devices->set_resource_name("r");
  devices->add_device_ids("d");
  devices->mutable_topology()->add_nodes()->set_id(1);
  EXPECT_EQ(Hex(response.SerializeAsString()),
            "0a16"    // pod_resources (1)
            "0a0170"  // name (1) "p"
            "12016e"  // namespace (2) "n"
            "1a0e"    // containers (3)
            "120c"    // devices (2)
            "0a0172"  // resource_name (1) "r"
            "120164"  // device_ids (2) "d"
            "1a04"
            "0a020801");  // topology (3) { nodes { ID 1 } }
}

}  // namespace
