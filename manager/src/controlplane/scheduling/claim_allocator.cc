#include "manager/src/controlplane/scheduling/claim_allocator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/controlplane/scheduling/resource_pools.h"

namespace kdp::manager::scheduling {
namespace {

using resourceapi::AllocationResult;
using resourceapi::DeviceAttribute;
using resourceapi::DeviceClass;
using resourceapi::ExactDeviceRequest;
using resourceapi::ResourceClaim;

constexpr char kCannotAllocate[] = "cannot allocate all claims: ";

struct Candidate {
  DeviceId id;
  const resourceapi::Device* device = nullptr;
  const resourceapi::ResourceSlice* slice = nullptr;
  bool allocated_elsewhere = false;  // held by another claim
};

enum class Match : int8_t { kNo, kYes, kError };

// A request without sub-requests, or one sub-request of a firstAvailable request.
struct Alternative {
  std::string name;  // as in results: "<request>" or "<request>/<sub>"
  std::string base;  // the claim's request name
  bool is_sub = false;
  const ExactDeviceRequest* spec = nullptr;
  const DeviceClass* device_class = nullptr;
  std::vector<CompiledSelector> class_selectors;
  std::vector<CompiledSelector> request_selectors;
  bool all = false;
  bool admin = false;
  int64_t count = 0;                      // devices needed; All: all_devices.size()
  std::vector<size_t> all_devices;        // All: the matching candidates
  std::vector<Match> match;               // per candidate
  std::map<size_t, absl::Status> errors;  // CEL runtime errors, by candidate
  std::string infeasible;                 // why it cannot be satisfied on its own; empty if it can
};

struct Request {
  std::string name;
  std::vector<Alternative> alternatives;
  size_t selected = 0;
};

struct Constraint {
  std::set<std::string> requests;  // empty: all
  std::string attribute;           // fully qualified
  DeviceAttribute value;           // valid while num > 0
  int num = 0;

  bool Applies(const Alternative& a) const {
    return requests.empty() || requests.count(a.base) > 0 ||
           (a.is_sub && requests.count(a.name) > 0);
  }
};

// Upstream lookupAttribute: the fully qualified name, else the bare id when the domain is the
// device's driver.
const DeviceAttribute* LookupAttribute(const Candidate& c, const std::string& name) {
  const auto& attrs = c.device->attributes;
  if (auto it = attrs.find(name); it != attrs.end()) return &it->second;
  const size_t slash = name.find('/');
  if (slash == std::string::npos || name.substr(0, slash) != c.id.driver) return nullptr;
  if (auto it = attrs.find(name.substr(slash + 1)); it != attrs.end()) return &it->second;
  return nullptr;
}

std::string Plural(int64_t n, const std::string& word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

class ClaimAllocator {
 public:
  ClaimAllocator(const ResourceClaim& claim, const AllocatorInputs& inputs)
      : claim_(claim), inputs_(inputs) {
    claim_name_ = claim.metadata.namespace_.empty()
                      ? claim.metadata.name
                      : absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name);
  }

  absl::StatusOr<AllocationResult> Run() {
    pools_ = GatherPools(inputs_.node_name, inputs_.slices);
    for (const ResourcePoolView& pool : pools_) {
      if (pool.incomplete || pool.invalid) continue;  // never allocate from these
      for (const resourceapi::ResourceSlice* slice : pool.slices) {
        for (const resourceapi::Device& device : slice->spec.devices) {
          Candidate c;
          c.id = DeviceId{pool.driver, pool.name, device.name};
          c.device = &device;
          c.slice = slice;
          c.allocated_elsewhere = inputs_.allocated.count(c.id) > 0;
          candidates_.push_back(std::move(c));
        }
      }
    }
    views_.resize(candidates_.size());
    in_claim_.assign(candidates_.size(), false);

    for (const resourceapi::DeviceRequest& request : claim_.spec.devices.requests) {
      absl::Status s = PrepareRequest(request);
      if (!s.ok()) return s;
    }
    if (absl::Status s = CheckFeasible(); !s.ok()) return s;
    for (const resourceapi::DeviceConstraint& dc : claim_.spec.devices.constraints) {
      Constraint c;
      c.requests.insert(dc.requests.begin(), dc.requests.end());
      c.attribute = dc.match_attribute;
      constraints_.push_back(std::move(c));
    }
    if (!Solve(0)) {
      if (!error_.ok()) return error_;
      return absl::ResourceExhaustedError(
          absl::StrCat(kCannotAllocate, "claim ", claim_name_, ": ", SearchFailureReason()));
    }
    return BuildResult();
  }

 private:
  std::string RequestContext(const std::string& request) const {
    return absl::StrCat("claim ", claim_name_, ", request ", request);
  }

  absl::Status PrepareRequest(const resourceapi::DeviceRequest& request) {
    Request r;
    r.name = request.name;
    if (request.exactly.has_value() == !request.first_available.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          RequestContext(request.name), ": exactly one of exactly and firstAvailable must be set"));
    }
    if (request.exactly) {
      Alternative a;
      a.name = a.base = request.name;
      a.spec = &*request.exactly;
      r.alternatives.push_back(std::move(a));
    }
    for (const resourceapi::DeviceSubRequest& sub : request.first_available) {
      Alternative a;
      a.name = absl::StrCat(request.name, "/", sub.name);
      a.base = request.name;
      a.is_sub = true;
      a.spec = &sub.request;
      r.alternatives.push_back(std::move(a));
    }
    for (Alternative& a : r.alternatives) {
      if (absl::Status s = PrepareAlternative(a); !s.ok()) return s;
    }
    requests_.push_back(std::move(r));
    return absl::OkStatus();
  }

