#include "manager/src/controlplane/resourceapi/api_errors.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/resource_name.h"

namespace kdp::manager::resourceapi {
namespace {

constexpr char kStatusPayloadUrl[] = "type.kdp.dev/kubernetes.Status";

const char* TypeString(FieldError::Type type) {
  switch (type) {
    case FieldError::Type::kInvalid:
      return "Invalid value";
    case FieldError::Type::kRequired:
      return "Required value";
    case FieldError::Type::kDuplicate:
      return "Duplicate value";
    case FieldError::Type::kNotSupported:
      return "Unsupported value";
    case FieldError::Type::kTooMany:
      return "Too many";
    case FieldError::Type::kTooLong:
      return "Too long";
    case FieldError::Type::kForbidden:
      return "Forbidden";
  }
  return "Invalid value";
}

// The absl::Status answered as `object`; its message is `object`'s unless `message` is given.
absl::Status WithStatusObject(absl::StatusCode code, const nlohmann::json& object,
                              const std::string* message = nullptr) {
  absl::Status status(code, message != nullptr ? *message : object.value("message", std::string()));
  // Messages may quote request bytes that are not UTF-8: replaced, never a throw.
  status.SetPayload(
      kStatusPayloadUrl,
      absl::Cord(object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return status;
}

}  // namespace

std::string FieldError::Body() const {
  std::string body = TypeString(type);
  if (type != Type::kRequired && type != Type::kForbidden && type != Type::kTooLong) {
    absl::StrAppend(&body, ": ", bad_value);
  }
  if (!detail.empty()) absl::StrAppend(&body, ": ", detail);
  return body;
}

std::string FieldError::ToString() const { return absl::StrCat(field, ": ", Body()); }

std::string FieldError::CauseReason() const {
  switch (type) {
    case Type::kInvalid:
      return "FieldValueInvalid";
    case Type::kRequired:
      return "FieldValueRequired";
    case Type::kDuplicate:
      return "FieldValueDuplicate";
    case Type::kNotSupported:
      return "FieldValueNotSupported";
    case Type::kTooMany:
      return "FieldValueTooMany";
    case Type::kTooLong:
      return "FieldValueTooLong";
    case Type::kForbidden:
      return "FieldValueForbidden";
  }
  return "FieldValueInvalid";
}

FieldError Invalid(std::string field, std::string_view value, std::string detail) {
  return {FieldError::Type::kInvalid, std::move(field), GoQuote(value), std::move(detail)};
}
FieldError InvalidInt(std::string field, int64_t value, std::string detail) {
  return {FieldError::Type::kInvalid, std::move(field), std::to_string(value), std::move(detail)};
}
FieldError Required(std::string field, std::string detail) {
  return {FieldError::Type::kRequired, std::move(field), "", std::move(detail)};
}
FieldError Duplicate(std::string field, std::string_view value) {
  return {FieldError::Type::kDuplicate, std::move(field), GoQuote(value), ""};
}
FieldError NotSupported(std::string field, std::string_view value,
                        const std::vector<std::string>& supported) {
  std::vector<std::string> quoted;
  for (const std::string& s : supported) quoted.push_back(GoQuote(s));
  return {FieldError::Type::kNotSupported, std::move(field), GoQuote(value),
          "supported values: " + absl::StrJoin(quoted, ", ")};
}
FieldError TooMany(std::string field, int64_t actual, int64_t max) {
  return {FieldError::Type::kTooMany, std::move(field), std::to_string(actual),
          absl::StrCat("must have at most ", max, " items")};
}
FieldError TooLong(std::string field, int64_t max) {
  return {FieldError::Type::kTooLong, std::move(field), "",
          absl::StrCat("may not be more than ", max, " bytes")};
}
FieldError Forbidden(std::string field, std::string detail) {
  return {FieldError::Type::kForbidden, std::move(field), "", std::move(detail)};
}

nlohmann::json StatusObject(int code, std::string_view reason, std::string_view message,
                            const nlohmann::json& details) {
  nlohmann::json out = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  if (details.is_object()) out["details"] = details;
  return out;
}

absl::Status NotFoundError(const KindInfo& kind, std::string_view name) {
  return WithStatusObject(
      absl::StatusCode::kNotFound,
      StatusObject(404, "NotFound",
                   absl::StrCat(QualifiedResource(kind), " ", GoQuote(name), " not found"),
                   {{"name", name}, {"group", kind.group}, {"kind", kind.resource}}));
}

absl::Status AlreadyExistsError(const KindInfo& kind, std::string_view name) {
  return WithStatusObject(
      absl::StatusCode::kAlreadyExists,
      StatusObject(409, "AlreadyExists",
                   absl::StrCat(QualifiedResource(kind), " ", GoQuote(name), " already exists"),
                   {{"name", name}, {"group", kind.group}, {"kind", kind.resource}}));
}

absl::Status ConflictError(const KindInfo& kind, std::string_view name, std::string_view why) {
  return WithStatusObject(
      absl::StatusCode::kAborted,
      StatusObject(409, "Conflict",
                   absl::StrCat("Operation cannot be fulfilled on ", QualifiedResource(kind), " ",
                                GoQuote(name), ": ", std::string(why)),
                   {{"name", name}, {"group", kind.group}, {"kind", kind.resource}}));
}

absl::Status InvalidError(const KindInfo& kind, std::string_view name, const FieldErrors& errors) {
  std::vector<std::string> texts;
  nlohmann::json causes = nlohmann::json::array();
  for (const FieldError& e : errors) {
    texts.push_back(e.ToString());
    causes.push_back({{"reason", e.CauseReason()}, {"message", e.Body()}, {"field", e.field}});
  }
  // utilerrors.NewAggregate(...).Error(): one error alone, several in brackets.
  std::string aggregate =
      texts.size() == 1 ? texts[0] : absl::StrCat("[", absl::StrJoin(texts, ", "), "]");
  std::string message = absl::StrCat(QualifiedKind(kind), " ", GoQuote(name), " is invalid");
  if (!texts.empty()) absl::StrAppend(&message, ": ", aggregate);
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(
          422, "Invalid", message,
          {{"name", name}, {"group", kind.group}, {"kind", kind.name}, {"causes", causes}}));
}

absl::Status UidPreconditionError(const KindInfo& kind, std::string_view name,
                                  std::string_view want, std::string_view have) {
  return ConflictError(kind, name,
                       absl::StrCat("Precondition failed: UID in precondition: ", std::string(want),
                                    ", UID in object meta: ", std::string(have)));
}

absl::Status InvalidMessageError(const KindInfo& kind, std::string_view name,
                                 std::string_view message) {
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(422, "Invalid", message,
                   {{"name", name}, {"group", kind.group}, {"kind", kind.name}}));
}

absl::Status BadRequestError(std::string_view message) {
  return WithStatusObject(absl::StatusCode::kInvalidArgument,
                          StatusObject(400, "BadRequest", message));
}

absl::Status UnprocessableEntityError(std::string_view why) {
  const std::string message(why);
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(422, "Invalid", "the server rejected our request due to an error in our request",
                   nlohmann::json::object()),
      &message);
}

