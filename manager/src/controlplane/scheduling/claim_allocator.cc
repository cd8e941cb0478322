#include "manager/src/controlplane/scheduling/claim_allocator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "manager/src/controlplane/scheduling/cel_subset.h"
#include "manager/src/controlplane/scheduling/device_sharing.h"
#include "manager/src/controlplane/scheduling/resource_pools.h"

namespace kdp::manager::scheduling {
namespace {

using resourceapi::AllocationResult;
using resourceapi::DeviceAttribute;
using resourceapi::DeviceClass;
using resourceapi::ExactDeviceRequest;
using resourceapi::ResourceClaim;

constexpr char kCannotAllocate[] = "cannot allocate all claims: ";

// What a device takes of one counter of its pool while in use.
struct CounterUse {
  std::tuple<size_t, std::string, std::string> key;  // (pool index, counter set, counter)
  Quantity amount;
};

using CapacityMap = std::map<std::string, Quantity>;

struct Candidate {
  DeviceId id;
  const resourceapi::Device* device = nullptr;
  const resourceapi::ResourceSlice* slice = nullptr;
  bool allocated_elsewhere = false;  // held exclusively by another claim
  bool shared = false;               // allowMultipleAllocations
  bool in_use_elsewhere = false;     // held or shared by other claims: its counters are taken
  CapacityMap capacity;              // the capacities' values
  CapacityMap consumed_elsewhere;    // shared: what other claims' shares consume
  std::vector<CounterUse> counters;  // consumesCounters
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
  int64_t count = 0;                // devices needed; All: all_devices.size()
  std::vector<size_t> all_devices;  // All: the matching candidates
  std::vector<Match> match;         // per candidate
  // Per candidate: tolerated and within what capacity.requests asks; for a shared device, what
  // one share consumes of each capacity (requestPolicy applied).
  std::vector<char> tolerated;
  std::vector<char> capacity_fits;
  std::vector<CapacityMap> consumption;
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
  bool distinct = false;           // distinctAttribute; else matchAttribute
  DeviceAttribute value;           // matchAttribute: valid while num > 0
  int num = 0;
  std::vector<DeviceAttribute> taken;  // distinctAttribute: the values in use

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
    node_.name = inputs_.node_name;
    node_.labels = inputs_.node_labels;
    pools_ = GatherPools(node_, inputs_.slices);
    for (size_t p = 0; p < pools_.size(); ++p) {
      const ResourcePoolView& pool = pools_[p];
      if (pool.incomplete || pool.invalid) continue;  // never allocate from these
      for (const auto& [set_name, set] : pool.counter_sets) {
        for (const auto& [counter, value] : set->counters) {
          counters_left_[{p, set_name, counter}] = ParseQuantity(value.value).value_or(Quantity());
        }
      }
      for (const resourceapi::ResourceSlice* slice : pool.slices) {
        for (const resourceapi::Device& device : slice->spec.devices) {
          if (!DeviceAvailableOn(*slice, device, node_)) continue;
          candidates_.push_back(MakeCandidate(p, *slice, device));
        }
      }
    }
    // Counters taken by devices other claims hold.
    for (const Candidate& c : candidates_) {
      if (!c.in_use_elsewhere) continue;
      for (const CounterUse& use : c.counters) {
        counters_left_[use.key] = counters_left_[use.key] - use.amount;
      }
    }
    views_.resize(candidates_.size());
    in_claim_.assign(candidates_.size(), 0);
    claim_consumed_.assign(candidates_.size(), CapacityMap());

