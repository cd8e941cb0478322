// Regression tests for what kube_json_fuzzer (tests/fuzz/kube_json_fuzzer.cc) found in the SDK's
// handling of API server answers; the reproducers are kept in tests/fuzz/regressions/kube_json/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sdk/src/dra/slice_publisher.h"
#include "sdk/src/kube/kube_client.h"

namespace kdp::internal {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const SliceTarget kTarget{.driver = "gpu.example.com", .node_name = "node-1", .node_uid = "n-uid"};

// Answers the LIST with a fixed body and records every write.
class ListClient final : public KubeClient {
 public:
  explicit ListClient(json list) : list_(std::move(list)) {}
  std::vector<std::string> writes;

  absl::StatusOr<json> Get(const std::string&) override { return list_; }
  absl::StatusOr<json> Post(const std::string& path, const json& body) override {
    writes.push_back("POST " + path);
    return body;
  }
  absl::StatusOr<json> Put(const std::string& path, const json& body) override {
    writes.push_back("PUT " + path);
    return body;
  }
  absl::StatusOr<json> Delete(const std::string& path) override {
    writes.push_back("DELETE " + path);
    return json::object();
  }

 private:
  const json list_;
};

std::vector<DraDevice> OneDevice() {
  return {
      DraDevice{.name = "gpu-0", .attributes = {{"model", std::string("A100")}}, .capacity = {}}};
}

// A slice of this driver's pool on this node, with `metadata` as given.
json PoolSlice(json metadata) {
  return {{"metadata", std::move(metadata)},
          {"spec",
           {{"driver", "gpu.example.com"},
            {"nodeName", "node-1"},
            {"pool", {{"name", "node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", json::array()}}}};
}

void ExpectRefused(const json& metadata, const std::string& shown) {
  ListClient client(json{{"items", json::array({PoolSlice(metadata)})}});
  const absl::Status status = ReconcileResourceSlices(client, kTarget, OneDevice());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown) << metadata.dump();
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("listing ResourceSlices: a slice of driver gpu.example.com on node node-1 "
                        "has no valid metadata.name (\"" +
                        shown + "\"): expected a DNS subdomain"));
  EXPECT_THAT(client.writes, IsEmpty()) << metadata.dump();
}

// Found by kube_json_fuzzer: a listed slice whose metadata is not an object made the update
// (`updated["metadata"]["ownerReferences"] = ...`) throw nlohmann::json::type_error in the
// publisher thread, which terminated the driver.
TEST(SlicePublisherFuzzRegression, MetadataThatIsNotAnObjectIsAnError) {
  ExpectRefused(5, "");
  ExpectRefused(json::array({"x"}), "");
}

// Found by kube_json_fuzzer: a listed slice without a name was updated with
// PUT /apis/resource.k8s.io/v1/resourceslices/ (the collection); had it been surplus, the DELETE
// of that path would have deleted every ResourceSlice of the cluster. Names that are not DNS
// subdomains would address other paths.
TEST(SlicePublisherFuzzRegression, SliceWithoutAUsableNameIsAnError) {
  ExpectRefused(json::object(), "");
  ExpectRefused(json{{"name", ""}}, "");
  ExpectRefused(json{{"name", 7}}, "");
  ExpectRefused(json{{"name", ".."}}, "..");
  ExpectRefused(json{{"name", "a/../../namespaces"}}, "a/../../namespaces");
  ExpectRefused(json{{"name", "x?dryRun=All"}}, "x?dryRun=All");
}

TEST(SlicePublisherFuzzRegression, WellNamedSliceIsStillUpdated) {
  ListClient client(
      json{{"items", json::array({PoolSlice({{"name", "node-1-gpu.example.com-x2"}}),
                                  PoolSlice({{"name", "node-1-gpu.example.com-y7"}})})}});
  ASSERT_TRUE(ReconcileResourceSlices(client, kTarget, OneDevice()).ok());
  EXPECT_THAT(
      client.writes,
      ElementsAre("PUT /apis/resource.k8s.io/v1/resourceslices/node-1-gpu.example.com-x2",
                  "DELETE /apis/resource.k8s.io/v1/resourceslices/node-1-gpu.example.com-y7"));
}

}  // namespace
}  // namespace kdp::internal
