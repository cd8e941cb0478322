#include "manager/src/pod/pod_manifest.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/pod/pod.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Pair;
using ::testing::StartsWith;

constexpr char kUuidV4Regex[] =
    "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";

// A valid manifest around `containers` (the YAML of spec.containers' items, indented 2).
std::string PodYaml(const std::string& containers, const std::string& extra_spec = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" + extra_spec +
         "  containers:\n" + containers;
}

Pod MustParse(const std::string& text) {
  absl::StatusOr<Pod> pod = ParsePodManifest(text, "pod.yaml");
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.value_or(Pod());
}

std::string ManifestErrorOf(const std::string& text) {
  absl::StatusOr<Pod> pod = ParsePodManifest(text, "pod.yaml");
  if (pod.ok()) return "<parsed OK>";
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(pod.status().message());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(ParsePodManifest, ReadsInitSidecarAndAppContainersInOrder) {
  Pod pod = MustParse(ReadFile(std::string(KDP_SOURCE_DIR) + "/tests/data/pods/sidecar-pod.yaml"));
  EXPECT_EQ(pod.name, "sidecar-pod");
  EXPECT_EQ(pod.namespace_, "ml");
  EXPECT_EQ(pod.uid, "5b1c3e0a-9d7e-4f7a-8a51-2f3c4d5e6f70");
  ASSERT_EQ(pod.init_containers.size(), 2u);
  EXPECT_EQ(pod.init_containers[0].name, "warmup");
  EXPECT_EQ(pod.init_containers[0].kind, ContainerKind::kInit);
  EXPECT_THAT(pod.init_containers[0].extended_resources, ElementsAre(Pair("example.com/gpu", 1)));
  EXPECT_EQ(pod.init_containers[1].name, "proxy");
  EXPECT_EQ(pod.init_containers[1].kind, ContainerKind::kSidecar);
  EXPECT_THAT(pod.init_containers[1].extended_resources, ElementsAre(Pair("example.com/nic", 1)));
  ASSERT_EQ(pod.containers.size(), 1u);
  EXPECT_EQ(pod.containers[0].name, "train");
  EXPECT_EQ(pod.containers[0].kind, ContainerKind::kApp);
  EXPECT_THAT(pod.containers[0].extended_resources, ElementsAre(Pair("example.com/gpu", 1)));
  EXPECT_THAT(pod.containers[0].other_limits, ElementsAre(Pair("hugepages-2Mi", "4Mi")));
}

TEST(ParsePodManifest, DefaultsNamespaceRequestsAndIgnoresUnknownFields) {
  Pod pod = MustParse(ReadFile(std::string(KDP_SOURCE_DIR) + "/tests/data/pods/gpu-pod.yaml"));
  EXPECT_EQ(pod.name, "gpu-pod");
  EXPECT_EQ(pod.namespace_, "default");
  EXPECT_THAT(pod.init_containers, IsEmpty());
  ASSERT_EQ(pod.containers.size(), 1u);
  EXPECT_EQ(pod.containers[0].name, "cuda");
  EXPECT_THAT(pod.containers[0].extended_resources, ElementsAre(Pair("example.com/gpu", 2)));
  EXPECT_THAT(pod.containers[0].other_limits,
              ElementsAre(Pair("cpu", "500m"), Pair("memory", "1Gi")));

  Pod bare = MustParse(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
      "spec: {containers: [{name: c}]}\n");
  EXPECT_EQ(bare.namespace_, "default");
  ASSERT_EQ(bare.containers.size(), 1u);
  EXPECT_THAT(bare.containers[0].extended_resources, IsEmpty());
  EXPECT_THAT(bare.containers[0].other_limits, IsEmpty());
}

TEST(ParsePodManifest, AcceptsJson) {
  Pod pod = MustParse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "json-pod", "namespace": "team-a", "uid": "abc"},
    "spec": {"containers": [
      {"name": "app", "resources": {"limits": {"example.com/gpu": "4", "cpu": 1.5},
                                    "requests": {"example.com/gpu": 4}}}]}})");
  EXPECT_EQ(pod.name, "json-pod");
  EXPECT_EQ(pod.namespace_, "team-a");
  EXPECT_EQ(pod.uid, "abc");
  ASSERT_EQ(pod.containers.size(), 1u);
  EXPECT_THAT(pod.containers[0].extended_resources, ElementsAre(Pair("example.com/gpu", 4)));
  EXPECT_THAT(pod.containers[0].other_limits, ElementsAre(Pair("cpu", "1.5")));
}

