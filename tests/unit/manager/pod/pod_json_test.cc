#include "manager/src/pod/pod_json.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/pod/pod.h"
#include "nlohmann/json.hpp"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

Container MakeContainer(std::string name, ContainerKind kind,
                        std::map<std::string, int64_t> extended = {},
                        std::map<std::string, std::string> other = {}) {
  return Container{.name = std::move(name),
                   .kind = kind,
                   .extended_resources = std::move(extended),
                   .other_limits = std::move(other)};
}

// A pod with all three container kinds, a zero count and several resources.
Pod SamplePod() {
  return Pod{
      .namespace_ = "ml",
      .name = "trainer",
      .uid = "5b1c3e0a-9d7e-4f7a-8a51-2f3c4d5e6f70",
      .init_containers = {MakeContainer("warmup", ContainerKind::kInit, {{"example.com/gpu", 1}}),
                          MakeContainer("proxy", ContainerKind::kSidecar, {{"example.com/nic", 0}},
                                        {{"cpu", "100m"}})},
      .containers = {MakeContainer("train", ContainerKind::kApp,
                                   {{"example.com/gpu", 2}, {"example.com/nic", 0}},
                                   {{"cpu", "500m"}, {"hugepages-2Mi", "4Mi"}})},
  };
}

// PodFromJson(parse(dump(PodToJson(pod)))), as the pod store writes and reads its file.
absl::StatusOr<Pod> ThroughText(const Pod& pod) {
  return PodFromJson(Json::parse(PodToJson(pod).dump()), "pods.json", "pods[0]");
}

std::string ErrorOf(const Json& json, std::string_view prefix = "pods[3]") {
  absl::StatusOr<Pod> pod = PodFromJson(json, "pods.json", prefix);
  if (pod.ok()) return "<read OK>";
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(pod.status().message());
}

TEST(PodJson, WritesTheStableForm) {
  EXPECT_EQ(PodToJson(SamplePod()).dump(),
            R"({"containers":[{"extendedResources":{"example.com/gpu":2,"example.com/nic":0},)"
            R"("kind":"app","name":"train","otherLimits":{"cpu":"500m","hugepages-2Mi":"4Mi"}}],)"
            R"("initContainers":[{"extendedResources":{"example.com/gpu":1},"kind":"init",)"
            R"("name":"warmup","otherLimits":{}},{"extendedResources":{"example.com/nic":0},)"
            R"("kind":"sidecar","name":"proxy","otherLimits":{"cpu":"100m"}}],"name":"trainer",)"
            R"("namespace":"ml","uid":"5b1c3e0a-9d7e-4f7a-8a51-2f3c4d5e6f70"})");
}

TEST(PodJson, RoundTripsAllKindsZeroCountsAndSeveralResources) {
  const Pod pod = SamplePod();
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pod);
  EXPECT_EQ(read->init_containers[1].extended_resources.at("example.com/nic"), 0);
}

TEST(PodJson, TerminatingIsWrittenOnlyWhenSetAndReadBack) {
  Pod pod = SamplePod();
  EXPECT_FALSE(PodToJson(pod).contains("terminating"));  // older records are unchanged
  pod.terminating = true;
  EXPECT_EQ(PodToJson(pod)["terminating"], true);
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->terminating);
  EXPECT_EQ(*read, pod);
}

TEST(PodJson, TheApiClientsObjectIsWrittenOnlyWhenSetAndReadBack) {
  Pod pod = SamplePod();
  EXPECT_FALSE(PodToJson(pod).contains("apiObject"));  // kdpctl's pods' records are unchanged
  pod.api_object = R"({"metadata":{"labels":{"app":"train"},"name":"trainer"}})";
  EXPECT_EQ(PodToJson(pod)["apiObject"], pod.api_object);
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pod);
}

TEST(PodJson, RoundTripsLargestCountAndEmptyMaps) {
  Pod pod = SamplePod();
  pod.containers = {MakeContainer("c", ContainerKind::kApp, {{"example.com/gpu", kMaxCount}})};
  pod.init_containers.clear();
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pod);
}

