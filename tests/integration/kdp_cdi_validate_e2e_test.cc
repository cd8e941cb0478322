// kdp-cdi-validate as a process: valid specs pass with their minimum version, an invalid one
// fails naming the rule, an unknown field fails naming it, a missing file fails; exit codes.
#include <fstream>
#include <string>

#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.Path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(KdpCdiValidate, ValidSpecsPassWithTheirMinimumVersion) {
  TempDir dir;
  const std::string spec = Write(dir, "ok.json", R"({"cdiVersion":"0.5.0","kind":"vendor.com/gpu",
    "devices":[{"name":"gpu0","containerEdits":{"deviceNodes":[{"path":"/dev/x","hostPath":"/dev/x"}]}}]})");
  absl::StatusOr<CommandResult> run = RunCommand({KDP_CDI_VALIDATE_BIN, spec});
  ASSERT_TRUE(run.ok()) << run.status();
  const CommandResult& result = *run;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("ok.json: valid (cdiVersion 0.5.0, minimum 0.5.0, kind "
                                    "vendor.com/gpu, 1 device)"));
}

TEST(KdpCdiValidate, InvalidSpecsFailNamingTheRule) {
  TempDir dir;
  const std::string low = Write(dir, "low.json", R"({"cdiVersion":"0.3.0","kind":"vendor.com/gpu",
    "devices":[{"name":"gpu0","containerEdits":{"deviceNodes":[{"path":"/dev/x","hostPath":"/dev/x"}]}}]})");
  const std::string empty =
      Write(dir, "empty.json", R"({"cdiVersion":"0.6.0","kind":"vendor.com/gpu",
    "devices":[{"name":"gpu0","containerEdits":{}}]})");
  const std::string unknown =
      Write(dir, "unknown.json", R"({"cdiVersion":"0.6.0","kind":"vendor.com/gpu",
    "devices":[{"name":"gpu0","containerEdits":{"env":["A=B"]},"color":"red"}]})");
  absl::StatusOr<CommandResult> run =
      RunCommand({KDP_CDI_VALIDATE_BIN, low, empty, unknown, dir.Path("missing.json")});
  ASSERT_TRUE(run.ok()) << run.status();
  const CommandResult& result = *run;
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("low.json: invalid: "));
  EXPECT_THAT(result.err, HasSubstr("below the minimum 0.5.0"));
  EXPECT_THAT(result.err, HasSubstr("empty.json: invalid: "));
  EXPECT_THAT(result.err, HasSubstr("containerEdits must not be empty"));
  EXPECT_THAT(result.err, HasSubstr("color"));
  EXPECT_THAT(result.err, HasSubstr("missing.json: cannot read the file"));
}

TEST(KdpCdiValidate, NoFileIsBadUsage) {
  absl::StatusOr<CommandResult> run = RunCommand({KDP_CDI_VALIDATE_BIN});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2);
}

}  // namespace
}  // namespace kdp::testing
