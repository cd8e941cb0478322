#include "manager/src/controlplane/resourceapi/server.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/durable_file.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "k8s/api/resource/v1/generated.pb.h"
#include "k8s/api/resource/v1beta1/generated.pb.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "tests/unit/manager/resourceapi/api_server_fixture.h"
#include "tests/unit/manager/resourceapi/protobuf_body_builder.h"
#include "tests/unit/manager/resourceapi/test_tls.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testing::NewHttpsClient;
using testing::TestCertificates;

constexpr const char* kToken = testing::kApiToken;
constexpr char kV1[] = "/apis/resource.k8s.io/v1";
constexpr char kV1beta1[] = "/apis/resource.k8s.io/v1beta1";

// The fixture's server over an empty store, with its HTTPS client.
class ResourceApiServerTest : public testing::ApiServerTest {};

Json V1beta1Slice() {
  return Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
    "metadata": {"generateName": "node-1-gpu.example.com-",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1",
                                      "uid": "x", "controller": true}]},
    "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "allNodes": false,
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "basic": {"attributes": {"index": {"int": 0}},
                                                     "capacity": {"memory": {"value": "80Gi"}}}}]}})");
}

Json V1Slice(const std::string& name, const std::string& node) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", "tpu.example.com"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {{{"name", "tpu-0"}, {"attributes", {{"index", {{"int", 0}}}}}}}}}}};
}

