// The documentation follows the binaries: every long flag (`--name`) that a kdp binary's --help
// lists (each kdpctl command's --help too) is named in the document a user reads for it, every
// kdpctl command is named in docs/kdpctl.md and docs/manager.md, and a flag a document's flag
// table or usage block names that the binary no longer has fails too. The binaries are run, not
// their sources read, so a flag added in main.cc without a line of documentation fails here.
//
//   kdp-manager      docs/manager.md
//   kdpctl           docs/kdpctl.md (commands also in docs/manager.md)
//   kdp-gpu-plugin   examples/gpu-plugin/README.md
//   kdp-dra-driver   examples/dra-driver/README.md
//   kdp-topology     docs/topology.md
//   kdp-cdi-validate docs/dra.md
//   kdp-conformance  docs/conformance.md
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A binary as its --help describes it.
struct Tool {
  std::string name = {};  // "kdpctl": how documents and messages name it
  // Every long flag of the binary and of each of its commands, "--help" included.
  std::set<std::string> flags = {};
  // Commands without subcommands, as typed: "kdpctl get pods" (empty for a tool without any).
  std::vector<std::string> commands = {};
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string SourcePath(const std::string& relative) {
  return absl::StrCat(KDP_SOURCE_DIR, "/", relative);
}

// The lines of a CLI11 help section ("Options:", "Subcommands:"): from its heading to the next
// line that is not indented (the next heading).
std::vector<std::string> Section(const std::string& help, const std::string& heading) {
  std::vector<std::string> lines;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (line == heading) {
      in = true;
      continue;
    }
    if (!in) continue;
    if (!line.empty() && line[0] != ' ') break;
    lines.emplace_back(line);
  }
  return lines;
}

bool IsFlagChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

// The long flags a CLI11 help text defines: rows of its "Options:" section that start with
// "  -" ("  -o,--output FORMAT:{text,json}", "  --kubelet-root TEXT=/var/lib/kubelet").
// Descriptions are indented further and are not read.
std::set<std::string> LongFlags(const std::string& help) {
  std::set<std::string> flags;
  for (const std::string& line : Section(help, "Options:")) {
    if (line.rfind("  -", 0) != 0) continue;
    const std::string names = line.substr(2, line.find(' ', 2) - 2);
    for (absl::string_view name : absl::StrSplit(names, ',')) {
      if (absl::StartsWith(name, "--")) flags.emplace(name);
    }
  }
  return flags;
}

// The first name of each row of a CLI11 help's "Subcommands:" section ("  pods, pod   List...").
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  for (const std::string& line : Section(help, "Subcommands:")) {
    if (line.size() < 3 || line.rfind("  ", 0) != 0 || line[2] == ' ') continue;
    const std::string row = line.substr(2);
    names.push_back(row.substr(0, row.find_first_of(", ")));
  }
  return names;
}

// `binary [command...] --help`, which must exit 0.
std::string Help(const std::string& binary, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), command.begin(), command.end());
  argv.push_back("--help");
  absl::StatusOr<CommandResult> result = RunCommand(argv, absl::Seconds(60));
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return "";
  EXPECT_EQ(result->exit_code, 0) << absl::StrJoin(argv, " ") << ": " << result->err;
  return result->out;
}

// Walks the binary's help and every subcommand's, depth first.
void Walk(const std::string& binary, const std::vector<std::string>& command, Tool* tool) {
  const std::string help = Help(binary, command);
  const std::set<std::string> flags = LongFlags(help);
  tool->flags.insert(flags.begin(), flags.end());
  const std::vector<std::string> subcommands = Subcommands(help);
  if (subcommands.empty() && !command.empty()) {
    tool->commands.push_back(absl::StrCat(tool->name, " ", absl::StrJoin(command, " ")));
  }
  for (const std::string& sub : subcommands) {
    std::vector<std::string> deeper = command;
    deeper.push_back(sub);
    Walk(binary, deeper, tool);
  }
}

// Prints how much was checked, e.g. "FIGURE: kdpctl documented flags 9 commands 7".
Tool Inspect(const std::string& binary, const std::string& name) {
  Tool tool{.name = name};
  Walk(binary, {}, &tool);
  std::printf("FIGURE: %s documented flags %zu commands %zu\n", name.c_str(),
              tool.flags.size() - tool.flags.count("--help"), tool.commands.size());
  return tool;
}

// Whether `doc` names `word` as a whole: "--node" does not count inside "--node-name", nor
// "kdpctl get pod" inside "kdpctl get pods".
bool Mentions(const std::string& doc, const std::string& word) {
  for (size_t at = doc.find(word); at != std::string::npos; at = doc.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !IsFlagChar(doc[at - 1])) && (end == doc.size() || !IsFlagChar(doc[end]))) {
      return true;
    }
  }
  return false;
}

