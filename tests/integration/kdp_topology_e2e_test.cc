// kdp-topology as a process: its output formats, exit statuses, environment and fixtures.
#include <dirent.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kdp::testing {
namespace {

using ::testing::HasSubstr;

std::string TopologyDir() { return std::string(KDP_SOURCE_DIR) + "/tests/data/topologies"; }

CommandResult RunTool(std::vector<std::string> args,
                      std::vector<std::pair<std::string, std::string>> env = {}) {
  args.insert(args.begin(), KDP_TOPOLOGY_BIN);
  absl::StatusOr<CommandResult> result = RunCommand(args, absl::Seconds(30), std::move(env));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : CommandResult{};
}

TEST(KdpTopology, PrintsTheTreeOfAnXmlFile) {
  CommandResult result = RunTool({"--xml", TopologyDir() + "/quad-numa-nics.xml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Machine: 4 NUMA nodes, 16 CPUs, 9 PCI devices"));
  EXPECT_THAT(result.out, HasSubstr("NUMA node 3: CPUs 12-15 (4), memory 128 GiB\n"));
  EXPECT_THAT(result.out, HasSubstr("  0000:a2:00.0  15b3:101b  InfiniBand  ib3 (network), "
                                    "mlx5_3 (openfabrics)\n"));
  EXPECT_EQ(result.err, "");
}

TEST(KdpTopology, PrintsJson) {
  CommandResult result = RunTool({"--xml", TopologyDir() + "/sixteen-gpu-nvlink.xml", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["numa_nodes"].size(), 2u);
  EXPECT_EQ(json["pci_devices"].size(), 18u);
  ASSERT_EQ(json["link_matrices"].size(), 1u);
  EXPECT_EQ(json["link_matrices"][0]["name"], "NVLinkBandwidth");
}

TEST(KdpTopology, ExitsOneNamingAFileItCannotLoad) {
  const std::string missing = TopologyDir() + "/no-such-file.xml";
  CommandResult result = RunTool({"--xml", missing});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(missing));
  EXPECT_EQ(result.out, "");
  const std::string truncated = TopologyDir() + "/truncated.xml";
  result = RunTool({"--xml", truncated, "--json"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(truncated));
}

TEST(KdpTopology, ExitsTwoOnBadUsage) {
  EXPECT_EQ(RunTool({"--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(RunTool({"--xml"}).exit_code, 2);
  EXPECT_EQ(RunTool({"stray-argument"}).exit_code, 2);
}

TEST(KdpTopology, HelpDocumentsEachFlag) {
  CommandResult result = RunTool({"--help"});
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("--xml"));
  EXPECT_THAT(result.out, HasSubstr("--json"));
  EXPECT_THAT(result.out, HasSubstr("HWLOC_XMLFILE"));
}

TEST(KdpTopology, DiscoversTheHostOrHwlocXmlFile) {
  CommandResult host = RunTool({"--json"});
  ASSERT_EQ(host.exit_code, 0) << host.err;
  EXPECT_FALSE(nlohmann::json::parse(host.out)["numa_nodes"].empty());
  CommandResult fake =
      RunTool({"--json"}, {{"HWLOC_XMLFILE", TopologyDir() + "/eight-numa-snc.xml"}});
  ASSERT_EQ(fake.exit_code, 0) << fake.err;
  EXPECT_EQ(nlohmann::json::parse(fake.out)["numa_nodes"].size(), 8u);
}

// Without libhwloc-plugins (a --no-install-recommends install) hwloc reads XML with its own
// minimal parser, which rejects what only libxml2 accepts (comments, for one): every fixture
// must load with it.
TEST(KdpTopology, EveryFixtureLoadsWithHwlocsMinimalXmlParser) {
  std::vector<std::string> files = {std::string(KDP_SOURCE_DIR) +
                                    "/examples/gpu-plugin/topologies/dual-socket-8gpu.xml"};
  DIR* dir = opendir(TopologyDir().c_str());
  ASSERT_NE(dir, nullptr);
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() > 4 && name.ends_with(".xml") && name != "truncated.xml") {
      files.push_back(TopologyDir() + "/" + name);
    }
  }
  closedir(dir);
  EXPECT_GE(files.size(), 9u);
  for (const std::string& file : files) {
    CommandResult result = RunTool({"--xml", file, "--json"}, {{"HWLOC_LIBXML_IMPORT", "0"}});
    EXPECT_EQ(result.exit_code, 0) << file << ": " << result.err;
  }
}

}  // namespace
}  // namespace kdp::testing
