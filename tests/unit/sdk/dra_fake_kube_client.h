// FakeKubeClient: an in-memory stand-in for the API server behind internal::KubeClient, for the
// DRA SDK's unit tests. Plain objects (ResourceClaims, Nodes) are served by exact GET path;
// ResourceSlices support POST (generateName → name, uid, resourceVersion), PUT (optimistic
// concurrency on resourceVersion: ABORTED on a stale one), DELETE and LIST with the
// spec.nodeName/spec.driver field selectors. FailNext() injects errors; requests() logs
// "METHOD path" for every call.
//
// Thread-safety: thread-safe.
#ifndef KDP_TESTS_UNIT_SDK_DRA_FAKE_KUBE_CLIENT_H_
#define KDP_TESTS_UNIT_SDK_DRA_FAKE_KUBE_CLIENT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "sdk/src/kube/kube_client.h"

namespace kdp::testing {

class FakeKubeClient final : public internal::KubeClient {
 public:
  static constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

  void SetObject(const std::string& path, nlohmann::json object) {
    absl::MutexLock lock(&mu_);
    objects_[path] = std::move(object);
  }
  void RemoveObject(const std::string& path) {
    absl::MutexLock lock(&mu_);
    objects_.erase(path);
  }
  // The next `count` requests fail with `status`.
  void FailNext(int count, absl::Status status) {
    absl::MutexLock lock(&mu_);
    fail_count_ = count;
    fail_status_ = std::move(status);
  }
  // Adds a slice directly (as another writer would), with a fresh resourceVersion.
  void AddSlice(const std::string& name, nlohmann::json slice) {
    absl::MutexLock lock(&mu_);
    slice["metadata"]["name"] = name;
    slice["metadata"]["uid"] = absl::StrCat("uid-", name);
    slice["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    slices_[name] = std::move(slice);
  }
  std::map<std::string, nlohmann::json> slices() const {
    absl::MutexLock lock(&mu_);
    return slices_;
  }
  std::vector<std::string> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  // Requests whose "METHOD path" starts with `prefix`.
  int CountRequests(const std::string& prefix) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const std::string& r : requests_) n += absl::StartsWith(r, prefix) ? 1 : 0;
    return n;
  }
  void ClearRequests() {
    absl::MutexLock lock(&mu_);
    requests_.clear();
  }

  absl::StatusOr<nlohmann::json> Get(const std::string& path) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = Record("GET", path); !failed.ok()) return failed;
    if (absl::StartsWith(path, absl::StrCat(kSlices, "?"))) return ListSlicesLocked(path);
    auto it = objects_.find(path);
    if (it == objects_.end()) return absl::NotFoundError(absl::StrCat("GET ", path, ": 404"));
    return it->second;
  }
  absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                      const nlohmann::json& body) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = Record("POST", path); !failed.ok()) return failed;
    if (path != kSlices) return absl::NotFoundError(absl::StrCat("POST ", path, ": 404"));
    nlohmann::json slice = body;
    std::string name =
        absl::StrCat(slice["metadata"].value("generateName", std::string()), "x", ++name_counter_);
    slice["metadata"].erase("generateName");
    slice["metadata"]["name"] = name;
    slice["metadata"]["uid"] = absl::StrCat("uid-", name);
    slice["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    slices_[name] = slice;
    return slice;
  }
  absl::StatusOr<nlohmann::json> Put(const std::string& path, const nlohmann::json& body) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = Record("PUT", path); !failed.ok()) return failed;
    std::string name = SliceName(path);
    auto it = slices_.find(name);
    if (it == slices_.end()) return absl::NotFoundError(absl::StrCat("PUT ", path, ": 404"));
    if (body["metadata"].value("resourceVersion", std::string()) !=
        it->second["metadata"]["resourceVersion"].get<std::string>()) {
      return absl::AbortedError(absl::StrCat("PUT ", path, ": 409 conflict"));
    }
    nlohmann::json slice = body;
    slice["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    it->second = slice;
    return slice;
  }
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status failed = Record("DELETE", path); !failed.ok()) return failed;
    if (slices_.erase(SliceName(path)) == 0) {
      return absl::NotFoundError(absl::StrCat("DELETE ", path, ": 404"));
    }
    return nlohmann::json::object();
  }

 private:
  absl::Status Record(const char* method, const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    requests_.push_back(absl::StrCat(method, " ", path));
    if (fail_count_ > 0) {
      --fail_count_;
      return fail_status_;
    }
    return absl::OkStatus();
  }
  static std::string SliceName(const std::string& path) { return path.substr(path.rfind('/') + 1); }
  nlohmann::json ListSlicesLocked(const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::map<std::string, std::string> selector;
    size_t at = path.find("fieldSelector=");
    if (at != std::string::npos) {
      std::string value = path.substr(at + 14);
      value = value.substr(0, value.find('&'));
      // The publisher escapes the selector as client-go does.
      value = absl::StrReplaceAll(value, {{"%3D", "="}, {"%2C", ","}});
      for (absl::string_view term : absl::StrSplit(value, ',')) {
        std::vector<std::string> kv = absl::StrSplit(term, absl::MaxSplits('=', 1));
        if (kv.size() == 2) selector[kv[0]] = kv[1];
      }
    }
    nlohmann::json items = nlohmann::json::array();
    for (const auto& [name, slice] : slices_) {
      const nlohmann::json& spec = slice["spec"];
      if (selector.count("spec.nodeName") &&
          spec.value("nodeName", std::string()) != selector["spec.nodeName"]) {
        continue;
      }
      if (selector.count("spec.driver") &&
          spec.value("driver", std::string()) != selector["spec.driver"]) {
        continue;
      }
      items.push_back(slice);
    }
    return {{"kind", "ResourceSliceList"}, {"items", items}};
  }

  mutable absl::Mutex mu_;
  std::map<std::string, nlohmann::json> objects_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> slices_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
  int fail_count_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status fail_status_ ABSL_GUARDED_BY(mu_);
  int64_t resource_version_ ABSL_GUARDED_BY(mu_) = 0;
  int name_counter_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_SDK_DRA_FAKE_KUBE_CLIENT_H_
