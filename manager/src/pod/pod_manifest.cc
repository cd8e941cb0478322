#include "manager/src/pod/pod_manifest.h"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/resource_name.h"
#include "common/status_macros.h"
#include "manager/src/pod/quantity.h"
#include "manager/src/pod/yaml_documents.h"

namespace kdp::manager {
namespace {

// ---- Resource-name classes from pkg/apis/core/helper and v1helper. ----

bool IsHugePageResourceName(std::string_view name) { return name.starts_with("hugepages-"); }

bool IsStandardContainerResourceName(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" ||
         IsHugePageResourceName(name);
}

// helper.IsStandardResourceName: what an unprefixed resource name may be anywhere in the API.
bool IsStandardResourceName(std::string_view name) {
  // clang-format off
  static constexpr std::string_view kStandard[] = {
      "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
      "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
      "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
      "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
      "services.loadbalancers"};
  // clang-format on
  for (std::string_view s : kStandard) {
    if (s == name) return true;
  }
  return IsHugePageResourceName(name) || name.starts_with("requests.hugepages-");
}

// helper.IsIntegerResourceName.
bool IsIntegerResourceName(std::string_view name) {
  // clang-format off
  static constexpr std::string_view kInteger[] = {
      "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"};
  // clang-format on
  for (std::string_view s : kInteger) {
    if (s == name) return true;
  }
  return IsExtendedResourceName(name);
}

// v1helper.IsOvercommitAllowed: requests may be below limits only for native non-hugepage
// resources; everything else (extended resources included) needs requests == limits.
bool IsOvercommitAllowed(std::string_view name) {
  return IsNativeResourceName(name) && !IsHugePageResourceName(name);
}

// ---- YAML 1.1 number resolution (go-yaml v2, used by kubectl via sigs.k8s.io/yaml). ----

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// strconv.ParseInt(s, 0, 64) / ParseUint: optional sign, 0x / 0o / 0b / leading-0 octal or
// decimal. Returns the value in decimal, or nullopt when `s` is not such an integer or overflows.
std::optional<std::string> ParseGoInteger(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 1 && s[0] == '0') {
    const char p = absl::ascii_tolower(static_cast<unsigned char>(s[1]));
    base = p == 'x' ? 16 : (p == 'b' ? 2 : 8);
    s.remove_prefix(p == 'x' || p == 'b' || p == 'o' ? 2 : 1);
  }
  if (s.empty()) return std::nullopt;
  const absl::uint128 limit = negative ? absl::uint128(1) << 63 : absl::uint128(UINT64_MAX);
  absl::uint128 value = 0;
  for (char c : s) {
    const int d = DigitValue(c);
    if (d >= base) return std::nullopt;
    value = value * base + d;
    if (value > limit) return std::nullopt;
  }
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return (negative && digits != "0") ? "-" + digits : digits;
}

// go-yaml v2's float pattern: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool IsYamlFloat(std::string_view s) {
  auto digits = [&s]() {
    std::size_t n = 0;
    while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
    s.remove_prefix(n);
    return n;
  };
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (!s.empty() && s[0] == '.') {
    s.remove_prefix(1);
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      digits();
    }
  }
  if (!s.empty() && (s[0] == 'e' || s[0] == 'E')) {
    s.remove_prefix(1);
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
    if (digits() == 0) return false;
  }
  return s.empty();
}

// The quantity text kubectl would send for a plain (unquoted, untagged) YAML scalar: integers
// in YAML 1.1 forms become decimal, underscores in numbers are dropped; anything else as is.
std::string ResolvePlainQuantityText(const std::string& text) {
  std::string plain;
  for (char c : text) {
    if (c != '_') plain.push_back(c);
  }
  if (std::optional<std::string> integer = ParseGoInteger(plain)) return *integer;
  if (IsYamlFloat(plain)) return plain;
  return text;
}

// ---- Decoding: YAML nodes to raw fields, failing on the first structural problem. ----

