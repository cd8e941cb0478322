#include "manager/src/controlplane/resourceapi/store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/kube_time.h"
#include "manager/src/controlplane/resourceapi/strategy.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

// The namespaces every cluster has (the API server's system namespaces controller makes them).
constexpr const char* kSystemNamespaces[] = {"default", "kube-system", "kube-public",
                                             "kube-node-lease"};

// k8s.io/apimachinery/pkg/util/rand: consonants and digits only, so no words are formed.
constexpr char kNameAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
constexpr size_t kGeneratedSuffixLength = 5;
constexpr size_t kMaxGeneratePrefixLength = 63 - kGeneratedSuffixLength;  // names.go
constexpr int kGenerateNameAttempts = 8;  // RetryGenerateName (GA in 1.32)

std::string FormatUuid(const unsigned char b[16]) {
  char out[37];
  std::snprintf(out, sizeof(out),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

// RFC 4122 version 5 (SHA-1 of namespace + name) in the URL namespace, over
// "kdp.dev/node/<name>": the Node's uid is stable across manager restarts, as a real Node's uid
// is while the Node object lives.
std::string NodeUid(const std::string& node_name) {
  static constexpr unsigned char kUrlNamespace[16] = {0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad,
                                                      0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0,
                                                      0x4f, 0xd4, 0x30, 0xc8};
  std::string data(reinterpret_cast<const char*>(kUrlNamespace), 16);
  data += "kdp.dev/node/" + node_name;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr);
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x50);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);
  return FormatUuid(digest);
}

const Json& MetaField(const Json& object, const char* key) {
  static const Json* const kNull = new Json();
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return *kNull;
  auto it = meta->find(key);
  return it == meta->end() ? *kNull : *it;
}

std::string MetaString(const Json& object, const char* key) {
  const Json& v = MetaField(object, key);
  return v.is_string() ? v.get<std::string>() : "";
}

absl::Status CheckPreconditions(const KindInfo& info, const Json& stored, const std::string& name,
                                const std::string& uid, const std::string& resource_version) {
  const std::string stored_uid = MetaString(stored, "uid");
  if (!uid.empty() && uid != stored_uid) {
    return UidPreconditionError(info, name, uid, stored_uid);
  }
  if (!resource_version.empty() && resource_version != MetaString(stored, "resourceVersion")) {
    return ConflictError(info, name, kObjectModified);
  }
  return absl::OkStatus();
}

// The object without the fields every write changes, to detect a no-op update.
Json WithoutResourceVersion(Json object) {
  if (object.contains("metadata")) object["metadata"].erase("resourceVersion");
  return object;
}

}  // namespace

bool IsPersistedKind(Kind kind) {
  return kind != Kind::kNode && kind != Kind::kPod && kind != Kind::kEvent;
}

const char* WatchEventTypeName(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
  }
  return "ADDED";
}

ObjectStore::ObjectStore(StoreOptions options)
    : node_name_(options.node_name),
      node_uid_(NodeUid(options.node_name)),
      event_log_capacity_(std::max<size_t>(options.event_log_capacity, 1)),
      now_(options.now ? options.now : [] { return absl::Now(); }) {
  std::map<std::string, std::string> labels = {{"kubernetes.io/hostname", node_name_},
                                               {"kubernetes.io/os", "linux"},
                                               {"kubernetes.io/arch", "amd64"}};
  for (const auto& [k, v] : options.node_labels) labels[k] = v;
  Json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", node_name_},
        {"uid", node_uid_},
        {"creationTimestamp", NowRfc3339()},
        {"labels", labels}}},
      {"spec", Json::object()},
      {"status",
       {{"conditions", Json::array({{{"type", "Ready"},
                                     {"status", "True"},
                                     {"reason", "KubeletReady"},
                                     {"message", "kdp-manager is posting ready status"}}})}}}};
  absl::MutexLock lock(&mu_);
  CommitLocked(Kind::kNode, {"", node_name_}, std::move(node), WatchEvent::Type::kAdded);
  EnsureSystemNamespacesLocked();
}