TEST(ParsePodManifest, GeneratesDistinctUuidV4WhenUidAbsent) {
  const std::string text = PodYaml("  - name: c\n");
  Pod a = MustParse(text);
  Pod b = MustParse(text);
  EXPECT_THAT(a.uid, MatchesRegex(kUuidV4Regex));
  EXPECT_THAT(b.uid, MatchesRegex(kUuidV4Regex));
  EXPECT_NE(a.uid, b.uid);
}

TEST(GeneratePodUid, IsVersion4AndRandom) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string uid = GeneratePodUid();
    EXPECT_THAT(uid, MatchesRegex(kUuidV4Regex));
    seen.insert(uid);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(ParsePodManifest, CompletesGenerateName) {
  Pod pod = MustParse(
      "apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\n"
      "spec: {containers: [{name: c}]}\n");
  EXPECT_THAT(pod.name, MatchesRegex("web-[bcdfghjklmnpqrstvwxz2456789]{5}"));
}

TEST(ParsePodManifest, ReadsQuantitiesAsKubectlDoes) {
  Pod pod = MustParse(
      PodYaml("  - name: c\n"
              "    resources:\n"
              "      limits:\n"
              "        example.com/a: 3\n"      // YAML integer
              "        example.com/b: \"3\"\n"  // string
              "        example.com/c: 0x10\n"   // YAML 1.1 hex
              "        example.com/d: 010\n"    // YAML 1.1 octal
              "        example.com/e: '010'\n"  // a string stays decimal
              "        example.com/f: 1_000\n"  // YAML 1.1 digit separators
              "        example.com/g: 2000m\n"  // integer in milli-units
              "        example.com/h: 1e1\n"    // float syntax, integral value
              "        example.com/i: 0\n"      // zero counts are kept
              "        example.com/j: null\n"   // JSON null is a zero quantity
              "        example.com/k: ' 5 '\n"  // surrounding space trimmed, as UnmarshalJSON
              "        example.com/l: 1Ki\n"
              "      requests:\n"
              "        example.com/g: 2\n"));  // equal to its limit in another form
  ASSERT_EQ(pod.containers.size(), 1u);
  const std::map<std::string, int64_t> want = {
      {"example.com/a", 3}, {"example.com/b", 3},  {"example.com/c", 16},
      {"example.com/d", 8}, {"example.com/e", 10}, {"example.com/f", 1000},
      {"example.com/g", 2}, {"example.com/h", 10}, {"example.com/i", 0},
      {"example.com/j", 0}, {"example.com/k", 5},  {"example.com/l", 1024}};
  EXPECT_EQ(pod.containers[0].extended_resources, want);
}

TEST(ParsePodManifest, KeepsOtherLimitsAsWritten) {
  Pod pod =
      MustParse(PodYaml("  - name: c\n"
                        "    resources:\n"
                        "      limits: {cpu: 2, memory: 512Mi, ephemeral-storage: 1G,\n"
                        "               hugepages-1Gi: 2Gi}\n"
                        "      requests: {cpu: 1, memory: 256Mi, hugepages-1Gi: 2Gi}\n"));
  EXPECT_THAT(pod.containers[0].other_limits,
              ElementsAre(Pair("cpu", "2"), Pair("ephemeral-storage", "1G"),
                          Pair("hugepages-1Gi", "2Gi"), Pair("memory", "512Mi")));
  EXPECT_THAT(pod.containers[0].extended_resources, IsEmpty());
}

struct ErrorCase {
  std::string label;
  std::string text;
  std::string error;  // the whole message
};

