#include "manager/src/topologymanager/policy.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/resource_name.h"

namespace kdp::manager {
namespace {

constexpr char kPreferClosestNumaNodes[] = "prefer-closest-numa-nodes";
constexpr char kMaxAllowableNumaNodes[] = "max-allowable-numa-nodes";

// Go's strings.TrimSpace for ASCII text.
std::string_view TrimSpace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

// Go's strconv.ParseBool.
std::optional<bool> GoParseBool(std::string_view text) {
  static const std::set<std::string_view> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string_view> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.contains(text)) return true;
  if (kFalse.contains(text)) return false;
  return std::nullopt;
}

// Go's strconv.Atoi on a 64-bit platform: an optional sign and decimal digits. The error is Go's
// reason: "invalid syntax" or "value out of range" (the first one met scanning left to right).
absl::StatusOr<int64_t> GoAtoi(std::string_view text) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return absl::InvalidArgumentError("invalid syntax");
  constexpr uint64_t kCutoff = UINT64_MAX / 10 + 1;
  uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return absl::InvalidArgumentError("invalid syntax");
    if (value >= kCutoff) return absl::OutOfRangeError("value out of range");
    const uint64_t next = value * 10 + static_cast<uint64_t>(c - '0');
    if (next < value * 10) return absl::OutOfRangeError("value out of range");
    value = next;
  }
  constexpr uint64_t kMaxPositive = uint64_t{1} << 63;  // |INT64_MIN|
  if ((!negative && value >= kMaxPositive) || (negative && value > kMaxPositive)) {
    return absl::OutOfRangeError("value out of range");
  }
  return negative ? static_cast<int64_t>(~value + 1) : static_cast<int64_t>(value);
}

std::string MaxAllowableTooLow() {
  return absl::StrCat("the minimum value of ", GoQuote(kMaxAllowableNumaNodes),
                      " should not be less than ", kDefaultMaxAllowableNumaNodes);
}

const NumaMask& MaskOf(const TopologyHint& hint) {
  static const NumaMask* const kEmpty = new NumaMask();
  return hint.numa_affinity.has_value() ? *hint.numa_affinity : *kEmpty;
}

}  // namespace

std::string TopologyHint::ToString() const {
  return absl::StrCat("{", numa_affinity.has_value() ? numa_affinity->ToBitString() : "<nil>",
                      preferred ? " true}" : " false}");
}

const char* TopologyPolicyName(TopologyPolicy policy) {
  switch (policy) {
    case TopologyPolicy::kNone:
      return "none";
    case TopologyPolicy::kBestEffort:
      return "best-effort";
    case TopologyPolicy::kRestricted:
      return "restricted";
    case TopologyPolicy::kSingleNumaNode:
      return "single-numa-node";
  }
  return "none";
}

absl::StatusOr<TopologyPolicy> ParseTopologyPolicy(std::string_view text) {
  for (TopologyPolicy policy : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort,
                                TopologyPolicy::kRestricted, TopologyPolicy::kSingleNumaNode}) {
    if (text == TopologyPolicyName(policy)) return policy;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid configuration: topologyManagerPolicy (--topology-manager-policy) ", GoQuote(text),
      " must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]"));
}

absl::StatusOr<TopologyPolicyOptions> ParseTopologyPolicyOptions(std::string_view text) {
  std::map<std::string, std::string> options;
  while (true) {
    const size_t comma = text.find(',');
    std::string_view pair = TrimSpace(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const bool last = comma == std::string_view::npos;
    if (!pair.empty()) {
      const size_t equals = pair.find('=');
      if (equals == std::string_view::npos) {
        return absl::InvalidArgumentError("malformed pair, expect string=string");
      }
      options[std::string(TrimSpace(pair.substr(0, equals)))] =
          std::string(TrimSpace(pair.substr(equals + 1)));
    }
    if (last) break;
  }
  return TopologyPolicyOptionsFromMap(options);
}

absl::StatusOr<TopologyPolicyOptions> TopologyPolicyOptionsFromMap(
    const std::map<std::string, std::string>& options) {
  TopologyPolicyOptions result;
  for (const auto& [name, value] : options) {
    if (name == kPreferClosestNumaNodes) {
      std::optional<bool> parsed = GoParseBool(value);
      if (!parsed.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("bad value for option ", GoQuote(name),
                                                       ": strconv.ParseBool: parsing ",
                                                       GoQuote(value), ": invalid syntax"));
      }
      result.prefer_closest_numa_nodes = *parsed;
    } else if (name == kMaxAllowableNumaNodes) {
      absl::StatusOr<int64_t> parsed = GoAtoi(value);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unable to convert policy option to integer ", GoQuote(name),
            ": strconv.Atoi: parsing ", GoQuote(value), ": ", parsed.status().message()));
      }
      if (*parsed < kDefaultMaxAllowableNumaNodes) {
        return absl::InvalidArgumentError(MaxAllowableTooLow());
      }
      if (*parsed > kDefaultMaxAllowableNumaNodes) {
        KDP_LOG_WARNING(
            "WARNING: the value of max-allowable-numa-nodes is more than the default recommended "
            "value",
            "max-allowable-numa-nodes", *parsed, "defaultMaxAllowableNUMANodes",
            kDefaultMaxAllowableNumaNodes);
      }
      result.max_allowable_numa_nodes = static_cast<int>(std::min<int64_t>(*parsed, INT_MAX));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown Topology Manager Policy option: ", GoQuote(name)));
    }
  }
  return result;
}