void ObjectStore::EnsureSystemNamespacesLocked() {
  for (const char* name : kSystemNamespaces) {
    const Key key{"", name};
    if (objects_[static_cast<size_t>(Kind::kNamespace)].contains(key)) continue;
    Json ns = {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata",
                {{"name", name},
                 {"uid", RandomUuid()},
                 {"creationTimestamp", NowRfc3339()},
                 {"labels", {{"kubernetes.io/metadata.name", name}}}}},
               {"spec", {{"finalizers", Json::array({"kubernetes"})}}},
               {"status", {{"phase", "Active"}}}};
    CommitLocked(Kind::kNamespace, key, std::move(ns), WatchEvent::Type::kAdded);
  }
}

std::string ObjectStore::NowRfc3339() const { return KubeTime(now_()); }

std::string ObjectStore::RandomUuid() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    // The CSPRNG failing is not expected; a uid only needs to be unique, so fall back.
    for (unsigned char& c : b) c = static_cast<unsigned char>(absl::Uniform<int>(bitgen_, 0, 256));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  return FormatUuid(b);
}

void ObjectStore::CommitLocked(Kind kind, const Key& key, Json object, WatchEvent::Type type) {
  ++resource_version_;
  if (IsPersistedKind(kind)) persisted_version_ = resource_version_;
  object["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  Objects& objects = objects_[static_cast<size_t>(kind)];
  if (kind == Kind::kResourceSlice) decoded_slices_.erase(key);
  if (kind == Kind::kResourceClaim) decoded_claims_.erase(key);
  Json previous = nullptr;
  if (type == WatchEvent::Type::kModified) {
    if (auto it = objects.find(key); it != objects.end()) {
      previous = SelectableProjection(InfoOf(kind), it->second);
    }
  }
  if (type == WatchEvent::Type::kDeleted) {
    objects.erase(key);
  } else {
    objects[key] = object;
  }
  events_.push_back({.type = type,
                     .kind = kind,
                     .resource_version = resource_version_,
                     .object = std::move(object),
                     .previous = std::move(previous)});
  while (events_.size() > event_log_capacity_) {
    log_start_ = events_.front().resource_version;
    events_.pop_front();
  }
}

absl::StatusOr<Json> ObjectStore::Create(Kind kind, Json object) {
  return CreateImpl(kind, std::move(object), /*keep_uid=*/false);
}

absl::StatusOr<Json> ObjectStore::CreateKeepingUid(Kind kind, Json object) {
  return CreateImpl(kind, std::move(object), /*keep_uid=*/true);
}

absl::StatusOr<Json> ObjectStore::CreateImpl(Kind kind, Json object, bool keep_uid) {
  const KindInfo& info = InfoOf(kind);
  if (kind == Kind::kNode) return MethodNotAllowedError(info, "create");
  if (!object.is_object()) return BadRequestError("the request body must be a JSON object");
  Json& meta = object["metadata"];
  if (!meta.is_object()) meta = Json::object();
  if (!MetaString(object, "resourceVersion").empty()) {
    return BadRequestError("resourceVersion should not be set on objects to be created");
  }
  if (!info.namespaced) meta.erase("namespace");
  object["apiVersion"] = ApiVersion(info, kVersionV1);
  object["kind"] = info.name;
  PrepareForCreate(kind, &object);
  meta["creationTimestamp"] = NowRfc3339();

  absl::MutexLock lock(&mu_);
  if (!keep_uid || MetaString(object, "uid").empty()) meta["uid"] = RandomUuid();
  const std::string generate = MetaString(object, "generateName");
  const bool generated = MetaString(object, "name").empty() && !generate.empty();
  Objects& objects = objects_[static_cast<size_t>(kind)];
  for (int attempt = 0;; ++attempt) {
    if (generated) {
      std::string name = generate.substr(0, kMaxGeneratePrefixLength);
      for (size_t i = 0; i < kGeneratedSuffixLength; ++i) {
        name += kNameAlphabet[absl::Uniform<size_t>(bitgen_, 0, sizeof(kNameAlphabet) - 1)];
      }
      meta["name"] = name;
    }
    if (absl::Status s = ValidateCreate(kind, object); !s.ok()) return s;
    Key key{MetaString(object, "namespace"), MetaString(object, "name")};
    if (objects.count(key) != 0) {
      if (generated && attempt + 1 < kGenerateNameAttempts) continue;
      return AlreadyExistsError(info, key.second);
    }
    CommitLocked(kind, key, object, WatchEvent::Type::kAdded);
    return objects[key];
  }
}

absl::StatusOr<Json> ObjectStore::Get(Kind kind, std::string_view namespace_,
                                      std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const Objects& objects = objects_[static_cast<size_t>(kind)];
  auto it =
      objects.find(Key{InfoOf(kind).namespaced ? std::string(namespace_) : "", std::string(name)});
  if (it == objects.end()) return NotFoundError(InfoOf(kind), name);
  return it->second;
}

absl::StatusOr<Json> ObjectStore::Update(Kind kind, Json object) {
  absl::MutexLock lock(&mu_);
  return UpdateLocked(kind, std::move(object), /*status_only=*/false);
}

absl::StatusOr<Json> ObjectStore::UpdateStatus(Kind kind, Json object) {
  if (!InfoOf(kind).has_status || kind == Kind::kNode) {
    return MethodNotAllowedError(InfoOf(kind), "update status");
  }
  absl::MutexLock lock(&mu_);
  return UpdateLocked(kind, std::move(object), /*status_only=*/true);
}

absl::StatusOr<Json> ObjectStore::UpdateLocked(Kind kind, Json object, bool status_only) {
  const KindInfo& info = InfoOf(kind);
  if (kind == Kind::kNode) return MethodNotAllowedError(info, "update");
  if (!object.is_object()) return BadRequestError("the request body must be a JSON object");
  if (!object["metadata"].is_object()) object["metadata"] = Json::object();
  const std::string name = MetaString(object, "name");
  if (name.empty()) {
    return InvalidError(info, name,
                        {Required("metadata.name", "name or generateName is required")});
  }
  Key key{info.namespaced ? MetaString(object, "namespace") : "", name};
  Objects& objects = objects_[static_cast<size_t>(kind)];
  auto it = objects.find(key);
  if (it == objects.end()) return NotFoundError(info, name);
  const Json& old = it->second;
  if (absl::Status s = CheckPreconditions(info, old, name, MetaString(object, "uid"),
                                          MetaString(object, "resourceVersion"));
      !s.ok()) {
    return s;
  }
  object["apiVersion"] = ApiVersion(info, kVersionV1);
  object["kind"] = info.name;
  if (!info.namespaced) object["metadata"].erase("namespace");
  if (status_only) {
    object = PrepareForStatusUpdate(old, object);
    if (absl::Status s = ValidateStatusUpdate(kind, old, object); !s.ok()) return s;
  } else {
    PrepareForUpdate(kind, old, &object);
    if (absl::Status s = ValidateUpdate(kind, old, object); !s.ok()) return s;
  }
  if (WithoutResourceVersion(object) == WithoutResourceVersion(old)) return old;
  const bool finished =
      !MetaField(object, "deletionTimestamp").is_null() && MetaField(object, "finalizers").empty();
  CommitLocked(kind, key, object,
               finished ? WatchEvent::Type::kDeleted : WatchEvent::Type::kModified);
  if (finished) return events_.back().object;
  return objects[key];
}

std::map<std::string, std::string> ObjectStore::NodeLabels() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::string> labels;
  const Objects& nodes = objects_[static_cast<size_t>(Kind::kNode)];
  auto it = nodes.find(Key{"", node_name_});
  if (it == nodes.end()) return labels;
  const Json* meta = it->second.contains("metadata") ? &it->second["metadata"] : nullptr;
  if (meta == nullptr || !meta->contains("labels") || !(*meta)["labels"].is_object()) return labels;
  for (const auto& [k, v] : (*meta)["labels"].items()) {
    if (v.is_string()) labels[k] = v.get<std::string>();
  }
  return labels;
}