TEST(ParsePodManifest, RejectsEachBrokenRuleWithItsMessage) {
  const std::string label_regex =
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
      "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  const std::string subdomain_regex =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
      "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  auto limits = [](const std::string& body) {
    return PodYaml("  - name: c\n    resources:\n" + body);
  };
  const std::string c0 = "pod.yaml: Pod \"p\" is invalid: spec.containers[0]";
  const std::vector<ErrorCase> cases = {
      {"no document", "", "pod.yaml: expected exactly one YAML document holding a Pod, found 0"},
      {"two documents", PodYaml("  - name: c\n") + "---\n" + PodYaml("  - name: c\n"),
       "pod.yaml: expected exactly one YAML document holding a Pod, found 2"},
      {"not a mapping", "- a\n- b\n",
       "pod.yaml: a Pod manifest must be a mapping, got a list (line 1, column 1)"},
      {"apiVersion missing", "kind: Pod\n",
       "pod.yaml: apiVersion: Required value (line 1, column 1)"},
      {"apiVersion wrong", "apiVersion: apps/v1\nkind: Pod\n",
       "pod.yaml: apiVersion: Unsupported value: \"apps/v1\": supported values: \"v1\" "
       "(line 1, column 13)"},
      {"kind wrong", "apiVersion: v1\nkind: Deployment\n",
       "pod.yaml: kind: Unsupported value: \"Deployment\": supported values: \"Pod\" "
       "(line 2, column 7)"},
      {"name missing", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n",
       "pod.yaml: Pod \"\" is invalid: metadata.name: Required value: name or generateName is "
       "required"},
      {"name invalid",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: My_Pod}\nspec: {containers: [{name: c}]}\n",
       "pod.yaml: Pod \"My_Pod\" is invalid: metadata.name: Invalid value: \"My_Pod\": " +
           subdomain_regex},
      {"generateName invalid",
       "apiVersion: v1\nkind: Pod\nmetadata: {generateName: Web-}\n"
       "spec: {containers: [{name: c}]}\n",
       "metadata.generateName: Invalid value: \"Web-\": " + subdomain_regex},
      {"namespace invalid",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a.b}\n"
       "spec: {containers: [{name: c}]}\n",
       "pod.yaml: Pod \"p\" is invalid: metadata.namespace: Invalid value: \"a.b\": must not "
       "contain dots"},
      {"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
       "pod.yaml: Pod \"p\" is invalid: spec.containers: Required value"},
      {"container name missing", PodYaml("  - image: x\n"), c0 + ".name: Required value"},
      {"container name invalid", PodYaml("  - name: Web\n"),
       c0 + ".name: Invalid value: \"Web\": " + label_regex},
      {"duplicate app container", PodYaml("  - name: a\n  - name: a\n"),
       "pod.yaml: Pod \"p\" is invalid: spec.containers[1].name: Duplicate value: \"a\""},
      {"init duplicates app", PodYaml("  - name: a\n", "  initContainers: [{name: a}]\n"),
       "pod.yaml: Pod \"p\" is invalid: spec.initContainers[0].name: Duplicate value: \"a\""},
      {"init restartPolicy",
       PodYaml("  - name: a\n", "  initContainers: [{name: i, restartPolicy: OnFailure}]\n"),
       "pod.yaml: Pod \"p\" is invalid: spec.initContainers[0].restartPolicy: Unsupported value: "
       "\"OnFailure\": supported values: \"Always\""},
      {"extended not integer", limits("      limits: {example.com/gpu: 1500m}\n"),
       c0 + ".resources.limits[example.com/gpu]: Invalid value: \"1500m\": must be an integer"},
      {"extended negative", limits("      limits: {example.com/gpu: -1}\n"),
       c0 + ".resources.limits[example.com/gpu]: Invalid value: \"-1\": must be greater than or "
            "equal to 0"},
      {"request without limit", limits("      requests: {example.com/gpu: 1}\n"),
       c0 + ".resources.limits[example.com/gpu]: Required value: Limit must be set for non "
            "overcommitable resources"},
      {"request differs from limit",
       limits("      limits: {example.com/gpu: 1}\n      requests: {example.com/gpu: 2}\n"),
       c0 + ".resources.requests[example.com/gpu]: Invalid value: \"2\": must be equal to "
            "example.com/gpu limit of 1"},
      {"request below limit",
       limits("      limits: {example.com/gpu: 2}\n      requests: {example.com/gpu: 1}\n"),
       c0 + ".resources.requests[example.com/gpu]: Invalid value: \"1\": must be equal to "
            "example.com/gpu limit of 2"},
      {"cpu request above limit", limits("      limits: {cpu: 1}\n      requests: {cpu: 1500m}\n"),
       c0 + ".resources.requests[cpu]: Invalid value: \"1500m\": must be less than or equal to "
            "cpu limit of 1"},
      {"hugepages request without limit", limits("      requests: {hugepages-2Mi: 2Mi}\n"),
       c0 + ".resources.limits[hugepages-2Mi]: Required value: Limit must be set for non "
            "overcommitable resources"},
      {"cpu negative", limits("      limits: {cpu: -100m}\n"),
       c0 + ".resources.limits[cpu]: Invalid value: \"-100m\": must be greater than or equal to 0"},
      {"kubernetes.io name", limits("      limits: {kubernetes.io/gpu: 1}\n"),
       c0 + ".resources.limits[kubernetes.io/gpu]: Invalid value: \"kubernetes.io/gpu\": must be "
            "an extended resource name: kdp-manager serves no resources in the kubernetes.io/ "
            "namespace"},
      {"requests. prefix", limits("      limits: {requests.example.com/gpu: 1}\n"),
       c0 + ".resources.limits[requests.example.com/gpu]: Invalid value: "
            "\"requests.example.com/gpu\": doesn't follow extended resource name standard"},
      {"unqualified name", limits("      limits: {gpu: 1}\n"),
       "pod.yaml: Pod \"p\" is invalid: [spec.containers[0].resources.limits[gpu]: Invalid value: "
       "\"gpu\": must be a standard resource type or fully qualified, "
       "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard "
       "resource for containers]"},
      {"bad quantity", limits("      limits:\n        cpu: abc\n"),
       "pod.yaml: spec.containers[0].resources.limits[cpu]: quantity \"abc\" is invalid: "
       "quantities must match the regular expression "
       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (line 10, column 14)"},
      {"quantity not a scalar", limits("      limits:\n        cpu: [1]\n"),
       "pod.yaml: spec.containers[0].resources.limits[cpu]: expected a quantity (a string or a "
       "number), got a list (line 10, column 14)"},
      {"containers not a list",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
       "spec:\n  containers:\n    name: c\n",
       "pod.yaml: spec.containers: expected a list, got a mapping (line 6, column 5)"},
      {"metadata not a mapping", "apiVersion: v1\nkind: Pod\nmetadata: p\n",
       "pod.yaml: metadata: expected a mapping, got a scalar (line 3, column 11)"},
      {"name not a string", "apiVersion: v1\nkind: Pod\nmetadata: {name: [p]}\n",
       "pod.yaml: metadata.name: expected a string, got a list (line 3, column 18)"},
      {"duplicate key",
       limits("      limits:\n        example.com/gpu: 1\n        example.com/gpu: 2\n"),
       "pod.yaml: spec.containers[0].resources.limits: mapping key \"example.com/gpu\" already "
       "defined (line 11, column 9)"},
  };
  for (const ErrorCase& c : cases) {
    const std::string error = ManifestErrorOf(c.text);
    if (c.error.starts_with("pod.yaml: ")) {
      EXPECT_EQ(error, c.error) << c.label;
    } else {
      EXPECT_THAT(error, HasSubstr(c.error)) << c.label;
    }
  }
}

