#include "manager/src/topologymanager/numa_mask.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_join.h"

namespace kdp::manager {

NumaMask NumaMask::Of(std::initializer_list<int> nodes) {
  return FromNodes(absl::Span<const int>(nodes.begin(), nodes.size()));
}

NumaMask NumaMask::FromNodes(absl::Span<const int> nodes) {
  NumaMask mask;
  for (int node : nodes) mask.Add(node);
  return mask;
}

bool NumaMask::Add(int node) {
  if (!IsValidNode(node)) return false;
  words_[node / 64] |= uint64_t{1} << (node % 64);
  return true;
}

bool NumaMask::Remove(int node) {
  if (!IsValidNode(node)) return false;
  words_[node / 64] &= ~(uint64_t{1} << (node % 64));
  return true;
}

bool NumaMask::Contains(int node) const {
  return IsValidNode(node) && (words_[node / 64] >> (node % 64) & 1) != 0;
}

int NumaMask::Count() const {
  int count = 0;
  for (uint64_t word : words_) count += std::popcount(word);
  return count;
}

bool NumaMask::IsEmpty() const {
  return std::all_of(words_.begin(), words_.end(), [](uint64_t word) { return word == 0; });
}

std::vector<int> NumaMask::Nodes() const {
  std::vector<int> nodes;
  for (int w = 0; w < kWords; ++w) {
    for (uint64_t word = words_[w]; word != 0; word &= word - 1) {
      nodes.push_back(w * 64 + std::countr_zero(word));
    }
  }
  return nodes;
}

NumaMask NumaMask::And(const NumaMask& other) const {
  NumaMask result;
  for (int w = 0; w < kWords; ++w) result.words_[w] = words_[w] & other.words_[w];
  return result;
}

NumaMask NumaMask::Or(const NumaMask& other) const {
  NumaMask result;
  for (int w = 0; w < kWords; ++w) result.words_[w] = words_[w] | other.words_[w];
  return result;
}

bool NumaMask::Intersects(const NumaMask& other) const {
  for (int w = 0; w < kWords; ++w) {
    if ((words_[w] & other.words_[w]) != 0) return true;
  }
  return false;
}

bool NumaMask::IsSubsetOf(const NumaMask& other) const {
  for (int w = 0; w < kWords; ++w) {
    if ((words_[w] & ~other.words_[w]) != 0) return false;
  }
  return true;
}

bool NumaMask::IsNarrowerThan(const NumaMask& other) const {
  const int count = Count();
  const int other_count = other.Count();
  if (count == other_count) return IsLessThan(other);
  return count < other_count;
}

std::strong_ordering operator<=>(const NumaMask& a, const NumaMask& b) {
  for (int w = NumaMask::kWords - 1; w >= 0; --w) {
    if (a.words_[w] != b.words_[w]) return a.words_[w] <=> b.words_[w];
  }
  return std::strong_ordering::equal;
}

std::string NumaMask::ToString() const { return absl::StrJoin(Nodes(), ","); }

std::string NumaMask::ToBitString() const {
  // Upstream: for shift := 62; shift > 0; shift -= 2 { if mask > 1<<shift { pad to shift+2 } },
  // else pad to 2. Widened: the largest even shift >= 2 with mask > 2^shift decides the width.
  int highest = -1;
  for (int w = kWords - 1; w >= 0 && highest < 0; --w) {
    if (words_[w] != 0) highest = w * 64 + 63 - std::countl_zero(words_[w]);
  }
  int width = 2;
  if (highest >= 2) {
    int shift = highest % 2 == 0 ? highest : highest - 1;
    if (shift == highest) {
      // mask > 2^highest only when some lower node is set too.
      NumaMask rest = *this;
      rest.Remove(highest);
      if (rest.IsEmpty()) shift -= 2;
    }
    if (shift > 0) width = shift + 2;
  }
  const int digits = std::max(width, highest + 1);
  std::string out(digits, '0');
  for (int node : Nodes()) out[digits - 1 - node] = '1';
  return out;
}

namespace {

void IterateOfSize(const std::vector<int>& nodes, size_t start, int remaining, NumaMask& accum,
                   absl::FunctionRef<void(const NumaMask&)> callback) {
  if (remaining == 0) {
    callback(accum);
    return;
  }
  // Positions after `start` in order, as upstream recurses over bits[i+1:]; positions that leave
  // too few nodes to reach the size are skipped (upstream recurses into them without a result).
  for (size_t i = start; i + remaining <= nodes.size(); ++i) {
    const bool had = accum.Contains(nodes[i]);
    accum.Add(nodes[i]);
    IterateOfSize(nodes, i + 1, remaining - 1, accum, callback);
    if (!had) accum.Remove(nodes[i]);
  }
}

}  // namespace

void IterateMasks(absl::Span<const int> nodes, absl::FunctionRef<void(const NumaMask&)> callback) {
  std::vector<int> valid;
  valid.reserve(nodes.size());
  for (int node : nodes) {
    if (NumaMask::IsValidNode(node)) valid.push_back(node);
  }
  for (size_t size = 1; size <= valid.size(); ++size) {
    NumaMask accum;
    IterateOfSize(valid, 0, static_cast<int>(size), accum, callback);
  }
}

NumaInfo NumaInfo::FromDistances(std::vector<int> nodes,
                                 absl::FunctionRef<int(int, int)> distance) {
  NumaInfo info;
  info.distances.reserve(nodes.size());
  for (int from : nodes) {
    std::vector<int>& row = info.distances.emplace_back();
    row.reserve(nodes.size());
    for (int to : nodes) row.push_back(distance(from, to));
  }
  info.nodes = std::move(nodes);
  return info;
}

NumaMask NumaInfo::DefaultAffinity() const { return NumaMask::FromNodes(nodes); }

namespace {

// The position of `node` in `nodes`, or -1.
int IndexOf(const std::vector<int>& nodes, int node) {
  auto it = std::find(nodes.begin(), nodes.end(), node);
  return it == nodes.end() ? -1 : static_cast<int>(it - nodes.begin());
}

int DistanceAt(const std::vector<std::vector<int>>& distances, int i, int j) {
  if (i < 0 || j < 0 || static_cast<size_t>(i) >= distances.size()) return 0;
  const std::vector<int>& row = distances[i];
  return static_cast<size_t>(j) < row.size() ? row[j] : 0;
}

}  // namespace

int NumaInfo::Distance(int from, int to) const {
  return DistanceAt(distances, IndexOf(nodes, from), IndexOf(nodes, to));
}

double NumaInfo::AverageDistance(const NumaMask& mask) const {
  const std::vector<int> members = mask.Nodes();
  if (members.empty()) return 0;
  std::vector<int> index;
  index.reserve(members.size());
  for (int node : members) index.push_back(IndexOf(nodes, node));
  // Upstream sums float64(d[node1][node2]) in the same nested ascending order, then divides.
  double count = 0;
  double sum = 0;
  for (int i : index) {
    for (int j : index) {
      sum += static_cast<double>(DistanceAt(distances, i, j));
      ++count;
    }
  }
  return sum / count;
}

const NumaMask& NumaInfo::Narrowest(const NumaMask& a, const NumaMask& b) {
  return a.IsNarrowerThan(b) ? a : b;
}

const NumaMask& NumaInfo::Closest(const NumaMask& a, const NumaMask& b) const {
  if (a.Count() != b.Count()) return Narrowest(a, b);
  const double a_distance = AverageDistance(a);
  const double b_distance = AverageDistance(b);
  if (a_distance == b_distance) return a.IsLessThan(b) ? a : b;
  return a_distance < b_distance ? a : b;
}

}  // namespace kdp::manager
