#include "sdk/src/dra/slice_publisher.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace kdp::internal {
namespace {

using nlohmann::json;

constexpr char kSlicesPath[] = "/apis/resource.k8s.io/v1/resourceslices";

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string StringOf(const json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

int64_t IntOf(const json& value) { return value.is_number_integer() ? value.get<int64_t>() : 0; }

// True when `slice` carries `owner` (OwnerReferenceJson(); null: nothing to check) as a
// controller owner reference.
bool HasOwner(const json& slice, const json& owner) {
  if (owner.is_null()) return true;
  const json& owners = Field(Field(slice, "metadata"), "ownerReferences");
  if (!owners.is_array()) return false;
  return std::any_of(owners.begin(), owners.end(), [&owner](const json& o) {
    return StringOf(Field(o, "uid")) == StringOf(Field(owner, "uid")) &&
           Field(o, "controller") == true &&
           StringOf(Field(o, "kind")) == StringOf(Field(owner, "kind"));
  });
}

// The spec fields a slice's content is compared on (everything but driver, pool and nodeName).
json ContentOf(const json& slice) {
  json out = json::object();
  const json& spec = Field(slice, "spec");
  for (const char* key :
       {"devices", "sharedCounters", "perDeviceNodeSelection", "allNodes", "nodeSelector"}) {
    const json& value = Field(spec, key);
    if (!value.is_null()) out[key] = value;
  }
  return out;
}

int64_t GenerationOf(const json& slice) {
  return IntOf(Field(Field(Field(slice, "spec"), "pool"), "generation"));
}

// True when `existing` (the pool's slices) already publish `desired` (complete slices of any
// generation): as many slices, one generation, the right slice count and owner, and each
// desired content present once.
bool UpToDate(const std::vector<json>& existing, const std::vector<json>& desired,
              const json& owner) {
  if (existing.size() != desired.size()) return false;
  const int64_t generation = GenerationOf(existing[0]);
  for (const json& slice : existing) {
    if (GenerationOf(slice) != generation ||
        IntOf(Field(Field(Field(slice, "spec"), "pool"), "resourceSliceCount")) !=
            static_cast<int64_t>(desired.size()) ||
        !HasOwner(slice, owner)) {
      return false;
    }
  }
  std::vector<bool> used(existing.size(), false);
  for (const json& wanted : desired) {
    const json content = ContentOf(wanted);
    bool found = false;
    for (size_t i = 0; i < existing.size() && !found; ++i) {
      if (!used[i] && ContentOf(existing[i]) == content) used[i] = found = true;
    }
    if (!found) return false;
  }
  return true;
}

std::string TaintKey(const std::string& device, const json& taint) {
  return absl::StrCat(device, "\n", StringOf(Field(taint, "key")), "\n",
                      StringOf(Field(taint, "value")), "\n", StringOf(Field(taint, "effect")));
}

// Gives every taint of `desired` without timeAdded the time of the same taint (device, key, value,
// effect) in `existing`, or `now` when it is new, so the time stays as first published (the Go
// controller's copyTaintTimeAdded).
void SetTaintTimes(const std::vector<json>& existing, std::vector<json>& desired, absl::Time now) {
  std::map<std::string, std::string> known;
  for (const json& slice : existing) {
    const json& devices = Field(Field(slice, "spec"), "devices");
    if (!devices.is_array()) continue;
    for (const json& device : devices) {
      const json& taints = Field(device, "taints");
      if (!taints.is_array()) continue;
      for (const json& taint : taints) {
        std::string added = StringOf(Field(taint, "timeAdded"));
        if (!added.empty()) known[TaintKey(StringOf(Field(device, "name")), taint)] = added;
      }
    }
  }
  // metav1.Time: RFC 3339 in UTC with a "Z", whole seconds.
  const std::string now_text = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  for (json& content : desired) {
    auto devices = content.find("devices");
    if (devices == content.end()) continue;
    for (json& device : *devices) {
      auto taints = device.find("taints");
      if (taints == device.end()) continue;
      for (json& taint : *taints) {
        if (taint.contains("timeAdded")) continue;
        auto it = known.find(TaintKey(StringOf(Field(device, "name")), taint));
        taint["timeAdded"] = it == known.end() ? now_text : it->second;
      }
    }
  }
}

// True when `name` can be put into a request path as one ResourceSlice's name: the API server's
// names are DNS subdomains (at most 253 of a-z, 0-9, '-' and '.'). Anything else (no name, "",
// "..", a '/' or '?') would make PUT or DELETE address another path, an empty one the whole
// collection (DELETE .../resourceslices/ is a deletecollection of every slice in the cluster).
bool IsSliceName(const std::string& name) {
  if (name.empty() || name.size() > 253 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

absl::Status DeleteSlice(KubeClient& client, const json& slice) {
  const std::string name = StringOf(Field(Field(slice, "metadata"), "name"));
  absl::StatusOr<json> deleted = client.Delete(absl::StrCat(kSlicesPath, "/", name));
  if (!deleted.ok() && !absl::IsNotFound(deleted.status())) return deleted.status();
  KDP_LOG_INFO("Deleted ResourceSlice", "resourceSlice", name);
  return absl::OkStatus();
}

}  // namespace

std::string ResourceSliceListPath(const std::string& node_name, const std::string& driver) {
  // Escaped as client-go escapes the selector ('=' %3D, ',' %2C); names are DNS subdomains.
  return absl::StrCat(kSlicesPath, "?fieldSelector=spec.nodeName%3D", node_name,
                      "%2Cspec.driver%3D", driver);
}

absl::Status ReconcileResourceSlices(KubeClient& client, const SliceTarget& target,
                                     const std::vector<DraDevice>& devices) {
  return ReconcilePools(client, target, {DraPool{.name = target.node_name, .devices = devices}},
                        absl::Now());
}

absl::Status ReconcilePools(KubeClient& client, const SliceTarget& target,
                            const std::vector<DraPool>& pools, absl::Time now) {
  KDP_ASSIGN_OR_RETURN(json list,
                       client.Get(ResourceSliceListPath(target.node_name, target.driver)));
  const json& items = Field(list, "items");
  if (!items.is_null() && !items.is_array()) {
    return absl::UnknownError("listing ResourceSlices: \"items\" is not a list");
  }
  std::map<std::string, std::vector<json>> existing;  // by pool name
  if (items.is_array()) {
    for (const json& slice : items) {
      const json& spec = Field(slice, "spec");
      // A server that ignores field selectors must not make us touch other drivers' slices (or,
      // for a cluster publisher, node-local ones).
      if (StringOf(Field(spec, "driver")) != target.driver ||
          StringOf(Field(spec, "nodeName")) != target.node_name) {
        continue;
      }
      // A slice this reconciler may update or delete must have a name that addresses it (and
      // so an object as metadata); a server that sends one without is not one to write to.
      if (const std::string name = StringOf(Field(Field(slice, "metadata"), "name"));
          !IsSliceName(name)) {
        return absl::UnknownError(
            absl::StrCat("listing ResourceSlices: a slice of driver ", target.driver,
                         target.node_name.empty() ? " without a node"
                                                  : absl::StrCat(" on node ", target.node_name),
                         " has no valid metadata.name (\"", name.substr(0, 64),
                         "\"): expected a DNS subdomain"));
      }
      existing[StringOf(Field(Field(spec, "pool"), "name"))].push_back(slice);
    }
  }
  const json owner = OwnerReferenceJson(target);
  for (const DraPool& pool : pools) {
    const std::string pool_name = pool.name.empty() ? target.node_name : pool.name;
    std::vector<json> current = std::move(existing[pool_name]);
    existing.erase(pool_name);
    std::sort(current.begin(), current.end(), [](const json& a, const json& b) {
      return StringOf(Field(Field(a, "metadata"), "name")) <
             StringOf(Field(Field(b, "metadata"), "name"));
    });
    std::vector<json> contents = PoolSliceContents(pool);
    SetTaintTimes(current, contents, now);
    const int64_t count = static_cast<int64_t>(contents.size());
    std::vector<json> desired;
    for (const json& content : contents) {
      desired.push_back(PoolSliceJson(target, pool, 0, count, content));
    }
    if (UpToDate(current, desired, owner)) continue;
    // A change: a new generation on every slice of the pool, all written before the slices of
    // the old one go, so a reader sees either the old pool or (once complete) the new one.
    int64_t generation = 0;
    for (const json& slice : current) generation = std::max(generation, GenerationOf(slice));
    ++generation;
    for (size_t i = 0; i < desired.size(); ++i) {
      json wanted = PoolSliceJson(target, pool, generation, count, contents[i]);
      if (i < current.size()) {
        // Update in place: keep the server's metadata (name, uid, resourceVersion for the
        // optimistic-concurrency check), replace the owner and the spec.
        json updated = current[i];
        if (wanted["metadata"].contains("ownerReferences")) {
          updated["metadata"]["ownerReferences"] = wanted["metadata"]["ownerReferences"];
        }
        updated["spec"] = wanted["spec"];
        const std::string name = StringOf(Field(Field(updated, "metadata"), "name"));
        KDP_RETURN_IF_ERROR(client.Put(absl::StrCat(kSlicesPath, "/", name), updated).status());
        KDP_LOG_INFO("Updated ResourceSlice", "resourceSlice", name, "driver", target.driver,
                     "pool", pool_name, "generation", generation);
      } else {
        KDP_ASSIGN_OR_RETURN(json created, client.Post(kSlicesPath, wanted));
        KDP_LOG_INFO("Created ResourceSlice", "resourceSlice",
                     StringOf(Field(Field(created, "metadata"), "name")), "driver", target.driver,
                     "pool", pool_name, "generation", generation);
      }
    }
    for (size_t i = desired.size(); i < current.size(); ++i) {
      KDP_RETURN_IF_ERROR(DeleteSlice(client, current[i]));
    }
  }
  // Pools no longer published go after every published pool is complete.
  for (const auto& [name, slices] : existing) {
    for (const json& slice : slices) KDP_RETURN_IF_ERROR(DeleteSlice(client, slice));
  }
  return absl::OkStatus();
}

SlicePublisher::SlicePublisher(Options options, std::shared_ptr<KubeClient> client)
    : options_(std::move(options)), client_(std::move(client)) {}

SlicePublisher::~SlicePublisher() { Stop(); }

void SlicePublisher::Start(std::vector<DraPool> pools) {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
    desired_ = std::move(pools);
    ++desired_version_;
  }
  thread_ = std::thread([this] { Run(); });
}

void SlicePublisher::Publish(std::vector<DraPool> pools) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  desired_ = std::move(pools);
  ++desired_version_;
  wake_ = true;
}

void SlicePublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_ = true;
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool SlicePublisher::WaitUntilPublished(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto published = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return published_version_ >= desired_version_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&published), timeout);
}

