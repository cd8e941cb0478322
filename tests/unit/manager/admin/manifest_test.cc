#include "manager/src/admin/manifest.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json JsonOf(const std::string& yaml) {
  absl::StatusOr<Json> json = YamlToJson(YAML::Load(yaml), "");
  EXPECT_TRUE(json.ok()) << json.status();
  return json.value_or(Json());
}

TEST(YamlToJson, ResolvesPlainScalarsAsYaml11) {
  EXPECT_EQ(JsonOf("a: 10\nb: 0x10\nc: 010\nd: 0b11\ne: -7\nf: 1_000"),
            Json::parse(R"({"a":10,"b":16,"c":8,"d":3,"e":-7,"f":1000})"));
  EXPECT_EQ(JsonOf("a: yes\nb: Off\nc: true\nd: N"),
            Json::parse(R"({"a":true,"b":false,"c":true,"d":false})"));
  EXPECT_EQ(JsonOf("a: ~\nb: null\nc:"), Json::parse(R"({"a":null,"b":null,"c":null})"));
  EXPECT_EQ(JsonOf("a: 1.5\nb: 2e3\nc: .5"), Json::parse(R"({"a":1.5,"b":2000.0,"c":0.5})"));
  EXPECT_EQ(JsonOf("a: 80Gi\nb: 1.2.3\nc: gpu-0"),
            Json::parse(R"({"a":"80Gi","b":"1.2.3","c":"gpu-0"})"));
}

TEST(YamlToJson, QuotedScalarsStayStrings) {
  EXPECT_EQ(JsonOf("a: \"10\"\nb: 'yes'\nc: \"~\""),
            Json::parse(R"({"a":"10","b":"yes","c":"~"})"));
}

TEST(YamlToJson, IntegersBeyondInt64BecomeFloats) {
  EXPECT_TRUE(JsonOf("a: 99999999999999999999")["a"].is_number_float());
}

TEST(YamlToJson, KeepsNestingAndOrderOfLists) {
  EXPECT_EQ(JsonOf("spec:\n  requests:\n  - name: a\n    count: 2\n  - name: b\n"),
            Json::parse(R"({"spec":{"requests":[{"name":"a","count":2},{"name":"b"}]}})"));
}

TEST(YamlToJson, RejectsWhatJsonCannotHold) {
  absl::StatusOr<Json> json = YamlToJson(YAML::Load("spec:\n  x: .inf\n"), "");
  ASSERT_FALSE(json.ok());
  EXPECT_THAT(std::string(json.status().message()), HasSubstr("spec.x: the value .inf"));
  json = YamlToJson(YAML::Load("? [a]\n: b\n"), "");
  ASSERT_FALSE(json.ok());
  EXPECT_THAT(std::string(json.status().message()), HasSubstr("mapping keys must be strings"));
}

TEST(SplitManifest, SplitsDocumentsAndSkipsEmptyOnes) {
  absl::StatusOr<std::vector<ManifestDocument>> docs = SplitManifest(
      "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu\n"
      "---\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
      "all.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].kind, "DeviceClass");
  EXPECT_EQ((*docs)[0].api_version, "resource.k8s.io/v1");
  EXPECT_EQ((*docs)[0].source, "all.yaml (document 1)");
  EXPECT_EQ((*docs)[0].json["metadata"]["name"], "gpu");
  EXPECT_EQ((*docs)[1].kind, "Pod");
  EXPECT_EQ((*docs)[1].source, "all.yaml (document 3)");
  EXPECT_TRUE((*docs)[1].node.IsMap());
}

TEST(SplitManifest, OneDocumentIsNamedByItsSourceAlone) {
  absl::StatusOr<std::vector<ManifestDocument>> docs =
      SplitManifest("{\"apiVersion\": \"v1\", \"kind\": \"Pod\"}", "pod.json");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ((*docs)[0].source, "pod.json");
}

TEST(SplitManifest, NamesTheBrokenDocument) {
  auto error = [](const std::string& text) {
    absl::StatusOr<std::vector<ManifestDocument>> docs = SplitManifest(text, "m.yaml");
    EXPECT_FALSE(docs.ok());
    return docs.ok() ? std::string() : std::string(docs.status().message());
  };
  EXPECT_EQ(error("apiVersion: v1\nkind: Pod\n---\napiVersion: v1\n"),
            "m.yaml (document 2): Object 'Kind' is missing");
  EXPECT_EQ(error("kind: Pod\n"), "m.yaml: Object 'apiVersion' is missing");
  EXPECT_EQ(error("- a\n"), "m.yaml: a manifest document must be a mapping (a Kubernetes object)");
  EXPECT_EQ(error("---\n"), "m.yaml: no objects passed to apply");
  EXPECT_THAT(error("a: [\n"), HasSubstr("m.yaml: line "));
}

}  // namespace
}  // namespace kdp::manager
