// A started ResourceApiServer over an empty store, and an HTTPS client of it that sends the
// server's bearer token: the fixture of the REST server's unit tests (server_test.cc,
// events_api_test.cc). Do and Patch answer the status code and the parsed body (null when the
// body is not JSON; code 0 when the request got no answer). kApiToken is also the token of
// server_watch_test.cc's own servers.
//
// Thread-safety: a gtest fixture; its helpers are called from the test's thread.
#ifndef KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_API_SERVER_FIXTURE_H_
#define KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_API_SERVER_FIXTURE_H_

#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "httplib.h"
#include "manager/src/controlplane/resourceapi/server.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "nlohmann/json.hpp"
#include "tests/unit/manager/resourceapi/test_tls.h"

namespace kdp::testing {

inline constexpr char kApiToken[] = "0123456789abcdef0123456789abcdef";

class ApiServerTest : public ::testing::Test {
 protected:
  using Json = nlohmann::json;

  void SetUp() override {
    server_ = std::make_unique<manager::resourceapi::ResourceApiServer>(
        &store_, manager::resourceapi::ResourceApiServerOptions{
                     .token = kApiToken, .tls = TestCertificates(), .threads = 4});
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
    client_ = NewHttpsClient(server_->port());
    client_->set_bearer_token_auth(kApiToken);
  }
  void TearDown() override { server_->Stop(); }

  // GET, POST, PUT (with `body` as JSON) or DELETE.
  std::pair<int, Json> Do(const std::string& method, const std::string& path,
                          const Json& body = nullptr) {
    httplib::Result r(nullptr, httplib::Error::Unknown);
    if (method == "GET") r = client_->Get(path);
    if (method == "POST") r = client_->Post(path, body.dump(), "application/json");
    if (method == "PUT") r = client_->Put(path, body.dump(), "application/json");
    if (method == "DELETE") r = client_->Delete(path);
    return Answer(r);
  }
  // PATCH with `body` as `content_type` (application/merge-patch+json, ...).
  std::pair<int, Json> Patch(const std::string& path, const std::string& body,
                             const std::string& content_type) {
    return Answer(client_->Patch(path, body, content_type));
  }

  manager::resourceapi::ObjectStore store_{
      manager::resourceapi::StoreOptions{.node_name = "node-1"}};
  std::unique_ptr<manager::resourceapi::ResourceApiServer> server_;
  std::unique_ptr<httplib::Client> client_;

 private:
  static std::pair<int, Json> Answer(const httplib::Result& r) {
    if (!r) return {0, nullptr};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }
};

}  // namespace kdp::testing

#endif  // KDP_TESTS_UNIT_MANAGER_RESOURCEAPI_API_SERVER_FIXTURE_H_
