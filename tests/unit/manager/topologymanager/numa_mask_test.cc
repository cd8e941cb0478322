#include "manager/src/topologymanager/numa_mask.h"

#include <set>
#include <string>
#include <vector>

#include "absl/hash/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kdp::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Masks named by their nodes, in the order IterateMasks hands them out.
std::vector<std::string> Enumerate(const std::vector<int>& nodes) {
  std::vector<std::string> out;
  IterateMasks(nodes, [&](const NumaMask& mask) { out.push_back(mask.ToString()); });
  return out;
}

// Upstream bitmask_test.go TestNewEmptyiBitMask / TestNewBitMask: the kubelet's rendering.
TEST(NumaMask, BitStringMatchesTheKubelet) {
  EXPECT_EQ(NumaMask().ToBitString(), "00");            // New empty BitMask
  EXPECT_EQ(NumaMask::Of({0}).ToBitString(), "01");     // bit 0 set
  EXPECT_EQ(NumaMask::Of({1}).ToBitString(), "10");     // bit 1 set
  EXPECT_EQ(NumaMask::Of({0, 1}).ToBitString(), "11");  // bits 0 and 1 set
  // TestAnd's "Mask 1111 AND ... mask 1000": a lone node 3 pads to four digits.
  EXPECT_EQ(NumaMask::Of({3}).ToBitString(), "1000");
  EXPECT_EQ(NumaMask::Of({0, 2}).ToBitString(), "0101");
  // Upstream pads only when the value exceeds 1<<shift, so a lone even node keeps its width.
  EXPECT_EQ(NumaMask::Of({2}).ToBitString(), "100");
  EXPECT_EQ(NumaMask::Of({4}).ToBitString(), "10000");
  // TestFill: all 64 bits.
  NumaMask full;
  for (int node = 0; node < 64; ++node) full.Add(node);
  EXPECT_EQ(full.ToBitString(), std::string(64, '1'));
  // Beyond 64 bits the same rule continues.
  EXPECT_EQ(NumaMask::Of({64, 0}).ToBitString(),
            "0" + std::string(1, '1') + std::string(63, '0') + "1");
}

TEST(NumaMask, ToStringListsNodesAscending) {
  EXPECT_EQ(NumaMask().ToString(), "");
  EXPECT_EQ(NumaMask::Of({1, 0}).ToString(), "0,1");
  EXPECT_EQ(NumaMask::Of({255, 250, 3}).ToString(), "3,250,255");
}

// Upstream TestAdd / TestRemove, with kdp's wider range: 64 is a node, -1 and 1024 are not.
TEST(NumaMask, AddAndRemoveIgnoreNumbersOutsideTheRange) {
  NumaMask mask;
  EXPECT_TRUE(mask.Add(0));
  EXPECT_TRUE(mask.Add(1));
  EXPECT_FALSE(mask.Add(-1));
  EXPECT_FALSE(mask.Add(NumaMask::kMaxNode + 1));
  EXPECT_EQ(mask.ToBitString(), "11");
  EXPECT_TRUE(mask.Add(64));
  EXPECT_TRUE(mask.Add(NumaMask::kMaxNode));
  EXPECT_THAT(mask.Nodes(), ElementsAre(0, 1, 64, 1023));

  EXPECT_TRUE(mask.Remove(1));    // "Set bits 0 and 1. Remove bit 1"
  EXPECT_FALSE(mask.Remove(-1));  // outside the range: no change
  EXPECT_FALSE(mask.Remove(1024));
  EXPECT_TRUE(mask.Remove(64));
  EXPECT_TRUE(mask.Remove(1023));
  EXPECT_EQ(mask.ToBitString(), "01");
  EXPECT_TRUE(mask.Remove(0));  // "Set bit 0. Remove bit 0"
  EXPECT_TRUE(mask.IsEmpty());

  EXPECT_EQ(NumaMask::Of({-5, 2000, 7}), NumaMask::Of({7}));
  EXPECT_EQ(NumaMask::FromNodes(std::vector<int>{3, 3, 1}), NumaMask::Of({1, 3}));
  EXPECT_TRUE(NumaMask::IsValidNode(0));
  EXPECT_TRUE(NumaMask::IsValidNode(1023));
  EXPECT_FALSE(NumaMask::IsValidNode(1024));
  EXPECT_FALSE(NumaMask::IsValidNode(-1));
}