struct QuantityField {
  Quantity value;
  std::string text;  // as written (after YAML number resolution and trimming)
};

struct RawContainer {
  std::string path;  // "spec.containers[0]"
  ContainerKind kind = ContainerKind::kApp;
  std::string name;
  std::optional<std::string> restart_policy;
  std::map<std::string, QuantityField> limits;
  std::map<std::string, QuantityField> requests;
  std::vector<ContainerClaim> claims;  // resources.claims
};

using Fields = std::map<std::string, YAML::Node>;

YAML::Node Get(const Fields& fields, const std::string& key) {
  auto it = fields.find(key);
  return it == fields.end() ? YAML::Node() : it->second;
}

std::string Where(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return "";
  return absl::StrCat(" (line ", mark.line + 1, ", column ", mark.column + 1, ")");
}

std::string_view KindOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "null";
  }
}

class Decoder {
 public:
  explicit Decoder(std::string_view source) : source_(source) {}

  absl::Status Error(std::string_view path, std::string_view reason, const YAML::Node& node) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", std::string(path), ": ", std::string(reason), Where(node)));
  }

  // A mapping's fields by key; null or absent is empty. Rejects non-scalar and duplicate keys.
  absl::StatusOr<Fields> Mapping(const YAML::Node& node, std::string_view path) {
    Fields fields;
    if (!node.IsDefined() || node.IsNull()) return fields;
    if (!node.IsMap()) {
      return Error(path, absl::StrCat("expected a mapping, got ", std::string(KindOf(node))), node);
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) return Error(path, "mapping keys must be strings", it->first);
      auto [pos, inserted] = fields.emplace(it->first.Scalar(), it->second);
      if (!inserted) {
        return Error(path,
                     absl::StrCat("mapping key ", GoQuote(it->first.Scalar()), " already defined"),
                     it->first);
      }
    }
    return fields;
  }

  // A list's items; null or absent is empty.
  absl::StatusOr<std::vector<YAML::Node>> List(const YAML::Node& node, std::string_view path) {
    std::vector<YAML::Node> items;
    if (!node.IsDefined() || node.IsNull()) return items;
    if (!node.IsSequence()) {
      return Error(path, absl::StrCat("expected a list, got ", std::string(KindOf(node))), node);
    }
    for (const YAML::Node& item : node) items.push_back(item);
    return items;
  }

  // A scalar's text; null or absent is nullopt.
  absl::StatusOr<std::optional<std::string>> String(const YAML::Node& node, std::string_view path) {
    if (!node.IsDefined() || node.IsNull()) return std::optional<std::string>();
    if (!node.IsScalar()) {
      return Error(path, absl::StrCat("expected a string, got ", std::string(KindOf(node))), node);
    }
    return std::optional<std::string>(node.Scalar());
  }

  absl::StatusOr<std::string> StringOrEmpty(const YAML::Node& node, std::string_view path) {
    KDP_ASSIGN_OR_RETURN(std::optional<std::string> value, String(node, path));
    return value.value_or("");
  }

  // A quantity given as a string or a YAML number; null is zero (as Quantity.UnmarshalJSON).
  absl::StatusOr<QuantityField> QuantityValue(const YAML::Node& node, std::string_view path) {
    if (!node.IsDefined() || node.IsNull()) return QuantityField{Quantity(), "0"};
    if (!node.IsScalar()) {
      return Error(path,
                   absl::StrCat("expected a quantity (a string or a number), got ",
                                std::string(KindOf(node))),
                   node);
    }
    std::string text = node.Tag() == "?" ? ResolvePlainQuantityText(node.Scalar()) : node.Scalar();
    absl::StripAsciiWhitespace(&text);
    absl::StatusOr<Quantity> value = Quantity::Parse(text);
    if (!value.ok()) return Error(path, std::string(value.status().message()), node);
    return QuantityField{*value, std::move(text)};
  }

  absl::StatusOr<std::map<std::string, QuantityField>> ResourceList(const YAML::Node& node,
                                                                    const std::string& path) {
    KDP_ASSIGN_OR_RETURN(Fields fields, Mapping(node, path));
    std::map<std::string, QuantityField> out;
    for (const auto& [name, value] : fields) {
      KDP_ASSIGN_OR_RETURN(out[name], QuantityValue(value, absl::StrCat(path, "[", name, "]")));
    }
    return out;
  }

  absl::StatusOr<RawContainer> Container(const YAML::Node& node, std::string path,
                                         ContainerKind kind) {
    RawContainer c;
    c.path = std::move(path);
    c.kind = kind;
    KDP_ASSIGN_OR_RETURN(Fields fields, Mapping(node, c.path));
    KDP_ASSIGN_OR_RETURN(c.name, StringOrEmpty(Get(fields, "name"), c.path + ".name"));
    if (kind != ContainerKind::kApp) {
      KDP_ASSIGN_OR_RETURN(c.restart_policy,
                           String(Get(fields, "restartPolicy"), c.path + ".restartPolicy"));
    }
    const std::string resources_path = c.path + ".resources";
    KDP_ASSIGN_OR_RETURN(Fields resources, Mapping(Get(fields, "resources"), resources_path));
    KDP_ASSIGN_OR_RETURN(c.limits,
                         ResourceList(Get(resources, "limits"), resources_path + ".limits"));
    KDP_ASSIGN_OR_RETURN(c.requests,
                         ResourceList(Get(resources, "requests"), resources_path + ".requests"));
    const std::string claims_path = resources_path + ".claims";
    KDP_ASSIGN_OR_RETURN(std::vector<YAML::Node> claims,
                         List(Get(resources, "claims"), claims_path));
    for (std::size_t i = 0; i < claims.size(); ++i) {
      const std::string item = absl::StrCat(claims_path, "[", i, "]");
      KDP_ASSIGN_OR_RETURN(Fields claim, Mapping(claims[i], item));
      ContainerClaim out;
      KDP_ASSIGN_OR_RETURN(out.name, StringOrEmpty(Get(claim, "name"), item + ".name"));
      KDP_ASSIGN_OR_RETURN(out.request, StringOrEmpty(Get(claim, "request"), item + ".request"));
      c.claims.push_back(std::move(out));
    }
    return c;
  }

  // spec.resourceClaims[i].
  absl::StatusOr<PodResourceClaim> ResourceClaim(const YAML::Node& node, const std::string& path) {
    KDP_ASSIGN_OR_RETURN(Fields fields, Mapping(node, path));
    PodResourceClaim out;
    KDP_ASSIGN_OR_RETURN(out.name, StringOrEmpty(Get(fields, "name"), path + ".name"));
    KDP_ASSIGN_OR_RETURN(out.resource_claim_name, StringOrEmpty(Get(fields, "resourceClaimName"),
                                                                path + ".resourceClaimName"));
    KDP_ASSIGN_OR_RETURN(out.resource_claim_template_name,
                         StringOrEmpty(Get(fields, "resourceClaimTemplateName"),
                                       path + ".resourceClaimTemplateName"));
    return out;
  }

 private:
  std::string source_;
};