bool ObjectStore::SetNodeStatus(const Json& status) {
  absl::MutexLock lock(&mu_);
  const Key key{"", node_name_};
  Objects& nodes = objects_[static_cast<size_t>(Kind::kNode)];
  auto it = nodes.find(key);
  if (it == nodes.end() || it->second["status"] == status) return false;
  Json node = it->second;
  node["status"] = status;
  CommitLocked(Kind::kNode, key, std::move(node), WatchEvent::Type::kModified);
  return true;
}

absl::StatusOr<DeleteResult> ObjectStore::Delete(Kind kind, std::string_view namespace_,
                                                 std::string_view name,
                                                 const Preconditions& preconditions) {
  absl::MutexLock lock(&mu_);
  return DeleteLocked(
      kind, Key{InfoOf(kind).namespaced ? std::string(namespace_) : "", std::string(name)},
      preconditions);
}

absl::StatusOr<DeleteResult> ObjectStore::DeleteLocked(Kind kind, const Key& key,
                                                       const Preconditions& preconditions) {
  const KindInfo& info = InfoOf(kind);
  if (kind == Kind::kNode) return MethodNotAllowedError(info, "delete");
  if (kind == Kind::kNamespace) {
    for (const char* name : kSystemNamespaces) {
      // The NamespaceLifecycle admission plugin's immortal namespaces (kube-node-lease is not).
      if (key.second == name && key.second != "kube-node-lease") {
        return ForbiddenError(info, key.second, "this namespace may not be deleted");
      }
    }
  }
  Objects& objects = objects_[static_cast<size_t>(kind)];
  auto it = objects.find(key);
  if (it == objects.end()) return NotFoundError(info, key.second);
  if (absl::Status s = CheckPreconditions(info, it->second, key.second, preconditions.uid,
                                          preconditions.resource_version);
      !s.ok()) {
    return s;
  }
  Json object = it->second;
  if (!MetaField(object, "finalizers").empty()) {
    // Graceful deletion: the object stays, marked, until its finalizers are removed.
    if (!MetaField(object, "deletionTimestamp").is_null()) return DeleteResult{object, false};
    object["metadata"]["deletionTimestamp"] = NowRfc3339();
    object["metadata"]["deletionGracePeriodSeconds"] = 0;
    CommitLocked(kind, key, std::move(object), WatchEvent::Type::kModified);
    return DeleteResult{objects[key], false};
  }
  CommitLocked(kind, key, std::move(object), WatchEvent::Type::kDeleted);
  return DeleteResult{events_.back().object, true};
}