// Every "--name" in `text`.
std::set<std::string> FlagsIn(absl::string_view text) {
  std::set<std::string> flags;
  for (size_t at = text.find("--"); at != absl::string_view::npos; at = text.find("--", at + 2)) {
    if (at > 0 && IsFlagChar(text[at - 1])) continue;
    size_t end = at + 2;
    while (end < text.size() && IsFlagChar(text[end])) ++end;
    if (end > at + 2 && std::isalpha(static_cast<unsigned char>(text[at + 2])) != 0) {
      flags.emplace(text.substr(at, end - at));
    }
  }
  return flags;
}

// The flags a document declares: in the first cell of its flag tables' rows ("| `--name ARG` |
// ..." or "| `-v N`, `--verbosity N` |") and in its usage block (a fenced block whose first line
// starts with "<tool> ["). Flags mentioned in prose (kubelet flags, other tools') are not read.
std::set<std::string> DeclaredFlags(const std::string& doc, const std::string& tool) {
  std::set<std::string> flags;
  bool in_block = false, usage = false;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (absl::StartsWith(line, "```")) {
      in_block = !in_block;
      usage = false;
      continue;
    }
    if (in_block) {
      if (absl::StartsWith(line, absl::StrCat(tool, " ["))) usage = true;
      if (usage) {
        const std::set<std::string> found = FlagsIn(line);
        flags.insert(found.begin(), found.end());
      }
      continue;
    }
    if (!absl::StartsWith(line, "| `-")) continue;
    absl::string_view cell = line.substr(1);
    cell = cell.substr(0, cell.find('|'));
    const std::set<std::string> found = FlagsIn(cell);
    flags.insert(found.begin(), found.end());
  }
  return flags;
}

// What is wrong between `tool` and the document at `path` (named `doc` in messages): flags and,
// with `commands`, commands it does not name; flags it declares that the tool does not have.
std::vector<std::string> Problems(const Tool& tool, const std::string& path, const std::string& doc,
                                  bool commands) {
  const std::string text = ReadFile(path);
  std::vector<std::string> problems;
  if (!Mentions(text, tool.name)) {
    problems.push_back(absl::StrCat(doc, " does not name ", tool.name));
  }
  for (const std::string& flag : tool.flags) {
    if (flag == "--help") continue;  // CLI11's, the same in every binary
    if (!Mentions(text, flag)) {
      problems.push_back(
          absl::StrCat(tool.name, " --help lists ", flag, ", which ", doc, " does not document"));
    }
  }
  if (commands) {
    for (const std::string& command : tool.commands) {
      if (!Mentions(text, command)) {
        problems.push_back(absl::StrCat(tool.name, " has the command '", command, "', which ", doc,
                                        " does not document"));
      }
    }
  }
  for (const std::string& flag : DeclaredFlags(text, tool.name)) {
    if (tool.flags.count(flag) == 0) {
      problems.push_back(absl::StrCat(doc, " documents ", flag, ", which ", tool.name,
                                      " --help does not list (removed or renamed?)"));
    }
  }
  return problems;
}

void ExpectDocumented(const std::string& binary, const std::string& name, const std::string& doc) {
  const Tool tool = Inspect(binary, name);
  EXPECT_THAT(tool.flags, Contains("--help")) << name << ": --help was not parsed";
  EXPECT_THAT(Problems(tool, SourcePath(doc), doc, /*commands=*/false), IsEmpty());
}

TEST(DocsFlags, ManagerFlagsAreInManagerMd) {
  const Tool tool = Inspect(KDP_MANAGER_BIN, "kdp-manager");
  // The parser found the flags (a help format it cannot read must not pass as "nothing to check").
  EXPECT_THAT(tool.flags, Contains("--kubelet-root"));
  EXPECT_THAT(tool.flags, Contains("--verbosity"));
  EXPECT_THAT(tool.flags, Contains("--dra-reconcile-period"));
  EXPECT_THAT(Problems(tool, SourcePath("docs/manager.md"), "docs/manager.md", false), IsEmpty());
}