// Upstream TestAnd.
TEST(NumaMask, And) {
  EXPECT_EQ(NumaMask::Of({0, 1}).And(NumaMask::Of({0, 1})).ToBitString(), "11");
  EXPECT_EQ(NumaMask::Of({0, 1}).And(NumaMask::Of({1})).ToBitString(), "10");
  EXPECT_EQ(NumaMask::Of({0}).And(NumaMask::Of({0, 1})).ToBitString(), "01");
  EXPECT_EQ(NumaMask::Of({0, 1}).And(NumaMask::Of({0, 1})).And(NumaMask::Of({1})).ToBitString(),
            "10");
  EXPECT_EQ(NumaMask::Of({0})
                .And(NumaMask::Of({0}))
                .And(NumaMask::Of({1}))
                .And(NumaMask::Of({0, 1}))
                .ToBitString(),
            "00");
  EXPECT_EQ(NumaMask::Of({0, 1, 2, 3})
                .And(NumaMask::Of({1, 2, 3}))
                .And(NumaMask::Of({2, 3}))
                .And(NumaMask::Of({3}))
                .ToBitString(),
            "1000");
  EXPECT_EQ(NumaMask::Of({250, 255, 64}).And(NumaMask::Of({255, 64, 1})), NumaMask::Of({64, 255}));
}

// Upstream TestOr.
TEST(NumaMask, Or) {
  EXPECT_EQ(NumaMask::Of({0}).Or(NumaMask()).ToBitString(), "01");
  EXPECT_EQ(NumaMask::Of({1}).Or(NumaMask::Of({1})).ToBitString(), "10");
  EXPECT_EQ(NumaMask::Of({0}).Or(NumaMask::Of({1})).ToBitString(), "11");
  EXPECT_EQ(NumaMask::Of({0, 1}).Or(NumaMask::Of({0, 1})).ToBitString(), "11");
  EXPECT_EQ(NumaMask::Of({0}).Or(NumaMask::Of({1})).Or(NumaMask::Of({0, 1})).ToBitString(), "11");
  EXPECT_EQ(NumaMask::Of({3})
                .Or(NumaMask::Of({2}))
                .Or(NumaMask::Of({1}))
                .Or(NumaMask::Of({0}))
                .ToBitString(),
            "1111");
  EXPECT_EQ(NumaMask::Of({250}).Or(NumaMask::Of({1023})), NumaMask::Of({250, 1023}));
}

// Upstream TestIsEmpty, TestIsSet, TestAnySet (as Intersects), TestIsEqual, TestCount,
// TestGetBits.
TEST(NumaMask, Queries) {
  EXPECT_TRUE(NumaMask().IsEmpty());
  EXPECT_FALSE(NumaMask::Of({0}).IsEmpty());
  EXPECT_FALSE(NumaMask::Of({0, 1}).IsEmpty());
  EXPECT_FALSE(NumaMask::Of({600}).IsEmpty());

  EXPECT_FALSE(NumaMask().Contains(0));
  EXPECT_TRUE(NumaMask::Of({0}).Contains(0));
  EXPECT_TRUE(NumaMask::Of({0, 1}).Contains(1));
  EXPECT_FALSE(NumaMask::Of({0, 1}).Contains(64));
  EXPECT_TRUE(NumaMask::Of({64}).Contains(64));
  EXPECT_FALSE(NumaMask::Of({0}).Contains(-1));
  EXPECT_FALSE(NumaMask::Of({0}).Contains(4096));

  EXPECT_FALSE(NumaMask().Intersects(NumaMask::Of({0, 1})));
  EXPECT_TRUE(NumaMask::Of({0}).Intersects(NumaMask::Of({0, 1})));
  EXPECT_TRUE(NumaMask::Of({0, 1}).Intersects(NumaMask::Of({0, 1})));
  EXPECT_FALSE(NumaMask::Of({1, 2}).Intersects(NumaMask::Of({0, 3})));
  EXPECT_TRUE(NumaMask::Of({1, 255}).Intersects(NumaMask::Of({0, 255})));

  EXPECT_TRUE(NumaMask().IsEqual(NumaMask()));
  EXPECT_FALSE(NumaMask().IsEqual(NumaMask::Of({0})));
  EXPECT_TRUE(NumaMask::Of({0}).IsEqual(NumaMask::Of({0})));
  EXPECT_FALSE(NumaMask::Of({0}).IsEqual(NumaMask::Of({1})));
  EXPECT_TRUE(NumaMask::Of({0, 1}).IsEqual(NumaMask::Of({0, 1})));
  EXPECT_FALSE(NumaMask::Of({0}).IsEqual(NumaMask::Of({0, 64})));

  EXPECT_EQ(NumaMask().Count(), 0);
  EXPECT_EQ(NumaMask::Of({0}).Count(), 1);
  EXPECT_EQ(NumaMask::Of({0, 1}).Count(), 2);
  EXPECT_EQ(NumaMask::Of({250, 251, 252, 253, 254, 255}).Count(), 6);

  EXPECT_THAT(NumaMask().Nodes(), IsEmpty());
  EXPECT_THAT(NumaMask::Of({0}).Nodes(), ElementsAre(0));
  EXPECT_THAT(NumaMask::Of({1, 0}).Nodes(), ElementsAre(0, 1));
  EXPECT_THAT(NumaMask::Of({255, 63, 64, 127, 128}).Nodes(), ElementsAre(63, 64, 127, 128, 255));
}