TEST(ParsePodManifest, ReportsEveryBrokenRuleTogether) {
  const std::string error = ManifestErrorOf(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: Bad}\n"
      "spec:\n  containers:\n  - name: a\n    resources: {limits: {example.com/gpu: 0.5}}\n"
      "  - name: a\n");
  EXPECT_THAT(error, StartsWith("pod.yaml: Pod \"p\" is invalid: [metadata.namespace: Invalid "
                                "value: \"Bad\": "));
  EXPECT_THAT(error, HasSubstr(", spec.containers[0].resources.limits[example.com/gpu]: Invalid "
                               "value: \"500m\": must be an integer"));
  EXPECT_THAT(error, HasSubstr(", spec.containers[1].name: Duplicate value: \"a\"]"));
}

TEST(ParsePodManifest, ReportsYamlSyntaxErrorsWithPosition) {
  EXPECT_EQ(ManifestErrorOf("apiVersion: v1\nmetadata: {name: [p}\n"),
            "pod.yaml: line 2, column 20: illegal flow end");
  EXPECT_EQ(ManifestErrorOf("a: b: c\n"), "pod.yaml: line 1, column 5: illegal map value");
  EXPECT_EQ(ManifestErrorOf("a:\n  b: 1\n c: 2\n"),
            "pod.yaml: line 3, column 2: end of map not found");
}

TEST(ParsePodManifest, PrefixesErrorsWithSource) {
  absl::StatusOr<Pod> pod = ParsePodManifest("kind: Pod\n", "/tmp/my-pod.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(std::string(pod.status().message()), StartsWith("/tmp/my-pod.yaml: "));
}

}  // namespace
}  // namespace kdp::manager