Json V1beta1Claim(const std::string& name) {
  return {
      {"apiVersion", "resource.k8s.io/v1beta1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"devices", {{"requests", {{{"name", "gpu"}, {"deviceClassName", "gpu.example.com"}}}}}}}}};
}

TEST_F(ResourceApiServerTest, RejectsMissingOrWrongToken) {
  std::unique_ptr<httplib::Client> anonymous = NewHttpsClient(server_->port());
  for (const char* auth : {"", "Bearer wrong", "Basic abc"}) {
    httplib::Headers headers;
    if (*auth != '\0') headers.emplace("Authorization", auth);
    auto r = anonymous->Get("/apis/resource.k8s.io/v1/resourceslices", headers);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << auth;
    EXPECT_EQ(Json::parse(r->body),
              Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                              "message":"Unauthorized","reason":"Unauthorized","code":401})"));
  }
  auto r = anonymous->Get("/version");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

TEST_F(ResourceApiServerTest, Discovery) {
  auto [code, version] = Do("GET", "/version");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(version["gitVersion"], "v1.34.0");
  EXPECT_EQ(version["minor"], "34");
  auto [gcode, group] = Do("GET", "/apis/resource.k8s.io");
  EXPECT_EQ(gcode, 200);
  EXPECT_EQ(group["preferredVersion"]["version"], "v1");
  auto [rcode, resources] = Do("GET", kV1beta1);
  EXPECT_EQ(rcode, 200);
  EXPECT_EQ(resources["kind"], "APIResourceList");
  EXPECT_EQ(resources["groupVersion"], "resource.k8s.io/v1beta1");
  std::vector<std::string> names;
  for (const Json& r : resources["resources"]) names.push_back(r["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"resourceslices", "deviceclasses", "resourceclaims",
                                              "resourceclaims/status", "resourceclaimtemplates"}));
  auto [ucode, unknown] = Do("GET", "/apis/resource.k8s.io/v1beta2/resourceslices");
  EXPECT_EQ(ucode, 404);
  EXPECT_EQ(unknown["reason"], "NotFound");
  EXPECT_EQ(unknown["message"], "the server could not find the requested resource");
  EXPECT_EQ(Do("GET", "/apis/resource.k8s.io/v1/widgets").first, 404);
  EXPECT_EQ(Do("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceslices").first, 404);
}

TEST_F(ResourceApiServerTest, NodeGet) {
  auto [code, node] = Do("GET", "/api/v1/nodes/node-1");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(node["kind"], "Node");
  EXPECT_EQ(node["metadata"]["uid"], store_.node_uid());
  EXPECT_EQ(Do("GET", "/api/v1/nodes/node-2").first, 404);
  EXPECT_EQ(Do("DELETE", "/api/v1/nodes/node-1").first, 405);
}

TEST_F(ResourceApiServerTest, SlicePostedThroughV1beta1ReadsBackThroughV1) {
  auto [code, created] = Do("POST", std::string(kV1beta1) + "/resourceslices", V1beta1Slice());
  ASSERT_EQ(code, 201) << created.dump();
  EXPECT_EQ(created["apiVersion"], "resource.k8s.io/v1beta1");
  const std::string name = created["metadata"]["name"];
  EXPECT_THAT(name, ::testing::StartsWith("node-1-gpu.example.com-"));
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  // The echo is the full object the client sent, plus what the server assigns.
  EXPECT_EQ(created["spec"], V1beta1Slice()["spec"]);
  EXPECT_EQ(created["metadata"]["ownerReferences"], V1beta1Slice()["metadata"]["ownerReferences"]);

  auto [gcode, v1] = Do("GET", std::string(kV1) + "/resourceslices/" + name);
  ASSERT_EQ(gcode, 200);
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(v1["spec"]["devices"][0]["capacity"]["memory"]["value"], "80Gi");
  EXPECT_FALSE(v1["spec"]["devices"][0].contains("basic"));

  // PUT through v1 with the server's metadata; read back through v1beta1.
  v1["spec"]["devices"][0]["attributes"]["index"]["int"] = 7;
  auto [pcode, put] = Do("PUT", std::string(kV1) + "/resourceslices/" + name, v1);
  ASSERT_EQ(pcode, 200) << put.dump();
  EXPECT_EQ(put["metadata"]["generation"], 2);
  auto [bcode, beta] = Do("GET", std::string(kV1beta1) + "/resourceslices/" + name);
  ASSERT_EQ(bcode, 200);
  EXPECT_EQ(beta["spec"]["devices"][0]["basic"]["attributes"]["index"]["int"], 7);

  // A second PUT with the old resourceVersion conflicts.
  auto [ccode, conflict] = Do("PUT", std::string(kV1) + "/resourceslices/" + name, v1);
  EXPECT_EQ(ccode, 409);
  EXPECT_EQ(conflict["reason"], "Conflict");

  auto [dcode, status] = Do("DELETE", std::string(kV1beta1) + "/resourceslices/" + name);
  EXPECT_EQ(dcode, 200);
  EXPECT_EQ(status["status"], "Success");
  EXPECT_EQ(status["details"]["name"], name);
  EXPECT_EQ(Do("GET", std::string(kV1) + "/resourceslices/" + name).first, 404);
}

TEST_F(ResourceApiServerTest, ListsWithFieldSelectors) {
  ASSERT_EQ(Do("POST", std::string(kV1) + "/resourceslices", V1Slice("a", "node-1")).first, 201);
  ASSERT_EQ(Do("POST", std::string(kV1) + "/resourceslices", V1Slice("b", "node-2")).first, 201);
  auto [code, list] = Do("GET", std::string(kV1) +
                                    "/resourceslices?fieldSelector=spec.driver%3Dtpu.example.com,"
                                    "spec.nodeName%3Dnode-1&limit=500&resourceVersion=0");
  ASSERT_EQ(code, 200) << list.dump();
  EXPECT_EQ(list["kind"], "ResourceSliceList");
  EXPECT_EQ(list["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(list["metadata"]["resourceVersion"], std::to_string(store_.ResourceVersion()));
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "a");
  // Unescaped, as curl users write it: the value is split at its first '=' only (Go's
  // url.ParseQuery), so the selector reaches the parser whole.
  auto [raw_code, raw] = Do("GET", std::string(kV1) +
                                       "/resourceslices?fieldSelector=spec.nodeName=node-2,"
                                       "spec.driver=tpu.example.com");
  ASSERT_EQ(raw_code, 200) << raw.dump();
  ASSERT_EQ(raw["items"].size(), 1u);
  EXPECT_EQ(raw["items"][0]["metadata"]["name"], "b");
  auto [ncode, others] =
      Do("GET", std::string(kV1beta1) + "/resourceslices?fieldSelector=spec.nodeName!%3Dnode-1");
  ASSERT_EQ(ncode, 200);
  ASSERT_EQ(others["items"].size(), 1u);
  EXPECT_EQ(others["items"][0]["spec"]["devices"][0]["basic"]["attributes"]["index"]["int"], 0);

  auto [bcode, bad] = Do("GET", std::string(kV1) + "/resourceslices?fieldSelector=spec.pool%3Dx");
  EXPECT_EQ(bcode, 400);
  EXPECT_EQ(bad["reason"], "BadRequest");
  EXPECT_EQ(bad["message"],
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool");

  auto [dcode, deleted] =
      Do("DELETE", std::string(kV1) + "/resourceslices?fieldSelector=spec.nodeName%3Dnode-2");
  EXPECT_EQ(dcode, 200);
  EXPECT_EQ(deleted["items"].size(), 1u);
  EXPECT_EQ(store_.List(Kind::kResourceSlice, "").items.size(), 1u);
}

TEST_F(ResourceApiServerTest, ClaimsInBothVersionsWithStatus) {
  const std::string beta = std::string(kV1beta1) + "/namespaces/default/resourceclaims";
  const std::string v1 = std::string(kV1) + "/namespaces/default/resourceclaims";
  auto [code, created] = Do("POST", beta, V1beta1Claim("c"));
  ASSERT_EQ(code, 201) << created.dump();
  EXPECT_EQ(created["metadata"]["namespace"], "default");
  EXPECT_EQ(created["spec"]["devices"]["requests"][0]["allocationMode"], "ExactCount");
  EXPECT_EQ(created["spec"]["devices"]["requests"][0]["count"], 1);

  auto [gcode, claim] = Do("GET", v1 + "/c");
  ASSERT_EQ(gcode, 200);
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "gpu.example.com");

  claim["status"] = Json::parse(R"({"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}},
      "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}]})");
  auto [scode, updated] = Do("PUT", v1 + "/c/status", claim);
  ASSERT_EQ(scode, 200) << updated.dump();
  auto [bcode, beta_claim] = Do("GET", beta + "/c");
  ASSERT_EQ(bcode, 200);
  EXPECT_EQ(beta_claim["status"]["reservedFor"][0]["uid"], "pod-uid");
  EXPECT_EQ(store_.GetClaim("default", "c")->status.allocation->results[0].device, "gpu-0");

  // All-namespaces list.
  ASSERT_EQ(Do("POST", std::string(kV1) + "/namespaces/other/resourceclaims",
               [] {
                 Json c = V1beta1Claim("d");
                 c["apiVersion"] = "resource.k8s.io/v1";
                 c["spec"]["devices"]["requests"][0] = {
                     {"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}};
                 return c;
               }())
                .first,
            201);
  auto [lcode, all] = Do("GET", std::string(kV1) + "/resourceclaims");
  ASSERT_EQ(lcode, 200);
  EXPECT_EQ(all["kind"], "ResourceClaimList");
  EXPECT_EQ(all["items"].size(), 2u);

  // The namespace in the body must match the URL's.
  Json wrong_ns = V1beta1Claim("e");
  wrong_ns["metadata"]["namespace"] = "elsewhere";
  auto [wcode, wrong] = Do("POST", beta, wrong_ns);
  EXPECT_EQ(wcode, 400);
  EXPECT_THAT(wrong["message"].get<std::string>(), HasSubstr("does not match the namespace"));
  EXPECT_EQ(Do("DELETE", v1 + "/c").first, 200);
  EXPECT_EQ(Do("GET", beta + "/c").first, 404);
}

TEST_F(ResourceApiServerTest, DeviceClassesAndTemplates) {
  Json cls = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "DeviceClass"},
              {"metadata", {{"name", "gpu.example.com"}}},
              {"spec", {{"selectors", {{{"cel", {{"expression", "true"}}}}}}}}};
  ASSERT_EQ(Do("POST", std::string(kV1) + "/deviceclasses", cls).first, 201);
  auto [gcode, got] = Do("GET", std::string(kV1beta1) + "/deviceclasses/gpu.example.com");
  EXPECT_EQ(gcode, 200);
  EXPECT_EQ(got["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(got["spec"], cls["spec"]);
  auto [lcode, list] = Do("GET", std::string(kV1) + "/deviceclasses");
  EXPECT_EQ(lcode, 200);
  EXPECT_EQ(list["kind"], "DeviceClassList");

  Json tmpl = {{"apiVersion", "resource.k8s.io/v1beta1"},
               {"kind", "ResourceClaimTemplate"},
               {"metadata", {{"name", "t"}}},
               {"spec", {{"spec", V1beta1Claim("x")["spec"]}}}};
  const std::string path = std::string(kV1beta1) + "/namespaces/default/resourceclaimtemplates";
  ASSERT_EQ(Do("POST", path, tmpl).first, 201);
  auto [tcode, t] = Do("GET", std::string(kV1) + "/namespaces/default/resourceclaimtemplates/t");
  EXPECT_EQ(tcode, 200);
  EXPECT_EQ(t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"], 1);
  EXPECT_TRUE(store_.GetClaimTemplate("default", "t").ok());
  EXPECT_EQ(Do("DELETE", path + "/t").first, 200);
}

TEST_F(ResourceApiServerTest, ErrorStatusShapes) {
  auto [ncode, not_found] = Do("GET", std::string(kV1) + "/resourceslices/missing");
  EXPECT_EQ(ncode, 404);
  EXPECT_EQ(not_found, Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"resourceslices.resource.k8s.io \"missing\" not found",
      "reason":"NotFound","details":{"name":"missing","group":"resource.k8s.io",
      "kind":"resourceslices"},"code":404})"));

  ASSERT_EQ(Do("POST", std::string(kV1) + "/resourceslices", V1Slice("a", "node-1")).first, 201);
  auto [acode, exists] = Do("POST", std::string(kV1) + "/resourceslices", V1Slice("a", "node-1"));
  EXPECT_EQ(acode, 409);
  EXPECT_EQ(exists["reason"], "AlreadyExists");

  Json invalid = V1Slice("b", "node-1");
  invalid["spec"]["devices"][0]["name"] = "TPU";
  auto [icode, inv] = Do("POST", std::string(kV1) + "/resourceslices", invalid);
  EXPECT_EQ(icode, 422);
  EXPECT_EQ(inv["reason"], "Invalid");
  EXPECT_EQ(inv["details"]["kind"], "ResourceSlice");
  EXPECT_EQ(inv["details"]["causes"][0]["field"], "spec.devices[0].name");

  auto r = client_->Post(std::string(kV1) + "/resourceslices", "{not json", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Json::parse(r->body)["reason"], "BadRequest");

  auto p = client_->Post(std::string(kV1) + "/resourceslices", std::string("k8s\0", 4),
                         "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 400);  // magic without an envelope
  auto yaml = client_->Post(std::string(kV1) + "/resourceslices", "a: b", "application/yaml");
  ASSERT_TRUE(yaml);
  EXPECT_EQ(yaml->status, 415);
  EXPECT_THAT(Json::parse(yaml->body)["message"].get<std::string>(),
              HasSubstr("application/vnd.kubernetes.protobuf"));

  Json wrong_version = V1Slice("c", "node-1");
  auto [vcode, version] = Do("POST", std::string(kV1beta1) + "/resourceslices", wrong_version);
  EXPECT_EQ(vcode, 400);
  EXPECT_THAT(version["message"].get<std::string>(),
              HasSubstr("the API version in the data (resource.k8s.io/v1) does not match the "
                        "expected API version (resource.k8s.io/v1beta1)"));

  auto [mcode, mismatch] = Do("PUT", std::string(kV1) + "/resourceslices/other",
                              *store_.Get(Kind::kResourceSlice, "", "a"));
  EXPECT_EQ(mcode, 400);
  EXPECT_EQ(mismatch["message"],
            "the name of the object (a) does not match the name on the URL (other)");

  auto [pcode, post_named] =
      Do("POST", std::string(kV1) + "/resourceslices/a", V1Slice("a", "node-1"));
  EXPECT_EQ(pcode, 405);
  EXPECT_EQ(post_named["reason"], "MethodNotAllowed");
}

// What every Go driver sends (seen with helper v0.32-v0.37): protobuf POST with generateName and a
// Node owner, then PUT of the server's copy; answers are JSON with the whole object.
TEST_F(ResourceApiServerTest, ProtobufCreateAndUpdateOfSlices) {
  namespace rv1 = ::k8s::io::api::resource::v1;
  rv1::ResourceSlice slice;
  auto* meta = slice.mutable_metadata();
  meta->set_generatename("00000-gpu.example.com-node-1-");
  auto* owner = meta->add_ownerreferences();
  owner->set_apiversion("v1");
  owner->set_kind("Node");
  owner->set_name("node-1");
  owner->set_uid(store_.node_uid());
  owner->set_controller(true);
  auto* spec = slice.mutable_spec();
  spec->set_driver("gpu.example.com");
  spec->set_nodename("node-1");
  spec->mutable_pool()->set_name("node-1");
  spec->mutable_pool()->set_generation(1);
  spec->mutable_pool()->set_resourceslicecount(1);
  for (const char* name : {"gpu-0", "gpu-1"}) {
    auto* device = spec->add_devices();
    device->set_name(name);
    (*device->mutable_attributes())["index"].set_int_(name[4] - '0');
    (*device->mutable_attributes())["model"].set_string("H100");
    (*device->mutable_attributes())["driverVersion"].set_version("1.2.3");
    (*device->mutable_attributes())["mig"].set_bool_(false);
    (*device->mutable_capacity())["memory"].mutable_value()->set_string("80Gi");
  }
  auto created = client_->Post(std::string(kV1) + "/resourceslices",
                               testing::ProtobufBody("resource.k8s.io/v1", "ResourceSlice", slice),
                               "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  Json echo = Json::parse(created->body);
  const std::string name = echo["metadata"]["name"];
  EXPECT_THAT(name, ::testing::StartsWith("00000-gpu.example.com-node-1-"));
  EXPECT_EQ(name.size(), std::string("00000-gpu.example.com-node-1-").size() + 5);
  for (const char* field : {"uid", "resourceVersion", "creationTimestamp"}) {
    EXPECT_TRUE(echo["metadata"][field].is_string()) << field;
  }
  EXPECT_EQ(echo["metadata"]["generation"], 1);
  EXPECT_EQ(echo["metadata"]["ownerReferences"][0]["uid"], store_.node_uid());
  EXPECT_EQ(echo["metadata"]["ownerReferences"][0]["controller"], true);
  ASSERT_EQ(echo["spec"]["devices"].size(), 2u);
  EXPECT_EQ(echo["spec"]["devices"][1]["attributes"],
            Json::parse(R"({"index":{"int":1},"model":{"string":"H100"},
                            "driverVersion":{"version":"1.2.3"},"mig":{"bool":false}})"));
  EXPECT_EQ(echo["spec"]["devices"][0]["capacity"]["memory"]["value"], "80Gi");
  // The echo is what the store holds: nothing was dropped.
  EXPECT_EQ(echo, *store_.Get(Kind::kResourceSlice, "", name));

  // PUT back with the server's name/uid/resourceVersion/creationTimestamp, one device gone.
  meta->set_name(name);
  meta->set_uid(echo["metadata"]["uid"]);
  meta->set_resourceversion(echo["metadata"]["resourceVersion"]);
  meta->set_generation(1);
  spec->mutable_devices()->RemoveLast();
  auto updated = client_->Put(std::string(kV1) + "/resourceslices/" + name,
                              testing::ProtobufBody("resource.k8s.io/v1", "ResourceSlice", slice),
                              "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(updated);
  ASSERT_EQ(updated->status, 200) << updated->body;
  Json after = Json::parse(updated->body);
  EXPECT_EQ(after["spec"]["devices"].size(), 1u);
  EXPECT_EQ(after["metadata"]["generation"], 2);
  // A stale resourceVersion conflicts, as with JSON.
  auto stale = client_->Put(std::string(kV1) + "/resourceslices/" + name,
                            testing::ProtobufBody("resource.k8s.io/v1", "ResourceSlice", slice),
                            "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
}

TEST_F(ResourceApiServerTest, ProtobufV1beta1SliceReadsBackInBothVersions) {
  namespace rv1beta1 = ::k8s::io::api::resource::v1beta1;
  rv1beta1::ResourceSlice slice;
  slice.mutable_metadata()->set_generatename("node-1-gpu.example.com-");
  auto* spec = slice.mutable_spec();
  spec->set_driver("gpu.example.com");
  spec->set_nodename("node-1");
  spec->mutable_pool()->set_name("node-1");
  spec->mutable_pool()->set_generation(1);
  spec->mutable_pool()->set_resourceslicecount(1);
  auto* device = spec->add_devices();
  device->set_name("gpu-0");
  (*device->mutable_basic()->mutable_attributes())["index"].set_int_(0);
  (*device->mutable_basic()->mutable_capacity())["memory"].mutable_value()->set_string("40Gi");
  auto created =
      client_->Post(std::string(kV1beta1) + "/resourceslices",
                    testing::ProtobufBody("resource.k8s.io/v1beta1", "ResourceSlice", slice),
                    "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  Json echo = Json::parse(created->body);
  EXPECT_EQ(echo["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(echo["spec"]["devices"][0]["basic"]["capacity"]["memory"]["value"], "40Gi");
  const std::string name = echo["metadata"]["name"];
  auto [code, v1] = Do("GET", std::string(kV1) + "/resourceslices/" + name);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(v1["spec"]["devices"][0]["attributes"]["index"]["int"], 0);

  // The envelope's version must be the URL's.
  auto mismatch =
      client_->Post(std::string(kV1) + "/resourceslices",
                    testing::ProtobufBody("resource.k8s.io/v1beta1", "ResourceSlice", slice),
                    "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->status, 400);
  EXPECT_THAT(Json::parse(mismatch->body)["message"].get<std::string>(),
              HasSubstr("does not match the expected API version (resource.k8s.io/v1)"));
}

TEST(ResourceApiServer, StartStopLifecycle) {
  ObjectStore store(StoreOptions{.node_name = "node-1"});
  ResourceApiServer never_started(&store, ResourceApiServerOptions{.token = kToken});
  never_started.Stop();
  never_started.Stop();

  ResourceApiServer no_token(&store, ResourceApiServerOptions{.tls = TestCertificates()});
  EXPECT_EQ(no_token.Start().code(), absl::StatusCode::kInvalidArgument);

  ResourceApiServer server(&store,
                           ResourceApiServerOptions{.token = kToken, .tls = TestCertificates()});
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
  const int port = server.port();
  ResourceApiServer clash(
      &store, ResourceApiServerOptions{.port = port, .token = kToken, .tls = TestCertificates()});
  EXPECT_EQ(clash.Start().code(), absl::StatusCode::kUnavailable);
  std::thread other([&] { server.Stop(); });
  server.Stop();
  other.join();
  EXPECT_FALSE(NewHttpsClient(port)->Get("/version"));
}

// There is no plain-HTTP listener and no server without a usable certificate: client-go sends
// its token only over https, so a server a client could reach without TLS would be unusable.
TEST(ResourceApiServer, RefusesToStartWithoutAUsableCertificate) {
  ObjectStore store(StoreOptions{.node_name = "node-1"});
  ResourceApiServer no_tls(&store, ResourceApiServerOptions{.token = kToken});
  absl::Status started = no_tls.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(started.message(), HasSubstr("serving certificate"));

  ServingCertificates mismatched = TestCertificates();
  absl::StatusOr<ClientCertificate> other = IssueClientCertificate(
      TestCertificates().ca_pem, TestCertificates().ca_pem /* not a key */, "x");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  mismatched.key_pem = TestCertificates().key_pem;
  mismatched.cert_pem = TestCertificates().ca_pem;  // the CA's certificate, not the key's
  ResourceApiServer wrong_key(&store, ResourceApiServerOptions{.token = kToken, .tls = mismatched});
  started = wrong_key.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(started.message(), HasSubstr("does not match"));
}

TEST_F(ResourceApiServerTest, SpeaksOnlyTls) {
  // A plain-HTTP request on the port gets no HTTP answer (the bytes are not a TLS ClientHello).
  httplib::Client plain(absl::StrCat("http://127.0.0.1:", server_->port()));
  plain.set_bearer_token_auth(kToken);
  plain.set_read_timeout(5, 0);
  auto r = plain.Get("/version");
  EXPECT_TRUE(!r || r->status != 200);
  // A client that trusts another CA refuses the server, as client-go would.
  absl::StatusOr<ServingCertificates> other_ca = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "kdp-other-ca-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return absl::StatusOr<ServingCertificates>();
    absl::StatusOr<ServingCertificates> made = EnsureServingCertificates(dir);
    std::filesystem::remove_all(dir);
    return made;
  }();
  ASSERT_TRUE(other_ca.ok()) << other_ca.status();
  std::unique_ptr<httplib::Client> distrustful = NewHttpsClient(server_->port(), other_ca->ca_pem);
  distrustful->set_bearer_token_auth(kToken);
  auto refused = distrustful->Get("/version");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);
}

// kube-apiserver's second way in: a client certificate the cluster CA signed, no token.
TEST(ResourceApiServerClientCertificates, AcceptsOnlyThoseTheCaSigned) {
  std::string dir = (std::filesystem::temp_directory_path() / "kdp-ca-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  absl::StatusOr<ServingCertificates> certificates = EnsureServingCertificates(dir);
  ASSERT_TRUE(certificates.ok()) << certificates.status();
  absl::StatusOr<std::string> ca_key = kdp::ReadFile(dir + "/ca.key");
  ASSERT_TRUE(ca_key.ok());
  std::filesystem::remove_all(dir);
  ObjectStore store(StoreOptions{.node_name = "node-1"});
  ResourceApiServer server(&store, ResourceApiServerOptions{.token = kToken, .tls = *certificates});
  ASSERT_TRUE(server.Start().ok());

  auto get_version = [&](const ClientCertificate* cert) {
    auto parse_cert = [](const std::string& pem) {
      BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
      X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      return x;
    };
    auto parse_key = [](const std::string& pem) {
      BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
      EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      return k;
    };
    X509* x = cert == nullptr ? nullptr : parse_cert(cert->cert_pem);
    EVP_PKEY* k = cert == nullptr ? nullptr : parse_key(cert->key_pem);
    httplib::SSLClient client("127.0.0.1", server.port(), x, k);
    X509_free(x);
    EVP_PKEY_free(k);
    client.enable_server_certificate_verification(true);
    client.set_ca_cert_store(testing::NewCaStore(certificates->ca_pem));
    auto r = client.Get("/version");
    return r ? r->status : 0;
  };
  absl::StatusOr<ClientCertificate> signed_by_ca =
      IssueClientCertificate(certificates->ca_pem, *ca_key, "kdp-admin");
  ASSERT_TRUE(signed_by_ca.ok()) << signed_by_ca.status();
  EXPECT_EQ(get_version(&*signed_by_ca), 200);
  EXPECT_EQ(get_version(nullptr), 401);  // neither token nor certificate
  // A certificate of another CA ends the handshake: no answer at all.
  std::string other_dir = (std::filesystem::temp_directory_path() / "kdp-ca-XXXXXX").string();
  ASSERT_NE(mkdtemp(other_dir.data()), nullptr);
  absl::StatusOr<ServingCertificates> other = EnsureServingCertificates(other_dir);
  absl::StatusOr<std::string> other_key = kdp::ReadFile(other_dir + "/ca.key");
  std::filesystem::remove_all(other_dir);
  ASSERT_TRUE(other.ok() && other_key.ok());
  absl::StatusOr<ClientCertificate> foreign =
      IssueClientCertificate(other->ca_pem, *other_key, "intruder");
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(get_version(&*foreign), 0);
  server.Stop();
}

// A renewed certificate is served from the next handshake on, without a restart.
TEST(ResourceApiServerRenewal, ServesTheNewCertificateFromTheNextHandshake) {
  std::string dir = (std::filesystem::temp_directory_path() / "kdp-renew-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  absl::StatusOr<ServingCertificates> first = EnsureServingCertificates(dir);
  ASSERT_TRUE(first.ok());
  ObjectStore store(StoreOptions{.node_name = "node-1"});
  ResourceApiServer server(&store, ResourceApiServerOptions{.token = kToken, .tls = *first});
  ASSERT_TRUE(server.Start().ok());
  // The next check a year on: the serving certificate expires within 30 days, the CA does not.
  absl::StatusOr<ServingCertificates> renewed =
      EnsureServingCertificates(dir, {.now = [] { return absl::Now() + absl::Hours(24 * 340); }});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(renewed.ok());
  ASSERT_TRUE(renewed->cert_created);
  ASSERT_FALSE(renewed->ca_created);
  ASSERT_TRUE(server.SetServingCertificates(*renewed).ok());
  // The new certificate is valid from 340 days on: a client verifying it now refuses it, which
  // shows it is the one served (the old one would verify).
  std::unique_ptr<httplib::Client> client = NewHttpsClient(server.port(), first->ca_pem);
  client->set_bearer_token_auth(kToken);
  auto r = client->Get("/version");
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error(), httplib::Error::SSLServerVerification);
  // Back to the first: served again at once.
  ASSERT_TRUE(server.SetServingCertificates(*first).ok());
  auto again = NewHttpsClient(server.port(), first->ca_pem);
  again->set_bearer_token_auth(kToken);
  auto ok = again->Get("/version");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  ServingCertificates broken = *first;
  broken.key_pem = "not a key";
  EXPECT_EQ(server.SetServingCertificates(broken).code(), absl::StatusCode::kInvalidArgument);
  server.Stop();
}

}  // namespace
}  // namespace kdp::manager::resourceapi

namespace kdp::manager::resourceapi {
namespace {

class ResourceApiServerPatchTest : public ResourceApiServerTest {};

TEST_F(ResourceApiServerPatchTest, MergeJsonAndStrategicPatchesAsKubectlSendsThem) {
  const std::string path = std::string(kV1) + "/deviceclasses/gpu.example.com";
  ASSERT_EQ(Do("POST", std::string(kV1) + "/deviceclasses",
               Json::parse(R"({"metadata": {"name": "gpu.example.com", "labels": {"a": "1"}},
                               "spec": {"selectors": [{"cel": {"expression": "true"}}]}})"))
                .first,
            201);
  // kubectl apply on a resource.k8s.io/v1 object: a JSON merge patch.
  auto [code, patched] = Patch(
      path,
      R"({"metadata":{"labels":{"a":null,"b":"2"}},"spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.example.com\""}}]}})",
      "application/merge-patch+json");
  ASSERT_EQ(code, 200) << patched.dump();
  EXPECT_EQ(patched["metadata"]["labels"], Json::parse(R"({"b": "2"})"));
  EXPECT_EQ(patched["spec"]["selectors"][0]["cel"]["expression"],
            "device.driver == \"gpu.example.com\"");
  EXPECT_EQ(Do("GET", path).second["metadata"]["labels"], Json::parse(R"({"b": "2"})"));
  // kubectl patch --type=json.
  std::tie(code, patched) =
      Patch(path, R"([{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}])",
            "application/json-patch+json");
  ASSERT_EQ(code, 200) << patched.dump();
  EXPECT_EQ(patched["metadata"]["annotations"]["x"], "y");
  // A failing test operation changes nothing: it decoded, so 422 Invalid as patch.go answers;
  // a body that does not decode as a JSON patch is 400.
  std::tie(code, patched) =
      Patch(path, R"([{"op": "test", "path": "/metadata/name", "value": "z"}])",
            "application/json-patch+json");
  EXPECT_EQ(code, 422);
  EXPECT_EQ(patched, Json::parse(R"({"kind": "Status", "apiVersion": "v1", "metadata": {},
      "status": "Failure", "reason": "Invalid", "code": 422, "details": {},
      "message": "the server rejected our request due to an error in our request"})"));
  EXPECT_EQ(Do("GET", path).second["metadata"]["annotations"], Json::parse(R"({"x": "y"})"));
  std::tie(code, patched) = Patch(path, R"({"op": "test"})", "application/json-patch+json");
  EXPECT_EQ(code, 400);
  EXPECT_EQ(patched["reason"], "BadRequest");
  EXPECT_EQ(patched["message"],
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  // kubectl label on a core object: a strategic merge patch.
  std::tie(code, patched) =
      Patch("/api/v1/namespaces/default", R"({"metadata":{"labels":{"team":"ml"}}})",
            "application/strategic-merge-patch+json");
  ASSERT_EQ(code, 200) << patched.dump();
  EXPECT_EQ(patched["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(patched["metadata"]["labels"]["kubernetes.io/metadata.name"], "default");
  // Through v1beta1 the patch applies to the v1beta1 form and is stored as v1.
  std::tie(code, patched) =
      Patch(std::string(kV1beta1) + "/deviceclasses/gpu.example.com",
            R"({"metadata":{"labels":{"c":"3"}}})", "application/merge-patch+json");
  ASSERT_EQ(code, 200) << patched.dump();
  EXPECT_EQ(patched["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(Do("GET", path).second["metadata"]["labels"]["c"], "3");
}

TEST_F(ResourceApiServerPatchTest, RefusesWhatItCannotPatch) {
  // Server-side apply: 415, which kubectl reports as "Server-side apply not available".
  auto [code, body] =
      Patch(std::string(kV1) + "/deviceclasses/x", "{}", "application/apply-patch+yaml");
  EXPECT_EQ(code, 415);
  EXPECT_EQ(body["reason"], "UnsupportedMediaType");
  std::tie(code, body) = Patch(std::string(kV1) + "/deviceclasses/x", "{}", "text/plain");
  EXPECT_EQ(code, 415);
  EXPECT_THAT(body["message"].get<std::string>(), HasSubstr("application/merge-patch+json"));
  std::tie(code, body) =
      Patch(std::string(kV1) + "/deviceclasses/absent", "{}", "application/merge-patch+json");
  EXPECT_EQ(code, 404);
  // The Node is the manager's to write.
  std::tie(code, body) =
      Patch("/api/v1/nodes/node-1", "{}", "application/strategic-merge-patch+json");
  EXPECT_EQ(code, 405);
  // A patch may not rename the object.
  ASSERT_EQ(
      Do("POST", "/api/v1/namespaces", Json::parse(R"({"metadata": {"name": "team-a"}})")).first,
      201);
  std::tie(code, body) = Patch("/api/v1/namespaces/team-a", R"({"metadata":{"name":"team-b"}})",
                               "application/merge-patch+json");
  EXPECT_EQ(code, 400);
}

TEST_F(ResourceApiServerTest, ServesCoreNamespacesPodsAndEvents) {
  // The system namespaces exist; default may not be deleted.
  auto [code, list] = Do("GET", "/api/v1/namespaces");
  ASSERT_EQ(code, 200);
  std::vector<std::string> names;
  for (const Json& ns : list["items"]) names.push_back(ns["metadata"]["name"]);
  EXPECT_THAT(names,
              ::testing::ElementsAre("default", "kube-node-lease", "kube-public", "kube-system"));
  auto [deleted, status] = Do("DELETE", "/api/v1/namespaces/default");
  EXPECT_EQ(deleted, 403);
  EXPECT_EQ(status["message"],
            "namespaces \"default\" is forbidden: this namespace may not be deleted");
  // Pods are read-only here (the manager admits them).
  auto [created, refused] =
      Do("POST", "/api/v1/namespaces/default/pods", Json::parse(R"({"metadata": {"name": "p"}})"));
  EXPECT_EQ(created, 405);
  EXPECT_EQ(
      Do("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1,status.phase!%3DFailed").first,
      200);
  // Events are written and selected by involvedObject.
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/events",
               Json::parse(R"({"metadata": {"name": "e1"}, "reason": "Started",
                               "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}})"))
                .first,
            201);
  auto [listed, events] =
      Do("GET", "/api/v1/events?fieldSelector=involvedObject.name%3Dp,involvedObject.kind%3DPod");
  ASSERT_EQ(listed, 200);
  ASSERT_EQ(events["items"].size(), 1u);
  EXPECT_EQ(events["items"][0]["reason"], "Started");
  EXPECT_EQ(
      Do("GET", "/api/v1/events?fieldSelector=involvedObject.name%3Dq").second["items"].size(), 0u);
}

// A PodWriter that stores what it is given, Running, as the manager's admission would; "refuse-*"
// pods are refused with a 422, as an invalid pod is.
class RecordingPodWriter final : public PodWriter {
 public:
  explicit RecordingPodWriter(ObjectStore* store) : store_(store) {}
  absl::StatusOr<Json> CreatePod(Json pod) override {
    const std::string name = pod["metadata"].value("name", "");
    if (name.starts_with("refuse-")) {
      return InvalidError(InfoOf(Kind::kPod), name, {Required("spec.containers")});
    }
    pod["metadata"]["uid"] = "uid-" + name;
    pod["status"] = {{"phase", "Running"}};
    absl::StatusOr<Json> created = store_->CreateKeepingUid(Kind::kPod, pod);
    if (!created.ok()) return created.status();
    return store_->UpdateStatus(Kind::kPod, pod);
  }
  absl::StatusOr<Json> DeletePod(const std::string& namespace_, const std::string& name,
                                 const std::string& uid) override {
    deleted_uid_precondition = uid;
    KDP_ASSIGN_OR_RETURN(DeleteResult deleted, store_->Delete(Kind::kPod, namespace_, name));
    return deleted.object;
  }
  std::string deleted_uid_precondition;

 private:
  ObjectStore* const store_;
};

class ResourceApiServerPodsTest : public ResourceApiServerPatchTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ResourceApiServer>(
        &store_, ResourceApiServerOptions{
                     .token = kToken, .tls = TestCertificates(), .threads = 4, .pods = &writer_});
    ASSERT_TRUE(server_->Start().ok());
    client_ = NewHttpsClient(server_->port());
    client_->set_bearer_token_auth(kToken);
  }
  RecordingPodWriter writer_{&store_};
};

TEST_F(ResourceApiServerPodsTest, PodsAreCreatedAndDeletedThroughTheManagersAdmission) {
  const Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "labels": {"a": "1"}},
      "spec": {"containers": [{"name": "main", "image": "x"}]}})");
  auto [code, created] = Do("POST", "/api/v1/namespaces/default/pods", pod);
  ASSERT_EQ(code, 201) << created.dump();
  EXPECT_EQ(created["metadata"]["namespace"], "default");  // from the URL
  EXPECT_EQ(created["status"]["phase"], "Running");
  // The writer's refusal is the answer.
  auto [refused, status] = Do("POST", "/api/v1/namespaces/default/pods",
                              Json::parse(R"({"metadata": {"name": "refuse-me"}})"));
  EXPECT_EQ(refused, 422);
  EXPECT_EQ(status["reason"], "Invalid");
  // No pods outside a namespace, no deleting them all at once, no writing their status.
  EXPECT_EQ(Do("POST", "/api/v1/pods", pod).first, 405);
  EXPECT_EQ(Do("DELETE", "/api/v1/namespaces/default/pods").first, 405);
  EXPECT_EQ(Do("PUT", "/api/v1/namespaces/default/pods/p/status", created).first, 405);

  // Labels may change; the spec may not (ValidatePodUpdate's words).
  auto [labelled, after_label] =
      Patch("/api/v1/namespaces/default/pods/p", R"({"metadata":{"labels":{"b":"2"}}})",
            "application/strategic-merge-patch+json");
  ASSERT_EQ(labelled, 200) << after_label.dump();
  EXPECT_EQ(after_label["metadata"]["labels"]["b"], "2");
  EXPECT_EQ(after_label["status"]["phase"], "Running");
  auto [respec, forbidden] =
      Patch("/api/v1/namespaces/default/pods/p",
            R"({"spec":{"containers":[{"name":"main","image":"y"},{"name":"new","image":"z"}]}})",
            "application/strategic-merge-patch+json");
  EXPECT_EQ(respec, 422);
  EXPECT_THAT(forbidden["message"].get<std::string>(),
              HasSubstr("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change "
                        "fields other than"));

  // DELETE with a UID precondition reaches the writer.
  httplib::Result r = client_->Delete("/api/v1/namespaces/default/pods/p",
                                      R"({"preconditions": {"uid": "uid-p"}})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(writer_.deleted_uid_precondition, "uid-p");
  EXPECT_EQ(Do("GET", "/api/v1/namespaces/default/pods/p").first, 404);
}

TEST_F(ResourceApiServerTest, UnknownFieldsAreRefusedWhenStrictAndWarnedOtherwise) {
  const std::string body = R"({"metadata": {"name": "gpu.example.com"}, "spec": {"selector": []}})";
  // Strict (kubectl's default): the strict decoder's BadRequest, nothing created.
  httplib::Result strict = client_->Post(std::string(kV1) + "/deviceclasses?fieldValidation=Strict",
                                         body, "application/json");
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->status, 400);
  EXPECT_EQ(Json::parse(strict->body)["message"],
            "DeviceClass in version \"v1\" cannot be handled as a DeviceClass: strict decoding "
            "error: unknown field \"spec.selector\"");
  EXPECT_EQ(Do("GET", std::string(kV1) + "/deviceclasses/gpu.example.com").first, 404);
  // A directive that is none of the three.
  httplib::Result bad = client_->Post(std::string(kV1) + "/deviceclasses?fieldValidation=strict",
                                      body, "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  // Warn (the default): created, with the API server's Warning header.
  httplib::Result warned =
      client_->Post(std::string(kV1) + "/deviceclasses", body, "application/json");
  ASSERT_TRUE(warned);
  EXPECT_EQ(warned->status, 201);
  EXPECT_EQ(warned->get_header_value("Warning"), "299 - \"unknown field \\\"spec.selector\\\"\"");
  // Ignore: nothing said.
  httplib::Result ignored = client_->Post(
      std::string(kV1) + "/deviceclasses?fieldValidation=Ignore",
      R"({"metadata": {"name": "other.example.com"}, "spec": {"selector": [], "other": 1}})",
      "application/json");
  ASSERT_TRUE(ignored);
  EXPECT_EQ(ignored->status, 201);
  EXPECT_FALSE(ignored->has_header("Warning"));
}

TEST_F(ResourceApiServerTest, AnswersTablesToClientsThatAskForThem) {
  httplib::Headers headers = {
      {"Accept",
       "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g="
       "meta.k8s.io,application/json"}};
  auto r = client_->Get("/api/v1/nodes", headers);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  Json table = Json::parse(r->body);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  std::vector<std::string> columns;
  for (const Json& c : table["columnDefinitions"]) columns.push_back(c["name"]);
  EXPECT_THAT(columns, ::testing::IsSupersetOf({"Name", "Status", "Roles", "Age", "Version"}));
  ASSERT_EQ(table["rows"].size(), 1u);
  EXPECT_EQ(table["rows"][0]["cells"][0], "node-1");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  // A single object, and the plain object for a plain Accept.
  r = client_->Get("/api/v1/nodes/node-1", headers);
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["kind"], "Table");
  r = client_->Get("/api/v1/nodes/node-1", {{"Accept", "application/json"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["kind"], "Node");
  r = client_->Get("/api/v1/nodes?includeObject=Bogus", headers);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

}  // namespace
}  // namespace kdp::manager::resourceapi
