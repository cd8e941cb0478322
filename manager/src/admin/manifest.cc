#include "manager/src/admin/manifest.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "manager/src/pod/yaml_documents.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;

absl::Status Error(const std::string& path, std::string_view reason) {
  if (path.empty()) return absl::InvalidArgumentError(std::string(reason));
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(reason)));
}

// yaml.v2's YAML 1.1 resolution table for plain scalars.
bool IsNull(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> AsBool(const std::string& s) {
  static const std::set<std::string> kTrue = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                              "True", "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> kFalse = {"n",     "N",     "no",  "No",  "NO", "false",
                                               "False", "FALSE", "off", "Off", "OFF"};
  if (kTrue.contains(s)) return true;
  if (kFalse.contains(s)) return false;
  return std::nullopt;
}

// Integers as yaml.v2 reads them: decimal, 0x hex, 0 octal, 0b binary, '_' separators, a sign.
std::optional<int64_t> AsInt(std::string s) {
  s = absl::StrReplaceAll(s, {{"_", ""}});
  if (s.empty()) return std::nullopt;
  bool negative = false;
  std::size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
  }
  std::string digits = s.substr(i);
  if (digits.empty()) return std::nullopt;
  int base = 10;
  if (digits.size() > 2 && (digits.starts_with("0x") || digits.starts_with("0X"))) {
    base = 16;
    digits = digits.substr(2);
  } else if (digits.size() > 2 && (digits.starts_with("0b") || digits.starts_with("0B"))) {
    base = 2;
    digits = digits.substr(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits = digits.substr(1);
  }
  for (char c : digits) {
    const bool ok = base == 16   ? absl::ascii_isxdigit(static_cast<unsigned char>(c))
                    : base == 10 ? absl::ascii_isdigit(static_cast<unsigned char>(c))
                    : base == 8  ? (c >= '0' && c <= '7')
                                 : (c == '0' || c == '1');
    if (!ok) return std::nullopt;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long magnitude = std::strtoull(digits.c_str(), &end, base);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  if (!negative && magnitude > static_cast<unsigned long long>(INT64_MAX)) return std::nullopt;
  if (negative && magnitude > static_cast<unsigned long long>(INT64_MAX) + 1) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

// Floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?; .inf and .nan have no JSON form.
std::optional<double> AsFloat(const std::string& s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exponent = 0;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exponent;
    if (exponent == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(s, &value)) return std::nullopt;
  return value;
}

// yaml.v2's guard against alias bombs ("billion laughs": ten aliases of ten aliases of ... turn a
// few hundred bytes into 10^9 values), which sigs.k8s.io/yaml, and so kubectl and the API
// server, apply: once more than 1000 values were converted and more than 100 of them came
// through an alias, the share that came through aliases may be at most 99% up to 400,000 values,
// falling linearly to 10% at 4,000,000 (yaml.v2 decode.go, allowedAliasRatio). yaml-cpp loads an
// alias as the anchored node itself, so a value comes through an alias when it is a collection
// converted before (same position in the text) or lies inside one.
class AliasBudget {
 public:
  // False when the value at `node` is one too many; counts it otherwise.
  bool Count() {
    ++decoded_;
    if (alias_depth_ > 0) ++aliased_;
    return !(aliased_ > 100 && decoded_ > 1000 &&
             static_cast<double>(aliased_) / static_cast<double>(decoded_) >
                 AllowedRatio(decoded_));
  }
  // Call for each collection before converting its items; true when it was reached through an
  // alias, and then EndAlias() must follow its conversion.
  bool BeginCollection(const YAML::Node& node) {
    const int pos = node.Mark().pos;
    if (alias_depth_ == 0 && (pos < 0 || seen_.insert(pos).second)) return false;
    ++alias_depth_;
    return true;
  }
  void EndAlias() { --alias_depth_; }

 private:
  static double AllowedRatio(int64_t decoded) {
    constexpr double kLow = 400000, kHigh = 4000000;
    if (decoded <= kLow) return 0.99;
    if (decoded >= kHigh) return 0.10;
    return 0.99 - 0.89 * ((static_cast<double>(decoded) - kLow) / (kHigh - kLow));
  }

  std::set<int> seen_;  // text positions of the collections converted outside aliases
  int64_t decoded_ = 0;
  int64_t aliased_ = 0;
  int alias_depth_ = 0;  // > 0 while converting a collection reached through an alias
};

absl::StatusOr<Json> Convert(const YAML::Node& node, const std::string& path, int depth,
                             AliasBudget* budget);

absl::StatusOr<Json> ConvertCollection(const YAML::Node& node, const std::string& path, int depth,
                                       AliasBudget* budget) {
  if (node.IsSequence()) {
    Json out = Json::array();
    int i = 0;
    for (const YAML::Node& item : node) {
      KDP_ASSIGN_OR_RETURN(Json value,
                           Convert(item, absl::StrCat(path, "[", i++, "]"), depth + 1, budget));
      out.push_back(std::move(value));
    }
    return out;
  }
  Json out = Json::object();
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) return Error(path, "mapping keys must be strings");
    const std::string key = it->first.Scalar();
    if (out.contains(key))
      return Error(path, absl::StrCat("mapping key \"", key, "\" already defined"));
    KDP_ASSIGN_OR_RETURN(
        Json value,
        Convert(it->second, path.empty() ? key : absl::StrCat(path, ".", key), depth + 1, budget));
    out[key] = std::move(value);
  }
  return out;
}