namespace kdp::manager {
namespace {

constexpr char kClaimsSpec[] =
    "  resourceClaims:\n"
    "  - name: gpus\n"
    "    resourceClaimTemplateName: two-gpus\n"
    "  - name: shared\n"
    "    resourceClaimName: shared-gpu\n";

TEST(ParsePodManifestClaims, ReadsPodClaimsAndContainerClaimsInOrder) {
  Pod pod =
      MustParse(PodYaml("  - name: c\n"
                        "    resources:\n"
                        "      claims:\n"
                        "      - name: gpus\n"
                        "      - name: shared\n"
                        "        request: big\n",
                        kClaimsSpec));
  ASSERT_EQ(pod.resource_claims.size(), 2u);
  EXPECT_EQ(pod.resource_claims[0], (PodResourceClaim{.name = "gpus",
                                                      .resource_claim_name = "",
                                                      .resource_claim_template_name = "two-gpus"}));
  EXPECT_EQ(pod.resource_claims[1], (PodResourceClaim{.name = "shared",
                                                      .resource_claim_name = "shared-gpu",
                                                      .resource_claim_template_name = ""}));
  ASSERT_EQ(pod.containers.size(), 1u);
  EXPECT_THAT(pod.containers[0].claims,
              ElementsAre(ContainerClaim{.name = "gpus", .request = ""},
                          ContainerClaim{.name = "shared", .request = "big"}));
  EXPECT_THAT(pod.resource_claim_statuses, IsEmpty());
}

TEST(ParsePodManifestClaims, ContainerClaimMustNameAPodClaim) {
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n"
                                      "    resources:\n"
                                      "      claims:\n"
                                      "      - name: other\n",
                                      kClaimsSpec)),
              HasSubstr("spec.containers[0].resources.claims[0]: Not found: \"other\": must be one "
                        "of the names in pod.spec.resourceClaims: gpus, shared"));
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n"
                                      "    resources:\n"
                                      "      claims:\n"
                                      "      - name: other\n")),
              HasSubstr("must be one of the names in pod.spec.resourceClaims which is empty"));
}

TEST(ParsePodManifestClaims, RejectsDuplicateAndNamelessContainerClaims) {
  const std::string error =
      ManifestErrorOf(PodYaml("  - name: c\n"
                              "    resources:\n"
                              "      claims:\n"
                              "      - name: gpus\n"
                              "      - name: gpus\n"
                              "      - request: x\n",
                              kClaimsSpec));
  EXPECT_THAT(error,
              HasSubstr("spec.containers[0].resources.claims[1]: Duplicate value: \"gpus\""));
  EXPECT_THAT(error, HasSubstr("spec.containers[0].resources.claims[2]: Required value"));
}

TEST(ParsePodManifestClaims, PodClaimNeedsExactlyOneSource) {
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n",
                                      "  resourceClaims:\n"
                                      "  - name: a\n")),
              HasSubstr("spec.resourceClaims[0]: Invalid value: \"a\": must specify one of: "
                        "`resourceClaimName`, `resourceClaimTemplateName`"));
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n",
                                      "  resourceClaims:\n"
                                      "  - name: a\n"
                                      "    resourceClaimName: x\n"
                                      "    resourceClaimTemplateName: y\n")),
              HasSubstr("at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                        "specified"));
}

TEST(ParsePodManifestClaims, PodClaimNamesAreUniqueLabelsAndSourcesSubdomains) {
  const std::string error = ManifestErrorOf(PodYaml("  - name: c\n",
                                                    "  resourceClaims:\n"
                                                    "  - name: a\n"
                                                    "    resourceClaimName: x\n"
                                                    "  - name: a\n"
                                                    "    resourceClaimName: Bad_Name\n"
                                                    "  - name: A.b\n"
                                                    "    resourceClaimTemplateName: t\n"));
  EXPECT_THAT(error, HasSubstr("spec.resourceClaims[1].name: Duplicate value: \"a\""));
  EXPECT_THAT(error, HasSubstr("spec.resourceClaims[1].resourceClaimName: Invalid value: "
                               "\"Bad_Name\""));
  EXPECT_THAT(error, HasSubstr("spec.resourceClaims[2].name: Invalid value: \"A.b\""));
}

TEST(ParsePodManifestClaims, WrongShapesNameTheField) {
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n", "  resourceClaims: {}\n")),
              HasSubstr("spec.resourceClaims: expected a list, got a mapping"));
  EXPECT_THAT(ManifestErrorOf(PodYaml("  - name: c\n"
                                      "    resources:\n"
                                      "      claims: x\n")),
              HasSubstr("spec.containers[0].resources.claims: expected a list, got a scalar"));
}

}  // namespace
}  // namespace kdp::manager
