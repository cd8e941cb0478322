#include "manager/src/controlplane/resourceclaim/pod_claim_controller.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/controlplane/scheduling/claim_allocator.h"

namespace kdp::manager::resourceclaim {
namespace {

using resourceapi::ConsumerReference;
using resourceapi::ResourceClaim;

// resource.k8s.io ResourceClaimReservedForMaxSize.
constexpr std::size_t kReservedForMaxSize = 256;
// Status writes retried after a conflict (the claim changed through the REST API meanwhile).
constexpr int kConflictRetries = 5;

std::string PodRef(const Pod& pod) { return absl::StrCat(pod.namespace_, "/", pod.name); }

bool IsOwnedBy(const ResourceClaim& claim, const Pod& pod) {
  return std::any_of(claim.metadata.owner_references.begin(), claim.metadata.owner_references.end(),
                     [&](const auto& owner) {
                       return owner.controller && owner.uid == pod.uid && owner.kind == "Pod";
                     });
}

bool ReservedFor(const ResourceClaim& claim, const std::string& pod_uid) {
  return std::any_of(claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
                     [&](const ConsumerReference& ref) { return ref.uid == pod_uid; });
}

// The device classes a claim's requests (and sub-requests) name.
std::set<std::string> ClassesOf(const ResourceClaim& claim) {
  std::set<std::string> names;
  for (const resourceapi::DeviceRequest& request : claim.spec.devices.requests) {
    if (request.exactly.has_value()) names.insert(request.exactly->device_class_name);
    for (const resourceapi::DeviceSubRequest& sub : request.first_available) {
      names.insert(sub.request.device_class_name);
    }
  }
  return names;
}

}  // namespace

std::string ClaimNameFor(const Pod& pod, const PodResourceClaim& claim) {
  if (!claim.resource_claim_name.empty()) return claim.resource_claim_name;
  auto it = pod.resource_claim_statuses.find(claim.name);
  return it == pod.resource_claim_statuses.end() ? "" : it->second;
}

std::string GenerateClaimNamePrefix(const std::string& pod_name, const std::string& pod_claim) {
  // pkg/controller/resourceclaim handleClaim: 57 leaves room for the 5 random characters of a
  // 63-character name. Both names are cut in proportion to their length, so that a long pod name
  // does not swallow the claim name, as the API server's cut at the end would.
  constexpr std::size_t kMaxBaseLength = 57;
  const std::string base = absl::StrCat(pod_name, "-", pod_claim, "-");
  if (base.size() <= kMaxBaseLength) return base;
  const std::size_t length = base.size();
  return absl::StrCat(pod_name.substr(0, pod_name.size() * kMaxBaseLength / length), "-",
                      pod_claim.substr(0, pod_claim.size() * kMaxBaseLength / length));
}

absl::StatusOr<ResourceClaim> PodClaimController::ClaimOf(Pod* pod,
                                                          const PodResourceClaim& pod_claim,
                                                          bool* generated) {
  *generated = pod_claim.resource_claim_name.empty();
  if (!*generated) {
    absl::StatusOr<ResourceClaim> claim =
        store_->GetClaim(pod->namespace_, pod_claim.resource_claim_name);
    if (absl::IsNotFound(claim.status())) {
      return absl::NotFoundError(absl::StrCat("pod claim \"", pod_claim.name, "\": ResourceClaim ",
                                              pod->namespace_, "/", pod_claim.resource_claim_name,
                                              " not found"));
    }
    return claim;
  }
  // A claim generated earlier for this pod (a repeated Reserve) is reused.
  if (std::string name = ClaimNameFor(*pod, pod_claim); !name.empty()) {
    return store_->GetClaim(pod->namespace_, name);
  }
  absl::StatusOr<resourceapi::ResourceClaimTemplate> claim_template =
      store_->GetClaimTemplate(pod->namespace_, pod_claim.resource_claim_template_name);
  if (!claim_template.ok()) {
    if (absl::IsNotFound(claim_template.status())) {
      return absl::NotFoundError(
          absl::StrCat("pod claim \"", pod_claim.name, "\": ResourceClaimTemplate ",
                       pod->namespace_, "/", pod_claim.resource_claim_template_name, " not found"));
    }
    return claim_template.status();
  }
  ResourceClaim claim;
  claim.metadata.generate_name = GenerateClaimNamePrefix(pod->name, pod_claim.name);
  claim.metadata.namespace_ = pod->namespace_;
  claim.metadata.labels = claim_template->spec.metadata.labels;
  claim.metadata.annotations = claim_template->spec.metadata.annotations;
  claim.metadata.annotations[resourceapi::kPodClaimNameAnnotation] = pod_claim.name;
  claim.metadata.owner_references = {{.api_version = "v1",
                                      .kind = "Pod",
                                      .name = pod->name,
                                      .uid = pod->uid,
                                      .controller = true,
                                      .block_owner_deletion = true}};
  claim.spec = claim_template->spec.spec;
  absl::StatusOr<ResourceClaim> created = store_->CreateClaim(claim);
  if (!created.ok()) {
    return absl::Status(created.status().code(),
                        absl::StrCat("pod claim \"", pod_claim.name,
                                     "\": create ResourceClaim: ", created.status().message()));
  }
  pod->resource_claim_statuses[pod_claim.name] = created->metadata.name;
  KDP_LOG_INFO("ResourceClaim created from template", "pod", PodRef(*pod), "claim",
               created->metadata.name, "template", pod_claim.resource_claim_template_name);
  return created;
}

absl::StatusOr<resourceapi::AllocationResult> PodClaimController::Allocate(
    const ResourceClaim& claim) {
  scheduling::AllocatorInputs inputs;
  inputs.node_name = store_->node_name();
  inputs.node_labels = store_->NodeLabels();
  // Every slice: those of other nodes are dropped by node selection, as the scheduler's are.
  KDP_ASSIGN_OR_RETURN(inputs.slices, store_->ListSlices(""));
  for (const std::string& name : ClassesOf(claim)) {
    absl::StatusOr<resourceapi::DeviceClass> device_class = store_->GetDeviceClass(name);
    if (device_class.ok()) {
      inputs.classes.emplace(name, *std::move(device_class));
    } else if (!absl::IsNotFound(device_class.status())) {
      return device_class.status();
    }  // a missing class is the allocator's error, naming the request
  }
  KDP_ASSIGN_OR_RETURN(std::vector<ResourceClaim> claims, store_->ListClaims(""));
  for (const ResourceClaim& other : claims) {
    if (other.metadata.uid == claim.metadata.uid || !other.status.allocation.has_value()) continue;
    scheduling::AddAllocation(*other.status.allocation, &inputs);
  }
  return scheduling::Allocate(claim, inputs);
}

absl::Status PodClaimController::AllocateAndReserve(const Pod& pod,
                                                    const PodResourceClaim& pod_claim,
                                                    ResourceClaim claim) {
  const std::string where = absl::StrCat("pod claim \"", pod_claim.name, "\" (ResourceClaim ",
                                         claim.metadata.namespace_, "/", claim.metadata.name, ")");
  for (int attempt = 0;; ++attempt) {
    if (claim.status.reserved_for.size() >= kReservedForMaxSize && !ReservedFor(claim, pod.uid)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, ": already reserved for the maximum of 256 consumers"));
    }
    if (!claim.status.allocation.has_value()) {
      absl::StatusOr<resourceapi::AllocationResult> allocation = Allocate(claim);
      if (!allocation.ok()) {
        return absl::Status(allocation.status().code(),
                            absl::StrCat(where, ": ", allocation.status().message()));
      }
      claim.status.allocation = *std::move(allocation);
    }
    if (!ReservedFor(claim, pod.uid)) {
      claim.status.reserved_for.push_back(
          {.api_group = "", .resource = "pods", .name = pod.name, .uid = pod.uid});
    }
    absl::StatusOr<ResourceClaim> written = store_->UpdateClaimStatus(claim);
    if (written.ok()) return absl::OkStatus();
    const bool conflict = written.status().code() == absl::StatusCode::kAborted ||
                          written.status().code() == absl::StatusCode::kAlreadyExists;
    if (!conflict || attempt + 1 >= kConflictRetries) {
      return absl::Status(written.status().code(),
                          absl::StrCat(where, ": write status: ", written.status().message()));
    }
    // Changed meanwhile (a client wrote it): start over from what is stored now.
    KDP_ASSIGN_OR_RETURN(claim, store_->GetClaim(claim.metadata.namespace_, claim.metadata.name));
  }
}

