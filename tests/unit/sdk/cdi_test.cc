#include "kdp/cdi.h"

#include <dirent.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::cdi {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The smallest valid spec: one device with one env edit, version 0.3.0.
Spec MinimalSpec() {
  return Spec{
      .cdi_version = "0.3.0",
      .kind = "vendor.com/gpu",
      .devices = {Device{.name = "gpu0", .container_edits = {.env = {"GPU_DEVICE_0=gpu-0"}}}}};
}

// A spec using every field (needs 1.1.0), as in the reference's example.
Spec FullSpec() {
  Spec spec;
  spec.cdi_version = "1.1.0";
  spec.kind = "k8s.gpu.example.com/gpu";
  spec.annotations = {{"k", "v"}};
  spec.devices = {Device{.name = "4b2c-gpu-0",
                         .annotations = {{"example.com/k", "v"}},
                         .container_edits = {.env = {"GPU_DEVICE_0=gpu-0"}}}};
  spec.container_edits = ContainerEdits{
      .env = {"A=B"},
      .device_nodes = {DeviceNode{.path = "/dev/foo",
                                  .host_path = "/dev/foo",
                                  .type = "c",
                                  .major = 1,
                                  .minor = 0,
                                  .file_mode = 0666,
                                  .permissions = "rw",
                                  .uid = 0,
                                  .gid = 0}},
      .mounts = {Mount{.host_path = "/usr/lib/x",
                       .container_path = "/usr/lib/x",
                       .type = "none",
                       .options = {"ro", "bind"}}},
      .hooks = {Hook{.hook_name = "createContainer",
                     .path = "/usr/bin/hook",
                     .args = {"hook", "x"},
                     .env = {"A=B"},
                     .timeout = 5}},
      .additional_gids = {44},
      .intel_rdt = IntelRdt{.clos_id = "x", .schemata = {"L3:0=f"}, .enable_monitoring = true},
      .net_devices = {NetDevice{.host_interface_name = "eth1", .name = "net1"}}};
  return spec;
}

TEST(CdiValidate, AcceptsMinimalAndFullSpecs) {
  EXPECT_TRUE(Validate(MinimalSpec()).ok()) << Validate(MinimalSpec());
  EXPECT_TRUE(Validate(FullSpec()).ok()) << Validate(FullSpec());
}

TEST(CdiValidate, KindSyntax) {
  for (const char* kind : {"vendor.com/foo", "foo.bar.baz/foo-bar123.B_az", "a/b", "v/c_1"}) {
    Spec spec = MinimalSpec();
    spec.kind = kind;
    spec.cdi_version = MinimumRequiredVersion(spec);
    EXPECT_TRUE(Validate(spec).ok()) << kind << ": " << Validate(spec);
  }
  for (const char* kind :
       {"foo", "vendor.com/foo/", "vendor.com/foo/bar", "", "/gpu", "vendor/", "1vendor/gpu",
        "vendor-/gpu", "vendor/gpu-", "vendor/1gpu", "ven dor/gpu", "vendor/g:pu"}) {
    Spec spec = MinimalSpec();
    spec.kind = kind;
    absl::Status status = Validate(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << kind;
    EXPECT_THAT(status.message(), HasSubstr("kind")) << kind;
  }
}

TEST(CdiValidate, KindErrorsNameTheRule) {
  Spec spec = MinimalSpec();
  spec.kind = "vendor.com/foo/bar";
  EXPECT_THAT(Validate(spec).message(), HasSubstr("invalid character '/'"));
  spec.kind = "vendor.com/foo/";
  EXPECT_THAT(Validate(spec).message(), HasSubstr("must end with a letter or digit"));
  spec.kind = "foo";
  EXPECT_THAT(Validate(spec).message(), HasSubstr("not of the form <vendor>/<class>"));
}

TEST(CdiValidate, DeviceNameSyntax) {
  for (const char* name : {"gpu0", "a", "gpu:0", "claim-uid_gpu.0", "G", "0gpu", "4b2c-gpu-0"}) {
    Spec spec = MinimalSpec();
    spec.devices[0].name = name;
    spec.cdi_version = MinimumRequiredVersion(spec);
    EXPECT_TRUE(Validate(spec).ok()) << name << ": " << Validate(spec);
  }
  for (const char* name : {"", "-gpu", "gpu-", "gpu/0", "gpu 0", "gpu=0", ":gpu", "gpu:"}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = "1.1.0";
    spec.devices[0].name = name;
    absl::Status status = Validate(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(status.message(), AllOf(HasSubstr("CDI spec \"vendor.com/gpu\""),
                                        HasSubstr("devices[0]"), HasSubstr("device name")))
        << name;
  }
}

TEST(CdiValidate, DuplicateDeviceNames) {
  Spec spec = MinimalSpec();
  spec.devices.push_back(spec.devices[0]);
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("device \"gpu0\": the name is used by more than one device"));
}

TEST(CdiValidate, NeedsAtLeastOneDevice) {
  Spec spec = MinimalSpec();
  spec.devices.clear();
  EXPECT_THAT(Validate(spec).message(), HasSubstr("devices must list at least one device"));
}

TEST(CdiValidate, DeviceEditsMustNotBeEmpty) {
  Spec spec = MinimalSpec();
  spec.container_edits.env = {"A=B"};  // spec-level edits do not make the device valid
  spec.devices[0].container_edits = {};
  absl::Status status = Validate(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CDI spec \"vendor.com/gpu\": device \"gpu0\": containerEdits must not be empty");
}

TEST(CdiValidate, Env) {
  for (const char* env : {"A=", "A=B=C", "a_b=1"}) {
    Spec spec = MinimalSpec();
    spec.devices[0].container_edits.env = {env};
    EXPECT_TRUE(Validate(spec).ok()) << env;
  }
  for (const char* env : {"=B", "AB", ""}) {
    Spec spec = MinimalSpec();
    spec.devices[0].container_edits.env = {"OK=1", env};
    EXPECT_THAT(Validate(spec).message(), AllOf(HasSubstr("device \"gpu0\": containerEdits.env[1]"),
                                                HasSubstr("is not NAME=VALUE")))
        << env;
  }
  Spec spec = MinimalSpec();
  spec.container_edits.env = {"=x"};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("containerEdits.env[0] \"=x\""));
}