absl::Status ValidateNumaInfo(TopologyPolicy policy, const TopologyPolicyOptions& options,
                              const NumaInfo& numa) {
  // Upstream's NewManager returns before anything else for policy none.
  if (policy == TopologyPolicy::kNone) return absl::OkStatus();
  if (options.max_allowable_numa_nodes < kDefaultMaxAllowableNumaNodes) {
    return absl::InvalidArgumentError(MaxAllowableTooLow());
  }
  std::set<int> seen;
  for (int node : numa.nodes) {
    if (!NumaMask::IsValidNode(node)) {
      return absl::InvalidArgumentError(absl::StrCat("cannot discover NUMA topology: NUMA node ",
                                                     node, " is outside 0-", NumaMask::kMaxNode));
    }
    if (!seen.insert(node).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot discover NUMA topology: NUMA node ", node, " is listed twice"));
    }
  }
  if (options.prefer_closest_numa_nodes) {
    for (int from : numa.nodes) {
      for (int to : numa.nodes) {
        if (numa.Distance(from, to) <= 0) {
          return absl::FailedPreconditionError(absl::StrCat(
              "cannot discover NUMA topology: error getting NUMA distances: the distance from "
              "NUMA node ",
              from, " to node ", to, " is unknown (", kPreferClosestNumaNodes,
              " needs the machine's distance matrix)"));
        }
      }
    }
  }
  if (static_cast<int64_t>(numa.nodes.size()) > options.max_allowable_numa_nodes) {
    return absl::FailedPreconditionError(absl::StrCat("unsupported on machines with more than ",
                                                      options.max_allowable_numa_nodes,
                                                      " NUMA Nodes"));
  }
  return absl::OkStatus();
}