absl::Status PodClaimController::Reserve(Pod* pod) {
  for (const PodResourceClaim& pod_claim : pod->resource_claims) {
    bool generated = false;
    absl::StatusOr<ResourceClaim> claim = ClaimOf(pod, pod_claim, &generated);
    absl::Status status = claim.status();
    if (status.ok() && claim->metadata.deletion_timestamp.has_value()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("pod claim \"", pod_claim.name, "\": ResourceClaim ", claim->metadata.name,
                       " is being deleted"));
    }
    if (status.ok() && generated && !IsOwnedBy(*claim, *pod)) {
      status = absl::FailedPreconditionError(
          absl::StrCat("pod claim \"", pod_claim.name, "\": ResourceClaim ", claim->metadata.name,
                       " was not created for pod ", PodRef(*pod)));
    }
    if (status.ok()) status = AllocateAndReserve(*pod, pod_claim, *std::move(claim));
    if (!status.ok()) {
      Release(*pod);
      return status;
    }
  }
  return absl::OkStatus();
}

void PodClaimController::Release(const Pod& pod) {
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    const std::string name = ClaimNameFor(pod, pod_claim);
    if (name.empty()) continue;
    for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
      absl::StatusOr<ResourceClaim> claim = store_->GetClaim(pod.namespace_, name);
      if (!claim.ok()) break;  // gone already (or never created)
      absl::Status done;
      if (pod_claim.resource_claim_name.empty() && IsOwnedBy(*claim, pod)) {
        // The garbage collector deletes a claim its owner pod left behind.
        done = store_->DeleteClaim(pod.namespace_, name, claim->metadata.uid);
      } else {
        std::erase_if(claim->status.reserved_for,
                      [&](const ConsumerReference& ref) { return ref.uid == pod.uid; });
        // Reserved by nobody: the resourceclaim controller deallocates it.
        if (claim->status.reserved_for.empty()) claim->status.allocation.reset();
        done = store_->UpdateClaimStatus(*claim).status();
      }
      if (done.ok() || absl::IsNotFound(done)) break;
      KDP_LOG_WARNING("Releasing a ResourceClaim failed", "pod", PodRef(pod), "claim", name, "err",
                      done.message());
    }
  }
}

