// The rules kdp-conformance holds a DRA driver's slices, CDI specs and prepare answers to
// (dra_answers.h): what keeps them yields "", each broken rule is named with the slice, pool,
// device, file or CDI name at fault.
#include "manager/src/conformance/dra_answers.h"

#include <string>
#include <vector>

#include "common/durable_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace kdp::manager::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;
using k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse;

json Slice(const std::string& name, const std::string& pool, int generation, int count,
           std::vector<std::string> devices, bool owned = true) {
  json slice = {
      {"metadata", {{"name", name}}},
      {"spec",
       {{"driver", "gpu.example.com"},
        {"nodeName", "node-a"},
        {"pool", {{"name", pool}, {"generation", generation}, {"resourceSliceCount", count}}},
        {"devices", json::array()}}}};
  for (const std::string& device : devices) {
    slice["spec"]["devices"].push_back({{"name", device}});
  }
  if (owned) {
    slice["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                             {"kind", "Node"},
                                             {"name", "node-a"},
                                             {"uid", "uid-a"},
                                             {"controller", true}}};
  }
  return slice;
}

TEST(SliceProblems, CompleteOwnedPoolsHaveNone) {
  const std::vector<json> slices = {Slice("s1", "p", 2, 2, {"gpu0"}),
                                    Slice("s2", "p", 2, 2, {"gpu1"}),
                                    Slice("s3", "q", 1, 1, {"gpu0"})};
  EXPECT_TRUE(PoolsComplete(slices));
  EXPECT_EQ(SliceProblems(slices, "node-a", "uid-a"), "");
  EXPECT_EQ(PublishedDevices(slices).size(), 3u);
}

TEST(SliceProblems, NamesEachBrokenRule) {
  EXPECT_EQ(SliceProblems({Slice("s1", "p", 1, 1, {"gpu0"}, /*owned=*/false)}, "node-a", "uid-a"),
            "slice s1 has no ownerReference to Node node-a (uid uid-a)");
  // The Node was re-created: an owner with the old uid is no owner.
  EXPECT_THAT(SliceProblems({Slice("s1", "p", 1, 1, {"gpu0"})}, "node-a", "uid-b"),
              HasSubstr("no ownerReference"));
  const std::vector<json> incomplete = {Slice("s1", "p", 1, 2, {"gpu0"})};
  EXPECT_FALSE(PoolsComplete(incomplete));
  EXPECT_EQ(SliceProblems(incomplete, "node-a", "uid-a"),
            "pool p: resourceSliceCount 2 but 1 slice of generation 1 (an incomplete pool is never "
            "allocated from)");
  EXPECT_EQ(SliceProblems({Slice("s1", "p", 2, 1, {"gpu0"}), Slice("s0", "p", 1, 1, {"gpu1"})},
                          "node-a", "uid-a"),
            "pool p: slice s0 of generation 1 left beside generation 2");
  EXPECT_EQ(SliceProblems({Slice("s1", "p", 1, 2, {"gpu0"}), Slice("s2", "p", 1, 2, {"gpu0"})},
                          "node-a", "uid-a"),
            "pool p: device gpu0 published twice");
  EXPECT_EQ(SliceProblems({Slice("s1", "p", 1, 1, {})}, "node-a", "uid-a"),
            "no device in any slice");
}

class CdiFiles : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(::kdp::WriteFileDurably(dir_.Path(name), text).ok());
  }
  ::kdp::testing::TempDir dir_;
};

constexpr char kSpec[] = R"({"cdiVersion": "0.6.0", "kind": "gpu.example.com/gpu",
  "devices": [{"name": "c1-gpu0", "containerEdits": {"env": ["GPU=0"]}}]})";