TEST(DocsFlags, KdpctlFlagsAndCommandsAreInKdpctlMd) {
  const Tool tool = Inspect(KDP_KDPCTL_BIN, "kdpctl");
  EXPECT_THAT(tool.flags, Contains("--timeout"));
  EXPECT_THAT(tool.flags, Contains("--namespace"));
  EXPECT_THAT(tool.flags, Contains("--svg"));
  EXPECT_THAT(tool.commands, Contains("kdpctl checkpoint inspect"));
  EXPECT_THAT(tool.commands, Contains("kdpctl delete pod"));
  EXPECT_THAT(Problems(tool, SourcePath("docs/kdpctl.md"), "docs/kdpctl.md", true), IsEmpty());
}

TEST(DocsFlags, KdpctlCommandsAreInManagerMd) {
  const Tool tool = Inspect(KDP_KDPCTL_BIN, "kdpctl");
  ASSERT_GE(tool.commands.size(), 7u) << absl::StrJoin(tool.commands, ", ");
  const std::string text = ReadFile(SourcePath("docs/manager.md"));
  for (const std::string& command : tool.commands) {
    EXPECT_TRUE(Mentions(text, command))
        << "kdpctl has the command '" << command << "', which docs/manager.md does not list";
  }
}

TEST(DocsFlags, GpuPluginFlagsAreInItsReadme) {
  ExpectDocumented(KDP_GPU_PLUGIN_BIN, "kdp-gpu-plugin", "examples/gpu-plugin/README.md");
}

TEST(DocsFlags, DraDriverFlagsAreInItsReadme) {
  ExpectDocumented(KDP_DRA_DRIVER_BIN, "kdp-dra-driver", "examples/dra-driver/README.md");
}

TEST(DocsFlags, TopologyToolFlagsAreInTopologyMd) {
  ExpectDocumented(KDP_TOPOLOGY_BIN, "kdp-topology", "docs/topology.md");
}

TEST(DocsFlags, CdiValidateIsInDraMd) {
  ExpectDocumented(KDP_CDI_VALIDATE_BIN, "kdp-cdi-validate", "docs/dra.md");
}

TEST(DocsFlags, ConformanceFlagsAreInConformanceMd) {
  ExpectDocumented(KDP_CONFORMANCE_BIN, "kdp-conformance", "docs/conformance.md");
}

// The check can fail: a copy of docs/manager.md whose --dial-timeout is renamed everywhere is
// missing one flag and declares one the binary does not have; a copy without the kdpctl command
// table misses commands.
TEST(DocsFlags, CheckCatchesAMissingAndAStaleFlag) {
  const Tool manager = Inspect(KDP_MANAGER_BIN, "kdp-manager");
  ASSERT_THAT(manager.flags, Contains("--dial-timeout"));
  const std::string original = ReadFile(SourcePath("docs/manager.md"));
  TempDir dir;
  const std::string copy = dir.Path("manager.md");
  {
    std::ofstream out(copy);
    out << absl::StrReplaceAll(original, {{"--dial-timeout", "--dial-deadline"}});
  }
  EXPECT_THAT(Problems(manager, copy, "manager.md (copy)", false),
              ElementsAre("kdp-manager --help lists --dial-timeout, which manager.md (copy) does "
                          "not document",
                          "manager.md (copy) documents --dial-deadline, which kdp-manager --help "
                          "does not list (removed or renamed?)"));

  const Tool kdpctl = Inspect(KDP_KDPCTL_BIN, "kdpctl");
  {
    std::ofstream out(copy);
    out << absl::StrReplaceAll(ReadFile(SourcePath("docs/kdpctl.md")),
                               {{"checkpoint convert", "checkpoint rewrite"}, {"--ascii", "-A"}});
  }
  EXPECT_THAT(Problems(kdpctl, copy, "kdpctl.md (copy)", true),
              ElementsAre("kdpctl --help lists --ascii, which kdpctl.md (copy) does not document",
                          "kdpctl has the command 'kdpctl checkpoint convert', which kdpctl.md "
                          "(copy) does not document"));
}

TEST(DocsFlags, MentionsNeedsAWholeFlag) {
  EXPECT_FALSE(Mentions("`--node-name NAME`", "--node"));
  EXPECT_TRUE(Mentions("`--node-name NAME`", "--node-name"));
  EXPECT_TRUE(Mentions("[-v N] [--verbosity N]", "--verbosity"));
  EXPECT_FALSE(Mentions("kdpctl get pods", "kdpctl get pod"));
  EXPECT_THAT(DeclaredFlags("| `-v N`, `--verbosity N` | `0` | see `--log-level` |\n", "x"),
              ElementsAre("--verbosity"));
  EXPECT_THAT(DeclaredFlags("```\nx [--a] [--b-c N]\n    [--d]\n```\nuse --e\n", "x"),
              ElementsAre("--a", "--b-c", "--d"));
}

}  // namespace
}  // namespace kdp::testing
