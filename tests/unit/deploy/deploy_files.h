// Reading the repository files that tests/unit/deploy checks: deploy/ (Dockerfile, Kubernetes
// manifests) and the sources they must agree with. The root is the source tree
// (KDP_SOURCE_DIR), or $KDP_DEPLOY_TEST_ROOT when set, so that a copy of the tree with a broken
// manifest can show that each check fails.
#ifndef KDP_TESTS_UNIT_DEPLOY_DEPLOY_FILES_H_
#define KDP_TESTS_UNIT_DEPLOY_DEPLOY_FILES_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kdp::deploy_test {

inline std::string Root() {
  const char* root = std::getenv("KDP_DEPLOY_TEST_ROOT");
  return root != nullptr && *root != '\0' ? std::string(root) : std::string(KDP_SOURCE_DIR);
}

// The file's contents, "" when it cannot be read (the caller's checks then fail).
inline std::string ReadFile(const std::string& relative_path) {
  std::ifstream in(Root() + "/" + relative_path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Whitespace-separated words.
inline std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

}  // namespace kdp::deploy_test

#endif  // KDP_TESTS_UNIT_DEPLOY_DEPLOY_FILES_H_
