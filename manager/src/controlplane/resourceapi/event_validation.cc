#include "manager/src/controlplane/resourceapi/event_validation.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/resource_name.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/kinds.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// pkg/apis/core/validation/events.go.
constexpr size_t kReportingInstanceLengthLimit = 128;
constexpr size_t kActionLengthLimit = 128;
constexpr size_t kReasonLengthLimit = 128;
constexpr size_t kNoteLengthLimit = 1024;

// The string at `object[key][sub]` (or `object[key]` when `sub` is null); "" when absent.
std::string EventString(const Json& object, const char* key, const char* sub = nullptr) {
  auto it = object.find(key);
  if (it == object.end()) return "";
  const Json* value = &*it;
  if (sub != nullptr) {
    if (!value->is_object()) return "";
    auto inner = value->find(sub);
    if (inner == value->end()) return "";
    value = &*inner;
  }
  return value->is_string() ? value->get<std::string>() : "";
}

// A metav1.Time or MicroTime is zero when absent, null or empty (what Go decodes to the zero time).
bool IsZeroTime(const Json& object, const char* key, const char* sub = nullptr) {
  return EventString(object, key, sub).empty();
}

// legacyValidateEvent: what every Event must pass, whichever API wrote it.
void LegacyValidateEvent(const Json& event, FieldErrors* errs) {
  const std::string ns = EventString(event, "metadata", "namespace");
  const std::string involved_ns = EventString(event, "involvedObject", "namespace");
  const auto mismatch = [&] {
    errs->push_back(
        Invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"));
  };
  if (IsZeroTime(event, "eventTime")) {
    // An old-style Event: its namespace is its object's (or "default" for cluster objects).
    if (involved_ns.empty() ? !ns.empty() && ns != "default" : ns != involved_ns) mismatch();
  } else {
    if (involved_ns.empty() && ns != "default" && ns != "kube-system") mismatch();
    // The core/v1 JSON name of ReportingController is reportingComponent; errors use the Go one.
    const std::string controller = EventString(event, "reportingComponent");
    if (controller.empty()) errs->push_back(Required("reportingController"));
    for (const std::string& msg : QualifiedNameErrors(controller)) {
      errs->push_back(Invalid("reportingController", controller, msg));
    }
    const auto limited = [&](const char* json_key, const char* path, size_t limit, bool required) {
      const std::string value = EventString(event, json_key);
      if (required && value.empty()) errs->push_back(Required(path));
      if (value.size() > limit) {
        errs->push_back(Invalid(path, "", absl::StrCat("can have at most ", limit, " characters")));
      }
    };
    limited("reportingInstance", "reportingInstance", kReportingInstanceLengthLimit, true);
    limited("action", "action", kActionLengthLimit, true);
    limited("reason", "reason", kReasonLengthLimit, true);
    limited("message", "message", kNoteLengthLimit, false);
  }
  for (const std::string& msg : Dns1123SubdomainErrors(ns)) {
    errs->push_back(Invalid("namespace", ns, msg));
  }
}

// validateV1EventSeries.
void ValidateSeries(const Json& event, FieldErrors* errs) {
  auto series = event.find("series");
  if (series == event.end() || !series->is_object()) return;
  const Json& count = (*series)["count"];
  if (!count.is_number_integer() || count.get<int64_t>() < 2) {
    errs->push_back(Invalid("series.count", "", "should be at least 2"));
  }
  if (IsZeroTime(*series, "lastObservedTime")) errs->push_back(Required("series.lastObservedTime"));
}

}  // namespace

absl::Status ValidateEventCreate(const nlohmann::json& event, std::string_view request_version) {
  FieldErrors errs;
  LegacyValidateEvent(event, &errs);
  // Core/v1 (and events.k8s.io/v1beta1) stay lenient for backwards compatibility; events.k8s.io/v1
  // writes new-style events only.
  if (request_version == kEventsV1) {
    ValidateSeries(event, &errs);
    if (IsZeroTime(event, "eventTime")) errs.push_back(Required("eventTime"));
    const std::string type = EventString(event, "type");
    if (type != "Normal" && type != "Warning") {
      errs.push_back(Invalid("type", "", absl::StrCat("has invalid value: ", type)));
    }
    for (const char* time : {"firstTimestamp", "lastTimestamp"}) {
      if (!IsZeroTime(event, time)) errs.push_back(Invalid(time, "", "needs to be unset"));
    }
    if (auto count = event.find("count");
        count != event.end() && !count->is_null() && *count != 0) {
      errs.push_back(Invalid("count", "", "needs to be unset"));
    }
    if (!EventString(event, "source", "component").empty() ||
        !EventString(event, "source", "host").empty()) {
      errs.push_back(Invalid("source", "", "needs to be unset"));
    }
  }
  if (errs.empty()) return absl::OkStatus();
  return InvalidError(InfoOf(Kind::kEvent), EventString(event, "metadata", "name"), errs);
}

}  // namespace kdp::manager::resourceapi
