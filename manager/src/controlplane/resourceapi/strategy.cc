#include "manager/src/controlplane/resourceapi/strategy.h"

#include <string>

#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

const Json& Field(const Json& object, const char* key) {
  static const Json* const kNull = new Json();
  if (!object.is_object()) return *kNull;
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

std::string NameOf(const Json& object) {
  const Json& name = Field(Field(object, "metadata"), "name");
  return name.is_string() ? name.get<std::string>() : "";
}

bool SpecIsImmutable(Kind kind) {
  return kind == Kind::kResourceClaim || kind == Kind::kResourceClaimTemplate;
}

// Kinds whose status only the /status subresource writes (their strategies reset or keep it).
bool StatusIsSubresourceOnly(Kind kind) {
  return kind == Kind::kResourceClaim || kind == Kind::kPod || kind == Kind::kNamespace;
}

}  // namespace

void PrepareForCreate(Kind kind, nlohmann::json* object) {
  if (kind == Kind::kResourceClaim) object->erase("status");
  // podStrategy and namespaceStrategy.PrepareForCreate: a new Pod is Pending, a new Namespace
  // Active with the "kubernetes" finalizer.
  if (kind == Kind::kPod) (*object)["status"] = {{"phase", "Pending"}};
  if (kind == Kind::kNamespace) {
    (*object)["status"] = {{"phase", "Active"}};
    (*object)["spec"] = {{"finalizers", Json::array({"kubernetes"})}};
  }
  Json& meta = (*object)["metadata"];
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  Normalize(kind, object);
}

void PrepareForUpdate(Kind kind, const nlohmann::json& old_object, nlohmann::json* object) {
  const Json& old_meta = old_object["metadata"];
  Json& meta = (*object)["metadata"];
  for (const char* key : {"uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "namespace"}) {
    if (old_meta.contains(key)) {
      meta[key] = old_meta[key];
    } else {
      meta.erase(key);
    }
  }
  if (StatusIsSubresourceOnly(kind)) {
    if (old_object.contains("status")) {
      (*object)["status"] = old_object["status"];
    } else {
      object->erase("status");
    }
  }
  Normalize(kind, object);
  int64_t generation = old_meta.value("generation", int64_t{1});
  if (Field(*object, "spec") != Field(old_object, "spec")) ++generation;
  meta["generation"] = generation;
}

nlohmann::json PrepareForStatusUpdate(const nlohmann::json& old_object,
                                      const nlohmann::json& object) {
  Json out = old_object;
  const Json& status = Field(object, "status");
  if (status.is_null()) {
    out.erase("status");
  } else {
    out["status"] = status;
  }
  return out;
}

absl::Status ValidateCreate(Kind kind, const nlohmann::json& object) {
  return Validate(kind, object);
}

absl::Status ValidateUpdate(Kind kind, const nlohmann::json& old_object,
                            const nlohmann::json& object) {
  if (absl::Status s = Validate(kind, object); !s.ok()) return s;
  if (SpecIsImmutable(kind) && Field(object, "spec") != Field(old_object, "spec")) {
    return InvalidError(InfoOf(kind), NameOf(object),
                        {Invalid("spec", "object", "field is immutable")});
  }
  return absl::OkStatus();
}

absl::Status ValidateStatusUpdate(Kind kind, const nlohmann::json& old_object,
                                  const nlohmann::json& object) {
  if (absl::Status s = Validate(kind, object); !s.ok()) return s;
  if (kind != Kind::kResourceClaim) return absl::OkStatus();
  const Json& old_alloc = Field(Field(old_object, "status"), "allocation");
  const Json& new_alloc = Field(Field(object, "status"), "allocation");
  if (!old_alloc.is_null() && !new_alloc.is_null() && old_alloc != new_alloc) {
    return InvalidError(InfoOf(kind), NameOf(object),
                        {Invalid("status.allocation", "object", "field is immutable")});
  }
  return absl::OkStatus();
}

}  // namespace kdp::manager::resourceapi
