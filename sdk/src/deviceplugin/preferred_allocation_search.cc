// Choose()'s two searches (preferred_allocation_search.h). The exhaustive one enumerates the sets
// in lexicographic order, so the first of equally ranked sets is the one earliest in Build()
// order; the greedy one grows sets with a gain array (O(n) per pick) and a one-set lookahead.
#include "sdk/src/deviceplugin/preferred_allocation_search.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

namespace kdp::internal {
namespace {

// Greedy: at most kMaxSeeds seeds, and seeds × max_size × n at most kGreedyWork.
constexpr int kMaxSeeds = 16;
constexpr int64_t kGreedyWork = int64_t{1} << 22;
// numa-packed greedy: at most 2 × seeds NUMA node sets, and kGrowsPerSeed × seeds growths in all
// (a set of several nodes grows from each of its nodes).
constexpr int kGrowsPerSeed = 4;
// Greedy lookahead: at most this many top-list entries (n × (max_size − 1)) in all.
constexpr int64_t kMaxLookaheadEntries = int64_t{1} << 22;
// Swap pass: at most kMaxSwapRounds rounds of |F| × (n − |F|) evaluations each, and at most
// kSwapWork evaluations in all (counts, never a clock: the answer must not depend on the
// machine's speed or load).
constexpr int kMaxSwapRounds = 8;
constexpr int64_t kSwapWork = int64_t{1} << 20;

// How a set F ranks (preferred_allocation_search.h).
struct Rank {
  int nodes = 0;         // NUMA nodes used, with "no locality" as one more
  int distinct = 0;      // distinct physical devices, must_include's included
  int64_t score = 0;     // sum of pair scores over the distinct physical devices
  int64_t leftover = 0;  // sum of pair scores over the fresh devices left
  int64_t squares = 0;   // sum over nodes of (physical devices on the node)²
  int64_t free = 0;      // free replicas of the chosen devices (more = less loaded)
};

template <typename T>
int Ascending(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Negative when `a` ranks before `b` under `policy`, positive after, 0 when equal.
int Compare(AllocationPolicy policy, const Rank& a, const Rank& b) {
  int c = 0;
  switch (policy) {
    case AllocationPolicy::kNumaPacked:
      if ((c = Ascending(a.nodes, b.nodes)) != 0) return c;
      if ((c = Ascending(b.distinct, a.distinct)) != 0) return c;
      if ((c = Ascending(b.score, a.score)) != 0) return c;
      if ((c = Ascending(b.leftover, a.leftover)) != 0) return c;
      break;
    case AllocationPolicy::kLinkBestFit:
      if ((c = Ascending(b.distinct, a.distinct)) != 0) return c;
      if ((c = Ascending(b.score, a.score)) != 0) return c;
      if ((c = Ascending(b.leftover, a.leftover)) != 0) return c;
      break;
    case AllocationPolicy::kSpread:
      if ((c = Ascending(b.distinct, a.distinct)) != 0) return c;
      if ((c = Ascending(b.nodes, a.nodes)) != 0) return c;
      if ((c = Ascending(a.squares, b.squares)) != 0) return c;
      if ((c = Ascending(a.score, b.score)) != 0) return c;
      break;
  }
  return Ascending(b.free, a.free);
}

// A candidate set being built: F, its node counts and the sums its Rank needs.
struct State {
  std::vector<int> count;
  int used = 0;
  int64_t squares = 0;
  int64_t intra = 0, base = 0, rowsums = 0, free = 0;
  std::vector<int> chosen;
  std::vector<char> in;

  explicit State(const SearchProblem& p) : count(p.must_count), in(p.n, 0) {
    for (int c : count) {
      if (c > 0) ++used;
      squares += int64_t{c} * c;
    }
  }

  void AddNodes(const SearchProblem& p, int x) {
    for (int v : p.nodes[x]) {
      if (count[v]++ == 0) ++used;
      squares += 2 * int64_t{count[v]} - 1;
    }
  }
  void RemoveNodes(const SearchProblem& p, int x) {
    for (int v : p.nodes[x]) {
      squares -= 2 * int64_t{count[v]} - 1;
      if (--count[v] == 0) --used;
    }
  }
  // Adds x, `gain` being Σ_{y∈F} s(x, y).
  void Add(const SearchProblem& p, int x, int64_t gain) {
    intra += gain;
    base += p.base[x];
    rowsums += p.rowsum[x];
    free += p.capacity[x];
    AddNodes(p, x);
    chosen.push_back(x);
    in[x] = 1;
  }
  void Remove(const SearchProblem& p, int x, int64_t gain) {
    intra -= gain;
    base -= p.base[x];
    rowsums -= p.rowsum[x];
    free -= p.capacity[x];
    RemoveNodes(p, x);
    chosen.erase(std::find(chosen.begin(), chosen.end(), x));
    in[x] = 0;
  }
  Rank RankOf(const SearchProblem& p) const {
    return {.nodes = used,
            .distinct = p.must_distinct + static_cast<int>(chosen.size()),
            .score = p.must_score + base + intra,
            .leftover = p.total - rowsums + intra,
            .squares = squares,
            .free = free};
  }
  bool Feasible(const SearchProblem& p) const { return free + p.reused_capacity >= p.needed; }
};

struct Candidate {
  std::vector<int> chosen;  // ascending
  Rank rank;
  bool valid = false;
};

// Replaces `best` by `c` when `c` ranks before it (equal ranks: the lexicographically smaller).
void Keep(AllocationPolicy policy, Candidate c, Candidate& best) {
  if (!best.valid) {
    best = std::move(c);
    return;
  }
  const int order = Compare(policy, c.rank, best.rank);
  if (order < 0 || (order == 0 && c.chosen < best.chosen)) best = std::move(c);
}

// The exhaustive search: every F with min_size <= |F| <= max_size, in lexicographic order
// (depth-first, each device added in turn), with the sums updated as devices join and leave.
// Its inner loop reads a dense copy of the candidates' scores and flat node lists.
class Exhaustive {
 public:
  explicit Exhaustive(const SearchProblem& p) : p_(p), state_(p) {
    const int n = p.n;
    // With max_size >= 2, Choose() searches exhaustively only for n <= 512 (C(513, 2) exceeds
    // kMaxExhaustiveSets), so the copy takes at most 1 MiB.
    if (p.max_size >= 2) {
      scores_.resize(static_cast<size_t>(n) * n);
      for (int x = 0; x < n; ++x) {
        const int32_t* row = p.Row(x);
        for (int y = 0; y < n; ++y) scores_[static_cast<size_t>(x) * n + y] = row[p.physical[y]];
      }
    }
    node_begin_.push_back(0);
    for (int x = 0; x < n; ++x) {
      node_list_.insert(node_list_.end(), p.nodes[x].begin(), p.nodes[x].end());
      node_begin_.push_back(static_cast<int>(node_list_.size()));
    }
    stack_.resize(p.max_size);
  }

  Candidate Run() {
    Visit(0, 0);
    return std::move(best_);
  }

 private:
  void Visit(int start, int depth) {
    if (depth >= p_.min_size && state_.free + p_.reused_capacity >= p_.needed) {
      const Rank rank{.nodes = state_.used,
                      .distinct = p_.must_distinct + depth,
                      .score = p_.must_score + state_.base + state_.intra,
                      .leftover = p_.total - state_.rowsums + state_.intra,
                      .squares = state_.squares,
                      .free = state_.free};
      // Pre-order is lexicographic order, so only a strictly better set replaces the best.
      if (!best_.valid || Compare(p_.policy, rank, best_.rank) < 0) {
        best_.chosen.assign(stack_.begin(), stack_.begin() + depth);
        best_.rank = rank;
        best_.valid = true;
      }
    }
    if (depth == p_.max_size) return;
    const int n = p_.n;
    for (int x = start; x < n && n - x >= p_.min_size - depth; ++x) {
      int64_t gain = 0;
      if (depth > 0) {
        const int32_t* row = &scores_[static_cast<size_t>(x) * n];
        for (int i = 0; i < depth; ++i) gain += row[stack_[i]];
      }
      state_.intra += gain;
      state_.base += p_.base[x];
      state_.rowsums += p_.rowsum[x];
      state_.free += p_.capacity[x];
      for (int i = node_begin_[x]; i < node_begin_[x + 1]; ++i) {
        const int v = node_list_[i];
        if (state_.count[v]++ == 0) ++state_.used;
        state_.squares += 2 * int64_t{state_.count[v]} - 1;
      }
      stack_[depth] = x;
      Visit(x + 1, depth + 1);
      for (int i = node_begin_[x]; i < node_begin_[x + 1]; ++i) {
        const int v = node_list_[i];
        state_.squares -= 2 * int64_t{state_.count[v]} - 1;
        if (--state_.count[v] == 0) --state_.used;
      }
      state_.intra -= gain;
      state_.base -= p_.base[x];
      state_.rowsums -= p_.rowsum[x];
      state_.free -= p_.capacity[x];
    }
  }

  const SearchProblem& p_;
  State state_;  // its sums and node counts; `chosen` and `in` unused
  std::vector<int32_t> scores_;
  std::vector<int> node_begin_, node_list_;
  std::vector<int> stack_;
  Candidate best_;
};

// The greedy search. link-best-fit and spread grow F from a few seeds by the best marginal
// choice; numa-packed first picks NUMA node sets (the fewest nodes that hold the request, by best
// fit, from each node in turn) and grows F inside each as link-best-fit does. The best result is
// then improved by swaps. Growth looks one set ahead (not for spread): a device's value is its
// gain plus its best pair scores to as many unchosen devices as picks will remain, so a PCIe
// switch or NVLink clique with room is entered before a lone device scoring slightly more now
// (plain greedy would fill a set from the scraps around its first pick). Equal values go to the
// least connected device (best fit: the least lost from what is left).
class Greedy {
 public:
  explicit Greedy(const SearchProblem& p)
      : p_(p),
        limit_(static_cast<int>(std::clamp<int64_t>(
            kGreedyWork / std::max<int64_t>(1, int64_t{p.max_size} * p.n), 1, kMaxSeeds))) {
    if (p.policy != AllocationPolicy::kSpread) BuildTopLists();
  }

  Candidate Run() {
    Candidate best;
    if (p_.policy == AllocationPolicy::kNumaPacked) {
      const std::vector<int64_t> potential = Potentials();
      int grows = 0;  // at most kGrowsPerSeed × limit_, and one per node set at least
      for (const std::vector<char>& allowed : NodeSets()) {
        // From each node of the set, its best device by potential (with one node, the first
        // pick of Grow(-1)).
        std::vector<int> best_on(p_.node_free.size(), -1);
        for (int x = 0; x < p_.n; ++x) {
          if (!allowed[x]) continue;
          for (int v : p_.nodes[x]) {
            const int b = best_on[v];
            if (b < 0 || potential[x] > potential[b] ||
                (potential[x] == potential[b] && p_.rowsum[x] < p_.rowsum[b])) {
              best_on[v] = x;
            }
          }
        }
        std::vector<int> seeds;
        for (int x : best_on) {
          if (x >= 0 && std::find(seeds.begin(), seeds.end(), x) == seeds.end()) seeds.push_back(x);
        }
        if (seeds.size() < 2 || grows + static_cast<int>(seeds.size()) > kGrowsPerSeed * limit_) {
          seeds = {-1};
        }
        for (int seed : seeds) {
          Keep(p_.policy, Grow(seed, allowed, AllocationPolicy::kLinkBestFit), best);
          ++grows;
        }
      }
    } else {
      const std::vector<char> all(p_.n, 1);
      for (int seed : Seeds()) Keep(p_.policy, Grow(seed, all, p_.policy), best);
    }
    Improve(best);
    return best;
  }

 private:
  // What adding x to the current F changes.
  struct Marginal {
    int new_nodes = 0;
    int64_t squares = 0;    // increase of the sum of squares
    int64_t gain = 0;       // increase of the score
    int64_t lookahead = 0;  // x's best scores to as many unchosen devices as picks remain
    int64_t leftover = 0;   // change of the leftover
    int capacity = 0;
    int index = 0;
  };

  // The lookahead's sliding windows over the top lists, one per candidate: the prefix [0, end)
  // of its list holds `count` open devices (neither chosen nor excluded), min(its open entries,
  // picks remaining), whose scores sum to `sum`.
  struct Windows {
    std::vector<int> end;
    std::vector<int> count;
    std::vector<int64_t> sum;
  };

  // Per candidate, its width_ = max_size − 1 best partners, by score descending then index.
  void BuildTopLists() {
    width_ = std::min(p_.max_size - 1, p_.n - 1);
    if (width_ <= 0 || int64_t{width_} * p_.n > kMaxLookaheadEntries) {
      width_ = 0;
      return;
    }
    top_score_.resize(static_cast<size_t>(width_) * p_.n);
    top_index_.resize(top_score_.size());
    // Keys (INT32_MAX − score) << 32 | index: ascending is the list's order.
    std::vector<uint64_t> row;
    row.reserve(p_.n);
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    for (int x = 0; x < p_.n; ++x) {
      const int32_t* scores = p_.Row(x);
      row.clear();
      for (int y = 0; y < p_.n; ++y) {
        if (y == x) continue;
        row.push_back(static_cast<uint64_t>(kMax - scores[p_.physical[y]]) << 32 |
                      static_cast<uint32_t>(y));
      }
      if (width_ < static_cast<int>(row.size())) {
        std::nth_element(row.begin(), row.begin() + width_, row.end());
      }
      std::sort(row.begin(), row.begin() + width_);
      for (int i = 0; i < width_; ++i) {
        top_score_[static_cast<size_t>(x) * width_ + i] =
            static_cast<int32_t>(kMax - (row[i] >> 32));
        top_index_[static_cast<size_t>(x) * width_ + i] = static_cast<int>(row[i] & 0xffffffffu);
      }
    }
  }

  const int32_t* TopScores(int x) const { return &top_score_[static_cast<size_t>(x) * width_]; }
  const int* TopIndexes(int x) const { return &top_index_[static_cast<size_t>(x) * width_]; }

  void InitWindows(const std::vector<char>& closed, const std::vector<int>& open, int remaining,
                   Windows& w) const {
    w.end.assign(p_.n, 0);
    w.count.assign(p_.n, 0);
    w.sum.assign(p_.n, 0);
    if (width_ == 0) return;
    for (int x : open) {
      const int32_t* score = TopScores(x);
      const int* index = TopIndexes(x);
      int i = 0;
      for (; i < width_ && w.count[x] < remaining; ++i) {
        if (closed[index[i]]) continue;
        w.sum[x] += score[i];
        ++w.count[x];
      }
      w.end[x] = i;
    }
  }

  // `z` was just chosen (and closed); `remaining` picks are left: every window loses z, or its
  // last open device when it holds more than `remaining`.
  void UpdateWindows(const std::vector<char>& closed, const std::vector<int>& open, int z,
                     int remaining, Windows& w) const {
    if (width_ == 0) return;
    const int32_t* row_z = p_.Row(z);
    for (int x : open) {
      int end = w.end[x];
      if (end == 0) continue;
      const int32_t* score = TopScores(x);
      const int* index = TopIndexes(x);
      const int32_t s = row_z[p_.physical[x]];
      if (s > score[end - 1] || (s == score[end - 1] && z <= index[end - 1])) {
        w.sum[x] -= s;  // z was in the window
        --w.count[x];
        continue;
      }
      if (w.count[x] <= remaining) continue;
      while (closed[index[end - 1]]) --end;
      w.sum[x] -= score[--end];
      --w.count[x];
      w.end[x] = end;
    }
  }

  Marginal MarginalOf(const State& state, const std::vector<int64_t>& gain, const Windows& w,
                      int x) const {
    Marginal m{.gain = p_.base[x] + gain[x],
               .lookahead = w.sum.empty() ? 0 : w.sum[x],
               .leftover = gain[x] - p_.rowsum[x],
               .capacity = p_.capacity[x],
               .index = x};
    for (int v : p_.nodes[x]) {
      m.squares += 2 * int64_t{state.count[v]} + 1;
      if (state.count[v] == 0) ++m.new_nodes;
    }
    return m;
  }

  // Whether `a` is picked before `b` when growing under `order` (link-best-fit or spread).
  static bool Before(AllocationPolicy order, const Marginal& a, const Marginal& b) {
    if (order == AllocationPolicy::kSpread) {
      if (a.new_nodes != b.new_nodes) return a.new_nodes > b.new_nodes;
      if (a.squares != b.squares) return a.squares < b.squares;
      if (a.gain != b.gain) return a.gain < b.gain;
    } else {
      if (a.gain + a.lookahead != b.gain + b.lookahead) {
        return a.gain + a.lookahead > b.gain + b.lookahead;
      }
      if (a.gain != b.gain) return a.gain > b.gain;
      if (a.leftover != b.leftover) return a.leftover > b.leftover;
    }
    if (a.capacity != b.capacity) return a.capacity > b.capacity;
    return a.index < b.index;
  }

  // Each candidate's score to must_include plus its max_size − 1 best pair scores.
  std::vector<int64_t> Potentials() const {
    std::vector<int64_t> potential(p_.n);
    for (int x = 0; x < p_.n; ++x) {
      potential[x] = p_.base[x] + (width_ == 0 ? p_.rowsum[x] : 0);
      const int32_t* top = width_ == 0 ? nullptr : TopScores(x);
      for (int i = 0; i < width_; ++i) potential[x] += top[i];
    }
    return potential;
  }

  // spread: anywhere (-1; its order alternates nodes by itself). link-best-fit: the best first
  // pick overall, then the best on each NUMA node (the nodes with the most free devices first).
  std::vector<int> Seeds() const {
    if (p_.policy == AllocationPolicy::kSpread) return {-1};
    const State empty(p_);
    const std::vector<int64_t> zero(p_.n, 0);
    Windows windows;
    std::vector<int> all(p_.n);
    std::iota(all.begin(), all.end(), 0);
    InitWindows(std::vector<char>(p_.n, 0), all, p_.max_size - 1, windows);
    std::vector<Marginal> marginal(p_.n);
    for (int x = 0; x < p_.n; ++x) marginal[x] = MarginalOf(empty, zero, windows, x);
    auto before = [&](int a, int b) { return Before(p_.policy, marginal[a], marginal[b]); };
    std::vector<int> best_on(p_.node_free.size(), -1);
    int best = 0;
    for (int x = 0; x < p_.n; ++x) {
      if (before(x, best)) best = x;
      for (int v : p_.nodes[x]) {
        if (best_on[v] < 0 || before(x, best_on[v])) best_on[v] = x;
      }
    }
    std::vector<int> seeds = {best};
    std::vector<int> order;
    for (int v = 0; v < static_cast<int>(best_on.size()); ++v) {
      if (best_on[v] >= 0) order.push_back(v);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return p_.node_free[a] > p_.node_free[b]; });
    for (int v : order) {
      if (static_cast<int>(seeds.size()) >= limit_) break;
      if (std::find(seeds.begin(), seeds.end(), best_on[v]) == seeds.end()) {
        seeds.push_back(best_on[v]);
      }
    }
    return seeds;
  }

  // numa-packed: node sets that hold the request, as masks of the candidates they allow. Each
  // starts from must_include's nodes (alone, then plus one node, the nodes with the most free
  // devices first) and adds nodes by best fit until the request fits: the node that adds the
  // fewest IDs among those that add enough, else the node that adds the most.
  std::vector<std::vector<char>> NodeSets() const {
    const int nodes = static_cast<int>(p_.node_free.size());
    std::vector<std::vector<int>> on_node(nodes);
    for (int x = 0; x < p_.n; ++x) {
      for (int v : p_.nodes[x]) on_node[v].push_back(x);
    }
    std::vector<char> must(nodes, 0);
    bool any_must = false;
    for (int v = 0; v < nodes; ++v) {
      must[v] = p_.must_count[v] > 0;
      any_must = any_must || must[v];
    }
    std::vector<int> starts;  // -1: must_include's nodes alone
    if (any_must) starts.push_back(-1);
    std::vector<int> order;
    for (int v = 0; v < nodes; ++v) {
      if (!on_node[v].empty() && !must[v]) order.push_back(v);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return p_.node_free[a] > p_.node_free[b]; });
    for (int v : order) {
      if (static_cast<int>(starts.size()) >= limit_) break;
      starts.push_back(v);
    }
    auto inside = [&](const std::vector<char>& set, int x) {
      for (int v : p_.nodes[x]) {
        if (!set[v]) return false;
      }
      return true;
    };
    std::vector<std::vector<char>> masks;
    std::set<std::vector<char>> seen;
    auto add_set = [&](const std::vector<char>& set) {
      if (static_cast<int>(masks.size()) >= 2 * limit_ || !seen.insert(set).second) return;
      std::vector<char> allowed(p_.n, 0);
      for (int x = 0; x < p_.n; ++x) allowed[x] = inside(set, x);
      masks.push_back(std::move(allowed));
    };
    for (int start : starts) {
      std::vector<char> set = must;
      if (start >= 0) set[start] = 1;
      int64_t covered = p_.reused_capacity;
      for (int x = 0; x < p_.n; ++x) {
        if (inside(set, x)) covered += p_.capacity[x];
      }
      // Until one more node can complete the set: add the node adding the most. Then one set per
      // node that completes it, the best fit (fewest added) first.
      while (covered < p_.needed) {
        std::vector<std::pair<int64_t, int>> fitting;  // (added, node)
        int largest = -1;
        int64_t largest_added = 0;
        for (int u = 0; u < nodes; ++u) {
          if (set[u] || on_node[u].empty()) continue;
          set[u] = 1;
          int64_t added = 0;
          for (int x : on_node[u]) {
            if (inside(set, x)) added += p_.capacity[x];
          }
          set[u] = 0;
          if (covered + added >= p_.needed) fitting.emplace_back(added, u);
          if (added > largest_added) {
            largest = u;
            largest_added = added;
          }
        }
        if (!fitting.empty()) {
          std::sort(fitting.begin(), fitting.end());
          for (const auto& [added, u] : fitting) {
            set[u] = 1;
            add_set(set);
            set[u] = 0;
          }
          covered = -1;  // added
          break;
        }
        if (largest < 0) {  // only devices spanning several missing nodes are left: take them all
          std::fill(set.begin(), set.end(), 1);
          break;
        }
        set[largest] = 1;
        covered += largest_added;
      }
      if (covered >= 0) add_set(set);
    }
    return masks;
  }

