// Static checks of deploy/docker/Dockerfile (no container engine runs in CI or on the
// development machine): Debian 12 bases, non-root final images, binaries copied from the paths
// CMake builds them at, build packages in step with scripts/deps, and the build stage copying
// every source directory the configure reads.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/deploy/deploy_files.h"

namespace kdp::deploy_test {
namespace {

constexpr char kDockerfile[] = "deploy/docker/Dockerfile";

struct Instruction {
  std::string op = {};    // upper case: FROM, RUN, COPY, ...
  std::string args = {};  // the rest, continuation lines joined
};

struct Stage {
  std::string name = {};
  std::string base = {};
  std::vector<Instruction> instructions = {};
};

// The Dockerfile's stages: comments dropped (also inside continued instructions, as Docker
// does), "\" continuations joined.
std::vector<Stage> Stages() {
  std::vector<Stage> stages;
  std::string text = ReadFile(kDockerfile);
  std::vector<std::string> logical;
  std::string current;
  bool continued = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    current += (continued ? " " : "") + line;
    continued = continues;
    if (!continued) {
      logical.push_back(current);
      current.clear();
    }
  }
  for (const std::string& line : logical) {
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    std::string op = words[0];
    std::transform(op.begin(), op.end(), op.begin(), ::toupper);
    const std::string args = line.substr(line.find(words[0]) + words[0].size());
    if (op == "FROM") {
      const std::vector<std::string> from = Words(args);
      Stage stage{.name = "", .base = from.empty() ? "" : from[0], .instructions = {}};
      if (from.size() == 3) stage.name = from[2];
      stages.push_back(stage);
    } else if (!stages.empty()) {
      stages.back().instructions.push_back({.op = op, .args = args});
    }
  }
  return stages;
}

const Stage* Find(const std::vector<Stage>& stages, const std::string& name) {
  for (const Stage& s : stages) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// The stage and its ancestors, the image it starts from first.
std::vector<const Stage*> Chain(const std::vector<Stage>& stages, const Stage& stage) {
  std::vector<const Stage*> chain = {&stage};
  while (const Stage* parent = Find(stages, chain.front()->base)) {
    if (chain.size() > stages.size()) break;  // a cycle
    chain.insert(chain.begin(), parent);
  }
  return chain;
}

std::vector<std::string> All(const Stage& stage, const std::string& op) {
  std::vector<std::string> out;
  for (const Instruction& i : stage.instructions) {
    if (i.op == op) out.push_back(i.args);
  }
  return out;
}

// Stages that end in an ENTRYPOINT: the images users run.
std::vector<const Stage*> FinalStages(const std::vector<Stage>& stages) {
  std::vector<const Stage*> out;
  for (const Stage& s : stages) {
    if (!All(s, "ENTRYPOINT").empty()) out.push_back(&s);
  }
  return out;
}

// The stage that runs `cmake --build`.
const Stage* BuildStage(const std::vector<Stage>& stages) {
  for (const Stage& s : stages) {
    for (const std::string& run : All(s, "RUN")) {
      if (run.find("cmake --build") != std::string::npos) return &s;
    }
  }
  return nullptr;
}

// Packages named by `apt-get install` in the stage's RUN instructions.
std::set<std::string> AptPackages(const Stage& stage) {
  std::set<std::string> packages;
  for (const std::string& run : All(stage, "RUN")) {
    bool installing = false;
    for (const std::string& word : Words(run)) {
      if (word == "&&" || word == ";") installing = false;
      if (installing && word[0] != '-') packages.insert(word);
      if (word == "install") installing = true;
    }
  }
  return packages;
}

std::string Entrypoint(const Stage& stage) {
  const std::vector<std::string> entry = All(stage, "ENTRYPOINT");
  if (entry.empty()) return "";
  const std::string& json = entry.back();
  const size_t open = json.find('"');
  return open == std::string::npos ? ""
                                   : json.substr(open + 1, json.find('"', open + 1) - open - 1);
}

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

TEST(Dockerfile, BaseImagesArePinnedToDebian12) {
  const std::vector<Stage> stages = Stages();
  ASSERT_GE(stages.size(), 3u) << kDockerfile << " has too few stages";
  for (const Stage& s : stages) {
    EXPECT_TRUE(s.base == "debian:12" || s.base == "debian:12-slim" || Find(stages, s.base))
        << "stage " << s.name << " starts FROM " << s.base;
  }
  const Stage* build = BuildStage(stages);
  ASSERT_NE(build, nullptr) << "no stage runs cmake --build";
  EXPECT_EQ(Chain(stages, *build).front()->base, "debian:12");
  ASSERT_EQ(FinalStages(stages).size(), 2u);
  for (const Stage* s : FinalStages(stages)) {
    EXPECT_EQ(Chain(stages, *s).front()->base, "debian:12-slim") << "stage " << s->name;
  }
}

TEST(Dockerfile, FinalImagesRunAsNonRootByDefault) {
  const std::vector<Stage> stages = Stages();
  for (const Stage* s : FinalStages(stages)) {
    std::string user;
    for (const Stage* link : Chain(stages, *s)) {
      for (const std::string& u : All(*link, "USER")) user = Words(u).empty() ? "" : Words(u)[0];
    }
    const std::string uid = user.substr(0, user.find(':'));
    EXPECT_FALSE(uid.empty() || uid == "0" || uid == "root")
        << "stage " << s->name << " runs as \"" << user << "\"";
  }
}

TEST(Dockerfile, CopiedFilesAreBuiltTargetsOrStagedFiles) {
  const std::vector<Stage> stages = Stages();
  std::set<std::string> entrypoints;
  for (const Stage& s : stages) {
    std::set<std::string> destinations;
    for (const std::string& copy : All(s, "COPY")) {
      const std::vector<std::string> words = Words(copy);
      if (words.size() != 3 || !StartsWith(words[0], "--from=")) continue;
      destinations.insert(words[2]);
      const Stage* from = Find(stages, words[0].substr(7));
      ASSERT_NE(from, nullptr) << "COPY " << copy << ": no such stage";
      const std::string& source = words[1];
      std::string runs;
      for (const std::string& run : All(*from, "RUN")) runs += run + "\n";
      if (StartsWith(source, "/build/examples/")) {
        // /build/examples/<dir>/<target>: an executable of examples/<dir>/CMakeLists.txt that
        // the build stage builds.
        const std::string rest = source.substr(16);
        const std::string dir = rest.substr(0, rest.find('/'));
        const std::string target = Basename(rest);
        EXPECT_THAT(ReadFile("examples/" + dir + "/CMakeLists.txt"),
                    ::testing::HasSubstr("add_executable(" + target + " "))
            << source << " is not a target of examples/" << dir;
        EXPECT_THAT(runs, ::testing::ContainsRegex("--target [a-z -]*" + target))
            << "stage " << from->name << " does not build " << target;
      } else {
        EXPECT_THAT(runs, ::testing::HasSubstr(source))
            << source << " is neither a built binary nor made by stage " << from->name;
      }
    }
    if (const std::string entry = Entrypoint(s); !entry.empty()) {
      EXPECT_TRUE(destinations.count(entry) > 0)
          << "stage " << s.name << " runs " << entry << ", which it does not copy";
      EXPECT_EQ("kdp-" + s.name, Basename(entry)) << "the target's name names its binary";
      entrypoints.insert(Basename(entry));
    }
  }
  // The images deploy/kubernetes runs (manifests_test.cc checks they name these binaries).
  EXPECT_EQ(entrypoints, (std::set<std::string>{"kdp-gpu-plugin", "kdp-dra-driver"}));
}

TEST(Dockerfile, BuildStageInstallsTheBuildHalfOfScriptsDeps) {
  const std::string deps = ReadFile("scripts/deps");
  const size_t open = deps.find("packages=(");
  ASSERT_NE(open, std::string::npos) << "scripts/deps: no packages=( list";
  const std::vector<std::string> words =
      Words(deps.substr(open + 10, deps.find(')', open) - open - 10));
  const std::set<std::string> dep_packages(words.begin(), words.end());
  // Needed only for the tests, benchmarks, sanitizers and package tests, all off in the image
  // build: GoogleTest, Google Benchmark, clang with its sanitizer runtimes, dpkg-dev
  // (dpkg-shlibdeps for CPack), make (the pkg-config consumer), rsvg-convert, the Python client
  // and the Python DRA driver's gRPC and protobuf modules (kdp-conformance's tests),
  // lld (a faster linker for the test programs; the image's few programs link with GNU ld),
  // ccache (the CI presets' compiler cache; the image builds once).
  const std::set<std::string> kNotForTheImage = {
      "libgtest-dev",   "libgmock-dev",       "libbenchmark-dev",
      "clang",          "libclang-rt-14-dev", "dpkg-dev",
      "make",           "librsvg2-bin",       "python3-kubernetes",
      "python3-grpcio", "python3-protobuf",   "lld",
      "ccache"};
  const std::vector<Stage> stages = Stages();
  const Stage* build = BuildStage(stages);
  ASSERT_NE(build, nullptr);
  const std::set<std::string> installed = AptPackages(*build);
  for (const std::string& p : installed) {
    EXPECT_TRUE(dep_packages.count(p) > 0)
        << "the build stage installs " << p << ", which scripts/deps does not";
  }
  for (const std::string& p : dep_packages) {
    EXPECT_TRUE(installed.count(p) > 0 || kNotForTheImage.count(p) > 0)
        << "scripts/deps installs " << p
        << ": add it to the Dockerfile's build stage or to kNotForTheImage";
  }
  std::string runs;
  for (const std::string& run : All(*build, "RUN")) runs += run;
  for (const char* option : {"-G Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DKDP_BUILD_TESTS=OFF",
                             "-DKDP_BUILD_BENCHMARKS=OFF"}) {
    EXPECT_THAT(runs, ::testing::HasSubstr(option));
  }
  for (const Stage* s : FinalStages(stages)) {
    for (const Stage* link : Chain(stages, *s)) {
      for (const std::string& p : AptPackages(*link)) {
        EXPECT_FALSE(p.size() > 4 && p.substr(p.size() - 4) == "-dev")
            << "runtime stage " << link->name << " installs " << p;
      }
    }
  }
}

TEST(Dockerfile, BuildStageCopiesEverySourceDirectoryTheConfigureReads) {
  const std::vector<Stage> stages = Stages();
  const Stage* build = BuildStage(stages);
  ASSERT_NE(build, nullptr);
  std::set<std::string> copied;  // first path components
  for (const std::string& copy : All(*build, "COPY")) {
    std::vector<std::string> words = Words(copy);
    if (words.empty() || StartsWith(words[0], "--")) continue;
    words.pop_back();  // the destination
    for (const std::string& w : words) copied.insert(w.substr(0, w.find('/')));
  }
  auto check = [&copied](const std::string& path, const std::string& why) {
    const std::string top = path.substr(0, path.find('/'));
    EXPECT_TRUE(copied.count(top) > 0) << why << " reads " << path << ", not copied";
  };
  // The top-level CMakeLists.txt: add_subdirectory() and include() outside the test and
  // benchmark blocks (both off in the image).
  const std::string top = ReadFile("CMakeLists.txt");
  ASSERT_FALSE(top.empty());
  check("CMakeLists.txt", "cmake -S .");
  std::vector<bool> skipping;
  size_t start = 0;
  while (start < top.size()) {
    size_t end = top.find('\n', start);
    if (end == std::string::npos) end = top.size();
    std::string line = top.substr(start, end - start);
    start = end + 1;
    line.erase(0, line.find_first_not_of(" \t"));
    if (StartsWith(line, "if(")) {
      // Options that are off in the image build (-D...=OFF or OFF by default).
      bool off = false;
      for (const char* option :
           {"KDP_BUILD_TESTS", "KDP_BUILD_BENCHMARKS", "KDP_PACKAGE_TESTS", "KDP_FUZZ"}) {
        off = off || line == std::string("if(") + option + ")";
      }
      skipping.push_back(off);
    } else if (StartsWith(line, "endif(") && !skipping.empty()) {
      skipping.pop_back();
    }
    if (std::find(skipping.begin(), skipping.end(), true) != skipping.end()) continue;
    for (const std::string command : {"add_subdirectory(", "include("}) {
      if (!StartsWith(line, command)) continue;
      const std::string arg = line.substr(command.size(), line.find(')') - command.size());
      // include(GoogleTest): a CMake module, not a file of the tree.
      if (command == "add_subdirectory(" || arg.find('/') != std::string::npos ||
          arg.find(".cmake") != std::string::npos) {
        check(arg, "CMakeLists.txt");
      }
    }
  }
  // ${PROJECT_SOURCE_DIR}/... in the copied CMake files. tests/ is read only by the test and
  // ThreadSanitizer helpers of cmake/kdp.cmake, which the image build does not call.
  std::vector<std::string> cmake_files = {"CMakeLists.txt"};
  const std::filesystem::path root(Root());
  for (const std::string& dir : copied) {
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(root / dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name == "CMakeLists.txt" || it->path().extension() == ".cmake") {
        cmake_files.push_back(std::filesystem::relative(it->path(), root).string());
      }
    }
  }
  ASSERT_GT(cmake_files.size(), 5u);
  for (const std::string& file : cmake_files) {
    const std::string text = ReadFile(file);
    const std::string var = "${PROJECT_SOURCE_DIR}/";
    for (size_t at = text.find(var); at != std::string::npos; at = text.find(var, at + 1)) {
      const std::string path = text.substr(at + var.size(), 200);
      const std::string top_dir = path.substr(0, path.find_first_of("\"/ )"));
      // "${dir}": a folder a function is given (kdp_component's), checked where its caller
      // names it.
      if (top_dir != "tests" && !StartsWith(top_dir, "${")) check(top_dir, file);
    }
  }
}

}  // namespace
}  // namespace kdp::deploy_test