absl::Status SlicePublisher::PublishOnce(const std::vector<DraPool>& pools) {
  if (!options_.node_name.empty() && node_uid_.empty()) {
    // The owner reference needs the Node's UID (the Go helper looks it up the same way).
    const std::string path = absl::StrCat("/api/v1/nodes/", options_.node_name);
    KDP_ASSIGN_OR_RETURN(json node, client_->Get(path));
    std::string uid = StringOf(Field(Field(node, "metadata"), "uid"));
    if (uid.empty()) return absl::UnknownError(absl::StrCat("GET ", path, ": node has no uid"));
    node_uid_ = std::move(uid);
  }
  return ReconcilePools(*client_,
                        {.driver = options_.driver,
                         .node_name = options_.node_name,
                         .node_uid = node_uid_,
                         .owner = options_.owner},
                        pools, options_.now ? options_.now() : absl::Now());
}

void SlicePublisher::Run() {
  absl::Duration backoff = absl::ZeroDuration();
  absl::Time next_attempt = absl::InfinitePast();
  int64_t attempted_version = 0;
  for (;;) {
    std::vector<DraPool> pools;
    int64_t version = 0;
    {
      absl::MutexLock lock(&mu_);
      for (;;) {
        if (stopping_) return;
        const bool pending = published_version_ < desired_version_;
        // A newer list is tried at once; the same list again only after the backoff.
        if (pending && (desired_version_ != attempted_version || absl::Now() >= next_attempt)) {
          break;
        }
        mu_.AwaitWithDeadline(absl::Condition(&wake_),
                              pending ? next_attempt : absl::InfiniteFuture());
        wake_ = false;
      }
      pools = desired_;
      version = desired_version_;
    }
    attempted_version = version;
    absl::Status status = PublishOnce(pools);
    if (options_.on_attempt) options_.on_attempt(status);
    if (status.ok()) {
      backoff = absl::ZeroDuration();
      absl::MutexLock lock(&mu_);
      published_version_ = std::max(published_version_, version);
      continue;
    }
    if (absl::IsNotFound(status)) node_uid_.clear();  // The Node may have been re-created.
    backoff = backoff == absl::ZeroDuration() ? options_.initial_backoff
                                              : std::min(backoff * 2, options_.max_backoff);
    next_attempt = absl::Now() + backoff;
    KDP_LOG_WARNING("Publishing ResourceSlices failed; retrying", "driver", options_.driver, "node",
                    options_.node_name, "err", status.ToString(), "retryIn",
                    absl::FormatDuration(backoff));
  }
}

}  // namespace kdp::internal