TEST(CdiValidate, DeviceNodes) {
  for (const char* type : {"", "b", "c", "u", "p"}) {
    Spec spec = MinimalSpec();
    spec.devices[0].container_edits.device_nodes = {DeviceNode{.path = "/dev/x", .type = type}};
    EXPECT_TRUE(Validate(spec).ok()) << type;
  }
  for (const char* permissions : {"", "r", "rw", "rwm", "mr"}) {
    Spec spec = MinimalSpec();
    spec.devices[0].container_edits.device_nodes = {
        DeviceNode{.path = "/dev/x", .permissions = permissions}};
    EXPECT_TRUE(Validate(spec).ok()) << permissions;
  }
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.device_nodes = {DeviceNode{.path = "/dev/x", .type = "x"}};
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("containerEdits.deviceNodes[0].type \"x\" must be one of"));
  spec.devices[0].container_edits.device_nodes = {
      DeviceNode{.path = "/dev/x", .permissions = "rwx"}};
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("deviceNodes[0].permissions \"rwx\" must be a subset of \"rwm\""));
  spec.devices[0].container_edits.device_nodes = {DeviceNode{.type = "c"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("deviceNodes[0].path is required"));
}

TEST(CdiValidate, Mounts) {
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.mounts = {Mount{.container_path = "/x"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("mounts[0].hostPath is required"));
  spec.devices[0].container_edits.mounts = {Mount{.host_path = "/x"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("mounts[0].containerPath is required"));
  spec.devices[0].container_edits.mounts = {Mount{.host_path = "/x", .container_path = "/y"}};
  EXPECT_TRUE(Validate(spec).ok());
}

TEST(CdiValidate, Hooks) {
  for (const char* name : {"prestart", "createRuntime", "createContainer", "startContainer",
                           "poststart", "poststop"}) {
    Spec spec = MinimalSpec();
    spec.devices[0].container_edits.hooks = {Hook{.hook_name = name, .path = "/bin/true"}};
    EXPECT_TRUE(Validate(spec).ok()) << name;
  }
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.hooks = {Hook{.hook_name = "preStart", .path = "/bin/true"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("hooks[0].hookName \"preStart\" must be one of"));
  spec.devices[0].container_edits.hooks = {Hook{.hook_name = "poststop", .path = "bin/true"}};
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("hooks[0].path \"bin/true\" must be an absolute path"));
  spec.devices[0].container_edits.hooks = {Hook{.hook_name = "poststop", .path = ""}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("must be an absolute path"));
  spec.devices[0].container_edits.hooks = {
      Hook{.hook_name = "poststop", .path = "/bin/true", .env = {"=x"}}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("hooks[0].env[0]"));
  for (int timeout : {0, -1}) {
    spec.devices[0].container_edits.hooks = {
        Hook{.hook_name = "poststop", .path = "/bin/true", .timeout = timeout}};
    EXPECT_THAT(Validate(spec).message(), HasSubstr("must be greater than 0 seconds"));
  }
  spec.devices[0].container_edits.hooks = {
      Hook{.hook_name = "poststop", .path = "/bin/true", .timeout = 1}};
  EXPECT_TRUE(Validate(spec).ok());
}

TEST(CdiValidate, IntelRdtClosId) {
  for (const char* clos : {"", "/", "group1"}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = "0.7.0";
    spec.devices[0].container_edits.intel_rdt = IntelRdt{.clos_id = clos};
    EXPECT_TRUE(Validate(spec).ok()) << clos << ": " << Validate(spec);
  }
  for (const char* clos : {".", "..", "a/b", "a\nb"}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = "0.7.0";
    spec.devices[0].container_edits.intel_rdt = IntelRdt{.clos_id = clos};
    EXPECT_THAT(Validate(spec).message(), HasSubstr("intelRdt.closID")) << clos;
  }
}

TEST(CdiValidate, NetDevices) {
  Spec spec = MinimalSpec();
  spec.cdi_version = "1.1.0";
  spec.devices[0].container_edits.net_devices = {{.host_interface_name = "eth1", .name = "net1"},
                                                 {.host_interface_name = "eth2", .name = "net2"}};
  EXPECT_TRUE(Validate(spec).ok()) << Validate(spec);
  spec.devices[0].container_edits.net_devices[1].name = "net1";
  EXPECT_THAT(Validate(spec).message(), HasSubstr("netDevices[1].name \"net1\" is listed twice"));
  spec.devices[0].container_edits.net_devices = {{.host_interface_name = "", .name = "n"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("netDevices[0].hostInterfaceName"));
  spec.devices[0].container_edits.net_devices = {
      {.host_interface_name = "eth0", .name = "a-very-long-name0"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("netDevices[0].name"));
}

TEST(CdiValidate, Annotations) {
  Spec spec = MinimalSpec();
  spec.cdi_version = "0.6.0";
  spec.annotations = {{"example.com/Key_1", "v"}, {"plain", ""}};
  spec.devices[0].annotations = {{"A.b", "x"}};
  EXPECT_TRUE(Validate(spec).ok()) << Validate(spec);
  spec.annotations = {{"bad key", "v"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("annotations: annotation key \"bad key\""));
  spec.annotations = {{"-bad.prefix/key", "v"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("prefix must be a DNS subdomain"));
  spec.annotations = {{std::string(64, 'a'), "v"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("1-63 characters"));
  spec.annotations = {{"big", std::string(256 * 1024, 'x')}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("exceed the limit"));
  spec.annotations = {};
  spec.devices[0].annotations = {{"a/b/c", "v"}};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("device \"gpu0\": annotations"));
}

TEST(CdiValidate, Versions) {
  for (const char* version : {"0.3.0", "v0.3.0", "0.8.0", "1.0.0", "v1.1.0"}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = version;
    EXPECT_TRUE(Validate(spec).ok()) << version;
  }
  for (const char* version : {"0.1.0", "v0.2.0"}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = version;
    EXPECT_THAT(Validate(spec).message(), HasSubstr("must be at least v0.3.0")) << version;
  }
  for (const char* version : {"", "1.2.0", "0.9.0", "1.1", "V1.1.0", "vv1.1.0", "1.1.0 "}) {
    Spec spec = MinimalSpec();
    spec.cdi_version = version;
    EXPECT_EQ(Validate(spec).code(), absl::StatusCode::kInvalidArgument) << version;
  }
  Spec spec = MinimalSpec();
  spec.cdi_version = "2.0.0";
  EXPECT_THAT(Validate(spec).message(), HasSubstr("\"2.0.0\" is not a known CDI version"));
}

TEST(CdiValidate, DeclaredVersionBelowMinimum) {
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.device_nodes = {DeviceNode{.path = "/dev/a", .host_path = "/b"}};
  absl::Status status = Validate(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CDI spec \"vendor.com/gpu\": cdiVersion 0.3.0 is below the minimum 0.5.0 required "
            "by devices[0].containerEdits.deviceNodes[0].hostPath");
  spec.cdi_version = "v0.5.0";
  EXPECT_TRUE(Validate(spec).ok());
}

struct MinimumCase {
  const char* feature;
  void (*apply)(Spec&);
  const char* version;
};

TEST(CdiMinimumRequiredVersion, PerFeature) {
  const MinimumCase cases[] = {
      {"nothing", [](Spec&) {}, "0.3.0"},
      {"mount type",
       [](Spec& s) {
         s.container_edits.mounts = {{.host_path = "/a", .container_path = "/a", .type = "bind"}};
       },
       "0.4.0"},
      {"mount without type",
       [](Spec& s) {
         s.devices[0].container_edits.mounts = {{.host_path = "/a", .container_path = "/a"}};
       },
       "0.3.0"},
      {"device hostPath",
       [](Spec& s) {
         s.devices[0].container_edits.device_nodes = {{.path = "/dev/a", .host_path = "/dev/b"}};
       },
       "0.5.0"},
      {"spec hostPath",
       [](Spec& s) { s.container_edits.device_nodes = {{.path = "/dev/a", .host_path = "/b"}}; },
       "0.5.0"},
      {"name starting with a digit", [](Spec& s) { s.devices[0].name = "0gpu"; }, "0.5.0"},
      {"spec annotations",
       [](Spec& s) {
         s.annotations = {{"a", "b"}};
       },
       "0.6.0"},
      {"device annotations",
       [](Spec& s) {
         s.devices[0].annotations = {{"a", "b"}};
       },
       "0.6.0"},
      {"dot in class", [](Spec& s) { s.kind = "vendor.com/gpu.x"; }, "0.6.0"},
      {"intelRdt", [](Spec& s) { s.container_edits.intel_rdt = IntelRdt{.clos_id = "c"}; },
       "0.7.0"},
      {"additionalGids", [](Spec& s) { s.devices[0].container_edits.additional_gids = {44}; },
       "0.7.0"},
      {"netDevices",
       [](Spec& s) {
         s.devices[0].container_edits.net_devices = {{.host_interface_name = "e", .name = "n"}};
       },
       "1.1.0"},
      {"rdt schemata",
       [](Spec& s) { s.container_edits.intel_rdt = IntelRdt{.schemata = {"L3:0=f"}}; }, "1.1.0"},
      {"rdt enableMonitoring",
       [](Spec& s) {
         s.devices[0].container_edits.intel_rdt = IntelRdt{.enable_monitoring = true};
       },
       "1.1.0"},
      {"everything", [](Spec& s) { s = FullSpec(); }, "1.1.0"},
  };
  for (const MinimumCase& c : cases) {
    Spec spec = MinimalSpec();
    c.apply(spec);
    EXPECT_EQ(MinimumRequiredVersion(spec), c.version) << c.feature;
    spec.cdi_version = MinimumRequiredVersion(spec);
    EXPECT_TRUE(Validate(spec).ok()) << c.feature << ": " << Validate(spec);
  }
}

TEST(CdiJson, UsesTheGoKeysAndOmitsEmptyFields) {
  std::string json = ToJson(MinimalSpec());
  EXPECT_EQ(json,
            "{\n"
            "  \"cdiVersion\": \"0.3.0\",\n"
            "  \"kind\": \"vendor.com/gpu\",\n"
            "  \"devices\": [\n"
            "    {\n"
            "      \"name\": \"gpu0\",\n"
            "      \"containerEdits\": {\n"
            "        \"env\": [\n"
            "          \"GPU_DEVICE_0=gpu-0\"\n"
            "        ]\n"
            "      }\n"
            "    }\n"
            "  ]\n"
            "}\n");
  std::string full = ToJson(FullSpec());
  for (const char* key :
       {"\"annotations\"", "\"containerEdits\"", "\"deviceNodes\"", "\"hostPath\"", "\"fileMode\"",
        "\"additionalGids\"", "\"intelRdt\"", "\"closID\"", "\"enableMonitoring\"",
        "\"netDevices\"", "\"hostInterfaceName\"", "\"hookName\"", "\"containerPath\"",
        "\"timeout\"", "\"major\"", "\"minor\"", "\"uid\"", "\"gid\"", "\"permissions\""}) {
    EXPECT_THAT(full, HasSubstr(key)) << key;
  }
  EXPECT_THAT(full, HasSubstr("\"fileMode\": 438"));
  EXPECT_THAT(full, HasSubstr("\"minor\": 0"));  // set explicitly: written even though zero
  EXPECT_THAT(full, ::testing::Not(HasSubstr("l3CacheSchema")));
}

void ExpectSameSpec(const Spec& a, const Spec& b) { EXPECT_EQ(ToJson(a), ToJson(b)); }

TEST(CdiJson, RoundTrip) {
  for (const Spec& spec : {MinimalSpec(), FullSpec()}) {
    absl::StatusOr<Spec> parsed = ParseJson(ToJson(spec), "round-trip.json");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ExpectSameSpec(*parsed, spec);
    EXPECT_TRUE(Validate(*parsed).ok());
  }
  absl::StatusOr<Spec> parsed = ParseJson(ToJson(FullSpec()), "full.json");
  ASSERT_TRUE(parsed.ok());
  const DeviceNode& node = parsed->container_edits.device_nodes.at(0);
  EXPECT_EQ(node.minor, 0);
  EXPECT_EQ(node.file_mode, 0666u);
  EXPECT_EQ(node.gid, 0u);
  EXPECT_EQ(parsed->container_edits.hooks.at(0).timeout, 5);
  EXPECT_TRUE(parsed->container_edits.intel_rdt->enable_monitoring);
  EXPECT_EQ(parsed->devices.at(0).annotations.at("example.com/k"), "v");
}

TEST(CdiJson, ParsesTheReferenceExampleAndNulls) {
  const char* text = R"({
    "cdiVersion": "v0.5.0", "kind": "vendor.com/gpu", "annotations": null,
    "devices": [{"name": "gpu0", "containerEdits": {"deviceNodes": [
        {"path": "/dev/foo", "hostPath": "/dev/foo", "type": "c", "major": 1, "minor": 2,
         "fileMode": 438, "permissions": "rw", "uid": 0, "gid": 0}], "env": null}}],
    "containerEdits": {"mounts": [{"hostPath": "/a", "containerPath": "/b",
                                   "options": ["ro", "bind"]}]}})";
  absl::StatusOr<Spec> spec = ParseJson(text, "/etc/cdi/x.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(Validate(*spec).ok()) << Validate(*spec);
  EXPECT_EQ(spec->devices.at(0).container_edits.device_nodes.at(0).major, 1);
  EXPECT_THAT(spec->devices.at(0).container_edits.env, IsEmpty());
  EXPECT_THAT(spec->container_edits.mounts.at(0).options, ::testing::ElementsAre("ro", "bind"));
}

TEST(CdiJson, StrictParsing) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "extra": 1})",
       "/x/spec.json: unknown field \"extra\" in CDI spec"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [{"name": "d",
           "containerEdits": {"env": ["A=B"], "envs": []}}]})",
       "unknown field \"devices[0].containerEdits.envs\""},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "containerEdits":
           {"deviceNodes": [{"path": "/dev/a", "hostpath": "/b"}]}})",
       "unknown field \"containerEdits.deviceNodes[0].hostpath\""},
      {R"({"cdiVersion": 3, "kind": "a/b", "devices": []})", "cdiVersion: expected a string"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": {}})", "devices: expected an array"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "containerEdits":
           {"deviceNodes": [{"path": "/dev/a", "major": 1.5}]}})",
       "containerEdits.deviceNodes[0].major: expected an integer"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "containerEdits":
           {"additionalGids": [-1]}})",
       "containerEdits.additionalGids[0]: integer out of range"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "containerEdits":
           {"deviceNodes": [{"path": "/dev/a", "uid": 4294967296}]}})",
       "deviceNodes[0].uid: integer out of range"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "devices": [], "containerEdits":
           {"intelRdt": {"enableMonitoring": "yes"}}})",
       "intelRdt.enableMonitoring: expected true or false"},
      {R"({"cdiVersion": "0.3.0", "kind": "a/b", "annotations": {"a": 1}, "devices": []})",
       "annotations.a: expected a string"},
      {R"([1])", "(top level): expected an object"},
      {R"({"cdiVersion": "0.3.0",)", "not a valid JSON CDI spec"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Spec> spec = ParseJson(c.text, "/x/spec.json");
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(spec.status().message(), AllOf(HasSubstr("/x/spec.json: "), HasSubstr(c.error)))
        << c.text;
  }
}