  void AddWithGains(State& state, std::vector<int64_t>& gain, int x) const {
    state.Add(p_, x, gain[x]);
    const int32_t* row = p_.Row(x);
    for (int z = 0; z < p_.n; ++z) gain[z] += row[p_.physical[z]];
  }

  // Grows F among the `allowed` candidates, from `seed` (-1: none), as many as it can up to
  // max_size, each pick the first under `order`.
  Candidate Grow(int seed, const std::vector<char>& allowed, AllocationPolicy order) const {
    State state(p_);
    std::vector<int64_t> gain(p_.n, 0);
    std::vector<char> closed(p_.n);
    std::vector<int> open;
    for (int x = 0; x < p_.n; ++x) {
      closed[x] = !allowed[x];
      if (allowed[x]) open.push_back(x);
    }
    const int picks = std::min(p_.max_size, static_cast<int>(open.size()));
    auto take = [&](int x) {
      state.Add(p_, x, gain[x]);
      closed[x] = 1;
      open.erase(std::find(open.begin(), open.end(), x));
      const int32_t* row = p_.Row(x);
      for (int z : open) gain[z] += row[p_.physical[z]];
    };
    if (seed >= 0) take(seed);
    Windows windows;
    InitWindows(closed, open, picks - static_cast<int>(state.chosen.size()) - 1, windows);
    while (static_cast<int>(state.chosen.size()) < picks) {
      const int remaining = picks - static_cast<int>(state.chosen.size()) - 1;
      int best = -1;
      Marginal best_marginal;
      int64_t best_value = 0;  // link-best-fit's first key, to skip most full comparisons
      for (int x : open) {
        if (order != AllocationPolicy::kSpread && best >= 0) {
          const int64_t value = p_.base[x] + gain[x] + windows.sum[x];
          if (value < best_value) continue;
        }
        const Marginal m = MarginalOf(state, gain, windows, x);
        if (best < 0 || Before(order, m, best_marginal)) {
          best = x;
          best_marginal = m;
          best_value = m.gain + m.lookahead;
        }
      }
      take(best);
      if (remaining > 0) UpdateWindows(closed, open, best, remaining - 1, windows);
    }
    Candidate c{.chosen = state.chosen, .rank = state.RankOf(p_), .valid = true};
    std::sort(c.chosen.begin(), c.chosen.end());
    return c;
  }