// ---- Validation: collects every broken rule, worded as the API server's field errors. ----

class FieldErrors {
 public:
  void Required(std::string_view path, std::string_view detail = "") {
    Add(absl::StrCat(std::string(path), ": Required value",
                     detail.empty() ? "" : absl::StrCat(": ", std::string(detail))));
  }
  void Invalid(std::string_view path, std::string_view value, std::string_view detail) {
    Add(absl::StrCat(std::string(path), ": Invalid value: ", GoQuote(value), ": ",
                     std::string(detail)));
  }
  void Duplicate(std::string_view path, std::string_view value) {
    Add(absl::StrCat(std::string(path), ": Duplicate value: ", GoQuote(value)));
  }
  // field.NotFound with a detail, as validateResourceClaimNames words it.
  void NotFound(std::string_view path, std::string_view value, std::string_view detail) {
    Add(absl::StrCat(std::string(path), ": Not found: ", GoQuote(value), ": ",
                     std::string(detail)));
  }
  void NotSupported(std::string_view path, std::string_view value, std::string_view supported) {
    Add(absl::StrCat(std::string(path), ": Unsupported value: ", GoQuote(value),
                     ": supported values: ", GoQuote(supported)));
  }
  bool empty() const { return errors_.empty(); }
  // utilerrors.Aggregate's form: the error alone, or "[a, b]".
  std::string Joined() const {
    if (errors_.size() == 1) return errors_[0];
    return absl::StrCat("[", absl::StrJoin(errors_, ", "), "]");
  }