    for (const resourceapi::DeviceRequest& request : claim_.spec.devices.requests) {
      absl::Status s = PrepareRequest(request);
      if (!s.ok()) return s;
    }
    if (absl::Status s = CheckFeasible(); !s.ok()) return s;
    for (const resourceapi::DeviceConstraint& dc : claim_.spec.devices.constraints) {
      Constraint c;
      c.requests.insert(dc.requests.begin(), dc.requests.end());
      c.distinct = dc.match_attribute.empty();
      c.attribute = c.distinct ? dc.distinct_attribute : dc.match_attribute;
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
  Candidate MakeCandidate(size_t pool_index, const resourceapi::ResourceSlice& slice,
                          const resourceapi::Device& device) const {
    const ResourcePoolView& pool = pools_[pool_index];
    Candidate c;
    c.id = DeviceId{pool.driver, pool.name, device.name};
    c.device = &device;
    c.slice = &slice;
    c.shared = device.allow_multiple_allocations;
    c.allocated_elsewhere = inputs_.allocated.count(c.id) > 0;
    auto shared = inputs_.shared.find(c.id);
    if (shared != inputs_.shared.end()) c.consumed_elsewhere = shared->second;
    c.in_use_elsewhere = c.allocated_elsewhere || shared != inputs_.shared.end();
    for (const auto& [name, capacity] : device.capacity) {
      c.capacity[name] = ParseQuantity(capacity.value).value_or(Quantity());
    }
    for (const resourceapi::DeviceCounterConsumption& consumption : device.consumes_counters) {
      for (const auto& [counter, value] : consumption.counters) {
        c.counters.push_back({{pool_index, consumption.counter_set, counter},
                              ParseQuantity(value.value).value_or(Quantity())});
      }
    }
    return c;
  }

  // Taints, and what capacity.requests asks of the device (upstream CmpRequestOverCapacity for a
  // shared device; for an exclusive one, every requested capacity at most the device's).
  void CheckDeviceFits(Alternative& a, size_t c) const {
    const resourceapi::Device& device = *candidates_[c].device;
    a.tolerated[c] = AllTaintsTolerated(device, a.spec->tolerations) ? 1 : 0;
    std::optional<std::map<std::string, Quantity>> consumption =
        CapacityConsumption(device, candidates_[c].capacity, a.spec->capacity_requests);
    a.capacity_fits[c] = consumption.has_value() ? 1 : 0;
    if (consumption && device.allow_multiple_allocations)
      a.consumption[c] = *std::move(consumption);
  }

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
    a.tolerated.assign(candidates_.size(), 0);
    a.capacity_fits.assign(candidates_.size(), 0);
    a.consumption.resize(candidates_.size());
    for (size_t c = 0; c < candidates_.size(); ++c) {
      Evaluate(a, c);
      CheckDeviceFits(a, c);
    }

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
      // A device the request does not tolerate, or whose capacity it cannot take, is not one of
      // "all" of its devices.
      if (a.match[c] == Match::kYes && a.tolerated[c] && a.capacity_fits[c]) {
        a.all_devices.push_back(c);
      }
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

  // Whether `a` may take candidate c now: tolerated, within capacity, not held by another claim
  // (a shared device: capacity left), its counters available unless it is in use already.
  bool Usable(const Alternative& a, size_t c) const {
    const Candidate& cand = candidates_[c];
    if (!a.tolerated[c] || !a.capacity_fits[c]) return false;
    if (cand.shared && !a.admin) {
      for (const auto& [name, amount] : a.consumption[c]) {
        Quantity total = amount;
        if (auto it = cand.consumed_elsewhere.find(name); it != cand.consumed_elsewhere.end())
          total = total + it->second;
        if (auto it = claim_consumed_[c].find(name); it != claim_consumed_[c].end())
          total = total + it->second;
        if (total > cand.capacity.at(name)) return false;
      }
    } else if (in_claim_[c] > 0 || (!a.admin && cand.allocated_elsewhere)) {
      return false;
    }
    return a.admin || CountersAvailable(c);
  }

  bool CountersAvailable(size_t c) const {
    const Candidate& cand = candidates_[c];
    if (cand.in_use_elsewhere || in_claim_[c] > 0) return true;  // taken already
    for (const CounterUse& use : cand.counters) {
      auto it = counters_left_.find(use.key);
      if (it == counters_left_.end() || use.amount > it->second) return false;
    }
    return true;
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
      for (size_t c : a.all_devices) busy += Usable(a, c) ? 0 : 1;
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
    int64_t matching = 0, free = 0, errors = 0, busy = 0, tainted = 0, full = 0;
    for (size_t c = 0; c < candidates_.size(); ++c) {
      if (a.match[c] == Match::kError) ++errors;
      if (a.match[c] != Match::kYes) continue;
      ++matching;
      if (Usable(a, c)) {
        ++free;
      } else if (!a.tolerated[c]) {
        ++tainted;
      } else if (!candidates_[c].shared && !a.admin && candidates_[c].allocated_elsewhere) {
        ++busy;
      } else {
        ++full;
      }
    }
    // A device whose selector errors might be visited by the search: let the search report it.
    if (free + errors >= a.count) return "";
    std::string why = absl::StrCat(Plural(a.count, "device"), " of class ", cls, " requested",
                                   a.admin ? " with admin access" : "", ", ", free,
                                   free == 1 ? " matches" : " match");
    if (!a.admin) absl::StrAppend(&why, " and ", free == 1 ? "is" : "are", " free");
    if (matching > free) {
      std::vector<std::string> parts;
      if (busy > 0) parts.push_back(absl::StrCat(busy, " allocated to other claims"));
      if (tainted > 0) {
        parts.push_back(absl::StrCat(tainted, " tainted without a matching toleration"));
      }
      if (full > 0) {
        parts.push_back(absl::StrCat(full, " without enough capacity or shared counters left"));
      }
      absl::StrAppend(&why, " (", matching, " match, ", absl::StrJoin(parts, ", "), ")");
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
      bool shared = false;
      for (const Alternative& a : r.alternatives) {
        if (!a.infeasible.empty()) continue;
        need = std::min(need, a.count);
        for (size_t c = 0; c < candidates_.size(); ++c) {
          if (a.match[c] != Match::kNo && Usable(a, c)) {
            edges.insert(c);
            shared = shared || candidates_[c].shared;
          }
        }
      }
      // A shared device can serve several requests: distinctness proves nothing for them.
      if (shared) continue;
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
      if (k.distinct) {
        if (std::find(k.taken.begin(), k.taken.end(), *v) != k.taken.end()) return false;
        continue;
      }
      if (k.num > 0 && !(*v == k.value)) return false;
    }
    return true;
  }

  void Push(const Alternative& a, size_t c) {
    const Candidate& cand = candidates_[c];
    if (!a.admin) {
      if (!cand.in_use_elsewhere && in_claim_[c] == 0) TakeCounters(cand, +1);
      if (cand.shared) {
        for (const auto& [name, amount] : a.consumption[c]) {
          claim_consumed_[c][name] = claim_consumed_[c][name] + amount;
        }
      }
    }
    ++in_claim_[c];
    for (Constraint& k : constraints_) {
      if (!k.Applies(a)) continue;
      const DeviceAttribute& v = *LookupAttribute(cand, k.attribute);
      if (k.distinct) k.taken.push_back(v);
      if (k.num++ == 0) k.value = v;
    }
    chosen_.emplace_back(&a, c);
  }

  void Pop(const Alternative& a, size_t c) {
    const Candidate& cand = candidates_[c];
    --in_claim_[c];
    if (!a.admin) {
      if (!cand.in_use_elsewhere && in_claim_[c] == 0) TakeCounters(cand, -1);
      if (cand.shared) {
        for (const auto& [name, amount] : a.consumption[c]) {
          claim_consumed_[c][name] = claim_consumed_[c][name] - amount;
        }
      }
    }
    for (Constraint& k : constraints_) {
      if (!k.Applies(a)) continue;
      --k.num;
      if (k.distinct) k.taken.pop_back();
    }
    chosen_.pop_back();
  }

  // Takes (sign +1) or gives back (-1) what the device consumes of its pool's counters.
  void TakeCounters(const Candidate& cand, int sign) {
    for (const CounterUse& use : cand.counters) {
      Quantity& left = counters_left_[use.key];
      left = sign > 0 ? left - use.amount : left + use.amount;
    }
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
    for (const auto& [a, c] : chosen_) {
      const Candidate& cand = candidates_[c];
      resourceapi::DeviceRequestAllocationResult r;
      r.request = a->name;
      r.driver = cand.id.driver;
      r.pool = cand.id.pool;
      r.device = cand.id.device;
      if (a->admin) r.admin_access = true;
      r.tolerations = a->spec->tolerations;
      r.binding_conditions = cand.device->binding_conditions;
      r.binding_failure_conditions = cand.device->binding_failure_conditions;
      if (cand.shared) {
        r.share_id = inputs_.new_share_id ? inputs_.new_share_id() : RandomShareId();
        for (const auto& [name, amount] : a->consumption[c]) {
          r.consumed_capacity[name] = amount.ToString();
        }
      }
      result.results.push_back(std::move(r));
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
    std::vector<std::pair<const resourceapi::ResourceSlice*, const resourceapi::Device*>> devices;
    for (const auto& [a, c] : chosen_)
      devices.emplace_back(candidates_[c].slice, candidates_[c].device);
    result.node_selector = AllocationNodeSelector(devices);
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
  NodeView node_;
  std::vector<int> in_claim_;                // per candidate: results of this claim using it
  std::vector<CapacityMap> claim_consumed_;  // per shared candidate: this claim's shares
  std::map<std::tuple<size_t, std::string, std::string>, Quantity> counters_left_;
  std::vector<std::pair<const Alternative*, size_t>> chosen_;
  int64_t steps_ = 0;
  absl::Status error_;
};

}  // namespace

std::set<DeviceId> AllocatedDevices(const resourceapi::AllocationResult& allocation) {
  std::set<DeviceId> out;
  for (const resourceapi::DeviceRequestAllocationResult& r : allocation.results) {
    if (r.admin_access.value_or(false) || r.share_id.has_value()) continue;
    out.insert(DeviceId{r.driver, r.pool, r.device});
  }
  return out;
}

void AddAllocation(const resourceapi::AllocationResult& allocation, AllocatorInputs* inputs) {
  for (const DeviceId& id : AllocatedDevices(allocation)) inputs->allocated.insert(id);
  for (const resourceapi::DeviceRequestAllocationResult& r : allocation.results) {
    if (r.admin_access.value_or(false) || !r.share_id.has_value()) continue;
    std::map<std::string, Quantity>& sum = inputs->shared[DeviceId{r.driver, r.pool, r.device}];
    for (const auto& [name, text] : r.consumed_capacity) {
      sum[name] = sum[name] + ParseQuantity(text).value_or(Quantity());
    }
  }
}

absl::StatusOr<AllocationResult> Allocate(const ResourceClaim& claim,
                                          const AllocatorInputs& inputs) {
  ClaimAllocator allocator(claim, inputs);
  return allocator.Run();
}

}  // namespace kdp::manager::scheduling
