// LoadYamlDocuments: every document of a YAML stream, as yaml-cpp's YAML::LoadAll returns them,
// for the manifest readers (pod_manifest.h, admin/manifest.h). yaml-cpp 0.7 (Debian 12) never
// returns from LoadAll when a top-level flow collection or quoted scalar is followed by a ','
// (`{},`, `"a",`, found by tests/fuzz/manifest_fuzzer.cc): its parser stays on the ',' and yields
// an empty document there again and again, each one allocated, until memory runs out. This reads
// the stream once with a parser that only notes where documents start, and refuses it with
// yaml.v2's error (what kubectl reports for the same text) when a document starts where the
// previous one did; only then does it load the nodes.
//
// Thread-safety: thread-safe (no shared state).
#ifndef KDP_MANAGER_SRC_POD_YAML_DOCUMENTS_H_
#define KDP_MANAGER_SRC_POD_YAML_DOCUMENTS_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace kdp::manager {

// The documents of `text`. Throws what YAML::LoadAll throws: YAML::ParserException for malformed
// YAML, its mark at the offending place, and with the message "did not find expected <document
// start>" for a stream on which LoadAll would not return.
std::vector<YAML::Node> LoadYamlDocuments(const std::string& text);

}  // namespace kdp::manager

#endif  // KDP_MANAGER_SRC_POD_YAML_DOCUMENTS_H_
