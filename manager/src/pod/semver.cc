#include "manager/src/pod/semver.h"

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kdp::manager {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsIdentifierChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

bool AllIdentifierChars(std::string_view s) {
  for (char c : s) {
    if (!IsIdentifierChar(c)) return false;
  }
  return true;
}

absl::Status Invalid(const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("semantic version \"", text, "\" is invalid: ", why));
}

// One of major/minor/patch, with blang/semver's checks and wording.
absl::Status ParseNumber(const std::string& text, const std::string& part, const std::string& what,
                         uint64_t* out) {
  if (!AllDigits(part)) {
    return Invalid(text,
                   absl::StrCat("Invalid character(s) found in ", what, " number \"", part, "\""));
  }
  if (part.size() > 1 && part[0] == '0') {
    std::string upper(what);
    upper[0] = static_cast<char>(upper[0] - 'a' + 'A');
    return Invalid(text,
                   absl::StrCat(upper, " number must not contain leading zeroes \"", part, "\""));
  }
  auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
  if (ec != std::errc() || ptr != part.data() + part.size()) {
    return Invalid(text, absl::StrCat(what, " number \"", part, "\" is out of range"));
  }
  return absl::OkStatus();
}

// Pre-release precedence of one identifier pair (semver.org §11.4).
int CompareIdentifier(const std::string& a, const std::string& b) {
  const bool a_num = AllDigits(a);
  const bool b_num = AllDigits(b);
  if (a_num && b_num) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;  // no leading zeros
    return a == b ? 0 : (a < b ? -1 : 1);
  }
  if (a_num != b_num) return a_num ? -1 : 1;  // numeric identifiers sort first
  return a == b ? 0 : (a < b ? -1 : 1);
}

}  // namespace

absl::StatusOr<SemanticVersion> SemanticVersion::Parse(std::string_view input) {
  const std::string text(input);
  if (text.empty()) return Invalid(text, "Version string empty");
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('.', 2));
  if (parts.size() != 3) return Invalid(text, "No Major.Minor.Patch elements found");
  SemanticVersion v;
  if (absl::Status s = ParseNumber(text, parts[0], "major", &v.major_); !s.ok()) return s;
  if (absl::Status s = ParseNumber(text, parts[1], "minor", &v.minor_); !s.ok()) return s;
  std::string rest = parts[2];
  if (size_t plus = rest.find('+'); plus != std::string::npos) {
    const std::string build = rest.substr(plus + 1);
    rest = rest.substr(0, plus);
    for (const std::string& id : std::vector<std::string>(absl::StrSplit(build, '.'))) {
      if (id.empty()) return Invalid(text, "Empty build metadata");
      if (!AllIdentifierChars(id)) {
        return Invalid(text,
                       absl::StrCat("Invalid character(s) found in build meta data \"", id, "\""));
      }
    }
    v.build_ = build;
  }
  if (size_t dash = rest.find('-'); dash != std::string::npos) {
    const std::string pre = rest.substr(dash + 1);
    rest = rest.substr(0, dash);
    for (const std::string& id : std::vector<std::string>(absl::StrSplit(pre, '.'))) {
      if (id.empty()) return Invalid(text, "Empty prerelease version");
      if (!AllIdentifierChars(id)) {
        return Invalid(text, absl::StrCat("Invalid character(s) found in prerelease \"", id, "\""));
      }
      if (AllDigits(id) && id.size() > 1 && id[0] == '0') {
        return Invalid(
            text, absl::StrCat("Numeric PreRelease version must not contain leading zeroes \"", id,
                               "\""));
      }
      v.pre_.push_back(id);
    }
  }
  if (absl::Status s = ParseNumber(text, rest, "patch", &v.patch_); !s.ok()) return s;
  return v;
}

int SemanticVersion::Compare(const SemanticVersion& other) const {
  if (major_ != other.major_) return major_ < other.major_ ? -1 : 1;
  if (minor_ != other.minor_) return minor_ < other.minor_ ? -1 : 1;
  if (patch_ != other.patch_) return patch_ < other.patch_ ? -1 : 1;
  if (pre_.empty() || other.pre_.empty()) {
    if (pre_.empty() && other.pre_.empty()) return 0;
    return pre_.empty() ? 1 : -1;  // a release has higher precedence than its pre-release
  }
  for (size_t i = 0; i < pre_.size() && i < other.pre_.size(); ++i) {
    if (int c = CompareIdentifier(pre_[i], other.pre_[i]); c != 0) return c;
  }
  if (pre_.size() == other.pre_.size()) return 0;
  return pre_.size() < other.pre_.size() ? -1 : 1;
}

std::string SemanticVersion::ToString() const {
  std::string out = absl::StrCat(major_, ".", minor_, ".", patch_);
  if (!pre_.empty()) absl::StrAppend(&out, "-", absl::StrJoin(pre_, "."));
  if (!build_.empty()) absl::StrAppend(&out, "+", build_);
  return out;
}

}  // namespace kdp::manager