std::vector<Json> ObjectStore::MatchingLocked(Kind kind, std::string_view namespace_,
                                              const ListOptions& options) const {
  std::vector<Json> out;
  for (const auto& [key, object] : objects_[static_cast<size_t>(kind)]) {
    if (!namespace_.empty() && key.first != namespace_) continue;
    if (options.fields.Matches(object) && options.labels.Matches(object)) out.push_back(object);
  }
  return out;
}

ListResult ObjectStore::List(Kind kind, std::string_view namespace_,
                             const ListOptions& options) const {
  absl::MutexLock lock(&mu_);
  return ListResult{MatchingLocked(kind, namespace_, options), resource_version_};
}

ListResult ObjectStore::DeleteCollection(Kind kind, std::string_view namespace_,
                                         const ListOptions& options) {
  absl::MutexLock lock(&mu_);
  ListResult result;
  if (kind == Kind::kNode) return result;
  for (const Json& object : MatchingLocked(kind, namespace_, options)) {
    absl::StatusOr<DeleteResult> deleted =
        DeleteLocked(kind, Key{MetaString(object, "namespace"), MetaString(object, "name")}, {});
    if (deleted.ok()) result.items.push_back(std::move(deleted->object));
  }
  result.resource_version = resource_version_;
  return result;
}

absl::Status ObjectStore::MakeDurable() const {
  absl::ReaderMutexLock lock(&durability_mu_);
  return durability_hook_ ? durability_hook_() : absl::OkStatus();
}

void ObjectStore::SetDurabilityHook(std::function<absl::Status()> hook) {
  absl::MutexLock lock(&durability_mu_);
  durability_hook_ = std::move(hook);
}

int64_t ObjectStore::ResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

absl::StatusOr<std::vector<WatchEvent>> ObjectStore::EventsSince(int64_t after) const {
  return EventsSinceImpl(after, [](Kind) { return true; });
}

absl::StatusOr<std::vector<WatchEvent>> ObjectStore::EventsSince(int64_t after, Kind kind) const {
  return EventsSinceImpl(after, [kind](Kind k) { return k == kind; });
}

absl::StatusOr<std::vector<WatchEvent>> ObjectStore::PersistedEventsSince(int64_t after) const {
  return EventsSinceImpl(after, IsPersistedKind);
}