  // Upstream validateDeviceRequest, plus compiling the selectors and evaluating them.
  absl::Status PrepareAlternative(Alternative& a) {
    const ExactDeviceRequest& spec = *a.spec;
    const std::string context = RequestContext(a.name);
    if (spec.device_class_name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": missing device class name (unsupported request type?)"));
    }
    auto it = inputs_.classes.find(spec.device_class_name);
    if (it == inputs_.classes.end()) {
      return absl::NotFoundError(
          absl::StrCat(context, ": could not retrieve device class ", spec.device_class_name,
                       ": deviceclass.resource.k8s.io \"", spec.device_class_name, "\" not found"));
    }
    a.device_class = &it->second;
    a.admin = spec.admin_access;
    const auto& class_selectors = a.device_class->spec.selectors;
    for (size_t i = 0; i < class_selectors.size(); ++i) {
      absl::StatusOr<CompiledSelector> s =
          CompiledSelector::Compile(class_selectors[i].cel_expression);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(context, ": class ", spec.device_class_name,
                                                       ": selector #", i, ": ",
                                                       s.status().message()));
      }
      a.class_selectors.push_back(*std::move(s));
    }
    for (size_t i = 0; i < spec.selectors.size(); ++i) {
      absl::StatusOr<CompiledSelector> s =
          CompiledSelector::Compile(spec.selectors[i].cel_expression);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(context, ": selector #", i, ": ", s.status().message()));
      }
      a.request_selectors.push_back(*std::move(s));
    }
    a.match.resize(candidates_.size(), Match::kNo);
    for (size_t c = 0; c < candidates_.size(); ++c) Evaluate(a, c);

    if (spec.allocation_mode == resourceapi::kAllocationModeExactCount) {
      if (spec.count < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(context, ": count ", spec.count, " must be at least 1"));
      }
      a.count = spec.count;
      return absl::OkStatus();
    }
    if (spec.allocation_mode != resourceapi::kAllocationModeAll) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": unsupported count mode ", spec.allocation_mode));
    }
    // "All" must know every device, so it refuses to guess while a pool is being updated.
    for (const ResourcePoolView& pool : pools_) {
      if (pool.incomplete) {
        return absl::UnavailableError(absl::StrCat(context,
                                                   ": asks for all devices, but resource pool ",
                                                   pool.id(), " is currently being updated"));
      }
      if (pool.invalid) {
        return absl::UnavailableError(
            absl::StrCat(context, ": asks for all devices, but resource pool ", pool.id(),
                         " is currently invalid (", pool.invalid_reason, ")"));
      }
    }
    a.all = true;
    for (size_t c = 0; c < candidates_.size(); ++c) {
      if (a.match[c] == Match::kError) return a.errors[c];  // upstream evaluates "all" eagerly
      if (a.match[c] == Match::kYes) a.all_devices.push_back(c);
    }
    a.count = static_cast<int64_t>(a.all_devices.size());
    return absl::OkStatus();
  }

  // Evaluates class then request selectors for one candidate, recording a runtime error.
  void Evaluate(Alternative& a, size_t c) {
    const Candidate& cand = candidates_[c];
    if (a.class_selectors.empty() && a.request_selectors.empty()) {
      a.match[c] = Match::kYes;
      return;
    }
    if (!views_[c]) views_[c] = DeviceView::Build(cand.id.driver, *cand.device);
    auto run = [&](const std::vector<CompiledSelector>& selectors, const std::string& owner) {
      for (size_t i = 0; i < selectors.size(); ++i) {
        absl::StatusOr<bool> m =
            views_[c]->ok() ? selectors[i].Matches(**views_[c]) : views_[c]->status();
        if (!m.ok()) {
          std::string detail(m.status().message());
          if (absl::StartsWith(detail, "no such key:")) {
            // Upstream EnhanceRuntimeError, pointed at what kdp's subset offers.
            absl::StrAppend(&detail,
                            ". Consider using the has() macro or the in operator for "
                            "optional fields");
          }
          a.errors[c] = absl::InvalidArgumentError(
              absl::StrCat(RequestContext(a.name), ": ", owner, "selector #", i, " ", "\"",
                           selectors[i].expression(), "\"", " on device ", cand.id.ToString(),
                           ": CEL runtime error: ", detail));
          return Match::kError;
        }
        if (!*m) return Match::kNo;
      }
      return Match::kYes;
    };
    Match m = run(a.class_selectors, absl::StrCat("class ", a.device_class->metadata.name, ": "));
    if (m == Match::kYes) m = run(a.request_selectors, "");
    a.match[c] = m;
  }

  bool Usable(const Alternative& a, size_t c) const {
    return !in_claim_[c] && (a.admin || !candidates_[c].allocated_elsewhere);
  }

  // Marks alternatives that cannot be satisfied on their own; fails the claim when a request
  // has none left or when the requests cannot all be served by distinct devices.
  absl::Status CheckFeasible() {
    int64_t min_total = 0;
    for (Request& r : requests_) {
      int64_t min_count = INT64_MAX;
      std::vector<std::string> reasons;
      for (Alternative& a : r.alternatives) {
        min_count = std::min(min_count, a.count);
        a.infeasible = AloneReason(a);
        if (!a.infeasible.empty()) reasons.push_back(absl::StrCat(a.name, ": ", a.infeasible));
      }
      min_total += min_count;
      if (reasons.size() == r.alternatives.size()) {
        std::string why =
            r.alternatives.size() == 1
                ? r.alternatives[0].infeasible
                : absl::StrCat("no sub-request can be satisfied: ", absl::StrJoin(reasons, "; "));
        return absl::ResourceExhaustedError(
            absl::StrCat(kCannotAllocate, RequestContext(r.name), ": ", why, InvalidPoolsNote()));
      }
    }
    if (min_total > kAllocationResultsMaxSize) {
      return absl::ResourceExhaustedError(
          absl::StrCat(kCannotAllocate, "claim ", claim_name_, ": number of requested devices ",
                       min_total, " exceeds the claim limit of ", kAllocationResultsMaxSize));
    }
    return CheckDistinctDevices();
  }

  std::string AloneReason(const Alternative& a) const {
    const std::string cls = a.device_class->metadata.name;
    if (a.all) {
      if (a.all_devices.empty())
        return absl::StrCat("all devices of class ", cls, " requested, none match");
      int64_t busy = 0;
      for (size_t c : a.all_devices)
        busy += (!a.admin && candidates_[c].allocated_elsewhere) ? 1 : 0;
      if (busy > 0) {
        return absl::StrCat("all ", Plural(a.count, "matching device"), " of class ", cls,
                            " requested, ", busy, busy == 1 ? " is" : " are",
                            " allocated to other claims");
      }
      if (a.count > kAllocationResultsMaxSize) {
        return absl::StrCat("all ", a.count, " matching devices of class ", cls,
                            " requested, more than the ", kAllocationResultsMaxSize,
                            " a claim can hold");
      }
      return "";
    }
    if (a.count > kAllocationResultsMaxSize) {
      return absl::StrCat(Plural(a.count, "device"), " of class ", cls,
                          " requested, more than the ", kAllocationResultsMaxSize,
                          " a claim can hold");
    }
    int64_t matching = 0, free = 0, errors = 0;
    for (size_t c = 0; c < candidates_.size(); ++c) {
      if (a.match[c] == Match::kError) ++errors;
      if (a.match[c] != Match::kYes) continue;
      ++matching;
      if (a.admin || !candidates_[c].allocated_elsewhere) ++free;
    }
    // A device whose selector errors might be visited by the search: let the search report it.
    if (free + errors >= a.count) return "";
    std::string why = absl::StrCat(Plural(a.count, "device"), " of class ", cls, " requested",
                                   a.admin ? " with admin access" : "", ", ", free,
                                   free == 1 ? " matches" : " match");
    if (!a.admin) absl::StrAppend(&why, " and ", free == 1 ? "is" : "are", " free");
    if (matching > free) {
      absl::StrAppend(&why, " (", matching, " match, ", matching - free,
                      " allocated to other claims)");
    }
    return why;
  }

  // Bipartite matching of the requests' device needs (each request's smallest feasible
  // alternative) to distinct usable devices, constraints ignored: a necessary condition that
  // spares the search from trying every combination of one request when another cannot fit.
  absl::Status CheckDistinctDevices() {
    std::vector<std::vector<size_t>> units;  // per device slot: usable candidates
    std::vector<std::string> names;
    for (const Request& r : requests_) {
      int64_t need = INT64_MAX;
      std::set<size_t> edges;
      for (const Alternative& a : r.alternatives) {
        if (!a.infeasible.empty()) continue;
        need = std::min(need, a.count);
        for (size_t c = 0; c < candidates_.size(); ++c) {
          if (a.match[c] != Match::kNo && Usable(a, c)) edges.insert(c);
        }
      }
      names.push_back(r.name);
      for (int64_t i = 0; i < need; ++i) units.emplace_back(edges.begin(), edges.end());
    }
    std::vector<int> owner(candidates_.size(), -1);
    int matched = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      std::vector<char> seen(candidates_.size(), 0);
      if (Augment(static_cast<int>(u), units, owner, seen)) ++matched;
    }
    if (matched < static_cast<int>(units.size())) {
      return absl::ResourceExhaustedError(absl::StrCat(
          kCannotAllocate, "claim ", claim_name_, ": requests ", absl::StrJoin(names, ", "),
          " need ", units.size(), " devices together, only ", matched,
          " distinct free devices match them", InvalidPoolsNote()));
    }
    return absl::OkStatus();
  }

  static bool Augment(int u, const std::vector<std::vector<size_t>>& units, std::vector<int>& owner,
                      std::vector<char>& seen) {
    for (size_t c : units[u]) {
      if (seen[c]) continue;
      seen[c] = 1;
      if (owner[c] < 0 || Augment(owner[c], units, owner, seen)) {
        owner[c] = u;
        return true;
      }
    }
    return false;
  }

  bool Compatible(const Alternative& a, size_t c) const {
    for (const Constraint& k : constraints_) {
      if (!k.Applies(a)) continue;
      const DeviceAttribute* v = LookupAttribute(candidates_[c], k.attribute);
      if (v == nullptr) return false;
      if (k.num > 0 && !(*v == k.value)) return false;
    }
    return true;
  }

  void Push(const Alternative& a, size_t c) {
    in_claim_[c] = true;
    for (Constraint& k : constraints_) {
      if (!k.Applies(a)) continue;
      if (k.num++ == 0) k.value = *LookupAttribute(candidates_[c], k.attribute);
    }
    chosen_.emplace_back(&a, c);
  }

  void Pop(const Alternative& a, size_t c) {
    in_claim_[c] = false;
    for (Constraint& k : constraints_) {
      if (k.Applies(a)) --k.num;
    }
    chosen_.pop_back();
  }

  bool Solve(size_t r) {
    if (r == requests_.size()) return true;
    Request& req = requests_[r];
    for (size_t i = 0; i < req.alternatives.size(); ++i) {
      const Alternative& a = req.alternatives[i];
      if (!a.infeasible.empty()) continue;
      if (static_cast<int64_t>(chosen_.size()) + a.count > kAllocationResultsMaxSize) continue;
      if (Fill(r, a, 0, 0)) {
        req.selected = i;
        return true;
      }
      if (!error_.ok()) return false;
    }
    return false;
  }

  bool Step() {
    if (++steps_ <= inputs_.max_search_steps) return true;
    error_ = absl::DeadlineExceededError(absl::StrCat(
        kCannotAllocate, "claim ", claim_name_, ": gave up after trying ", inputs_.max_search_steps,
        " device choices (upstream: timed out trying to allocate devices)"));
    return false;
  }

  // Picks device number k of `a`, trying candidates from `start` on (combinations in order).
  bool Fill(size_t r, const Alternative& a, int64_t k, size_t start) {
    if (k == a.count) return Solve(r + 1);
    if (!Step()) return false;
    if (a.all) {
      const size_t c = a.all_devices[k];
      if (!Usable(a, c)) return false;
      if (!Compatible(a, c)) {
        error_ = absl::InvalidArgumentError(absl::StrCat(
            RequestContext(a.name), ": cannot add device ", candidates_[c].id.ToString(),
            " because a claim constraint would not be satisfied"));
        return false;
      }
      Push(a, c);
      if (Fill(r, a, k + 1, 0)) return true;
      Pop(a, c);
      return false;
    }
    const int64_t needed = a.count - k;
    // Prune when fewer viable candidates remain than devices are still needed.
    int64_t viable = 0;
    for (size_t c = start; c < candidates_.size() && viable < needed; ++c) {
      if (Usable(a, c) && a.match[c] != Match::kNo && Compatible(a, c)) ++viable;
    }
    if (viable < needed) return false;
    for (size_t c = start; c < candidates_.size(); ++c) {
      if (static_cast<int64_t>(candidates_.size() - c) < needed) break;
      if (!Usable(a, c) || a.match[c] == Match::kNo) continue;
      if (a.match[c] == Match::kError) {
        error_ = a.errors.at(c);
        return false;
      }
      if (!Compatible(a, c)) continue;
      Push(a, c);
      if (Fill(r, a, k + 1, c + 1)) return true;
      Pop(a, c);
      if (!error_.ok()) return false;
    }
    return false;
  }

  std::string InvalidPoolsNote() const {
    std::vector<std::string> invalid;
    for (const ResourcePoolView& pool : pools_) {
      if (pool.invalid) invalid.push_back(absl::StrCat(pool.id(), " (", pool.invalid_reason, ")"));
    }
    if (invalid.empty()) return "";
    return absl::StrCat("; invalid resource pools were encountered: ",
                        absl::StrJoin(invalid, ", "));
  }

  std::string SearchFailureReason() const {
    std::string why;
    if (constraints_.empty()) {
      why = "no combination of free matching devices satisfies all requests";
    } else {
      std::vector<std::string> parts;
      for (const Constraint& k : constraints_) {
        parts.push_back(absl::StrCat(
            "matchAttribute ", k.attribute, " for ",
            k.requests.empty() ? "all requests"
                               : absl::StrCat("requests ", absl::StrJoin(k.requests, ", "))));
      }
      why = absl::StrCat("no combination of free matching devices satisfies the constraints (",
                         absl::StrJoin(parts, "; "), ")");
    }
    return why + InvalidPoolsNote();
  }

  AllocationResult BuildResult() const {
    AllocationResult result;
    bool node_local = false;
    for (const auto& [a, c] : chosen_) {
      const Candidate& cand = candidates_[c];
      resourceapi::DeviceRequestAllocationResult r;
      r.request = a->name;
      r.driver = cand.id.driver;
      r.pool = cand.id.pool;
      r.device = cand.id.device;
      if (a->admin) r.admin_access = true;
      result.results.push_back(std::move(r));
      node_local = node_local || !cand.slice->spec.node_name.empty();
    }
    // Class configs: each class once, naming every (sub-)request that uses it.
    std::map<std::string, std::pair<size_t, size_t>> class_ranges;
    for (const Request& r : requests_) {
      const Alternative& a = r.alternatives[r.selected];
      const DeviceClass& cls = *a.device_class;
      auto it = class_ranges.find(cls.metadata.name);
      if (it != class_ranges.end()) {
        for (size_t i = it->second.first; i < it->second.second; ++i) {
          result.config[i].requests.push_back(a.name);
        }
        continue;
      }
      const size_t begin = result.config.size();
      for (const resourceapi::OpaqueDeviceConfiguration& config : cls.spec.config) {
        result.config.push_back({resourceapi::kConfigSourceFromClass, {a.name}, config});
      }
      class_ranges[cls.metadata.name] = {begin, result.config.size()};
    }
    // Claim configs that apply to an allocated (sub-)request, in claim order.
    for (const resourceapi::DeviceClaimConfiguration& config : claim_.spec.devices.config) {
      bool applies = config.requests.empty();
      for (const Request& r : requests_) {
        const Alternative& a = r.alternatives[r.selected];
        for (const std::string& name : config.requests) {
          applies = applies || name == r.name || (a.is_sub && name == a.name);
        }
      }
      if (applies) {
        result.config.push_back(
            {resourceapi::kConfigSourceFromClaim, config.requests, config.opaque});
      }
    }
    if (node_local) {
      result.node_selector = nlohmann::json{
          {"nodeSelectorTerms",
           nlohmann::json::array(
               {{{"matchFields", nlohmann::json::array({{{"key", "metadata.name"},
                                                         {"operator", "In"},
                                                         {"values", {inputs_.node_name}}}})}}})}};
    }
    return result;
  }

  const ResourceClaim& claim_;
  const AllocatorInputs& inputs_;
  std::string claim_name_;
  std::vector<ResourcePoolView> pools_;
  std::vector<Candidate> candidates_;
  std::vector<std::optional<absl::StatusOr<DeviceView>>> views_;  // built on first use
  std::vector<Request> requests_;
  std::vector<Constraint> constraints_;
  std::vector<bool> in_claim_;
  std::vector<std::pair<const Alternative*, size_t>> chosen_;
  int64_t steps_ = 0;
  absl::Status error_;
};

}  // namespace

std::set<DeviceId> AllocatedDevices(const resourceapi::AllocationResult& allocation) {
  std::set<DeviceId> out;
  for (const resourceapi::DeviceRequestAllocationResult& r : allocation.results) {
    if (r.admin_access.value_or(false)) continue;
    out.insert(DeviceId{r.driver, r.pool, r.device});
  }
  return out;
}

absl::StatusOr<AllocationResult> Allocate(const ResourceClaim& claim,
                                          const AllocatorInputs& inputs) {
  ClaimAllocator allocator(claim, inputs);
  return allocator.Run();
}

}  // namespace kdp::manager::scheduling
