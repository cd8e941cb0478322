#include "manager/src/controlplane/resourceapi/request_options.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/resource_name.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

// ValidateListOptions reports against this GroupKind: `ListOptions.meta.k8s.io "" is invalid`.
const KindInfo& ListOptionsKind() {
  static const KindInfo kInfo = {.kind = Kind::kResourceSlice,
                                 .name = "ListOptions",
                                 .list_kind = "",
                                 .resource = "listoptions",
                                 .singular = "listoptions",
                                 .group = "meta.k8s.io",
                                 .namespaced = false,
                                 .has_status = false,
                                 .field_labels = {}};
  return kInfo;
}

// runtime.Convert_Slice_string_To_int64 via strconv.ParseInt; an error is a BadRequest naming
// the parameter, as the parameter codec reports it.
absl::StatusOr<int64_t> QueryInt(const char* name, const std::string& value) {
  int64_t out = 0;
  if (!absl::SimpleAtoi(value, &out)) {
    return BadRequestError(absl::StrCat("invalid value for ", name, ": strconv.ParseInt: parsing ",
                                        GoQuote(value), ": invalid syntax"));
  }
  return out;
}

}  // namespace

bool QueryBool(std::string_view value) {
  return !(value == "0" ||
           absl::EqualsIgnoreCase(absl::string_view(value.data(), value.size()), "false"));
}

absl::StatusOr<ListWatchOptions> ParseListWatchOptions(
    const std::map<std::string, std::string>& params, const KindInfo& kind,
    std::string_view version) {
  ListWatchOptions out;
  auto param = [&params](const char* name) -> const std::string* {
    auto it = params.find(name);
    return it == params.end() ? nullptr : &it->second;
  };
  if (const std::string* text = param("fieldSelector")) {
    absl::StatusOr<FieldSelector> fields = FieldSelector::Parse(*text, kind, version);
    if (!fields.ok()) return fields.status();
    out.selectors.fields = *std::move(fields);
  }
  if (const std::string* text = param("labelSelector")) {
    absl::StatusOr<LabelSelector> labels = LabelSelector::Parse(*text);
    if (!labels.ok()) return labels.status();
    out.selectors.labels = *std::move(labels);
  }
  if (const std::string* text = param("resourceVersion")) {
    out.resource_version = *text;
    if (!text->empty() && *text != "0") {
      int64_t number = 0;
      // storage.APIObjectVersioner.ParseResourceVersion.
      if (!absl::SimpleAtoi(*text, &number) || number <= 0) {
        return BadRequestError(absl::StrCat("invalid resource version ", GoQuote(*text),
                                            ": must be a positive integer"));
      }
      out.resource_version_number = number;
    }
  }
  if (const std::string* text = param("resourceVersionMatch")) out.resource_version_match = *text;
  if (const std::string* text = param("limit"); text && !text->empty()) {
    absl::StatusOr<int64_t> limit = QueryInt("limit", *text);
    if (!limit.ok()) return limit.status();
    out.limit = *limit;
  }
  if (const std::string* text = param("continue")) out.continue_token = *text;
  if (const std::string* text = param("watch")) out.watch = QueryBool(*text);
  if (const std::string* text = param("sendInitialEvents"))
    out.send_initial_events = QueryBool(*text);
  if (const std::string* text = param("allowWatchBookmarks")) {
    out.allow_watch_bookmarks = QueryBool(*text);
  }
  if (const std::string* text = param("timeoutSeconds"); text && !text->empty()) {
    absl::StatusOr<int64_t> seconds = QueryInt("timeoutSeconds", *text);
    if (!seconds.ok()) return seconds.status();
    out.timeout_seconds = *seconds;
  }

  // metainternalversion/validation.ValidateListOptions, in its order.
  FieldErrors errors;
  const std::string& match = out.resource_version_match;
  if (match != "") {
    if (out.watch && !out.send_initial_events) {
      errors.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch is forbidden for watch unless "
                                 "sendInitialEvents is provided"));
    }
    if (match != kResourceVersionMatchNotOlderThan && match != kResourceVersionMatchExact) {
      errors.push_back(
          NotSupported("resourceVersionMatch", match,
                       {kResourceVersionMatchExact, kResourceVersionMatchNotOlderThan}));
    }
    if (match == kResourceVersionMatchExact && out.resource_version == "0") {
      errors.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch \"exact\" is forbidden for resourceVersion "
                                 "\"0\""));
    }
    if (out.resource_version.empty() && !out.send_initial_events) {
      errors.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch is forbidden unless resourceVersion is "
                                 "provided"));
    }
    if (!out.continue_token.empty()) {
      errors.push_back(Forbidden("resourceVersionMatch",
                                 "resourceVersionMatch is forbidden when continue is provided"));
    }
  }
  if (out.send_initial_events) {
    if (!out.watch) {
      errors.push_back(Forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
    } else {
      if (match != kResourceVersionMatchNotOlderThan) {
        errors.push_back(Forbidden("resourceVersionMatch",
                                   "sendInitialEvents requires setting resourceVersionMatch to "
                                   "NotOlderThan"));
      }
      if (*out.send_initial_events && !out.allow_watch_bookmarks) {
        errors.push_back(
            Forbidden("allowWatchBookmarks",
                      "sendInitialEvents requires setting allowWatchBookmarks to true"));
      }
    }
  }
  if (!out.continue_token.empty() && !out.resource_version.empty() && out.resource_version != "0") {
    errors.push_back(Forbidden("resourceVersion",
                               "specifying resource version is not allowed when using continue"));
  }
  if (out.limit < 0) errors.push_back(InvalidInt("limit", out.limit, "must be non-negative"));
  if (out.timeout_seconds && *out.timeout_seconds < 0) {
    errors.push_back(InvalidInt("timeoutSeconds", *out.timeout_seconds, "must be non-negative"));
  }
  if (!errors.empty()) return InvalidError(ListOptionsKind(), "", errors);
  return out;
}

std::string EncodeContinueToken(int64_t resource_version, std::string_view last_key) {
  const nlohmann::json token = {
      {"v", "meta.k8s.io/v1"}, {"rv", resource_version}, {"start", std::string(last_key)}};
  return absl::WebSafeBase64Escape(token.dump());
}

absl::StatusOr<ContinuePoint> DecodeContinueToken(std::string_view token) {
  std::string text;
  if (!absl::WebSafeBase64Unescape(absl::string_view(token.data(), token.size()), &text)) {
    return BadRequestError("continue key is not valid: illegal base64 data");
  }
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  // Every member's type is checked before it is read: the token comes from the client, and
  // json::value() would throw on a "v" that is not a string.
  if (!parsed.is_object() || !parsed.contains("v") || parsed["v"] != "meta.k8s.io/v1" ||
      !parsed.contains("rv") || !parsed["rv"].is_number_integer() || !parsed.contains("start") ||
      !parsed["start"].is_string()) {
    return BadRequestError(
        "continue key is not valid: incorrect encoded start resourceVersion "
        "(version meta.k8s.io/v1)");
  }
  return ContinuePoint{.resource_version = parsed["rv"].get<int64_t>(),
                       .last_key = parsed["start"].get<std::string>()};
}

std::string ListKey(const nlohmann::json& object) {
  return absl::StrCat(FieldValue(object, "metadata.namespace"), "/",
                      FieldValue(object, "metadata.name"));
}

}  // namespace kdp::manager::resourceapi