TEST(PodJson, RoundTripsUnicodeAndOddCharacters) {
  using namespace std::string_literals;
  Pod pod;
  pod.namespace_ = "名前空間";
  pod.name = "pod \"quoted\" \\ back/slash\n\t\x01\x7f";
  pod.uid = "nul\0inside"s;
  pod.init_containers = {
      MakeContainer("init-😀", ContainerKind::kInit, {{"", 3}, {"a.b[0]", 1}}, {{"", ""}})};
  pod.containers = {MakeContainer("ünïcödé ", ContainerKind::kApp,
                                  {{"example.com/gpu\u2028", 1}, {"𝔤𝔭𝔲/\u00e9", 0}},
                                  {{"cpu", "\ufeff500m"}, {"]\"[", "\0"s}})};
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pod);
  EXPECT_EQ(read->uid.size(), 10u);
}

TEST(PodJson, ReplacesBytesThatAreNotUtf8AsGoDoes) {
  Pod pod = SamplePod();
  // A stray byte, a truncated sequence, an overlong '/', a surrogate and a code point above
  // U+10FFFF: Go's encoding/json writes one U+FFFD per byte of each.
  pod.uid =
      "a\xff"
      "b\xe2\x82"
      "c\xc0\xaf"
      "d\xed\xa0\x80"
      "e\xf4\x90\x80\x80"
      "f\xe2\x82\xac";
  pod.containers[0].other_limits = {{"cpu\xfe", "1\x80"}};
  const Json json = PodToJson(pod);
  std::string text;
  ASSERT_NO_THROW(text = json.dump());
  absl::StatusOr<Pod> read = PodFromJson(Json::parse(text), "pods.json", "");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->uid,
            "a\ufffd"
            "b\ufffd\ufffd"
            "c\ufffd\ufffd"
            "d\ufffd\ufffd\ufffd"
            "e\ufffd\ufffd\ufffd\ufffd"
            "f\u20ac");
  EXPECT_EQ(read->containers[0].other_limits,
            (std::map<std::string, std::string>{{"cpu\ufffd", "1\ufffd"}}));
}

// Code points from every UTF-8 length, NUL and other control characters, quotes, backslashes,
// characters JSON writers escape specially (U+2028) and ones that need surrogate pairs in \u form.
std::string RandomString(std::mt19937& rng, size_t min_length) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kRanges = {
      {0x00, 0x1f},    {0x20, 0x7e},     {'"', '"'},       {'\\', '\\'},       {0x7f, 0x7ff},
      {0x800, 0xd7ff}, {0xe000, 0xfffd}, {0x2028, 0x2029}, {0x10000, 0x10ffff}};
  std::uniform_int_distribution<size_t> length(min_length, 8);
  std::uniform_int_distribution<size_t> range(0, kRanges.size() - 1);
  std::string out;
  for (size_t n = length(rng); n > 0; --n) {
    const auto [low, high] = kRanges[range(rng)];
    const uint32_t c = std::uniform_int_distribution<uint32_t>(low, high)(rng);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += {static_cast<char>(0xc0 | c >> 6), static_cast<char>(0x80 | (c & 0x3f))};
    } else if (c < 0x10000) {
      out += {static_cast<char>(0xe0 | c >> 12), static_cast<char>(0x80 | (c >> 6 & 0x3f)),
              static_cast<char>(0x80 | (c & 0x3f))};
    } else {
      out += {static_cast<char>(0xf0 | c >> 18), static_cast<char>(0x80 | (c >> 12 & 0x3f)),
              static_cast<char>(0x80 | (c >> 6 & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
    }
  }
  return out;
}

Pod RandomPod(std::mt19937& rng) {
  const auto below = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::set<std::string> names;
  const auto container = [&](ContainerKind kind) {
    Container c;
    c.kind = kind;
    do {
      c.name = RandomString(rng, 1);
    } while (!names.insert(c.name).second);
    for (int i = below(4); i > 0; --i) {
      const int64_t counts[] = {0, 1, 8, kMaxCount,
                                std::uniform_int_distribution<int64_t>(0, kMaxCount)(rng)};
      c.extended_resources[RandomString(rng, 0)] = counts[below(5)];
    }
    for (int i = below(3); i > 0; --i) c.other_limits[RandomString(rng, 0)] = RandomString(rng, 0);
    return c;
  };
  Pod pod;
  pod.namespace_ = RandomString(rng, 1);
  pod.name = RandomString(rng, 1);
  pod.uid = RandomString(rng, 1);
  for (int i = below(4); i > 0; --i) {
    pod.init_containers.push_back(
        container(below(2) == 0 ? ContainerKind::kInit : ContainerKind::kSidecar));
  }
  for (int i = 1 + below(3); i > 0; --i) pod.containers.push_back(container(ContainerKind::kApp));
  pod.terminating = below(4) == 0;
  return pod;
}

TEST(PodJson, RoundTripsRandomPodsThroughText) {
  std::mt19937 rng(20240611);
  for (int i = 0; i < 300; ++i) {
    const Pod pod = RandomPod(rng);
    const std::string text = PodToJson(pod).dump();
    SCOPED_TRACE(text);
    absl::StatusOr<Pod> read = PodFromJson(Json::parse(text), "pods.json", "pods[0]");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, pod);
    EXPECT_EQ(PodToJson(*read).dump(), text);
  }
}