TEST(CdiQualifiedName, BuildAndParse) {
  EXPECT_EQ(QualifiedName("vendor.com/gpu", "gpu0"), "vendor.com/gpu=gpu0");
  std::string kind;
  std::string device;
  ASSERT_TRUE(ParseQualifiedName("vendor.com/gpu=gpu0", &kind, &device).ok());
  EXPECT_EQ(kind, "vendor.com/gpu");
  EXPECT_EQ(device, "gpu0");
  // Split at the first '=': the rest belongs to the name and is then validated.
  EXPECT_THAT(ParseQualifiedName("vendor.com/gpu=a=b", &kind, &device).message(),
              HasSubstr("invalid character '='"));
  ASSERT_TRUE(ParseQualifiedName("k8s.gpu.example.com/gpu=4b2c:gpu-0", &kind, &device).ok());
  EXPECT_EQ(kind, "k8s.gpu.example.com/gpu");
  EXPECT_EQ(device, "4b2c:gpu-0");
  EXPECT_TRUE(ParseQualifiedName("a/b=c", nullptr, nullptr).ok());
  for (const char* bad : {"", "/dev/gpu0", "gpu0", "vendor.com/gpu=", "=gpu0", "vendor.com=gpu0",
                          "vendor.com/gpu/x=gpu0", "vendor.com/=gpu0", "vendor.com/gpu=-gpu0",
                          "/vendor.com/gpu=gpu0"}) {
    absl::Status status = ParseQualifiedName(bad, &kind, &device);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("\"", bad, "\""))) << bad;
  }
}

