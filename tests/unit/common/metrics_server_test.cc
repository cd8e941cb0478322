// Tests of common/metrics_server.h: address parsing, and real HTTP on 127.0.0.1 (port 0).
#include "common/metrics_server.h"

#include <atomic>
#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace kdp::metrics {
namespace {

using ::testing::HasSubstr;

TEST(ParseListenAddress, AcceptsHostPortIpv6AndEmpty) {
  absl::StatusOr<std::optional<ListenAddress>> a = ParseListenAddress("127.0.0.1:9470");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->host, "127.0.0.1");
  EXPECT_EQ((*a)->port, 9470);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->host, "::1");
  EXPECT_EQ((*a)->port, 0);
  EXPECT_EQ(FormatListenAddress(**a), "[::1]:0");
  a = ParseListenAddress("");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
}

TEST(ParseListenAddress, RejectsMalformedNamingFlagAndRule) {
  for (const char* bad : {"127.0.0.1", ":9470", "host:", "host:x1", "host:65536", "::1:80", "[::1]",
                          "[::1:80", "h:-1"}) {
    absl::StatusOr<std::optional<ListenAddress>> a = ParseListenAddress(bad, "--metrics-address");
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(a.status().message()),
                HasSubstr(std::string("--metrics-address \"") + bad + "\""));
  }
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("requests_total", "Requests.", {"code"})->WithLabels({"200"})->Inc();
    server_ = std::make_unique<MetricsServer>(MetricsServerOptions{
        .address = "127.0.0.1:0",
        .registry = &registry_,
        .health_checks = {{.name = "always", .check = [] { return absl::OkStatus(); }},
                          {.name = "disk", .check = [this] {
                             return healthy_ ? absl::OkStatus()
                                             : absl::ResourceExhaustedError("disk full");
                           }}}});
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  // GET `path`: the status and body, or {-1, "no answer"}.
  struct Answer {
    int status = -1;
    std::string body = "no answer";
  };
  Answer Get(const std::string& path) {
    httplib::Result r = client_->Get(path);
    if (!r) return {};
    return {.status = r->status, .body = r->body};
  }

  Registry registry_;
  std::atomic<bool> healthy_{true};
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MetricsServerTest, ServesMetricsWithTheTextFormatContentType) {
  httplib::Result r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), kTextFormatContentType);
  EXPECT_THAT(r->body, HasSubstr("requests_total{code=\"200\"} 1\n"));
  httplib::Result head = client_->Head("/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(server_->address(), "127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(MetricsServerTest, HealthzPassesThenListsTheFailedCheck) {
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/healthz").body, "ok");
  EXPECT_EQ(Get("/healthz?verbose").body, "[+]always ok\n[+]disk ok\nhealthz check passed\n");
  healthy_ = false;
  Answer failing = Get("/healthz");
  EXPECT_EQ(failing.status, 500);
  EXPECT_EQ(failing.body, "[+]always ok\n[-]disk failed: disk full\nhealthz check failed\n");
  EXPECT_EQ(Get("/healthz/always").status, 200);
  EXPECT_EQ(Get("/healthz/disk").status, 500);
  EXPECT_EQ(Get("/healthz/nope").status, 404);
  healthy_ = true;
  EXPECT_EQ(Get("/healthz").status, 200);
}

// /readyz runs every check, as /healthz; /livez only "ping" and the liveness checks, so that a
// readiness problem (a peer away) never makes a liveness probe restart the process.
TEST_F(MetricsServerTest, LivezRunsOnlyLivenessChecksAndReadyzRunsThemAll) {
  healthy_ = false;  // "disk" is a readiness check
  EXPECT_EQ(Get("/livez").status, 200);
  EXPECT_EQ(Get("/livez").body, "ok");
  EXPECT_EQ(Get("/livez?verbose").body, "[+]ping ok\nlivez check passed\n");
  Answer ready = Get("/readyz");
  EXPECT_EQ(ready.status, 500);
  EXPECT_EQ(ready.body, "[+]always ok\n[-]disk failed: disk full\nreadyz check failed\n");
  EXPECT_EQ(Get("/livez/disk").status, 404);  // not a liveness check: not found there

  std::atomic<bool> stuck{false};
  server_->AddHealthCheck({.name = "loop",
                           .check =
                               [&stuck] {
                                 return stuck ? absl::DeadlineExceededError("no progress for 2m")
                                              : absl::OkStatus();
                               },
                           .liveness = true});
  EXPECT_EQ(Get("/livez?verbose").body, "[+]ping ok\n[+]loop ok\nlivez check passed\n");
  stuck = true;
  Answer live = Get("/livez");
  EXPECT_EQ(live.status, 500);
  EXPECT_EQ(live.body, "[+]ping ok\n[-]loop failed: no progress for 2m\nlivez check failed\n");
  EXPECT_EQ(Get("/livez/loop").status, 500);
  EXPECT_EQ(Get("/livez/ping").status, 200);
  EXPECT_THAT(Get("/readyz").body, HasSubstr("[-]loop failed: no progress for 2m\n"));
  EXPECT_EQ(Get("/livezz").status, 404);
  // The server must not read `stuck` after this scope.
  server_->Stop();
}

TEST_F(MetricsServerTest, ChecksAddedAfterStartCount) {
  server_->AddHealthCheck({.name = "late", .check = [] { return absl::UnavailableError("no"); }});
  httplib::Result r = client_->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_THAT(r->body, HasSubstr("[-]late failed: no\n"));
}

TEST_F(MetricsServerTest, UnknownPathIs404OtherMethods405) {
  httplib::Result r = client_->Get("/other");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = client_->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = client_->Delete("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

TEST_F(MetricsServerTest, StopIsQuickWithAKeptAliveConnectionAndIdempotent) {
  client_->set_keep_alive(true);
  ASSERT_TRUE(client_->Get("/metrics"));
  const auto start = std::chrono::steady_clock::now();
  server_->Stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("FIGURE: metrics server Stop() with a kept-alive client: %.3f s\n", seconds);
  EXPECT_LT(seconds, 3.0);
  server_->Stop();
  EXPECT_EQ(server_->port(), 0);
  EXPECT_FALSE(server_->serving());
}

TEST(MetricsServer, BindFailureNamesTheAddress) {
  MetricsServer first({.address = "127.0.0.1:0"});
  ASSERT_TRUE(first.Start().ok());
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  MetricsServer second({.address = taken});
  absl::Status started = second.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(started.message()), HasSubstr(taken));
}

TEST(MetricsServer, EmptyAddressDisablesAndBadAddressIsInvalid) {
  MetricsServer disabled({.address = ""});
  EXPECT_TRUE(disabled.Start().ok());
  EXPECT_FALSE(disabled.serving());
  EXPECT_EQ(disabled.port(), 0);
  MetricsServer bad({.address = "nonsense"});
  EXPECT_EQ(bad.Start().code(), absl::StatusCode::kInvalidArgument);
  MetricsServer never_started({});
  never_started.Stop();  // without Start: fine
}

}  // namespace
}  // namespace kdp::metrics