absl::Status RequestEntityTooLargeError(std::string_view message) {
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(413, "RequestEntityTooLarge",
                   absl::StrCat("Request entity too large: ", std::string(message))));
}

absl::Status ForbiddenError(const KindInfo& kind, std::string_view name, std::string_view why) {
  return WithStatusObject(
      absl::StatusCode::kPermissionDenied,
      StatusObject(403, "Forbidden",
                   absl::StrCat(QualifiedResource(kind), " ", GoQuote(name),
                                " is forbidden: ", std::string(why)),
                   {{"name", name}, {"group", kind.group}, {"kind", kind.resource}}));
}

absl::Status MethodNotAllowedError(const KindInfo& kind, std::string_view verb) {
  return WithStatusObject(
      absl::StatusCode::kUnimplemented,
      StatusObject(405, "MethodNotAllowed",
                   absl::StrCat(std::string(verb), " is not supported on resources of kind ",
                                GoQuote(kind.resource)),
                   {{"group", kind.group}, {"kind", kind.resource}}));
}

absl::Status UnknownResourceError() {
  return WithStatusObject(
      absl::StatusCode::kNotFound,
      StatusObject(404, "NotFound", "the server could not find the requested resource",
                   nlohmann::json::object()));
}

absl::Status ExpiredError(std::string_view message) {
  return WithStatusObject(absl::StatusCode::kOutOfRange, StatusObject(410, "Expired", message));
}

absl::Status TooManyRequestsError(std::string_view message, int retry_after_seconds) {
  return WithStatusObject(
      absl::StatusCode::kResourceExhausted,
      StatusObject(429, "TooManyRequests", message, {{"retryAfterSeconds", retry_after_seconds}}));
}

absl::Status TimeoutError(std::string_view message, int retry_after_seconds) {
  return WithStatusObject(absl::StatusCode::kDeadlineExceeded,
                          StatusObject(504, "Timeout", "Timeout: " + std::string(message),
                                       {{"retryAfterSeconds", retry_after_seconds}}));
}

absl::Status UnsupportedMediaTypeError(std::string_view content_type, std::string_view message) {
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(415, "UnsupportedMediaType",
                   absl::StrCat(std::string(message), " (got ", GoQuote(content_type), ")")));
}

absl::Status UnsupportedMediaTypeError(std::string_view content_type) {
  return WithStatusObject(
      absl::StatusCode::kInvalidArgument,
      StatusObject(415, "UnsupportedMediaType",
                   absl::StrCat("the body of the request was in an unknown format - accepted "
                                "media types include: application/json, "
                                "application/vnd.kubernetes.protobuf (got ",
                                GoQuote(content_type), ")")));
}

nlohmann::json ToStatusObject(const absl::Status& status) {
  if (absl::optional<absl::Cord> payload = status.GetPayload(kStatusPayloadUrl)) {
    nlohmann::json parsed = nlohmann::json::parse(std::string(*payload), nullptr, false);
    if (parsed.is_object()) return parsed;
  }
  std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return StatusObject(400, "BadRequest", message);
    case absl::StatusCode::kNotFound:
      return StatusObject(404, "NotFound", message);
    case absl::StatusCode::kAlreadyExists:
      return StatusObject(409, "AlreadyExists", message);
    case absl::StatusCode::kAborted:
      return StatusObject(409, "Conflict", message);
    case absl::StatusCode::kUnauthenticated:
      return StatusObject(401, "Unauthorized", message);
    case absl::StatusCode::kPermissionDenied:
      return StatusObject(403, "Forbidden", message);
    case absl::StatusCode::kUnimplemented:
      return StatusObject(405, "MethodNotAllowed", message);
    case absl::StatusCode::kOutOfRange:
      return StatusObject(410, "Expired", message);
    default:
      return StatusObject(500, "InternalError", message);
  }
}

int HttpCode(const absl::Status& status) {
  if (status.ok()) return 200;
  return ToStatusObject(status).value("code", 500);
}

std::string Reason(const absl::Status& status) {
  if (status.ok()) return "";
  return ToStatusObject(status).value("reason", std::string());
}

}  // namespace kdp::manager::resourceapi