 private:
  void Add(std::string error) {
    if (seen_.insert(error).second) errors_.push_back(std::move(error));
  }
  std::vector<std::string> errors_;
  std::set<std::string> seen_;
};

constexpr char kKdpNativeResourceMsg[] =
    "must be an extended resource name: kdp-manager serves no resources in the kubernetes.io/ "
    "namespace";

// validateContainerResourceName, plus kdp's refusal of kubernetes.io/ names.
void ValidateContainerResourceName(const std::string& name, const std::string& path,
                                   FieldErrors* errs) {
  std::vector<std::string> qualified = QualifiedNameErrors(name);
  for (const std::string& msg : qualified) errs->Invalid(path, name, msg);
  const bool has_slash = name.find('/') != std::string::npos;
  if (qualified.empty() && !has_slash && !IsStandardResourceName(name)) {
    errs->Invalid(path, name, "must be a standard resource type or fully qualified");
  }
  if (!has_slash) {
    if (!IsStandardContainerResourceName(name)) {
      errs->Invalid(path, name, "must be a standard resource for containers");
    }
  } else if (!IsNativeResourceName(name)) {
    if (!IsExtendedResourceName(name)) {
      errs->Invalid(path, name, "doesn't follow extended resource name standard");
    }
  } else if (qualified.empty()) {
    errs->Invalid(path, name, kKdpNativeResourceMsg);
  }
}

// ValidateResourceQuantityValue.
void ValidateResourceQuantityValue(const std::string& name, const Quantity& value,
                                   const std::string& path, FieldErrors* errs) {
  if (value.Sign() < 0) errs->Invalid(path, value.ToString(), "must be greater than or equal to 0");
  if (IsIntegerResourceName(name) && !value.IsInteger()) {
    errs->Invalid(path, value.ToString(), "must be an integer");
  }
}

void ValidateResources(const RawContainer& raw, Container* out, FieldErrors* errs) {
  const std::string limits_path = raw.path + ".resources.limits";
  const std::string requests_path = raw.path + ".resources.requests";
  for (const auto& [name, limit] : raw.limits) {
    const std::string path = absl::StrCat(limits_path, "[", name, "]");
    ValidateContainerResourceName(name, path, errs);
    ValidateResourceQuantityValue(name, limit.value, path, errs);
    if (IsExtendedResourceName(name)) {
      std::optional<int64_t> count = limit.value.AsInt64();
      if (count.has_value() && *count >= 0) out->extended_resources[name] = *count;
    } else {
      out->other_limits[name] = limit.text;
    }
  }
  for (const auto& [name, request] : raw.requests) {
    const std::string path = absl::StrCat(requests_path, "[", name, "]");
    ValidateContainerResourceName(name, path, errs);
    ValidateResourceQuantityValue(name, request.value, path, errs);
    auto limit = raw.limits.find(name);
    if (limit == raw.limits.end()) {
      if (!IsOvercommitAllowed(name)) {
        errs->Required(absl::StrCat(limits_path, "[", name, "]"),
                       "Limit must be set for non overcommitable resources");
      }
      continue;
    }
    const Quantity& limit_value = limit->second.value;
    if (request.value != limit_value && !IsOvercommitAllowed(name)) {
      errs->Invalid(path, request.value.ToString(),
                    absl::StrCat("must be equal to ", name, " limit of ", limit_value.ToString()));
    } else if (request.value > limit_value) {
      errs->Invalid(path, request.value.ToString(),
                    absl::StrCat("must be less than or equal to ", name, " limit of ",
                                 limit_value.ToString()));
    }
  }
}

