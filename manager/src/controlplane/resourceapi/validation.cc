#include "manager/src/controlplane/resourceapi/validation.h"

#include <cctype>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/resource_name.h"
#include "manager/src/pod/semver.h"

namespace kdp::manager::resourceapi {
namespace {

// validation.IsCIdentifier's message.
constexpr char kCIdentifierMessage[] =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
    "for validation is '[A-Za-z_][A-Za-z0-9_]*')";

// validation.IsValidLabelValue's message.
constexpr char kLabelValueMessage[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

std::vector<std::string> SplitSlash(std::string_view v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t slash = v.find('/', start);
    out.emplace_back(v.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

bool IsCIdentifier(std::string_view v) {
  if (v.empty() || !(std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_')) return false;
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

void ValidateCIdentifier(std::string_view v, const std::string& path, FieldErrors* errs) {
  if (v.size() > static_cast<size_t>(kDeviceMaxIdLength)) {
    errs->push_back(TooLong(path, kDeviceMaxIdLength));
  }
  if (!IsCIdentifier(v)) errs->push_back(Invalid(path, v, kCIdentifierMessage));
}

bool IsLabelValue(std::string_view v) {
  if (v.empty()) return true;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

void ValidateStringMapKeys(const nlohmann::json& map, const std::string& path,
                           bool values_are_labels, FieldErrors* errs) {
  if (map.is_null()) return;
  if (!map.is_object()) {
    errs->push_back(Invalid(path, "", "must be an object"));
    return;
  }
  for (auto it = map.begin(); it != map.end(); ++it) {
    for (const std::string& msg : QualifiedNameErrors(it.key())) {
      errs->push_back(Invalid(path, it.key(), msg));
    }
    if (!it.value().is_string()) {
      errs->push_back(Invalid(path + "[" + it.key() + "]", "", "must be a string"));
      continue;
    }
    if (!values_are_labels) continue;
    const std::string value = it.value().get<std::string>();
    const std::string vpath = path + "[" + it.key() + "]";
    if (value.size() > 63)
      errs->push_back(Invalid(vpath, value, "must be no more than 63 characters"));
    if (!IsLabelValue(value)) errs->push_back(Invalid(vpath, value, kLabelValueMessage));
  }
}

}  // namespace

void ValidateLabelKey(std::string_view value, const std::string& path, FieldErrors* errs) {
  for (const std::string& msg : QualifiedNameErrors(value))
    errs->push_back(Invalid(path, value, msg));
}

void ValidateLabelValue(std::string_view value, const std::string& path, FieldErrors* errs) {
  if (value.size() > 63)
    errs->push_back(Invalid(path, value, "must be no more than 63 characters"));
  if (!IsLabelValue(value)) errs->push_back(Invalid(path, value, kLabelValueMessage));
}

void ValidateDnsSubdomain(std::string_view value, const std::string& path, FieldErrors* errs) {
  for (const std::string& msg : Dns1123SubdomainErrors(value)) {
    errs->push_back(Invalid(path, value, msg));
  }
}

void ValidateDnsLabel(std::string_view value, const std::string& path, FieldErrors* errs) {
  for (const std::string& msg : Dns1123LabelErrors(value)) {
    errs->push_back(Invalid(path, value, msg));
  }
}

void ValidateDriverName(std::string_view value, const std::string& path, FieldErrors* errs) {
  if (value.empty()) {
    errs->push_back(Required(path));
    return;
  }
  if (value.size() > static_cast<size_t>(kDriverNameMaxLength)) {
    errs->push_back(TooLong(path, kDriverNameMaxLength));
  }
  // Upstream checks strings.ToLower(driverName): driver names are case-insensitive.
  for (const std::string& msg : Dns1123SubdomainErrors(absl::AsciiStrToLower(std::string(value)))) {
    errs->push_back(Invalid(path, value, msg));
  }
}

void ValidatePoolName(std::string_view value, const std::string& path, FieldErrors* errs) {
  if (value.empty()) {
    errs->push_back(Required(path));
    return;
  }
  if (value.size() > static_cast<size_t>(kPoolNameMaxLength)) {
    errs->push_back(TooLong(path, kPoolNameMaxLength));
  }
  for (const std::string& part : SplitSlash(value)) {
    for (const std::string& msg : Dns1123SubdomainErrors(part)) {
      errs->push_back(Invalid(path, value, msg));
    }
  }
}

void ValidateQualifiedName(std::string_view value, const std::string& path, FieldErrors* errs) {
  if (value.empty()) {
    errs->push_back(Required(path, "name required"));
    return;
  }
  std::vector<std::string> parts = SplitSlash(value);
  if (parts.size() == 1) {
    ValidateCIdentifier(parts[0], path, errs);
  } else if (parts.size() == 2) {
    if (parts[0].empty()) {
      errs->push_back(Required(path, "the domain must not be empty"));
    } else {
      ValidateDriverName(parts[0], path, errs);
    }
    if (parts[1].empty()) {
      errs->push_back(Required(path, "the name must not be empty"));
    } else {
      ValidateCIdentifier(parts[1], path, errs);
    }
  } else {
    errs->push_back(Invalid(path, value,
                            "must be either a C identifier or a domain followed by a slash and a "
                            "C identifier"));
  }
}

void ValidateFullyQualifiedName(std::string_view value, const std::string& path,
                                FieldErrors* errs) {
  ValidateQualifiedName(value, path, errs);
  if (!value.empty() && value.find('/') == std::string_view::npos) {
    errs->push_back(Required(path, "must include a domain"));
  }
}

// Semantic Versioning 2.0.0, strictly (no "v", no leading zeros): one parser for the API's
// validation and the CEL subset's semver() (GCC 12's <regex> also trips -Wmaybe-uninitialized
// under ASan).
bool IsSemanticVersion(std::string_view value) { return SemanticVersion::Parse(value).ok(); }

void ValidateObjectMeta(const KindInfo& kind, const nlohmann::json& metadata, FieldErrors* errs) {
  if (!metadata.is_object()) {
    errs->push_back(Required("metadata.name", "name or generateName is required"));
    return;
  }
  auto str = [&](const char* key) {
    auto it = metadata.find(key);
    return it != metadata.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string name = str("name");
  if (name.empty()) {
    errs->push_back(Required("metadata.name", "name or generateName is required"));
  } else {
    // Every resource.k8s.io kind and Node use NameIsDNSSubdomain.
    ValidateDnsSubdomain(name, "metadata.name", errs);
  }
  const std::string ns = str("namespace");
  if (kind.namespaced) {
    if (ns.empty()) {
      errs->push_back(Required("metadata.namespace"));
    } else {
      ValidateDnsLabel(ns, "metadata.namespace", errs);
    }
  } else if (!ns.empty()) {
    errs->push_back(Forbidden("metadata.namespace", "not allowed on this type"));
  }
  if (auto it = metadata.find("labels"); it != metadata.end()) {
    ValidateStringMapKeys(*it, "metadata.labels", /*values_are_labels=*/true, errs);
  }
  if (auto it = metadata.find("annotations"); it != metadata.end()) {
    ValidateStringMapKeys(*it, "metadata.annotations", /*values_are_labels=*/false, errs);
  }
}

absl::StatusOr<std::map<std::string, std::string>> ParseNodeLabels(std::string_view text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  for (absl::string_view term : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    const size_t eq = term.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("node label \"", term, "\": must be key=value"));
    }
    const std::string key(term.substr(0, eq));
    nlohmann::json meta = {{"name", "node"}, {"labels", {{key, std::string(term.substr(eq + 1))}}}};
    FieldErrors errors;
    ValidateObjectMeta(InfoOf(Kind::kNode), meta, &errors);
    if (!errors.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node label \"", term, "\": ", errors.front().ToString()));
    }
    if (!labels.emplace(key, std::string(term.substr(eq + 1))).second) {
      return absl::InvalidArgumentError(absl::StrCat("node label \"", key, "\" given twice"));
    }
  }
  return labels;
}

}  // namespace kdp::manager::resourceapi