TEST_F(CdiFiles, IndexesValidSpecsAndNamesInvalidOnes) {
  Write("claim-1.json", kSpec);
  Write("yaml.yaml",
        "cdiVersion: 0.6.0\nkind: gpu.example.com/gpu\ndevices:\n- name: c2-gpu1\n"
        "  containerEdits:\n    env: [GPU=1]\n");
  Write("broken.json", R"({"cdiVersion": "0.6.0", "kind": "nokind", "devices": []})");
  Write(".hidden.json", "not even JSON");
  Write("notes.txt", "ignored");
  const CdiIndex index = ReadCdiSpecs(dir_.path());
  EXPECT_THAT(index.files, ElementsAre("broken.json", "claim-1.json", "yaml.yaml"));
  EXPECT_THAT(index.devices, ElementsAre(::testing::Key("gpu.example.com/gpu=c1-gpu0"),
                                         ::testing::Key("gpu.example.com/gpu=c2-gpu1")));
  ASSERT_EQ(index.invalid.size(), 1u);
  EXPECT_THAT(index.invalid[0], HasSubstr("broken.json: "));
  EXPECT_EQ(CdiConflicts(index), "");
  Write("claim-1-again.json", kSpec);
  EXPECT_EQ(CdiConflicts(ReadCdiSpecs(dir_.path())),
            "CDI device gpu.example.com/gpu=c1-gpu0 is defined by 2 specs (claim-1-again.json, "
            "claim-1.json)");
}

NodePrepareResourceResponse Answer(const std::string& pool, const std::string& device,
                                   const std::string& request, const std::string& cdi_id) {
  NodePrepareResourceResponse answer;
  auto* prepared = answer.add_devices();
  prepared->set_pool_name(pool);
  prepared->set_device_name(device);
  if (!request.empty()) prepared->add_request_names(request);
  if (!cdi_id.empty()) prepared->add_cdi_device_ids(cdi_id);
  return answer;
}

TEST_F(CdiFiles, PrepareProblemsHoldAnAnswerToTheAllocation) {
  Write("claim-1.json", kSpec);
  const CdiIndex cdi = ReadCdiSpecs(dir_.path());
  const json results = json::array(
      {{{"request", "gpus"}, {"driver", "gpu.example.com"}, {"pool", "p"}, {"device", "gpu0"}},
       {{"request", "nic"}, {"driver", "nic.example.com"}, {"pool", "p"}, {"device", "eth0"}}});
  const std::string id = "gpu.example.com/gpu=c1-gpu0";
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com", Answer("p", "gpu0", "gpus", id), cdi), "");
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com", Answer("p", "gpu0", "", id), cdi), "");
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com", Answer("p", "gpu1", "gpus", id), cdi),
            "device p/gpu1, which the claim was not allocated; allocated device p/gpu0 missing");
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com", Answer("p", "gpu0", "other", id), cdi),
            "device p/gpu0 for unknown request other");
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com",
                            Answer("p", "gpu0", "gpus", "gpu.example.com/gpu=c9"), cdi),
            "CDI device gpu.example.com/gpu=c9 is defined by no valid spec in the CDI directory");
  EXPECT_THAT(
      PrepareProblems(results, "gpu.example.com", Answer("p", "gpu0", "gpus", "/dev/gpu0"), cdi),
      HasSubstr("CDI device ID /dev/gpu0 is not fully qualified"));
  NodePrepareResourceResponse failed;
  failed.set_error("out of memory");
  EXPECT_EQ(PrepareProblems(results, "gpu.example.com", failed, cdi),
            "the claim failed: out of memory");
}

TEST(AnswerDevices, IgnoresOrder) {
  NodePrepareResourceResponse a = Answer("p", "gpu1", "r", "v.com/c=2");
  *a.add_devices() = Answer("p", "gpu0", "r", "v.com/c=1").devices(0);
  NodePrepareResourceResponse b = Answer("p", "gpu0", "r", "v.com/c=1");
  *b.add_devices() = Answer("p", "gpu1", "r", "v.com/c=2").devices(0);
  EXPECT_EQ(AnswerDevices(a), AnswerDevices(b));
  EXPECT_THAT(AnswerDevices(a), ElementsAre("p/gpu0 [r] {v.com/c=1}", "p/gpu1 [r] {v.com/c=2}"));
}

}  // namespace
}  // namespace kdp::manager::conformance
