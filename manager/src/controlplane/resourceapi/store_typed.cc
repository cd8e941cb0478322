// The typed accessors of ObjectStore (store.h): thin wrappers over the JSON API that decode with
// the codec, for the manager's own reads and writes. Slices and claims are read from decoded
// copies that a commit of the object drops.
#include <map>
#include <string>
#include <utility>

#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {
namespace {

// The decoded copy of `object`, stored at `key`, from `cache`; decoded and kept now when there is
// none. The decoder's error for a stored object it refuses.
template <typename T, typename Key>
absl::StatusOr<const T*> DecodedCopy(const Key& key, const nlohmann::json& object,
                                     std::map<Key, T>& cache,
                                     absl::StatusOr<T> (*decode)(const nlohmann::json&)) {
  auto it = cache.find(key);
  if (it == cache.end()) {
    absl::StatusOr<T> decoded = decode(object);
    if (!decoded.ok()) return decoded.status();
    it = cache.emplace(key, *std::move(decoded)).first;
  }
  return &it->second;
}

}  // namespace

absl::StatusOr<std::vector<ResourceSlice>> ObjectStore::ListSlices(std::string_view node_name,
                                                                   std::string_view driver) const {
  absl::MutexLock lock(&mu_);
  std::vector<ResourceSlice> out;
  for (const auto& [key, object] : objects_[static_cast<size_t>(Kind::kResourceSlice)]) {
    absl::StatusOr<const ResourceSlice*> slice =
        DecodedCopy(key, object, decoded_slices_, &DecodeResourceSlice);
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
  const Objects& claims = objects_[static_cast<size_t>(Kind::kResourceClaim)];
  auto stored = claims.find(Key{std::string(namespace_), std::string(name)});
  if (stored == claims.end()) return NotFoundError(InfoOf(Kind::kResourceClaim), name);
  absl::StatusOr<const ResourceClaim*> claim =
      DecodedCopy(stored->first, stored->second, decoded_claims_, &DecodeResourceClaim);
  if (!claim.ok()) return claim.status();
  return **claim;
}

absl::StatusOr<std::vector<ResourceClaim>> ObjectStore::ListClaims(
    std::string_view namespace_) const {
  absl::MutexLock lock(&mu_);
  std::vector<ResourceClaim> out;
  for (const auto& [key, object] : objects_[static_cast<size_t>(Kind::kResourceClaim)]) {
    if (!namespace_.empty() && key.first != namespace_) continue;
    absl::StatusOr<const ResourceClaim*> claim =
        DecodedCopy(key, object, decoded_claims_, &DecodeResourceClaim);
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