absl::StatusOr<Json> Convert(const YAML::Node& node, const std::string& path, int depth,
                             AliasBudget* budget) {
  // yaml-cpp expands aliases into shared nodes; a self-referencing one would recurse forever.
  if (depth > 100) return Error(path, "nesting deeper than 100 levels (an alias cycle?)");
  if (!budget->Count()) return Error(path, "document contains excessive aliasing");
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() != "?") return Json(text);  // quoted or explicitly tagged: a string
      if (IsNull(text)) return Json(nullptr);
      if (std::optional<bool> b = AsBool(text)) return Json(*b);
      if (std::optional<int64_t> i = AsInt(text)) return Json(*i);
      if (std::optional<double> f = AsFloat(text)) return Json(*f);
      const std::string lower = absl::AsciiStrToLower(text);
      if (lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan") {
        return Error(path, absl::StrCat("the value ", text, " has no JSON form"));
      }
      return Json(text);
    }
    case YAML::NodeType::Sequence:
    case YAML::NodeType::Map: {
      const bool alias = budget->BeginCollection(node);
      absl::StatusOr<Json> out = ConvertCollection(node, path, depth, budget);
      if (alias) budget->EndAlias();
      return out;
    }
  }
  return Json(nullptr);
}

}  // namespace

absl::StatusOr<nlohmann::json> YamlToJson(const YAML::Node& node, const std::string& path) {
  try {
    AliasBudget budget;
    return Convert(node, path, 0, &budget);
  } catch (const YAML::Exception& e) {
    return Error(path, e.what());
  }
}

absl::StatusOr<std::vector<ManifestDocument>> SplitManifest(std::string_view text,
                                                            std::string_view source) {
  const std::string src(source);
  std::vector<YAML::Node> nodes;
  try {
    nodes = LoadYamlDocuments(std::string(text));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": ", e.what()));
  }
  std::vector<ManifestDocument> documents;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node& node = nodes[i];
    if (!node.IsDefined() || node.IsNull()) continue;  // "---" with nothing after it
    ManifestDocument doc;
    doc.source = nodes.size() == 1 ? src : absl::StrCat(src, " (document ", i + 1, ")");
    if (!node.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          doc.source, ": a manifest document must be a mapping (a Kubernetes object)"));
    }
    absl::StatusOr<Json> json = YamlToJson(node, "");
    if (!json.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(doc.source, ": ", json.status().message()));
    }
    doc.json = *std::move(json);
    const Json& api_version = doc.json.contains("apiVersion") ? doc.json["apiVersion"] : Json();
    const Json& kind = doc.json.contains("kind") ? doc.json["kind"] : Json();
    if (!kind.is_string() || kind.get<std::string>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(doc.source, ": Object 'Kind' is missing"));
    }
    if (!api_version.is_string() || api_version.get<std::string>().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(doc.source, ": Object 'apiVersion' is missing"));
    }
    doc.api_version = api_version.get<std::string>();
    doc.kind = kind.get<std::string>();
    doc.node = node;
    documents.push_back(std::move(doc));
  }
  if (documents.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": no objects passed to apply"));
  }
  return documents;
}

}  // namespace kdp::manager