namespace internal {

std::vector<std::vector<TopologyHint>> FilterProvidersHints(
    const std::vector<ProviderHints>& providers) {
  std::vector<std::vector<TopologyHint>> all;
  for (const ProviderHints& hints : providers) {
    if (hints.empty()) {
      KDP_LOG_DEBUG("Hint Provider has no preference for NUMA affinity with any resource");
      all.push_back({TopologyHint{.numa_affinity = std::nullopt, .preferred = true}});
      continue;
    }
    for (const auto& [resource, list] : hints) {
      if (!list.has_value()) {
        KDP_LOG_DEBUG("Hint Provider has no preference for NUMA affinity with resource", "resource",
                      resource);
        all.push_back({TopologyHint{.numa_affinity = std::nullopt, .preferred = true}});
      } else if (list->empty()) {
        KDP_LOG_DEBUG("Hint Provider has no possible NUMA affinities for resource", "resource",
                      resource);
        all.push_back({TopologyHint{.numa_affinity = std::nullopt, .preferred = false}});
      } else {
        all.push_back(*list);
      }
    }
  }
  return all;
}

std::vector<std::vector<TopologyHint>> FilterSingleNumaHints(
    const std::vector<std::vector<TopologyHint>>& hints) {
  std::vector<std::vector<TopologyHint>> filtered;
  filtered.reserve(hints.size());
  for (const std::vector<TopologyHint>& list : hints) {
    std::vector<TopologyHint>& kept = filtered.emplace_back();
    for (const TopologyHint& hint : list) {
      if (!hint.preferred) continue;
      if (!hint.numa_affinity.has_value() || hint.numa_affinity->Count() == 1) {
        kept.push_back(hint);
      }
    }
  }
  return filtered;
}

int MaxOfMinAffinityCounts(const std::vector<std::vector<TopologyHint>>& hints) {
  int max_of_min = 0;
  for (const std::vector<TopologyHint>& list : hints) {
    const NumaMask* narrowest = nullptr;
    for (const TopologyHint& hint : list) {
      if (!hint.numa_affinity.has_value()) continue;
      if (narrowest == nullptr || hint.numa_affinity->IsNarrowerThan(*narrowest)) {
        narrowest = &*hint.numa_affinity;
      }
    }
    if (narrowest != nullptr) max_of_min = std::max(max_of_min, narrowest->Count());
  }
  return max_of_min;
}

HintMerger::HintMerger(const NumaInfo& numa, std::vector<std::vector<TopologyHint>> hints,
                       TopologyPolicy policy, const TopologyPolicyOptions& options)
    : numa_(numa),
      hints_(std::move(hints)),
      prefer_closest_(policy != TopologyPolicy::kSingleNumaNode &&
                      options.prefer_closest_numa_nodes),
      best_non_preferred_affinity_count_(MaxOfMinAffinityCounts(hints_)) {}

const TopologyHint* HintMerger::CompareMasks(const TopologyHint* current,
                                             const TopologyHint* candidate) const {
  const NumaMask& current_mask = MaskOf(*current);
  const NumaMask& candidate_mask = MaskOf(*candidate);
  if (candidate_mask == current_mask) return current;
  const NumaMask& best = prefer_closest_ ? numa_.Closest(current_mask, candidate_mask)
                                         : NumaInfo::Narrowest(current_mask, candidate_mask);
  return best == current_mask ? current : candidate;
}

const TopologyHint* HintMerger::Compare(const TopologyHint* current,
                                        const TopologyHint* candidate) const {
  const int candidate_count = MaskOf(*candidate).Count();
  // Only candidates with at least one node can replace the best.
  if (candidate_count == 0) return current;
  if (current == nullptr) return candidate;
  // Preferred always beats non-preferred, whatever the masks.
  if (!current->preferred && candidate->preferred) return candidate;
  if (current->preferred && !candidate->preferred) return current;
  if (current->preferred && candidate->preferred) return CompareMasks(current, candidate);

  // Both non-preferred: come as close as possible to, without exceeding, the narrowest size the
  // most demanding resource needs (upstream's cases 1, 2, 3a, 3b, 3ca, 3cb, 3cc).
  const int best_count = best_non_preferred_affinity_count_;
  const int current_count = MaskOf(*current).Count();
  if (current_count > best_count) return CompareMasks(current, candidate);  // 1
  if (current_count == best_count) {                                        // 2
    if (candidate_count != best_count) return current;
    return CompareMasks(current, candidate);
  }
  if (candidate_count > best_count) return current;       // 3a
  if (candidate_count == best_count) return candidate;    // 3b
  if (candidate_count > current_count) return candidate;  // 3ca
  if (candidate_count < current_count) return current;    // 3cb
  return CompareMasks(current, candidate);                // 3cc
}

TopologyHint HintMerger::Merge() const {
  const NumaMask default_affinity = numa_.DefaultAffinity();
  std::optional<TopologyHint> best;

  // Every combination of one hint per list, the last list varying fastest (upstream's
  // iterateAllProviderTopologyHints), merged incrementally along the way (mergePermutation):
  // `merged` is the AND of the default affinity and the non-nil masks so far, `first` the first
  // non-nil mask, `preferred` whether every hint so far is preferred and every non-nil mask
  // equals `first`.
  auto visit = [&](auto& self, size_t i, const NumaMask& merged, bool preferred,
                   const NumaMask* first) -> void {
    if (i == hints_.size()) {
      const TopologyHint candidate{.numa_affinity = merged, .preferred = preferred};
      const TopologyHint* chosen = Compare(best.has_value() ? &*best : nullptr, &candidate);
      if (chosen == &candidate) best = candidate;
      return;
    }
    for (const TopologyHint& hint : hints_[i]) {
      const bool hint_preferred = preferred && hint.preferred;
      if (!hint.numa_affinity.has_value()) {
        self(self, i + 1, merged, hint_preferred, first);
        continue;
      }
      const NumaMask& mask = *hint.numa_affinity;
      const bool same = first == nullptr || mask == *first;
      self(self, i + 1, merged.And(mask), hint_preferred && same, first == nullptr ? &mask : first);
    }
  };
  visit(visit, 0, default_affinity, true, nullptr);

  if (!best.has_value()) return TopologyHint{.numa_affinity = default_affinity, .preferred = false};
  return *std::move(best);
}

}  // namespace internal

PolicyDecision Merge(TopologyPolicy policy, const TopologyPolicyOptions& options,
                     const NumaInfo& numa, const std::vector<ProviderHints>& providers) {
  if (policy == TopologyPolicy::kNone) return PolicyDecision{.best = {}, .admit = true};

  std::vector<std::vector<TopologyHint>> hints = internal::FilterProvidersHints(providers);
  if (policy == TopologyPolicy::kSingleNumaNode) {
    // Only "don't care" hints and hints with a single NUMA node.
    hints = internal::FilterSingleNumaHints(hints);
  }
  internal::HintMerger merger(numa, std::move(hints), policy, options);
  TopologyHint best = merger.Merge();

  if (policy == TopologyPolicy::kSingleNumaNode && best.numa_affinity.has_value() &&
      *best.numa_affinity == numa.DefaultAffinity()) {
    best.numa_affinity.reset();
  }
  const bool admit = policy == TopologyPolicy::kBestEffort || best.preferred;
  return PolicyDecision{.best = std::move(best), .admit = admit};
}

}  // namespace kdp::manager
