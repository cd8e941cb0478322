// Server-side field validation (field_validation.h): unknown fields are named as the API server's
// strict decoder names them, inside the schemas kdp keeps complete; every manifest the repository
// ships passes; open schemas let fields kdp does not describe through.
#include "manager/src/controlplane/resourceapi/field_validation.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "yaml-cpp/yaml.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Json = nlohmann::json;

Json PodWith(const Json& container) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}}},
          {"spec", {{"containers", Json::array({container})}}}};
}

TEST(FieldValidation, MisspeltFieldsAreNamedWithTheirPath) {
  // `limts` instead of `limits`: the pod would ask for no device.
  EXPECT_THAT(UnknownFields(Kind::kPod, "v1",
                            PodWith({{"name", "main"},
                                     {"resources", {{"limts", {{"example.com/gpu", "1"}}}}}})),
              ElementsAre("spec.containers[0].resources.limts"));
  // `selector` instead of `selectors`: the CEL filter would be dropped.
  const Json claim_template = Json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
      "metadata": {"name": "t"},
      "spec": {"spec": {"devices": {"requests": [
          {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                      "selector": [{"cel": {"expression": "true"}}]}},
          {"name": "other", "firstAvailable": [{"name": "a", "deviceClassName": "x",
                                                "count": 1, "cout": 2}]}],
        "constraints": [{"requests": ["gpu"], "matchAtribute": "x"}]}}}})");
  EXPECT_THAT(UnknownFields(Kind::kResourceClaimTemplate, "v1", claim_template),
              ElementsAre("spec.spec.devices.constraints[0].matchAtribute",
                          "spec.spec.devices.requests[0].exactly.selector",
                          "spec.spec.devices.requests[1].firstAvailable[0].cout"));
  // A top-level typo.
  EXPECT_THAT(UnknownFields(Kind::kDeviceClass, "v1",
                            {{"metadata", {{"name", "c"}}}, {"specs", Json::object()}}),
              ElementsAre("specs"));
  EXPECT_EQ(StrictDecodingError({"a", "b.c"}),
            "strict decoding error: unknown field \"a\", unknown field \"b.c\"");
}

TEST(FieldValidation, FieldsOutsideTheCompleteSchemasAndOtherVersionsAreLetThrough) {
  // PodSpec, containers and volumes are open: fields kdp does not describe pass.
  Json pod = PodWith({{"name", "main"}, {"resizePolicy", Json::array()}, {"made-up", 1}});
  pod["spec"]["hostAliases"] = Json::array();
  pod["spec"]["volumes"] = {{{"name", "v"}, {"csi", {{"driver", "d"}, {"anything", true}}}}};
  EXPECT_THAT(UnknownFields(Kind::kPod, "v1", pod), IsEmpty());
  // Opaque parameters are the driver's business.
  const Json claim = Json::parse(R"({"spec": {"devices": {"config": [
      {"opaque": {"driver": "d", "parameters": {"whatever": {"deep": 1}}}}]}}})");
  EXPECT_THAT(UnknownFields(Kind::kResourceClaim, "v1", claim), IsEmpty());
  // v1beta1 is not checked; ResourceSlices (the drivers') neither.
  EXPECT_THAT(UnknownFields(Kind::kResourceClaim, "v1beta1", {{"spex", 1}}), IsEmpty());
  EXPECT_THAT(UnknownFields(Kind::kResourceSlice, "v1", {{"spec", {{"made-up", 1}}}}), IsEmpty());
}

// YAML (as yaml-cpp reads it) to JSON, enough for manifests: maps, sequences and scalars.
Json ToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    Json out = Json::object();
    for (const auto& entry : node) out[entry.first.as<std::string>()] = ToJson(entry.second);
    return out;
  }
  if (node.IsSequence()) {
    Json out = Json::array();
    for (const auto& item : node) out.push_back(ToJson(item));
    return out;
  }
  if (node.IsScalar()) return node.as<std::string>();
  return nullptr;
}

TEST(FieldValidation, EveryManifestTheRepositoryShipsPasses) {
  int checked = 0;
  for (const char* dir : {"examples", "docs", "deploy"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(KDP_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".yaml") continue;
      for (const YAML::Node& document : YAML::LoadAllFromFile(entry.path().string())) {
        if (!document.IsMap() || !document["kind"]) continue;
        const std::string kind = document["kind"].as<std::string>();
        const std::string api_version = document["apiVersion"].as<std::string>("");
        for (const KindInfo& info : AllKinds()) {
          if (info.name != kind) continue;
          const std::string version = api_version.substr(api_version.find('/') + 1);
          EXPECT_THAT(UnknownFields(info.kind, version, ToJson(document)), IsEmpty())
              << entry.path();
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 5);  // the example pods, the DRA manifests
}

TEST(FieldValidation, TheDirectiveIsOneOfThree) {
  EXPECT_EQ(*ParseFieldValidation(""), FieldValidation::kWarn);
  EXPECT_EQ(*ParseFieldValidation("Strict"), FieldValidation::kStrict);
  EXPECT_EQ(*ParseFieldValidation("Ignore"), FieldValidation::kIgnore);
  absl::StatusOr<FieldValidation> bad = ParseFieldValidation("strict");
  EXPECT_EQ(HttpCode(bad.status()), 400);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