TEST(NumaMask, IsSubsetOf) {
  EXPECT_TRUE(NumaMask().IsSubsetOf(NumaMask()));
  EXPECT_TRUE(NumaMask().IsSubsetOf(NumaMask::Of({1})));
  EXPECT_TRUE(NumaMask::Of({1}).IsSubsetOf(NumaMask::Of({0, 1})));
  EXPECT_FALSE(NumaMask::Of({0, 1}).IsSubsetOf(NumaMask::Of({1})));
  EXPECT_TRUE(NumaMask::Of({250, 2}).IsSubsetOf(NumaMask::Of({2, 250, 255})));
  EXPECT_FALSE(NumaMask::Of({250, 2}).IsSubsetOf(NumaMask::Of({2, 251})));
}

// Upstream TestIsNarrowerThan.
TEST(NumaMask, IsNarrowerThan) {
  // Unequal bits set 1/2 and 2/2.
  EXPECT_TRUE(NumaMask::Of({0}).IsNarrowerThan(NumaMask::Of({0, 1})));
  EXPECT_FALSE(NumaMask::Of({0, 1}).IsNarrowerThan(NumaMask::Of({0})));
  // Equal bits set 1/2 and 2/2: the lower number wins.
  EXPECT_TRUE(NumaMask::Of({0}).IsNarrowerThan(NumaMask::Of({1})));
  EXPECT_FALSE(NumaMask::Of({1}).IsNarrowerThan(NumaMask::Of({0})));
  // A mask is not narrower than itself.
  EXPECT_FALSE(NumaMask::Of({0, 1}).IsNarrowerThan(NumaMask::Of({0, 1})));
  // Same count: compared as numbers, so {1,2} (6) is narrower than {0,3} (9).
  EXPECT_TRUE(NumaMask::Of({1, 2}).IsNarrowerThan(NumaMask::Of({0, 3})));
  // Fewer nodes always win, whatever their numbers.
  EXPECT_TRUE(NumaMask::Of({1023}).IsNarrowerThan(NumaMask::Of({0, 1})));
  // Beyond 64 bits: the highest differing node decides.
  EXPECT_TRUE(NumaMask::Of({1, 99}).IsNarrowerThan(NumaMask::Of({0, 100})));
  EXPECT_TRUE(NumaMask::Of({63}).IsNarrowerThan(NumaMask::Of({64})));
  EXPECT_TRUE(NumaMask::Of({250, 251}).IsNarrowerThan(NumaMask::Of({0, 252})));
}

