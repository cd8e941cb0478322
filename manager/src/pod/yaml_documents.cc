#include "manager/src/pod/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>

namespace kdp::manager {
namespace {

// Notes where each document starts; ignores everything else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    last_ = mark;
    ++count_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  const YAML::Mark& last() const { return last_; }
  int count() const { return count_; }

 private:
  YAML::Mark last_;
  int count_ = 0;
};

}  // namespace

std::vector<YAML::Node> LoadYamlDocuments(const std::string& text) {
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    int previous_pos = -1;
    while (parser.HandleNextDocument(starts)) {
      // Each document consumes at least its first token, so the next one starts further on;
      // one that starts at the same place means the parser is stuck there.
      if (starts.count() > 1 && starts.last().pos == previous_pos) {
        throw YAML::ParserException(starts.last(), "did not find expected <document start>");
      }
      previous_pos = starts.last().pos;
    }
  }
  return YAML::LoadAll(text);
}

}  // namespace kdp::manager