absl::Status PodClaimController::Prepare(const Pod& pod) {
  if (absl::Status durable = store_->MakeDurable(); !durable.ok()) {
    return absl::Status(durable.code(), absl::StrCat("write the pod's ResourceClaims before "
                                                     "preparing them: ",
                                                     durable.message()));
  }
  return dra_->PrepareResources(pod);
}

void PodClaimController::ReleaseOrphans(const std::set<std::string>& active_pod_uids) {
  absl::StatusOr<std::vector<ResourceClaim>> claims = store_->ListClaims("");
  if (!claims.ok()) {
    KDP_LOG_WARNING("Cannot list ResourceClaims to release those of pods that are gone", "err",
                    claims.status().message());
    return;
  }
  auto gone = [&](const ConsumerReference& ref) {
    return ref.api_group.empty() && ref.resource == "pods" && !active_pod_uids.contains(ref.uid);
  };
  for (ResourceClaim& claim : *claims) {
    const std::string name = absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name);
    // The DRA manager's record of a gone pod's reference may not have reached the disk (it is
    // made durable with the pod's record, after the driver was called): the reservation, durable
    // before any prepare, stands in for it, so the reconcile loop unprepares what the driver may
    // have prepared. Until that is recorded the claim is kept as it is.
    absl::Status adopted;
    for (const ConsumerReference& ref : claim.status.reserved_for) {
      if (gone(ref) && adopted.ok()) adopted = dra_->AdoptReservation(claim, ref.uid);
    }
    if (!adopted.ok()) {
      KDP_LOG_WARNING(
          "A ResourceClaim held for a pod that is gone is kept: its drivers could not "
          "be asked to unprepare it",
          "claim", name, "err", adopted.message());
      continue;
    }
    auto owner =
        std::find_if(claim.metadata.owner_references.begin(), claim.metadata.owner_references.end(),
                     [](const auto& ref) { return ref.controller && ref.kind == "Pod"; });
    absl::Status done;
    if (owner != claim.metadata.owner_references.end() && !active_pod_uids.contains(owner->uid)) {
      // The garbage collector deletes a claim whose owner pod is gone.
      done =
          store_->DeleteClaim(claim.metadata.namespace_, claim.metadata.name, claim.metadata.uid);
    } else if (std::any_of(claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
                           gone)) {
      std::erase_if(claim.status.reserved_for, gone);
      if (claim.status.reserved_for.empty()) claim.status.allocation.reset();
      done = store_->UpdateClaimStatus(claim).status();
    } else {
      continue;
    }
    if (done.ok()) {
      KDP_LOG_INFO("Released a ResourceClaim held for a pod that is gone", "claim", name);
    } else if (!absl::IsNotFound(done)) {
      KDP_LOG_WARNING("Releasing a ResourceClaim held for a pod that is gone failed", "claim", name,
                      "err", done.message());
    }
  }
}

std::vector<PodClaimView> PodClaimController::Describe(const Pod& pod) const {
  std::map<std::string, dra::ClaimInfo> cached;
  for (dra::ClaimInfo& info : dra_->Claims()) cached.emplace(info.key(), std::move(info));
  std::vector<PodClaimView> views;
  for (const PodResourceClaim& pod_claim : pod.resource_claims) {
    PodClaimView view{.pod_claim_name = pod_claim.name,
                      .claim_name = ClaimNameFor(pod, pod_claim),
                      .claim_uid = "",
                      .devices = {}};
    auto it = cached.find(dra::ClaimInfoKey(view.claim_name, pod.namespace_));
    if (it != cached.end()) {
      view.claim_uid = it->second.claim_uid();
      for (const auto& [driver, state] : it->second.state().driver_state) {
        for (const dra::state::Device& device : state.devices) {
          view.devices.emplace_back(driver, device);
        }
      }
    }
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace kdp::manager::resourceclaim
