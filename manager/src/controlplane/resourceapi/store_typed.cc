// The typed accessors of ObjectStore (store.h): thin wrappers over the JSON API that decode with
// the codec, for the manager's own reads and writes.
#include <string>
#include <utility>

#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace kdp::manager::resourceapi {

absl::StatusOr<std::vector<ResourceSlice>> ObjectStore::ListSlices(std::string_view node_name,
                                                                   std::string_view driver) const {
  ListOptions options{.fields = FieldSelector::Equals({{"spec.nodeName", std::string(node_name)},
                                                       {"spec.driver", std::string(driver)}})};
  std::vector<ResourceSlice> out;
  for (const nlohmann::json& object : List(Kind::kResourceSlice, "", options).items) {
    absl::StatusOr<ResourceSlice> slice = DecodeResourceSlice(object);
    if (!slice.ok()) return slice.status();
    out.push_back(*std::move(slice));
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
  absl::StatusOr<nlohmann::json> object = Get(Kind::kResourceClaim, namespace_, name);
  if (!object.ok()) return object.status();
  return DecodeResourceClaim(*object);
}

absl::StatusOr<std::vector<ResourceClaim>> ObjectStore::ListClaims(
    std::string_view namespace_) const {
  std::vector<ResourceClaim> out;
  for (const nlohmann::json& object : List(Kind::kResourceClaim, namespace_).items) {
    absl::StatusOr<ResourceClaim> claim = DecodeResourceClaim(object);
    if (!claim.ok()) return claim.status();
    out.push_back(*std::move(claim));
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