// Upstream IsLessThan / IsGreaterThan: numeric order, which operator<=> follows.
TEST(NumaMask, OrdersAsNumbers) {
  EXPECT_FALSE(NumaMask::Of({0}).IsLessThan(NumaMask::Of({0})));
  EXPECT_FALSE(NumaMask::Of({1}).IsLessThan(NumaMask::Of({0})));
  EXPECT_TRUE(NumaMask::Of({0}).IsLessThan(NumaMask::Of({1})));
  EXPECT_TRUE(NumaMask::Of({0, 1, 2}).IsLessThan(NumaMask::Of({3})));
  EXPECT_TRUE(NumaMask::Of({1}).IsGreaterThan(NumaMask::Of({0})));
  EXPECT_FALSE(NumaMask::Of({0}).IsGreaterThan(NumaMask::Of({0})));
  NumaMask low_word;
  for (int node = 0; node < 64; ++node) low_word.Add(node);
  EXPECT_TRUE(low_word.IsLessThan(NumaMask::Of({64})));
  EXPECT_TRUE(NumaMask::Of({1022}).IsLessThan(NumaMask::Of({1023})));
  EXPECT_TRUE(NumaMask() < NumaMask::Of({0}));

  std::set<NumaMask> ordered = {NumaMask::Of({2}), NumaMask::Of({0, 1}), NumaMask::Of({64}),
                                NumaMask::Of({0})};
  std::vector<std::string> names;
  for (const NumaMask& mask : ordered) names.push_back(mask.ToString());
  EXPECT_THAT(names, ElementsAre("0", "0,1", "2", "64"));
}

TEST(NumaMask, EqualMasksHashEqually) {
  EXPECT_EQ(absl::HashOf(NumaMask::Of({3, 250})), absl::HashOf(NumaMask::Of({250, 3})));
  EXPECT_NE(absl::HashOf(NumaMask::Of({3})), absl::HashOf(NumaMask::Of({250})));
}

// Upstream TestIterateBitMasks: 2^n - 1 masks for n bits.
TEST(IterateMasks, VisitsEveryNonEmptySubset) {
  for (int bits : {1, 2, 4, 8, 16}) {
    std::vector<int> nodes;
    for (int i = 0; i < bits; ++i) nodes.push_back(i);
    int count = 0;
    std::set<NumaMask> distinct;
    IterateMasks(nodes, [&](const NumaMask& mask) {
      ++count;
      distinct.insert(mask);
    });
    EXPECT_EQ(count, (1 << bits) - 1) << bits << " bits";
    EXPECT_EQ(static_cast<int>(distinct.size()), (1 << bits) - 1) << bits << " bits";
  }
}

TEST(IterateMasks, BySizeThenInLexicographicOrderOfPositions) {
  EXPECT_THAT(Enumerate({0, 1, 2}), ElementsAre("0", "1", "2", "0,1", "0,2", "1,2", "0,1,2"));
  EXPECT_THAT(Enumerate({0, 1, 2, 3}),
              ElementsAre("0", "1", "2", "3", "0,1", "0,2", "0,3", "1,2", "1,3", "2,3", "0,1,2",
                          "0,1,3", "0,2,3", "1,2,3", "0,1,2,3"));
  // Upstream follows the positions of the list, not the node numbers.
  EXPECT_THAT(Enumerate({3, 1}), ElementsAre("3", "1", "1,3"));
}

TEST(IterateMasks, HandlesSparseAndHighNodeNumbers) {
  EXPECT_THAT(
      Enumerate({0, 1, 250, 255}),
      ElementsAre("0", "1", "250", "255", "0,1", "0,250", "0,255", "1,250", "1,255", "250,255",
                  "0,1,250", "0,1,255", "0,250,255", "1,250,255", "0,1,250,255"));
}

TEST(IterateMasks, EmptyListVisitsNothingAndInvalidNumbersAreDropped) {
  EXPECT_THAT(Enumerate({}), IsEmpty());
  EXPECT_THAT(Enumerate({-1, 1024}), IsEmpty());
  EXPECT_THAT(Enumerate({-1, 4, 1024}), ElementsAre("4"));
}

