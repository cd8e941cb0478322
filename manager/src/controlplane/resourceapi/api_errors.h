// Kubernetes API errors for the local resource API, as k8s.io/apimachinery/pkg/api/errors and
// pkg/util/validation/field build them: field errors that print like the API server's
// ("spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero") and
// absl::Status values that carry the full Kubernetes Status object (reason, code, details and
// causes) as a payload, so the store and codec speak absl::Status while the REST server answers
// with exactly the Status JSON a client-go client expects. The codec, strategies and store build
// errors here; the server turns any absl::Status into (HTTP code, Status JSON) with ToStatusObject.
//
// Thread-safety: value types and pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_API_ERRORS_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_API_ERRORS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// One field.Error. `bad_value` is already rendered as Go prints it (GoQuote for strings, digits
// for numbers); empty for the types that print no value (Required, Forbidden, TooLong).
struct FieldError {
  enum class Type {
    kInvalid,
    kRequired,
    kDuplicate,
    kNotSupported,
    kTooMany,
    kTooLong,
    kForbidden
  };
  Type type = Type::kInvalid;
  std::string field;      // "spec.devices[0].name"
  std::string bad_value;  // "\"GPU_0\"", "129"
  std::string detail;     // "must be greater than zero"

  // field.Error.ErrorBody: "Invalid value: -1: must be greater than zero".
  std::string Body() const;
  // field.Error.Error: "<field>: <body>".
  std::string ToString() const;
  // "FieldValueInvalid", ... (metav1.CauseType).
  std::string CauseReason() const;
};

// Builders mirroring field.Invalid, field.Required, ... String values are quoted by the builder.
FieldError Invalid(std::string field, std::string_view value, std::string detail);
FieldError InvalidInt(std::string field, int64_t value, std::string detail);
FieldError Required(std::string field, std::string detail = "");
FieldError Duplicate(std::string field, std::string_view value);
FieldError NotSupported(std::string field, std::string_view value,
                        const std::vector<std::string>& supported);
FieldError TooMany(std::string field, int64_t actual, int64_t max);
FieldError TooLong(std::string field, int64_t max);
FieldError Forbidden(std::string field, std::string detail);

using FieldErrors = std::vector<FieldError>;

// A Kubernetes Status object (kind Status, apiVersion v1, status Failure) for `code`, `reason`
// and `message`; `details` is copied when it is an object.
nlohmann::json StatusObject(int code, std::string_view reason, std::string_view message,
                            const nlohmann::json& details = nullptr);

// apierrors.NewNotFound: NOT_FOUND `resourceclaims.resource.k8s.io "x" not found`, 404.
absl::Status NotFoundError(const KindInfo& kind, std::string_view name);
// apierrors.NewAlreadyExists: ALREADY_EXISTS `... "x" already exists`, 409.
absl::Status AlreadyExistsError(const KindInfo& kind, std::string_view name);
// apierrors.NewConflict: ABORTED `Operation cannot be fulfilled on ... "x": <why>`, 409.
absl::Status ConflictError(const KindInfo& kind, std::string_view name, std::string_view why);
// A delete or update whose precondition names another UID than the object's: the Conflict the
// API server's storage layer answers (`Precondition failed: UID in precondition: <want>, UID in
// object meta: <have>`).
absl::Status UidPreconditionError(const KindInfo& kind, std::string_view name,
                                  std::string_view want, std::string_view have);
// The optimistic-concurrency `why` of the API server's storage layer.
inline constexpr char kObjectModified[] =
    "the object has been modified; please apply your changes to the latest version and try again";
// apierrors.NewInvalid: INVALID_ARGUMENT `ResourceClaim.resource.k8s.io "x" is invalid: <errs>`
// (one error as is, several as "[a, b]"), 422 with one cause per field error.
// REQUIRES: !errors.empty().
absl::Status InvalidError(const KindInfo& kind, std::string_view name, const FieldErrors& errors);
// The same 422 Invalid for a message already rendered as `<Kind> "<name>" is invalid: <errors>`
// (kdpctl's Pod parser words its errors so), without causes.
absl::Status InvalidMessageError(const KindInfo& kind, std::string_view name,
                                 std::string_view message);
// apierrors.NewBadRequest: INVALID_ARGUMENT `message`, 400 reason BadRequest.
absl::Status BadRequestError(std::string_view message);
// apierrors.NewGenericServerResponse(422, "", GroupResource{}, "", why, 0, false), what the API
// server answers for a JSON patch that decodes but does not apply: 422 reason Invalid, message
// "the server rejected our request due to an error in our request", empty details. INVALID_ARGUMENT
// whose absl message is `why` (for logs and tests; the answer does not carry it, as upstream's
// does not).
absl::Status UnprocessableEntityError(std::string_view why);
// apierrors.NewRequestEntityTooLargeError: INVALID_ARGUMENT, 413 reason RequestEntityTooLarge
// `Request entity too large: <message>`.
absl::Status RequestEntityTooLargeError(std::string_view message);
// 403 Forbidden: `<resource> "<name>" is forbidden: <why>` (an admission plugin's refusal).
absl::Status ForbiddenError(const KindInfo& kind, std::string_view name, std::string_view why);
// apierrors.NewMethodNotSupported: UNIMPLEMENTED `<verb> is not supported on resources of kind
// "<resource>"`, 405 reason MethodNotAllowed.
absl::Status MethodNotAllowedError(const KindInfo& kind, std::string_view verb);
// The router's 404 for an unknown path, group, version or resource: NOT_FOUND `the server could
// not find the requested resource`, reason NotFound, empty details.
absl::Status UnknownResourceError();
// 410 Expired `too old resource version: <want> (<oldest>)`, OUT_OF_RANGE (for watches).
absl::Status ExpiredError(std::string_view message);
// apierrors.NewTooManyRequests: RESOURCE_EXHAUSTED, 429 reason TooManyRequests, with
// details.retryAfterSeconds (client-go waits that long and retries).
absl::Status TooManyRequestsError(std::string_view message, int retry_after_seconds);
// apierrors.NewTimeoutError: DEADLINE_EXCEEDED, 504 reason Timeout `Timeout: <message>`, with
// details.retryAfterSeconds (a resourceVersion newer than the store's, after waiting for it).
absl::Status TimeoutError(std::string_view message, int retry_after_seconds);
// 415 UnsupportedMediaType, INVALID_ARGUMENT.
absl::Status UnsupportedMediaTypeError(std::string_view content_type);
// 415 with `message` and the content type given: a PATCH body kind the server does not take.
absl::Status UnsupportedMediaTypeError(std::string_view content_type, std::string_view message);

// The Status object and HTTP code for `status`: the payload attached by the builders above, or,
// for a plain absl::Status, one derived from its code (INVALID_ARGUMENT 400 BadRequest,
// NOT_FOUND 404 NotFound, ALREADY_EXISTS/ABORTED 409, UNAUTHENTICATED 401, PERMISSION_DENIED 403,
// UNIMPLEMENTED 405, OUT_OF_RANGE 410, else 500 InternalError). REQUIRES: !status.ok().
nlohmann::json ToStatusObject(const absl::Status& status);
// The HTTP code of ToStatusObject(status).
int HttpCode(const absl::Status& status);
// The Status reason ("NotFound", "Invalid", ...) of `status`; "" when ok.
std::string Reason(const absl::Status& status);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_API_ERRORS_H_