absl::StatusOr<std::vector<WatchEvent>> ObjectStore::EventsSinceImpl(
    int64_t after, absl::FunctionRef<bool(Kind)> wanted) const {
  absl::MutexLock lock(&mu_);
  if (after < log_start_) {
    return ExpiredError(
        absl::StrCat("too old resource version: ", after, " (", log_start_ + 1, ")"));
  }
  std::vector<WatchEvent> out;
  auto it = std::upper_bound(
      events_.begin(), events_.end(), after,
      [](int64_t rv, const WatchEvent& event) { return rv < event.resource_version; });
  for (; it != events_.end(); ++it) {
    if (wanted(it->kind)) out.push_back(*it);
  }
  return out;
}

bool ObjectStore::WaitForEvents(int64_t after, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto moved = [this, after]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return resource_version_ > after; };
  return mu_.AwaitWithTimeout(absl::Condition(&moved), timeout);
}

int64_t ObjectStore::PersistedVersion() const {
  absl::MutexLock lock(&mu_);
  return persisted_version_;
}

bool ObjectStore::WaitForPersistedChange(int64_t after, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto moved = [this, after]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return persisted_version_ > after; };
  return mu_.AwaitWithTimeout(absl::Condition(&moved), timeout);
}

Json ObjectStore::Snapshot() const {
  absl::MutexLock lock(&mu_);
  Json objects = Json::array();
  for (const KindInfo& info : AllKinds()) {
    if (!IsPersistedKind(info.kind)) continue;
    for (const auto& [key, object] : objects_[static_cast<size_t>(info.kind)]) {
      objects.push_back(object);
    }
  }
  return {{"resourceVersion", std::to_string(resource_version_)}, {"objects", std::move(objects)}};
}

absl::Status ObjectStore::Restore(const Json& snapshot) {
  if (!snapshot.is_object() || !snapshot.contains("objects") || !snapshot["objects"].is_array() ||
      !snapshot.value("resourceVersion", Json()).is_string()) {
    return absl::InvalidArgumentError(
        "resource API snapshot: must be an object with \"resourceVersion\" (string) and "
        "\"objects\" (array)");
  }
  int64_t rv = 0;
  const std::string rv_text = snapshot["resourceVersion"].get<std::string>();
  if (!absl::SimpleAtoi(rv_text, &rv) || rv < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource API snapshot: resourceVersion \"", rv_text, "\" is not a number"));
  }
  // Every later write adds one: a damaged file near the int64 limit would overflow it. Half the
  // range is over a hundred thousand years of a million writes a second.
  constexpr int64_t kMaxRestoredVersion = std::numeric_limits<int64_t>::max() / 2;
  if (rv > kMaxRestoredVersion) {
    return absl::InvalidArgumentError(absl::StrCat("resource API snapshot: resourceVersion \"",
                                                   rv_text, "\" is out of range (at most ",
                                                   kMaxRestoredVersion, ")"));
  }
  std::array<Objects, kKindCount> restored;
  for (size_t i = 0; i < snapshot["objects"].size(); ++i) {
    const Json& object = snapshot["objects"][i];
    std::optional<Kind> kind;
    // json::value() throws on a "kind" of another type: a damaged file is DATA_LOSS, not a crash.
    std::string kind_name;
    if (object.is_object()) {
      auto kind = object.find("kind");
      if (kind != object.end() && kind->is_string()) kind_name = kind->get<std::string>();
    }
    for (const KindInfo& info : AllKinds()) {
      if (kind_name == info.name && IsPersistedKind(info.kind)) kind = info.kind;
    }
    if (!kind) {
      return absl::InvalidArgumentError(absl::StrCat("resource API snapshot: objects[", i,
                                                     "]: unknown kind \"", kind_name, "\""));
    }
    if (absl::Status s = Validate(*kind, object); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource API snapshot: objects[", i, "]: ", s.message()));
    }
    restored[static_cast<size_t>(*kind)]
            [{MetaString(object, "namespace"), MetaString(object, "name")}] = object;
  }
  absl::MutexLock lock(&mu_);
  for (const KindInfo& info : AllKinds()) {
    if (!IsPersistedKind(info.kind)) continue;
    objects_[static_cast<size_t>(info.kind)] = std::move(restored[static_cast<size_t>(info.kind)]);
  }
  decoded_slices_.clear();
  decoded_claims_.clear();
  resource_version_ = std::max(resource_version_, rv);
  // A snapshot from before namespaces were served has none.
  EnsureSystemNamespacesLocked();
  persisted_version_ = resource_version_;
  events_.clear();
  log_start_ = resource_version_;
  return absl::OkStatus();
}

}  // namespace kdp::manager::resourceapi
