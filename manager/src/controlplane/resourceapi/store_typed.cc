// The typed accessors of ObjectStore (store.h): thin wrappers over the JSON API that decode with
// the codec, for the manager's own reads and writes. Slices and claims are read from decoded
// copies that a commit of the object drops.
#include <string>
#include <utility>

#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {

absl::StatusOr<const ResourceSlice*> ObjectStore::DecodedSliceLocked(const Key& key) const {
  const Objects& objects = objects_[static_cast<size_t>(Kind::kResourceSlice)];
  auto stored = objects.find(key);
  if (stored == objects.end()) return nullptr;
  auto it = decoded_slices_.find(key);
  if (it == decoded_slices_.end()) {
    absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(stored->second);
    if (!slice.ok()) return slice.status();
    it = decoded_slices_.emplace(key, *std::move(slice)).first;
  }
  return &it->second;
}

absl::StatusOr<const ResourceClaim*> ObjectStore::DecodedClaimLocked(const Key& key) const {
  const Objects& objects = objects_[static_cast<size_t>(Kind::kResourceClaim)];
  auto stored = objects.find(key);
  if (stored == objects.end()) return nullptr;
  auto it = decoded_claims_.find(key);
  if (it == decoded_claims_.end()) {
    absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(stored->second);
    if (!claim.ok()) return claim.status();
    it = decoded_claims_.emplace(key, *std::move(claim)).first;
  }
  return &it->second;
}

absl::StatusOr<std::vector<ResourceSlice>> ObjectStore::ListSlices(std::string_view node_name,
                                                                   std::string_view driver) const {
  absl::MutexLock lock(&mu_);
  std::vector<ResourceSlice> out;
  for (const auto& [key, object] : objects_[static_cast<size_t>(Kind::kResourceSlice)]) {
    absl::StatusOr<const ResourceSlice*> slice = DecodedSliceLocked(key);
    if (!slice.ok()) return slice.status();
    // As the field selectors spec.nodeName and spec.driver would (empty: any).
    if (!node_name.empty() && (*slice)->spec.node_name != node_name) continue;
    if (!driver.empty() && (*slice)->spec.driver != driver) continue;
    out.push_back(**slice);
  }
  return out;
}

int ObjectStore::DeleteSlices(std::string_view node_name, std::string_view driver) {
  ListOptions options{.fields = FieldSelector::Equals({{"spec.nodeName", std::string(node_name)},
                                                       {"spec.driver", std::string(driver)}})};
  return static_cast<int>(DeleteCollection(Kind::kResourceSlice, "", options).items.size());
}

absl::StatusOr<ResourceClaim> ObjectStore::GetClaim(std::string_view namespace_,
                                                    std::string_view name) const {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<const ResourceClaim*> claim =
      DecodedClaimLocked({std::string(namespace_), std::string(name)});
  if (!claim.ok()) return claim.status();
  if (*claim == nullptr) return NotFoundError(InfoOf(Kind::kResourceClaim), name);
  return **claim;
}

absl::StatusOr<std::vector<ResourceClaim>> ObjectStore::ListClaims(
    std::string_view namespace_) const {
  absl::MutexLock lock(&mu_);
  std::vector<ResourceClaim> out;
  for (const auto& [key, object] : objects_[static_cast<size_t>(Kind::kResourceClaim)]) {
    if (!namespace_.empty() && key.first != namespace_) continue;
    absl::StatusOr<const ResourceClaim*> claim = DecodedClaimLocked(key);
    if (!claim.ok()) return claim.status();
    out.push_back(**claim);
  }
  return out;
}

absl::StatusOr<ResourceClaim> ObjectStore::CreateClaim(const ResourceClaim& claim) {
  nlohmann::json object = EncodeResourceClaim(claim);
  object["metadata"].erase("resourceVersion");
  absl::StatusOr<nlohmann::json> created = Create(Kind::kResourceClaim, std::move(object));
  if (!created.ok()) return created.status();
  return DecodeResourceClaim(*created);
}

absl::StatusOr<ResourceClaim> ObjectStore::UpdateClaimStatus(const ResourceClaim& claim) {
  // Start from the stored status so fields kdp does not type (status.devices) survive; the
  // resourceVersion precondition (when given) makes the read-modify-write safe.
  absl::StatusOr<nlohmann::json> stored =
      Get(Kind::kResourceClaim, claim.metadata.namespace_, claim.metadata.name);
  if (!stored.ok()) return stored.status();
  nlohmann::json object = *std::move(stored);
  nlohmann::json status = object.value("status", nlohmann::json::object());
  nlohmann::json typed = EncodeClaimStatus(claim.status);
  for (const char* key : {"allocation", "reservedFor"}) {
    if (typed.contains(key)) {
      status[key] = typed[key];
    } else {
      status.erase(key);
    }
  }
  object["status"] = std::move(status);
  object["metadata"]["resourceVersion"] = claim.metadata.resource_version;
  if (claim.metadata.resource_version.empty()) object["metadata"].erase("resourceVersion");
  if (!claim.metadata.uid.empty()) object["metadata"]["uid"] = claim.metadata.uid;
  absl::StatusOr<nlohmann::json> updated = UpdateStatus(Kind::kResourceClaim, std::move(object));
  if (!updated.ok()) return updated.status();
  return DecodeResourceClaim(*updated);
}

absl::Status ObjectStore::DeleteClaim(std::string_view namespace_, std::string_view name,
                                      std::string_view uid) {
  return Delete(Kind::kResourceClaim, namespace_, name,
                Preconditions{.uid = std::string(uid), .resource_version = ""})
      .status();
}

absl::StatusOr<DeviceClass> ObjectStore::GetDeviceClass(std::string_view name) const {
  absl::StatusOr<nlohmann::json> object = Get(Kind::kDeviceClass, "", name);
  if (!object.ok()) return object.status();
  return DecodeDeviceClass(*object);
}

absl::StatusOr<ResourceClaimTemplate> ObjectStore::GetClaimTemplate(std::string_view namespace_,
                                                                    std::string_view name) const {
  absl::StatusOr<nlohmann::json> object = Get(Kind::kResourceClaimTemplate, namespace_, name);
  if (!object.ok()) return object.status();
  return DecodeResourceClaimTemplate(*object);
}

}  // namespace kdp::manager::resourceapi