TEST(PodJson, IgnoresUnknownKeys) {
  Json json = PodToJson(SamplePod());
  json["phase"] = "Running";
  json["containers"][0]["image"] = Json::object({{"ref", 1}});
  absl::StatusOr<Pod> read = PodFromJson(json, "pods.json", "pods[0]");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, SamplePod());
}

TEST(PodJson, NamesTheValueItselfWhenNotAnObject) {
  EXPECT_EQ(ErrorOf(Json::array()), "pods.json: pods[3]: must be an object");
  EXPECT_EQ(ErrorOf("pod", ""), "pods.json: must be an object");
  EXPECT_EQ(ErrorOf(Json::parse("{", nullptr, /*allow_exceptions=*/false)),
            "pods.json: pods[3]: must be an object");
}

TEST(PodJson, StartsPathsAtTheRootWithoutPrefix) {
  Json json = PodToJson(SamplePod());
  json["containers"][0]["kind"] = "job";
  EXPECT_EQ(ErrorOf(json, ""),
            R"(pods.json: containers[0].kind: must be one of "init", "sidecar", "app")");
}

TEST(PodJson, RejectsEachBrokenRuleWithItsPath) {
  struct Case {
    std::function<void(Json&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {[](Json& j) { j.erase("namespace"); }, "pods[3].namespace: Required value"},
      {[](Json& j) { j["namespace"] = 7; }, "pods[3].namespace: must be a string"},
      {[](Json& j) { j["namespace"] = ""; }, "pods[3].namespace: must be non-empty"},
      {[](Json& j) { j.erase("name"); }, "pods[3].name: Required value"},
      {[](Json& j) { j["name"] = ""; }, "pods[3].name: must be non-empty"},
      {[](Json& j) { j["name"] = nullptr; }, "pods[3].name: must be a string"},
      {[](Json& j) { j.erase("uid"); }, "pods[3].uid: Required value"},
      {[](Json& j) { j["uid"] = ""; }, "pods[3].uid: must be non-empty"},
      {[](Json& j) { j["uid"] = Json::array(); }, "pods[3].uid: must be a string"},
      {[](Json& j) { j.erase("initContainers"); }, "pods[3].initContainers: Required value"},
      {[](Json& j) { j["initContainers"] = Json::object(); },
       "pods[3].initContainers: must be an array"},
      {[](Json& j) { j.erase("containers"); }, "pods[3].containers: Required value"},
      {[](Json& j) { j["containers"] = "train"; }, "pods[3].containers: must be an array"},
      {[](Json& j) { j["containers"] = Json::array(); }, "pods[3].containers: must be non-empty"},
      {[](Json& j) { j["containers"][0] = "train"; }, "pods[3].containers[0]: must be an object"},
      {[](Json& j) { j["initContainers"][1].erase("name"); },
       "pods[3].initContainers[1].name: Required value"},
      {[](Json& j) { j["containers"][0]["name"] = ""; },
       "pods[3].containers[0].name: must be non-empty"},
      {[](Json& j) { j["containers"][0]["name"] = 1; },
       "pods[3].containers[0].name: must be a string"},
      {[](Json& j) { j["containers"][0]["name"] = "proxy"; },
       R"(pods[3].containers[0].name: must be unique in the pod: "proxy" is also )"
       R"(pods[3].initContainers[1].name)"},
      {[](Json& j) { j["initContainers"][1]["name"] = "warmup"; },
       R"(pods[3].initContainers[1].name: must be unique in the pod: "warmup" is also )"
       R"(pods[3].initContainers[0].name)"},
      {[](Json& j) {
         Json copy = j["containers"][0];
         j["containers"].push_back(std::move(copy));
       },
       R"(pods[3].containers[1].name: must be unique in the pod: "train" is also )"
       R"(pods[3].containers[0].name)"},
      {[](Json& j) { j["containers"][0].erase("kind"); },
       "pods[3].containers[0].kind: Required value"},
      {[](Json& j) { j["terminating"] = "yes"; }, "pods[3].terminating: must be a boolean"},
      {[](Json& j) { j["apiObject"] = Json::object(); }, "pods[3].apiObject: must be a string"},
      {[](Json& j) { j["apiObject"] = "[1]"; }, "pods[3].apiObject: must be a JSON object"},
      {[](Json& j) { j["apiObject"] = "{"; }, "pods[3].apiObject: must be a JSON object"},
      {[](Json& j) { j["containers"][0]["kind"] = 2; },
       "pods[3].containers[0].kind: must be a string"},
      {[](Json& j) { j["containers"][0]["kind"] = "App"; },
       R"(pods[3].containers[0].kind: must be one of "init", "sidecar", "app")"},
      {[](Json& j) { j["initContainers"][0]["kind"] = ""; },
       R"(pods[3].initContainers[0].kind: must be one of "init", "sidecar", "app")"},
      {[](Json& j) { j["initContainers"][0]["kind"] = "app"; },
       R"(pods[3].initContainers[0].kind: must be "init" or "sidecar" in initContainers)"},
      {[](Json& j) { j["containers"][0]["kind"] = "init"; },
       R"(pods[3].containers[0].kind: must be "app" in containers)"},
      {[](Json& j) { j["containers"][0]["kind"] = "sidecar"; },
       R"(pods[3].containers[0].kind: must be "app" in containers)"},
      {[](Json& j) { j["containers"][0].erase("extendedResources"); },
       "pods[3].containers[0].extendedResources: Required value"},
      {[](Json& j) { j["containers"][0]["extendedResources"] = Json::array(); },
       "pods[3].containers[0].extendedResources: must be an object"},
      {[](Json& j) { j["containers"][0]["extendedResources"]["example.com/gpu"] = -1; },
       "pods[3].containers[0].extendedResources[example.com/gpu]: must be a non-negative integer"},
      {[](Json& j) { j["containers"][0]["extendedResources"]["example.com/gpu"] = 2.0; },
       "pods[3].containers[0].extendedResources[example.com/gpu]: must be a non-negative integer"},
      {[](Json& j) { j["containers"][0]["extendedResources"]["example.com/gpu"] = "2"; },
       "pods[3].containers[0].extendedResources[example.com/gpu]: must be a non-negative integer"},
      {[](Json& j) { j["containers"][0]["extendedResources"]["example.com/gpu"] = true; },
       "pods[3].containers[0].extendedResources[example.com/gpu]: must be a non-negative integer"},
      {[](Json& j) {
         j["containers"][0]["extendedResources"]["example.com/gpu"] =
             uint64_t{std::numeric_limits<int64_t>::max()} + 1;
       },
       "pods[3].containers[0].extendedResources[example.com/gpu]: must be a non-negative integer"},
      {[](Json& j) { j["initContainers"][1]["extendedResources"]["a b"] = nullptr; },
       "pods[3].initContainers[1].extendedResources[a b]: must be a non-negative integer"},
      {[](Json& j) { j["containers"][0].erase("otherLimits"); },
       "pods[3].containers[0].otherLimits: Required value"},
      {[](Json& j) { j["containers"][0]["otherLimits"] = "cpu"; },
       "pods[3].containers[0].otherLimits: must be an object"},
      {[](Json& j) { j["containers"][0]["otherLimits"]["memory"] = 1024; },
       "pods[3].containers[0].otherLimits[memory]: must be a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    Json json = PodToJson(SamplePod());
    c.edit(json);
    EXPECT_EQ(ErrorOf(json), "pods.json: " + c.message);
    // The same document as the store reads it back from text fails the same way.
    EXPECT_EQ(ErrorOf(Json::parse(json.dump())), "pods.json: " + c.message);
  }
}

TEST(PodJson, ReportsTheFirstBrokenRuleInDocumentOrder) {
  Json json = PodToJson(SamplePod());
  json["uid"] = "";
  json["containers"] = Json::array();
  EXPECT_EQ(ErrorOf(json), "pods.json: pods[3].uid: must be non-empty");
}

TEST(PodJson, RejectsWhatItWritesForAPodBreakingTheModel) {
  Pod pod = SamplePod();
  pod.containers[0].extended_resources["example.com/gpu"] = -2;
  EXPECT_EQ(ErrorOf(PodToJson(pod)),
            "pods.json: pods[3].containers[0].extendedResources[example.com/gpu]: must be a "
            "non-negative integer");
  pod = SamplePod();
  pod.containers[0].kind = static_cast<ContainerKind>(7);
  EXPECT_EQ(ErrorOf(PodToJson(pod)),
            R"(pods.json: pods[3].containers[0].kind: must be one of "init", "sidecar", "app")");
}

}  // namespace
}  // namespace kdp::manager

