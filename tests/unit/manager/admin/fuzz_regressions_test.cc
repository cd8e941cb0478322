// Regression tests for what manifest_fuzzer (tests/fuzz/manifest_fuzzer.cc) found in the manifest
// reader of `kdpctl apply` (manager/src/admin/manifest.h); the reproducers are kept in
// tests/fuzz/regressions/manifest/.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/admin/manifest.h"

namespace kdp::manager {
namespace {

using ::testing::HasSubstr;

// "lol0: &a0 [x, x, ...]", then levels of `width` aliases of the level below: width^(levels+1)
// values from a few hundred bytes (the "billion laughs" of XML, in YAML).
std::string AliasBomb(int levels, int width) {
  std::string text = "apiVersion: v1\nkind: Pod\nmetadata: {name: lol}\nlol0: &a0 [";
  for (int i = 0; i < width; ++i) absl::StrAppend(&text, i > 0 ? "," : "", "x");
  text += "]\n";
  for (int level = 1; level <= levels; ++level) {
    absl::StrAppend(&text, "lol", level, ": &a", level, " [");
    for (int i = 0; i < width; ++i) absl::StrAppend(&text, i > 0 ? "," : "", "*a", level - 1);
    text += "]\n";
  }
  return text;
}

// Found by manifest_fuzzer: a 427-byte manifest of 8 levels of 10 aliases made SplitManifest
// build 10^8 JSON values (minutes of CPU and gigabytes of memory in kdp-manager). yaml.v2, which
// kubectl and the API server use through sigs.k8s.io/yaml, refuses it as excessive aliasing.
TEST(ManifestFuzzRegression, AliasBombIsRefusedQuickly) {
  const std::string text = AliasBomb(/*levels=*/8, /*width=*/10);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<ManifestDocument>> documents = SplitManifest(text, "lol.yaml");
  const absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(documents.ok());
  EXPECT_EQ(documents.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(documents.status().message(), HasSubstr("lol.yaml: lol"));
  EXPECT_THAT(documents.status().message(), HasSubstr("document contains excessive aliasing"));
  EXPECT_LT(took, absl::Seconds(5));
  std::printf("FIGURE: alias bomb of %zu bytes refused in %.3f ms\n", text.size(),
              absl::ToDoubleMilliseconds(took));
}

// The guard's allowance, as yaml.v2's: up to 1000 values, or up to 100 of them through aliases,
// any sharing is fine; beyond, at most 99% of the values may come through aliases.
TEST(ManifestFuzzRegression, ModerateAliasingStillConverts) {
  // 11 + 111 + 1111 + 11111 values, 12320 of them through aliases (> 99%): refused.
  EXPECT_FALSE(SplitManifest(AliasBomb(3, 10), "m.yaml").ok());
  // 11 + 111 + 1111 values, 1220 through aliases (98%): accepted, as yaml.v2 accepts it.
  absl::StatusOr<std::vector<ManifestDocument>> ratio = SplitManifest(AliasBomb(2, 10), "m.yaml");
  ASSERT_TRUE(ratio.ok()) << ratio.status();
  EXPECT_EQ((*ratio)[0].json["lol2"][9][9][9], "x");
  // 4 + 16 + 64 values: within 1000, accepted whatever the share.
  absl::StatusOr<std::vector<ManifestDocument>> small = SplitManifest(AliasBomb(2, 4), "m.yaml");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)[0].json["lol2"].size(), 4u);
  EXPECT_EQ((*small)[0].json["lol2"][3][3].size(), 4u);
  // A shared block used a few times in a large document: a small share of aliases.
  std::string text = "apiVersion: v1\nkind: Pod\nmetadata: {name: shared}\nbase: &b {a: 1, b: 2}\n";
  for (int i = 0; i < 2000; ++i) absl::StrAppend(&text, "k", i, ": v\n");
  for (int i = 0; i < 50; ++i) absl::StrAppend(&text, "use", i, ": *b\n");
  absl::StatusOr<std::vector<ManifestDocument>> shared = SplitManifest(text, "s.yaml");
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ((*shared)[0].json["use49"]["b"], 2);
}

// Aliases in one document do not count against the next one, and an alias to a scalar is a
// plain value.
TEST(ManifestFuzzRegression, BudgetIsPerDocument) {
  const std::string doc = AliasBomb(2, 4);
  absl::StatusOr<std::vector<ManifestDocument>> documents =
      SplitManifest(absl::StrCat(doc, "---\n", doc, "---\n", "apiVersion: v1\nkind: Pod\n",
                                 "metadata: {name: &n x}\nother: *n\n"),
                    "three.yaml");
  ASSERT_TRUE(documents.ok()) << documents.status();
  ASSERT_EQ(documents->size(), 3u);
  EXPECT_EQ((*documents)[2].json["other"], "x");
}

}  // namespace
}  // namespace kdp::manager