// Validates one container; `names` holds the names taken so far (upstream checks app containers
// among themselves first, then each init container against all app and earlier init ones).
// validateResourceClaimNames: each container claim names a pod claim, once per (claim, request).
void ValidateContainerClaims(const RawContainer& raw, const std::set<std::string>& pod_claims,
                             Container* out, FieldErrors* errs) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < raw.claims.size(); ++i) {
    const ContainerClaim& claim = raw.claims[i];
    const std::string path = absl::StrCat(raw.path, ".resources.claims[", i, "]");
    if (claim.name.empty()) {
      errs->Required(path);
      continue;
    }
    const std::string key =
        claim.request.empty() ? claim.name : absl::StrCat(claim.name, "/", claim.request);
    if (!seen.insert(key).second) errs->Duplicate(path, key);
    if (!pod_claims.contains(claim.name)) {
      errs->NotFound(path, claim.name,
                     pod_claims.empty()
                         ? "must be one of the names in pod.spec.resourceClaims which is empty"
                         : absl::StrCat("must be one of the names in pod.spec.resourceClaims: ",
                                        absl::StrJoin(pod_claims, ", ")));
    }
    if (!claim.request.empty()) {
      for (const std::string& msg : Dns1123LabelErrors(claim.request)) {
        errs->Invalid(path + ".request", claim.request, msg);
      }
    }
    out->claims.push_back(claim);
  }
}

