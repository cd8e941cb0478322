#include "manager/src/controlplane/resourceapi/selectors.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

// fields.splitTerms: splits on ',' not preceded by an escaping '\'.
std::vector<std::string> SplitTerms(std::string_view text) {
  std::vector<std::string> terms;
  std::string current;
  bool escaped = false;
  for (char c : text) {
    if (escaped) {
      current += c;
      escaped = false;
    } else if (c == '\\') {
      current += c;
      escaped = true;
    } else if (c == ',') {
      terms.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  terms.push_back(std::move(current));
  return terms;
}

// fields.splitTerm: the first unescaped operator, trying "!=", "==", "=" at each position.
bool SplitTerm(const std::string& term, std::string* lhs, std::string* op, std::string* rhs) {
  bool escaped = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (escaped) {
      escaped = false;
      continue;
    }
    if (term[i] == '\\') {
      escaped = true;
      continue;
    }
    for (const char* candidate : {"!=", "==", "="}) {
      std::string_view cop(candidate);
      if (term.compare(i, cop.size(), cop) == 0) {
        *lhs = term.substr(0, i);
        *op = std::string(cop);
        *rhs = term.substr(i + cop.size());
        return true;
      }
    }
  }
  return false;
}

// fields.UnescapeValue.
absl::StatusOr<std::string> Unescape(const std::string& value) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '\\') {
      if (i + 1 == value.size() ||
          (value[i + 1] != '\\' && value[i + 1] != ',' && value[i + 1] != '=')) {
        return BadRequestError(absl::StrCat("invalid field selector: invalid escape sequence"));
      }
      out += value[++i];
    } else if (c == ',' || c == '=') {
      return BadRequestError(absl::StrCat("invalid field selector: unescaped ", std::string(1, c)));
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status CheckFieldLabel(const std::string& field, const KindInfo& kind,
                             std::string_view version) {
  if (field == "metadata.name") return absl::OkStatus();
  if (!kind.field_labels.empty()) {
    // The kind registered its own AddFieldLabelConversionFunc (ResourceSlice): metadata.name
    // and its labels only.
    for (const char* label : kind.field_labels) {
      if (field == label) return absl::OkStatus();
    }
    // resource.k8s.io's conversion functions name the GroupVersionKind; the core and
    // events.k8s.io ones do not.
    if (kind.group != std::string_view(kGroup)) {
      return BadRequestError(absl::StrCat("field label not supported: ", field));
    }
    return BadRequestError(absl::StrCat("field label not supported for ", ApiVersion(kind, version),
                                        ", Kind=", kind.name, ": ", field));
  }
  // runtime.DefaultMetaV1FieldSelectorConversion.
  if (field == "metadata.namespace") return absl::OkStatus();
  return BadRequestError(absl::StrCat("\"", field,
                                      "\" is not a known field selector: only \"metadata.name\", "
                                      "\"metadata.namespace\""));
}

// The stored (core/v1) field that selector label `label` of `kind` reads: events.k8s.io's names
// map to the core Event's (AddFieldLabelConversionsForEvent), and an Event's "source" is
// source.component (EventToSelectableFields).
std::string StoredSelectorField(const KindInfo& kind, const std::string& label) {
  if (kind.kind != Kind::kEvent) return label;
  if (label == "source") return "source.component";
  if (label == "reportingController") return "reportingComponent";
  constexpr std::string_view kRegarding = "regarding.";
  if (label.starts_with(kRegarding)) {
    return absl::StrCat("involvedObject.", label.substr(kRegarding.size()));
  }
  return label;
}

}  // namespace

std::string FieldValue(const nlohmann::json& object, std::string_view field) {
  const nlohmann::json* node = &object;
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    std::string key(field.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!node->is_object()) return "";
    auto it = node->find(key);
    if (it == node->end()) return "";
    node = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return node->is_string() ? node->get<std::string>() : "";
}

nlohmann::json SelectableProjection(const KindInfo& kind, const nlohmann::json& object) {
  nlohmann::json projection = nlohmann::json::object();
  auto copy = [&](std::string_view field) {
    const nlohmann::json::json_pointer pointer(
        "/" + absl::StrReplaceAll(absl::string_view(field.data(), field.size()), {{".", "/"}}));
    if (object.contains(pointer)) projection[pointer] = object[pointer];
  };
  copy("metadata.name");
  copy("metadata.namespace");
  copy("metadata.labels");
  for (const char* label : kind.field_labels) copy(label);
  return projection;
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text, const KindInfo& kind,
                                                   std::string_view version) {
  FieldSelector selector;
  std::vector<std::string> terms = SplitTerms(text);
  std::sort(terms.begin(), terms.end());
  for (const std::string& term : terms) {
    if (term.empty()) continue;
    std::string lhs, op, rhs;
    if (!SplitTerm(term, &lhs, &op, &rhs)) {
      return BadRequestError(absl::StrCat("invalid selector: '", std::string(text),
                                          "'; can't understand '", term, "'"));
    }
    absl::StatusOr<std::string> value = Unescape(rhs);
    if (!value.ok()) return value.status();
    if (absl::Status s = CheckFieldLabel(lhs, kind, version); !s.ok()) return s;
    selector.requirements_.push_back(
        {.field = StoredSelectorField(kind, lhs), .equal = op != "!=", .value = *value});
  }
  return selector;
}

FieldSelector FieldSelector::Equals(std::vector<std::pair<std::string, std::string>> pairs) {
  FieldSelector selector;
  for (auto& [field, value] : pairs) {
    if (value.empty()) continue;
    selector.requirements_.push_back({.field = field, .equal = true, .value = value});
  }
  return selector;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  for (const Requirement& r : requirements_) {
    if ((FieldValue(object, r.field) == r.value) != r.equal) return false;
  }
  return true;
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  for (std::string term : SplitTerms(text)) {
    term.erase(0, term.find_first_not_of(' '));
    term.erase(term.find_last_not_of(' ') + 1);
    if (term.empty()) continue;
    Requirement r;
    std::string lhs, op, rhs;
    if (term.find(' ') != std::string::npos || term.find('(') != std::string::npos) {
      return BadRequestError(absl::StrCat("unable to parse requirement: ", term));
    }
    if (SplitTerm(term, &lhs, &op, &rhs)) {
      r.key = lhs;
      r.value = rhs;
      r.op = op == "!=" ? Requirement::Op::kNotEquals : Requirement::Op::kEquals;
    } else if (term[0] == '!') {
      r.key = term.substr(1);
      r.op = Requirement::Op::kDoesNotExist;
    } else {
      r.key = term;
      r.op = Requirement::Op::kExists;
    }
    if (r.key.empty()) return BadRequestError(absl::StrCat("unable to parse requirement: ", term));
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& object) const {
  static const nlohmann::json* const kNoLabels = new nlohmann::json(nlohmann::json::object());
  const nlohmann::json* labels = kNoLabels;
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (auto l = meta->find("labels"); l != meta->end() && l->is_object()) labels = &*l;
  }
  for (const Requirement& r : requirements_) {
    auto it = labels->find(r.key);
    const bool has = it != labels->end() && it->is_string();
    const std::string value = has ? it->get<std::string>() : "";
    switch (r.op) {
      case Requirement::Op::kEquals:
        if (!has || value != r.value) return false;
        break;
      case Requirement::Op::kNotEquals:
        // labels.NotEquals matches objects without the label, as upstream.
        if (has && value == r.value) return false;
        break;
      case Requirement::Op::kExists:
        if (!has) return false;
        break;
      case Requirement::Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

}  // namespace kdp::manager::resourceapi