// Upstream TestCalculateAvgDistanceFor.
TEST(NumaInfo, AverageDistance) {
  const std::vector<std::vector<int>> four = {
      {10, 11, 12, 12}, {11, 10, 12, 12}, {12, 12, 10, 11}, {12, 12, 11, 10}};
  EXPECT_EQ((NumaInfo{.nodes = {0}, .distances = {{10}}}.AverageDistance(NumaMask::Of({0}))), 10);
  const NumaInfo two{.nodes = {0, 1}, .distances = {{10, 11}, {11, 10}}};
  EXPECT_EQ(two.AverageDistance(NumaMask::Of({0})), 10);
  EXPECT_EQ(two.AverageDistance(NumaMask::Of({0, 1})), 10.5);
  const NumaInfo info{.nodes = {0, 1, 2, 3}, .distances = four};
  EXPECT_EQ(info.AverageDistance(NumaMask::Of({0, 2})), 11);
  EXPECT_DOUBLE_EQ(info.AverageDistance(NumaMask::Of({0, 2, 3})), 11.11111111111111);
  EXPECT_EQ(NumaInfo{}.AverageDistance(NumaMask()), 0);
}

TEST(NumaInfo, DistancesAreKeyedByNodeNumberNotPosition) {
  const NumaInfo sparse = NumaInfo::FromDistances({0, 2, 250}, [](int from, int to) {
    if (from == to) return 10;
    return (from == 250 || to == 250) ? 40 : 21;
  });
  EXPECT_THAT(sparse.nodes, ElementsAre(0, 2, 250));
  EXPECT_EQ(sparse.distances,
            (std::vector<std::vector<int>>{{10, 21, 40}, {21, 10, 40}, {40, 40, 10}}));
  EXPECT_EQ(sparse.Distance(2, 250), 40);
  EXPECT_EQ(sparse.Distance(0, 2), 21);
  EXPECT_EQ(sparse.Distance(1, 2), 0);  // node 1 is not on the machine
  EXPECT_EQ(sparse.AverageDistance(NumaMask::Of({0, 2})), 15.5);
  EXPECT_EQ(sparse.DefaultAffinity(), NumaMask::Of({0, 2, 250}));

  const NumaInfo unknown{.nodes = {0, 1}};
  EXPECT_EQ(unknown.Distance(0, 1), 0);
  EXPECT_EQ(unknown.AverageDistance(NumaMask::Of({0, 1})), 0);
}

// Upstream TestClosest (which calls Closest(candidate, current)).
TEST(NumaInfo, Closest) {
  const NumaMask current_narrower = NumaMask::Of({0});
  const NumaMask wider = NumaMask::Of({0, 2});
  // Lengths differ: the narrower, whatever the distances.
  EXPECT_EQ(&NumaInfo{}.Closest(wider, current_narrower), &current_narrower);

  const NumaInfo flat{
      .nodes = {0, 1, 2, 3},
      .distances = {{10, 10, 10, 10}, {10, 10, 10, 10}, {10, 10, 10, 10}, {10, 10, 10, 10}}};
  // Same length and distance: the one with more lower-numbered bits (the smaller number).
  const NumaMask m01 = NumaMask::Of({0, 1});
  const NumaMask m02 = NumaMask::Of({0, 2});
  const NumaMask m03 = NumaMask::Of({0, 3});
  EXPECT_EQ(&flat.Closest(m02, m01), &m01);
  EXPECT_EQ(&flat.Closest(m02, m03), &m02);

  const NumaInfo slit{
      .nodes = {0, 1, 2, 3},
      .distances = {{10, 11, 12, 12}, {11, 10, 12, 12}, {12, 12, 10, 11}, {12, 12, 11, 10}}};
  // Candidate's average distance smaller / current's smaller.
  EXPECT_EQ(&slit.Closest(m01, m03), &m01);
  const NumaMask m23 = NumaMask::Of({2, 3});
  EXPECT_EQ(&slit.Closest(m03, m23), &m23);
  // Same average: the smaller number, not the first argument.
  EXPECT_EQ(&slit.Closest(m23, m01), &m01);
}

TEST(NumaInfo, Narrowest) {
  const NumaMask a = NumaMask::Of({1});
  const NumaMask b = NumaMask::Of({0, 1});
  const NumaMask c = NumaMask::Of({0});
  EXPECT_EQ(&NumaInfo::Narrowest(a, b), &a);
  EXPECT_EQ(&NumaInfo::Narrowest(b, a), &a);
  EXPECT_EQ(&NumaInfo::Narrowest(a, c), &c);
  // Equal masks: the second, as upstream (IsNarrowerThan is strict).
  const NumaMask a2 = NumaMask::Of({1});
  EXPECT_EQ(&NumaInfo::Narrowest(a, a2), &a2);
}

}  // namespace
}  // namespace kdp::manager
