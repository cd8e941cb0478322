#include "manager/src/lifecycle/pod_admission.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/admission/errors.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/pod/pod_manifest.h"

namespace kdp::manager {
namespace {

using Json = nlohmann::json;
using resourceapi::InfoOf;
using resourceapi::Kind;

// The parser's error as the API server words it: without the source prefix, 422 Invalid for a
// broken validation rule (`Pod "x" is invalid: ...`), 400 for a body that is not a Pod at all.
absl::Status ApiError(const absl::Status& parsed, const std::string& source,
                      const std::string& name) {
  std::string message(parsed.message());
  const std::string prefix = absl::StrCat(source, ": ");
  if (absl::StartsWith(message, prefix)) message.erase(0, prefix.size());
  if (absl::StrContains(message, "\" is invalid: ")) {
    return resourceapi::InvalidMessageError(InfoOf(Kind::kPod), name, message);
  }
  return resourceapi::BadRequestError(
      absl::StrCat("Pod in version \"v1\" cannot be handled as a Pod: ", message));
}

}  // namespace

class PodAdmission::NameLock {
 public:
  NameLock(PodAdmission* admission, std::string namespace_, std::string name)
      : admission_(admission), key_(std::move(namespace_), std::move(name)) {
    absl::MutexLock lock(&admission_->mu_);
    auto free = [this] {
      admission_->mu_.AssertHeld();
      return !admission_->busy_names_.contains(key_);
    };
    admission_->mu_.Await(absl::Condition(&free));
    admission_->busy_names_.insert(key_);
  }
  ~NameLock() {
    absl::MutexLock lock(&admission_->mu_);
    admission_->busy_names_.erase(key_);
  }
  NameLock(const NameLock&) = delete;
  NameLock& operator=(const NameLock&) = delete;

 private:
  PodAdmission* const admission_;
  const std::pair<std::string, std::string> key_;
};

absl::StatusOr<AdmitResult> PodAdmission::Admit(Pod pod, Json submitted, bool retry_refused) {
  const NameLock name_lock(this, pod.namespace_, pod.name);
  const std::string namespace_ = pod.namespace_, name = pod.name;  // `pod` is moved below
  if (retry_refused && options_.status != nullptr) {
    (void)options_.status->DeleteRejected(pod.namespace_, pod.name);  // NOT_FOUND: none
  }
  if (options_.status != nullptr && options_.status->Rejected(pod.namespace_, pod.name).ok()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "pod ", pod.namespace_, "/", pod.name,
        " already exists: it was refused and stays, as the kubelet leaves a rejected pod, until "
        "it is deleted"));
  }
  // Kept with the pod (and recorded with it), so the API shows the client's object from the
  // first Sync that sees the pod, and again after a restart.
  if (submitted.is_object()) pod.api_object = submitted.dump();
  absl::StatusOr<AdmitResult> result = pods_->Admit(std::move(pod));
  if (!result.ok()) return result;
  if (!result->admitted) {
    RecordRejection(*result);
    if (options_.status != nullptr) {
      // The refusal is the answer: it must be kept as the API server keeps every Pod it
      // acknowledged, or not be given.
      if (absl::Status recorded = options_.status->RecordRejected(*result, std::move(submitted));
          !recorded.ok()) {
        return absl::Status(
            recorded.code(),
            absl::StrCat("the pod was refused (", result->reason, ": ", result->message,
                         "), and the refusal could not be recorded: ", recorded.message()));
      }
    }
  }
  // This pod only: a sync of every pod after each admission made admissions O(pods).
  if (options_.status != nullptr) options_.status->SyncPod(namespace_, name);
  return result;
}

void PodAdmission::RecordRejection(const AdmitResult& result) {
  if (options_.events == nullptr) return;
  // The scheduler reports what it could not place (claims); the kubelet its admission errors.
  const bool scheduler = result.reason == errors::kFailedScheduling;
  options_.events->Record({.kind = "Pod",
                           .namespace_ = result.pod.pod.namespace_,
                           .name = result.pod.pod.name,
                           .uid = result.pod.pod.uid},
                          {.component = scheduler ? "default-scheduler" : "kubelet",
                           .host = scheduler ? "" : options_.node_name},
                          kEventWarning, result.reason, result.message);
}

