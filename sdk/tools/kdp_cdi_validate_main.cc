// kdp-cdi-validate: checks CDI spec files (JSON) as container runtimes load them, with the SDK's
// kdp::cdi::ParseJson (strict: unknown fields fail) and kdp::cdi::Validate (names, edits, the
// minimum cdiVersion for the features used). For DRA driver authors: run it on the specs your
// NodePrepareResources writes. Exit status: 0 every file valid, 1 a file invalid or unreadable
// (the reason printed), 2 bad usage.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/cli_flags.h"
#include "kdp/cdi.h"

int main(int argc, char** argv) {
  std::vector<std::string> files;
  CLI::App app{
      "kdp-cdi-validate: checks CDI spec files (JSON) the way container runtimes load them: "
      "strict parsing, the CDI 1.1.0 rules for kinds, device names and container edits, and "
      "cdiVersion at least the minimum the spec's features need. Exit status: 0 all valid, 1 a "
      "file invalid or unreadable, 2 bad usage."};
  kdp::cli::AddVersionFlag(app, "kdp-cdi-validate");
  app.add_option("files", files, "CDI spec files (.json)")->required()->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  int status = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read the file\n", file.c_str());
      status = 1;
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<kdp::cdi::Spec> spec = kdp::cdi::ParseJson(text.str(), file);
    absl::Status valid = spec.ok() ? kdp::cdi::Validate(*spec) : spec.status();
    if (!valid.ok()) {
      std::fprintf(stderr, "%s: invalid: %s\n", file.c_str(), std::string(valid.message()).c_str());
      status = 1;
      continue;
    }
    std::printf("%s: valid (cdiVersion %s, minimum %s, kind %s, %zu device%s)\n", file.c_str(),
                spec->cdi_version.c_str(), kdp::cdi::MinimumRequiredVersion(*spec).c_str(),
                spec->kind.c_str(), spec->devices.size(), spec->devices.size() == 1 ? "" : "s");
  }
  return status;
}