// validatePodResourceClaims: unique DNS-label names, exactly one source each.
void ValidatePodResourceClaims(const std::vector<PodResourceClaim>& claims, Pod* pod,
                               FieldErrors* errs) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const PodResourceClaim& claim = claims[i];
    const std::string path = absl::StrCat("spec.resourceClaims[", i, "]");
    if (claim.name.empty()) {
      errs->Required(path + ".name");
    } else {
      for (const std::string& msg : Dns1123LabelErrors(claim.name)) {
        errs->Invalid(path + ".name", claim.name, msg);
      }
      if (!names.insert(claim.name).second) errs->Duplicate(path + ".name", claim.name);
    }
    const bool by_name = !claim.resource_claim_name.empty();
    const bool by_template = !claim.resource_claim_template_name.empty();
    if (by_name && by_template) {
      errs->Invalid(
          path, "",
          "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified");
    } else if (!by_name && !by_template) {
      errs->Invalid(path, claim.name,
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`");
    }
    for (const std::string* name :
         {&claim.resource_claim_name, &claim.resource_claim_template_name}) {
      if (name->empty()) continue;
      for (const std::string& msg : Dns1123SubdomainErrors(*name)) {
        errs->Invalid(path + (name == &claim.resource_claim_name ? ".resourceClaimName"
                                                                 : ".resourceClaimTemplateName"),
                      *name, msg);
      }
    }
    pod->resource_claims.push_back(claim);
  }
}

Container ValidateContainer(const RawContainer& raw, std::set<std::string>* names,
                            const std::set<std::string>& pod_claims, FieldErrors* errs) {
  Container out;
  out.name = raw.name;
  out.kind = raw.kind;
  const std::string name_path = raw.path + ".name";
  if (raw.name.empty()) {
    errs->Required(name_path);
  } else {
    for (const std::string& msg : Dns1123LabelErrors(raw.name)) {
      errs->Invalid(name_path, raw.name, msg);
    }
    if (!names->insert(raw.name).second) errs->Duplicate(name_path, raw.name);
  }
  if (raw.restart_policy.has_value()) {
    if (*raw.restart_policy == "Always") {
      out.kind = ContainerKind::kSidecar;
    } else {
      errs->NotSupported(raw.path + ".restartPolicy", *raw.restart_policy, "Always");
    }
  }
  ValidateResources(raw, &out, errs);
  ValidateContainerClaims(raw, pod_claims, &out, errs);
  return out;
}

// names.SimpleNameGenerator: the prefix cut to 58 characters plus 5 random characters.
std::string GenerateName(std::string_view base) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  constexpr std::size_t kMaxBase = 63 - 5;
  std::string name(base.substr(0, kMaxBase));
  absl::BitGen gen;
  for (int i = 0; i < 5; ++i) {
    name.push_back(kAlphabet[absl::Uniform<std::size_t>(gen, 0, kAlphabet.size())]);
  }
  return name;
}

absl::StatusOr<Pod> DecodeAndValidate(const YAML::Node& root, const std::string& source) {
  Decoder d(source);
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(source,
                                                   ": a Pod manifest must be a mapping, got ",
                                                   std::string(KindOf(root)), Where(root)));
  }
  KDP_ASSIGN_OR_RETURN(Fields top, d.Mapping(root, "manifest"));

  KDP_ASSIGN_OR_RETURN(std::string api_version,
                       d.StringOrEmpty(Get(top, "apiVersion"), "apiVersion"));
  if (api_version.empty()) return d.Error("apiVersion", "Required value", root);
  if (api_version != "v1") {
    return d.Error(
        "apiVersion",
        absl::StrCat("Unsupported value: ", GoQuote(api_version), ": supported values: \"v1\""),
        Get(top, "apiVersion"));
  }
  KDP_ASSIGN_OR_RETURN(std::string kind, d.StringOrEmpty(Get(top, "kind"), "kind"));
  if (kind.empty()) return d.Error("kind", "Required value", root);
  if (kind != "Pod") {
    return d.Error(
        "kind", absl::StrCat("Unsupported value: ", GoQuote(kind), ": supported values: \"Pod\""),
        Get(top, "kind"));
  }

  KDP_ASSIGN_OR_RETURN(Fields metadata, d.Mapping(Get(top, "metadata"), "metadata"));
  KDP_ASSIGN_OR_RETURN(std::string name, d.StringOrEmpty(Get(metadata, "name"), "metadata.name"));
  KDP_ASSIGN_OR_RETURN(std::string generate_name,
                       d.StringOrEmpty(Get(metadata, "generateName"), "metadata.generateName"));
  KDP_ASSIGN_OR_RETURN(std::string ns,
                       d.StringOrEmpty(Get(metadata, "namespace"), "metadata.namespace"));
  KDP_ASSIGN_OR_RETURN(std::string uid, d.StringOrEmpty(Get(metadata, "uid"), "metadata.uid"));

  KDP_ASSIGN_OR_RETURN(Fields spec, d.Mapping(Get(top, "spec"), "spec"));
  std::vector<RawContainer> raw_apps;
  std::vector<RawContainer> raw_inits;
  KDP_ASSIGN_OR_RETURN(std::vector<YAML::Node> apps,
                       d.List(Get(spec, "containers"), "spec.containers"));
  for (std::size_t i = 0; i < apps.size(); ++i) {
    KDP_ASSIGN_OR_RETURN(
        RawContainer c,
        d.Container(apps[i], absl::StrCat("spec.containers[", i, "]"), ContainerKind::kApp));
    raw_apps.push_back(std::move(c));
  }
  KDP_ASSIGN_OR_RETURN(std::vector<YAML::Node> inits,
                       d.List(Get(spec, "initContainers"), "spec.initContainers"));
  for (std::size_t i = 0; i < inits.size(); ++i) {
    KDP_ASSIGN_OR_RETURN(
        RawContainer c,
        d.Container(inits[i], absl::StrCat("spec.initContainers[", i, "]"), ContainerKind::kInit));
    raw_inits.push_back(std::move(c));
  }
  std::vector<PodResourceClaim> raw_claims;
  KDP_ASSIGN_OR_RETURN(std::vector<YAML::Node> claims,
                       d.List(Get(spec, "resourceClaims"), "spec.resourceClaims"));
  for (std::size_t i = 0; i < claims.size(); ++i) {
    KDP_ASSIGN_OR_RETURN(PodResourceClaim claim,
                         d.ResourceClaim(claims[i], absl::StrCat("spec.resourceClaims[", i, "]")));
    raw_claims.push_back(std::move(claim));
  }

  FieldErrors errs;
  Pod pod;
  if (name.empty() && !generate_name.empty()) {
    // ValidateObjectMeta checks the prefix with a trailing '-' masked, as the random part follows.
    std::string masked = generate_name;
    if (masked.size() > 1 && masked.back() == '-') masked.back() = 'a';
    for (const std::string& msg : Dns1123SubdomainErrors(masked)) {
      errs.Invalid("metadata.generateName", generate_name, msg);
    }
    name = GenerateName(generate_name);
  } else if (name.empty()) {
    errs.Required("metadata.name", "name or generateName is required");
  } else {
    for (const std::string& msg : Dns1123SubdomainErrors(name)) {
      errs.Invalid("metadata.name", name, msg);
    }
  }
  pod.name = name;
  if (!ns.empty()) {
    for (const std::string& msg : Dns1123LabelErrors(ns))
      errs.Invalid("metadata.namespace", ns, msg);
    pod.namespace_ = ns;
  }
  pod.uid = uid.empty() ? GeneratePodUid() : uid;

  if (raw_apps.empty()) errs.Required("spec.containers");
  ValidatePodResourceClaims(raw_claims, &pod, &errs);
  std::set<std::string> pod_claims;
  for (const PodResourceClaim& claim : pod.resource_claims) pod_claims.insert(claim.name);
  std::set<std::string> names;
  for (const RawContainer& raw : raw_apps) {
    pod.containers.push_back(ValidateContainer(raw, &names, pod_claims, &errs));
  }
  for (const RawContainer& raw : raw_inits) {
    pod.init_containers.push_back(ValidateContainer(raw, &names, pod_claims, &errs));
  }

  if (!errs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": Pod ", GoQuote(pod.name), " is invalid: ", errs.Joined()));
  }
  return pod;
}

}  // namespace

absl::StatusOr<Pod> ParsePodManifest(std::string_view text, std::string_view source) {
  const std::string src(source);
  std::vector<YAML::Node> docs;
  try {
    docs = LoadYamlDocuments(std::string(text));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": ", e.what()));
  }
  if (docs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        src, ": expected exactly one YAML document holding a Pod, found ", docs.size()));
  }
  try {
    return DecodeAndValidate(docs[0], src);
  } catch (const YAML::Exception& e) {
    // The decoder only calls non-throwing accessors; this keeps a yaml-cpp surprise an error.
    return absl::InvalidArgumentError(absl::StrCat(src, ": ", e.what()));
  }
}

absl::StatusOr<Pod> ParsePodManifestDocument(const YAML::Node& document, std::string_view source) {
  try {
    return DecodeAndValidate(document, std::string(source));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": ", e.what()));
  }
}

std::string GeneratePodUid() {
  absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen);
  uint64_t lo = absl::Uniform<uint64_t>(gen);
  hi = (hi & ~uint64_t{0xF000}) | uint64_t{0x4000};              // version 4
  lo = (lo & ~(uint64_t{0xC0} << 56)) | (uint64_t{0x80} << 56);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    const uint64_t word = i < 16 ? hi : lo;
    const int shift = 60 - 4 * (i % 16);
    out.push_back(kHex[(word >> shift) & 0xF]);
    if (i == 7 || i == 11 || i == 15 || i == 19) out.push_back('-');
  }
  return out;
}

}  // namespace kdp::manager