namespace kdp::manager {
namespace {

TEST(PodJsonClaims, RoundTripsPodAndContainerClaimsAndStatuses) {
  Pod pod = SamplePod();
  pod.resource_claims = {
      {.name = "gpus", .resource_claim_name = "", .resource_claim_template_name = "two-gpus"},
      {.name = "shared", .resource_claim_name = "shared-gpu", .resource_claim_template_name = ""}};
  pod.resource_claim_statuses = {{"gpus", "trainer-gpus-x7k2p"}};
  pod.containers[0].claims = {{.name = "gpus", .request = ""},
                              {.name = "shared", .request = "big"}};
  absl::StatusOr<Pod> read = ThroughText(pod);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pod);
}

TEST(PodJsonClaims, PodsWithoutClaimsKeepTheirFormerRecord) {
  // The DRA keys appear only when used: a pod record written before them reads the same.
  const std::string text = PodToJson(SamplePod()).dump();
  EXPECT_EQ(text.find("resourceClaims"), std::string::npos);
  EXPECT_EQ(text.find("claims"), std::string::npos);
}

TEST(PodJsonClaims, RejectsMalformedClaimsWithTheirPath) {
  nlohmann::json json = PodToJson(SamplePod());
  json["resourceClaims"] = nlohmann::json::array({{{"name", ""}}});
  absl::StatusOr<Pod> read = PodFromJson(json, "pods.json", "");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()),
              ::testing::HasSubstr("resourceClaims[0].name: must be non-empty"));
  json = PodToJson(SamplePod());
  json["containers"][0]["claims"] = nlohmann::json::array({{{"name", "a"}, {"request", 3}}});
  read = PodFromJson(json, "pods.json", "");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(std::string(read.status().message()),
              ::testing::HasSubstr("containers[0].claims[0].request: must be a string"));
}

}  // namespace
}  // namespace kdp::manager
