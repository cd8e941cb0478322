#include "sdk/src/dra/slice_publisher.h"

#include <algorithm>
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

bool OwnedByNode(const json& slice, const std::string& node_uid) {
  const json& owners = Field(Field(slice, "metadata"), "ownerReferences");
  if (!owners.is_array()) return false;
  return std::any_of(owners.begin(), owners.end(), [&node_uid](const json& owner) {
    return StringOf(Field(owner, "uid")) == node_uid && Field(owner, "controller") == true &&
           StringOf(Field(owner, "kind")) == "Node";
  });
}

json DevicesOf(const json& slice) {
  const json& devices = Field(Field(slice, "spec"), "devices");
  return devices.is_array() ? devices : json::array();
}

// True when `pool` (the existing slices of the node's pool) already publishes `desired`: as many
// slices, one generation, the right slice count and owner, and each desired device list present.
bool UpToDate(const std::vector<json>& pool, const std::vector<json>& desired,
              const std::string& node_uid) {
  if (pool.size() != desired.size()) return false;
  std::vector<bool> used(pool.size(), false);
  const int64_t generation = IntOf(Field(Field(Field(pool[0], "spec"), "pool"), "generation"));
  for (const json& slice : pool) {
    const json& spec_pool = Field(Field(slice, "spec"), "pool");
    if (IntOf(Field(spec_pool, "generation")) != generation ||
        IntOf(Field(spec_pool, "resourceSliceCount")) != static_cast<int64_t>(desired.size()) ||
        !OwnedByNode(slice, node_uid)) {
      return false;
    }
  }
  for (const json& devices : desired) {
    bool found = false;
    for (size_t i = 0; i < pool.size() && !found; ++i) {
      if (!used[i] && DevicesOf(pool[i]) == devices) used[i] = found = true;
    }
    if (!found) return false;
  }
  return true;
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
  KDP_ASSIGN_OR_RETURN(json list,
                       client.Get(ResourceSliceListPath(target.node_name, target.driver)));
  const json& items = Field(list, "items");
  if (!items.is_null() && !items.is_array()) {
    return absl::UnknownError("listing ResourceSlices: \"items\" is not a list");
  }
  std::vector<json> pool;
  std::vector<json> other_pools;
  if (items.is_array()) {
    for (const json& slice : items) {
      const json& spec = Field(slice, "spec");
      // A server that ignores field selectors must not make us touch other drivers' slices.
      if (StringOf(Field(spec, "driver")) != target.driver ||
          StringOf(Field(spec, "nodeName")) != target.node_name) {
        continue;
      }
      // A slice this reconciler may update or delete must have a name that addresses it (and
      // so an object as metadata); a server that sends one without is not one to write to.
      if (const std::string name = StringOf(Field(Field(slice, "metadata"), "name"));
          !IsSliceName(name)) {
        return absl::UnknownError(
            absl::StrCat("listing ResourceSlices: a slice of driver ", target.driver, " on node ",
                         target.node_name, " has no valid metadata.name (\"", name.substr(0, 64),
                         "\"): expected a DNS subdomain"));
      }
      if (StringOf(Field(Field(spec, "pool"), "name")) == target.node_name) {
        pool.push_back(slice);
      } else {
        other_pools.push_back(slice);
      }
    }
  }
  std::sort(pool.begin(), pool.end(), [](const json& a, const json& b) {
    return StringOf(Field(Field(a, "metadata"), "name")) <
           StringOf(Field(Field(b, "metadata"), "name"));
  });

  const std::vector<json> desired = SplitDevices(devices);
  if (!UpToDate(pool, desired, target.node_uid)) {
    int64_t generation = 0;
    for (const json& slice : pool) {
      generation =
          std::max(generation, IntOf(Field(Field(Field(slice, "spec"), "pool"), "generation")));
    }
    ++generation;
    const int64_t count = static_cast<int64_t>(desired.size());
    for (size_t i = 0; i < desired.size(); ++i) {
      json wanted = SliceJson(target, generation, count, desired[i]);
      if (i < pool.size()) {
        // Update in place: keep the server's metadata (name, uid, resourceVersion for the
        // optimistic-concurrency check), replace the owner and the spec.
        json updated = pool[i];
        updated["metadata"]["ownerReferences"] = wanted["metadata"]["ownerReferences"];
        updated["spec"] = wanted["spec"];
        const std::string name = StringOf(Field(Field(updated, "metadata"), "name"));
        KDP_RETURN_IF_ERROR(client.Put(absl::StrCat(kSlicesPath, "/", name), updated).status());
        KDP_LOG_INFO("Updated ResourceSlice", "resourceSlice", name, "driver", target.driver,
                     "generation", generation);
      } else {
        KDP_ASSIGN_OR_RETURN(json created, client.Post(kSlicesPath, wanted));
        KDP_LOG_INFO("Created ResourceSlice", "resourceSlice",
                     StringOf(Field(Field(created, "metadata"), "name")), "driver", target.driver,
                     "generation", generation);
      }
    }
    for (size_t i = desired.size(); i < pool.size(); ++i) {
      KDP_RETURN_IF_ERROR(DeleteSlice(client, pool[i]));
    }
  }
  for (const json& slice : other_pools) KDP_RETURN_IF_ERROR(DeleteSlice(client, slice));
  return absl::OkStatus();
}

ResourceSlicePublisher::ResourceSlicePublisher(Options options, std::shared_ptr<KubeClient> client)
    : options_(std::move(options)), client_(std::move(client)) {}

ResourceSlicePublisher::~ResourceSlicePublisher() { Stop(); }

void ResourceSlicePublisher::Start(std::vector<DraDevice> devices) {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
    desired_ = std::move(devices);
    ++desired_version_;
  }
  thread_ = std::thread([this] { Run(); });
}

void ResourceSlicePublisher::Publish(std::vector<DraDevice> devices) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  desired_ = std::move(devices);
  ++desired_version_;
  wake_ = true;
}

void ResourceSlicePublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_ = true;
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool ResourceSlicePublisher::WaitUntilPublished(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto published = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return published_version_ >= desired_version_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&published), timeout);
}

absl::Status ResourceSlicePublisher::PublishOnce(const std::vector<DraDevice>& devices) {
  if (node_uid_.empty()) {
    // The owner reference needs the Node's UID (the Go helper looks it up the same way).
    const std::string path = absl::StrCat("/api/v1/nodes/", options_.node_name);
    KDP_ASSIGN_OR_RETURN(json node, client_->Get(path));
    std::string uid = StringOf(Field(Field(node, "metadata"), "uid"));
    if (uid.empty()) return absl::UnknownError(absl::StrCat("GET ", path, ": node has no uid"));
    node_uid_ = std::move(uid);
  }
  return ReconcileResourceSlices(
      *client_, {.driver = options_.driver, .node_name = options_.node_name, .node_uid = node_uid_},
      devices);
}

void ResourceSlicePublisher::Run() {
  absl::Duration backoff = absl::ZeroDuration();
  absl::Time next_attempt = absl::InfinitePast();
  int64_t attempted_version = 0;
  for (;;) {
    std::vector<DraDevice> devices;
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
      devices = desired_;
      version = desired_version_;
    }
    attempted_version = version;
    absl::Status status = PublishOnce(devices);
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
