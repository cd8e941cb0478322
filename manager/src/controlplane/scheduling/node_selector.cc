#include "manager/src/controlplane/scheduling/node_selector.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdp::manager::scheduling {
namespace {

using Json = nlohmann::json;

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<std::vector<std::string>> Values(const Json& requirement) {
  std::vector<std::string> out;
  auto it = requirement.find("values");
  if (it == requirement.end() || it->is_null()) return out;
  if (!it->is_array()) return std::nullopt;
  for (const Json& v : *it) {
    if (!v.is_string()) return std::nullopt;
    out.push_back(v.get<std::string>());
  }
  return out;
}

// One requirement against `value` (the label's, or the field's; nullopt when absent). nullopt
// for a requirement upstream refuses to parse.
std::optional<bool> Requirement(const Json& requirement, const std::optional<std::string>& value) {
  if (!requirement.is_object()) return std::nullopt;
  const std::string op = requirement.value("operator", "");
  std::optional<std::vector<std::string>> values = Values(requirement);
  if (!values) return std::nullopt;
  auto contains = [&] {
    return value && std::find(values->begin(), values->end(), *value) != values->end();
  };
  if (op == "In" || op == "NotIn") {
    if (values->empty()) return std::nullopt;
    return op == "In" ? contains() : !contains();
  }
  if (op == "Exists" || op == "DoesNotExist") {
    if (!values->empty()) return std::nullopt;
    return op == "Exists" ? value.has_value() : !value.has_value();
  }
  if (op == "Gt" || op == "Lt") {
    if (values->size() != 1) return std::nullopt;
    std::optional<int64_t> bound = ParseInt(values->front());
    if (!bound) return std::nullopt;
    if (!value) return false;
    std::optional<int64_t> have = ParseInt(*value);
    if (!have) return false;
    return op == "Gt" ? *have > *bound : *have < *bound;
  }
  return std::nullopt;
}

bool TermMatches(const Json& term, const NodeView& node) {
  if (!term.is_object()) return false;
  bool any = false;
  if (auto it = term.find("matchExpressions"); it != term.end() && it->is_array()) {
    for (const Json& r : *it) {
      any = true;
      const std::string key = r.is_object() ? r.value("key", "") : "";
      std::optional<std::string> label;
      if (auto l = node.labels.find(key); l != node.labels.end()) label = l->second;
      std::optional<bool> ok = Requirement(r, label);
      if (!ok.value_or(false)) return false;
    }
  }
  if (auto it = term.find("matchFields"); it != term.end() && it->is_array()) {
    for (const Json& r : *it) {
      any = true;
      if (!r.is_object() || r.value("key", "") != "metadata.name") return false;
      std::optional<bool> ok = Requirement(r, node.name);
      if (!ok.value_or(false)) return false;
    }
  }
  return any;
}

}  // namespace

bool NodeSelectorMatches(const nlohmann::json& selector, const NodeView& node) {
  if (!selector.is_object()) return false;
  auto terms = selector.find("nodeSelectorTerms");
  if (terms == selector.end() || !terms->is_array()) return false;
  return std::any_of(terms->begin(), terms->end(),
                     [&](const Json& term) { return TermMatches(term, node); });
}

}  // namespace kdp::manager::scheduling
