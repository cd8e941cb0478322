#include "manager/src/pod/yaml_documents.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admin/manifest.h"
#include "manager/src/pod/pod_manifest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;

// yaml-cpp 0.7's LoadAll never returns on these (found by manifest_fuzzer: `{},` made
// kdp-manager allocate until it ran out of memory); they are refused where the stray ',' is.
TEST(LoadYamlDocuments, StrayCommaAfterTopLevelNodeIsAParseError) {
  struct Case {
    std::string text;
    int line;
    int column;  // 0-based, as YAML::Mark
  };
  for (const Case& c : std::vector<Case>{{"{},", 0, 2},
                                         {"[1],", 0, 3},
                                         {"\"a\", b", 0, 3},
                                         {"'a',", 0, 3},
                                         {"{a: b},", 0, 6},
                                         {"a: 1\n---\n{} ,", 2, 3}}) {
    const absl::Time start = absl::Now();
    try {
      (void)LoadYamlDocuments(c.text);
      ADD_FAILURE() << "no error for " << c.text;
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.msg, "did not find expected <document start>") << c.text;
      EXPECT_EQ(e.mark.line, c.line) << c.text;
      EXPECT_EQ(e.mark.column, c.column) << c.text;
    }
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << c.text;
  }
}

TEST(LoadYamlDocuments, LoadsWhatLoadAllLoads) {
  for (const std::string& text :
       {std::string(""), std::string("a: 1"), std::string("a: 1\n---\nb: 2\n---\n"),
        std::string("---\n---\n"), std::string("{}x"), std::string("a,"), std::string("[a]: b"),
        std::string("- {a: [1, 2]}\n- 'q'\n")}) {
    const std::vector<YAML::Node> expected = YAML::LoadAll(text);
    const std::vector<YAML::Node> got = LoadYamlDocuments(text);
    ASSERT_EQ(got.size(), expected.size()) << text;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(YAML::Dump(got[i]), YAML::Dump(expected[i])) << text;
    }
  }
}

TEST(LoadYamlDocuments, MalformedYamlThrowsAsLoadAllDoes) {
  EXPECT_THROW((void)LoadYamlDocuments("a: [1,"), YAML::ParserException);
  EXPECT_THROW((void)LoadYamlDocuments("{}]"), YAML::ParserException);
}

// Both manifest readers report it with the source, line and column (1-based).
TEST(LoadYamlDocuments, ManifestReadersReportTheStrayComma) {
  absl::StatusOr<std::vector<ManifestDocument>> documents = SplitManifest("{},", "m.yaml");
  ASSERT_FALSE(documents.ok());
  EXPECT_EQ(documents.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(documents.status().message(),
            "m.yaml: line 1, column 3: did not find expected <document start>");
  absl::StatusOr<Pod> pod = ParsePodManifest("apiVersion: v1\n---\n[1],", "pod.yaml");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().message(),
            "pod.yaml: line 3, column 4: did not find expected <document start>");
}

}  // namespace
}  // namespace kdp::manager
