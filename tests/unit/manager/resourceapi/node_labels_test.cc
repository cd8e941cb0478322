// kdp-manager --node-labels: the kubelet's key=value list, each label checked as the API server
// checks Node labels.
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/validation.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;

TEST(ParseNodeLabels, ReadsKeyValuePairs) {
  absl::StatusOr<std::map<std::string, std::string>> labels =
      ParseNodeLabels("cloud.google.com/gke-tpu-topology=2x2,tier=,example.com/gpu.product=H100");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(*labels,
            (std::map<std::string, std::string>{{"cloud.google.com/gke-tpu-topology", "2x2"},
                                                {"tier", ""},
                                                {"example.com/gpu.product", "H100"}}));
  EXPECT_TRUE(ParseNodeLabels("")->empty());
}

TEST(ParseNodeLabels, NamesTheBadLabelAndTheRule) {
  struct Case {
    std::string text;
    const char* message;
  };
  for (const Case& c : {Case{"novalue", "node label \"novalue\": must be key=value"},
                        Case{"a=b,a=c", "node label \"a\" given twice"},
                        Case{"Bad Key=x", "node label \"Bad Key=x\": metadata.labels"},
                        Case{"k=has space", "node label \"k=has space\": metadata.labels"},
                        Case{"k=" + std::string(64, 'v'), "must be no more than 63"}}) {
    absl::StatusOr<std::map<std::string, std::string>> labels = ParseNodeLabels(c.text);
    ASSERT_FALSE(labels.ok()) << c.text;
    EXPECT_EQ(labels.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(labels.status().message()), HasSubstr(c.message)) << c.text;
  }
}

}  // namespace
}  // namespace kdp::manager::resourceapi