  // Best-improvement swaps (one chosen device for one left), a bounded number of rounds.
  void Improve(Candidate& best) const {
    const int64_t k = static_cast<int64_t>(best.chosen.size());
    const int64_t per_round = k * (p_.n - k);
    if (per_round == 0) return;
    const int rounds = static_cast<int>(std::min<int64_t>(kMaxSwapRounds, kSwapWork / per_round));
    State state(p_);
    std::vector<int64_t> gain(p_.n, 0);
    for (int x : best.chosen) AddWithGains(state, gain, x);
    for (int round = 0; round < rounds; ++round) {
      Rank target = state.RankOf(p_);
      int out = -1, in = -1;
      for (int x : state.chosen) {
        const int32_t* row_x = p_.Row(x);
        state.RemoveNodes(p_, x);
        const int used = state.used;
        const int64_t squares = state.squares;
        for (int y = 0; y < p_.n; ++y) {
          if (state.in[y]) continue;
          const int64_t free = state.free - p_.capacity[x] + p_.capacity[y];
          if (free + p_.reused_capacity < p_.needed) continue;
          const int64_t intra = state.intra - gain[x] + gain[y] - row_x[p_.physical[y]];
          Rank rank{.nodes = used,
                    .distinct = p_.must_distinct + static_cast<int>(k),
                    .score = p_.must_score + state.base - p_.base[x] + p_.base[y] + intra,
                    .leftover = p_.total - (state.rowsums - p_.rowsum[x] + p_.rowsum[y]) + intra,
                    .squares = squares,
                    .free = free};
          for (int v : p_.nodes[y]) {
            if (state.count[v] == 0) ++rank.nodes;
            rank.squares += 2 * int64_t{state.count[v]} + 1;
          }
          if (Compare(p_.policy, rank, target) < 0) {
            target = rank;
            out = x;
            in = y;
          }
        }
        state.AddNodes(p_, x);
      }
      if (out < 0) break;
      const int32_t* row_out = p_.Row(out);
      for (int z = 0; z < p_.n; ++z) gain[z] -= row_out[p_.physical[z]];
      state.Remove(p_, out, gain[out]);
      AddWithGains(state, gain, in);
    }
    best.chosen = state.chosen;
    std::sort(best.chosen.begin(), best.chosen.end());
    best.rank = state.RankOf(p_);
  }

  const SearchProblem& p_;
  const int limit_;  // seeds (and node sets: twice as many) at most
  int width_ = 0;    // entries per top list; 0: no lookahead
  std::vector<int32_t> top_score_;
  std::vector<int> top_index_;
};

}  // namespace

double CountCandidateSets(const SearchProblem& problem) {
  double total = 0;
  double c = 1;  // C(n, m)
  for (int m = 0; m <= problem.max_size; ++m) {
    if (m >= problem.min_size) total += c;
    if (total > kMaxExhaustiveSets) return total;
    c = c * (problem.n - m) / (m + 1);
  }
  return total;
}

std::vector<int> SearchExhaustive(const SearchProblem& problem) {
  return Exhaustive(problem).Run().chosen;
}

std::vector<int> SearchGreedy(const SearchProblem& problem) { return Greedy(problem).Run().chosen; }

}  // namespace kdp::internal