absl::StatusOr<PodDeletion> PodAdmission::Delete(const std::string& namespace_,
                                                 const std::string& name, const std::string& uid) {
  const NameLock name_lock(this, namespace_, name);
  PodDeletion deletion;
  if (options_.status != nullptr) {
    if (absl::StatusOr<Json> refused = options_.status->Rejected(namespace_, name); refused.ok()) {
      deletion.uid = (*refused)["metadata"].value("uid", "");
      if (!uid.empty() && uid != deletion.uid) {
        return resourceapi::UidPreconditionError(InfoOf(Kind::kPod), name, uid, deletion.uid);
      }
      KDP_ASSIGN_OR_RETURN(deletion.object, options_.status->DeleteRejected(namespace_, name));
      return deletion;
    }
  }
  std::optional<AdmittedPod> running = pods_->Get(namespace_, name);
  if (running.has_value() && !uid.empty() && uid != running->pod.uid) {
    return resourceapi::UidPreconditionError(InfoOf(Kind::kPod), name, uid, running->pod.uid);
  }
  if (options_.status != nullptr) {
    absl::StatusOr<Json> object = options_.status->Get(namespace_, name);
    if (object.ok()) deletion.object = *std::move(object);
  }
  absl::StatusOr<std::string> deleted = pods_->Delete(namespace_, name);
  if (options_.status != nullptr) options_.status->SyncPod(namespace_, name);
  if (!deleted.ok()) return deleted.status();
  deletion.uid = *deleted;
  if (options_.persister != nullptr) {
    // The deletion is recorded already: an error now would read as "not deleted". The released
    // claims are written by the background writer once it can (and released again at start if
    // the manager stops before).
    if (absl::Status flushed = options_.persister->Flush(); !flushed.ok()) {
      deletion.warning = absl::StrCat(
          "the pod is deleted, but the resource API's state could not be written yet (retried in "
          "the background): ",
          flushed.message());
      KDP_LOG_WARNING("Pod deleted; writing the resource API's state failed, retrying", "pod",
                      absl::StrCat(namespace_, "/", name), "err", flushed.message());
    }
  }
  return deletion;
}

absl::StatusOr<Json> PodAdmission::CreatePod(Json object) {
  // The API server gives every object its UID; one in the request is not kept.
  if (object["metadata"].is_object()) object["metadata"].erase("uid");
  object["apiVersion"] = "v1";
  object["kind"] = "Pod";
  const std::string name = object["metadata"].value("name", "");
  constexpr char kSource[] = "request";
  absl::StatusOr<Pod> pod = ParsePodManifest(object.dump(), kSource);
  if (!pod.ok()) return ApiError(pod.status(), kSource, name);
  // The name the parser made from metadata.generateName.
  object["metadata"]["name"] = pod->name;
  object["metadata"].erase("generateName");
  const std::string namespace_ = pod->namespace_;
  const std::string pod_name = pod->name;
  absl::StatusOr<AdmitResult> result = Admit(*std::move(pod), std::move(object));
  if (absl::IsAlreadyExists(result.status())) {
    return resourceapi::AlreadyExistsError(InfoOf(Kind::kPod), pod_name);
  }
  if (!result.ok()) return result.status();
  if (options_.status == nullptr) {
    return absl::FailedPreconditionError("kdp-manager runs without the local API's Pods");
  }
  return options_.status->Get(namespace_, pod_name);
}

absl::StatusOr<Json> PodAdmission::DeletePod(const std::string& namespace_, const std::string& name,
                                             const std::string& uid) {
  absl::StatusOr<PodDeletion> deleted = Delete(namespace_, name, uid);
  if (absl::IsNotFound(deleted.status())) {
    return resourceapi::NotFoundError(InfoOf(Kind::kPod), name);
  }
  if (!deleted.ok()) return deleted.status();
  return std::move(deleted->object);
}

}  // namespace kdp::manager