TEST(CdiSpecFiles, TransientSpecName) {
  EXPECT_EQ(TransientSpecName("k8s.gpu.example.com", "gpu", "4b2c-11"),
            "k8s.gpu.example.com-gpu_4b2c-11");
  EXPECT_EQ(TransientSpecName("v", "c", "a/b/c"), "v-c_a_b_c");
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

TEST(CdiSpecFiles, WriteCreatesRootAndReplacesAtomically) {
  kdp::testing::TempDir temp;
  const std::string root = temp.Path("run/cdi");
  Spec spec = MinimalSpec();
  ASSERT_TRUE(WriteSpec(root, "vendor.com-gpu_claim1", spec).ok());
  const std::string path = root + "/vendor.com-gpu_claim1.json";
  struct stat st;
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat(temp.Path("run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  absl::StatusOr<std::string> content = ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, ToJson(spec));

  spec.devices[0].container_edits.env = {"REPLACED=1"};
  ASSERT_TRUE(WriteSpec(root, "vendor.com-gpu_claim1", spec).ok());
  content = ReadFile(path);
  ASSERT_TRUE(content.ok());
  absl::StatusOr<Spec> reread = ParseJson(*content, path);
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_THAT(reread->devices[0].container_edits.env, ::testing::ElementsAre("REPLACED=1"));
  // No temporary file is left behind, and nothing but the spec is in the directory.
  EXPECT_THAT(ListDir(root), ::testing::ElementsAre("vendor.com-gpu_claim1.json"));

  ASSERT_TRUE(RemoveSpec(root, "vendor.com-gpu_claim1").ok());
  EXPECT_THAT(ListDir(root), IsEmpty());
  EXPECT_TRUE(RemoveSpec(root, "vendor.com-gpu_claim1").ok());  // absent: OK (retried unprepare)
  EXPECT_TRUE(RemoveSpec(temp.Path("missing-dir"), "x").ok());
}

TEST(CdiSpecFiles, InvalidSpecIsNotWritten) {
  kdp::testing::TempDir temp;
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits = {};
  absl::Status status = WriteSpec(temp.path(), "x", spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("containerEdits must not be empty"));
  EXPECT_THAT(ListDir(temp.path()), IsEmpty());
}

TEST(CdiSpecFiles, RefusesUnsafeSpecNames) {
  kdp::testing::TempDir temp;
  for (const std::string& name :
       {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
        std::string("../etc"), std::string("a\0b", 3), std::string(kMaxSpecNameLength + 1, 'a')}) {
    EXPECT_EQ(WriteSpec(temp.path(), name, MinimalSpec()).code(),
              absl::StatusCode::kInvalidArgument)
        << name;
    EXPECT_EQ(RemoveSpec(temp.path(), name).code(), absl::StatusCode::kInvalidArgument) << name;
  }
  EXPECT_THAT(ListDir(temp.path()), IsEmpty());
  // The longest allowed name works (file and temporary name fit NAME_MAX).
  EXPECT_TRUE(WriteSpec(temp.path(), std::string(kMaxSpecNameLength, 'a'), MinimalSpec()).ok());
}

TEST(CdiSpecFiles, RootThatIsAFileFails) {
  kdp::testing::TempDir temp;
  ASSERT_TRUE(WriteFileDurably(temp.Path("file"), "x").ok());
  absl::Status status = WriteSpec(temp.Path("file"), "x", MinimalSpec());
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("not a directory"));
}

}  // namespace
}  // namespace kdp::cdi
