// List and watch query parameters as the API server parses and validates them
// (ValidateListOptions), and the continue token.
#include "manager/src/controlplane/resourceapi/request_options.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::HasSubstr;
using Params = std::map<std::string, std::string>;

absl::StatusOr<ListWatchOptions> Parse(const Params& params) {
  return ParseListWatchOptions(params, InfoOf(Kind::kResourceSlice), "v1");
}

TEST(ListWatchOptions, ParsesWhatClientGoSendsForAWatchList) {
  // The v0.36/v0.37 kubeletplugin helpers' first request, as observed from real Go drivers.
  absl::StatusOr<ListWatchOptions> options =
      Parse({{"allowWatchBookmarks", "true"},
             {"fieldSelector", "spec.driver=gpu.example.com,spec.nodeName=node-1"},
             {"resourceVersionMatch", "NotOlderThan"},
             {"sendInitialEvents", "true"},
             {"timeout", "8m43s"},
             {"timeoutSeconds", "523"},
             {"watch", "true"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->watch);
  EXPECT_TRUE(options->allow_watch_bookmarks);
  EXPECT_EQ(options->send_initial_events, true);
  EXPECT_EQ(options->timeout_seconds, 523);
  EXPECT_EQ(options->resource_version, "");
  EXPECT_FALSE(options->resource_version_number.has_value());
  EXPECT_EQ(options->selectors.fields.requirements().size(), 2u);
}

TEST(ListWatchOptions, ParsesClassicListThenWatch) {
  absl::StatusOr<ListWatchOptions> list = Parse(
      {{"fieldSelector", "spec.nodeName=node-1"}, {"limit", "500"}, {"resourceVersion", "0"}});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_FALSE(list->watch);
  EXPECT_EQ(list->limit, 500);
  EXPECT_EQ(list->resource_version, "0");
  EXPECT_FALSE(list->resource_version_number.has_value());
  absl::StatusOr<ListWatchOptions> watch =
      Parse({{"allowWatchBookmarks", "true"}, {"resourceVersion", "42"}, {"watch", "true"}});
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_EQ(watch->resource_version_number, 42);
  EXPECT_FALSE(watch->send_initial_events.has_value());
}

TEST(ListWatchOptions, BooleansReadAsTheApiServerReadsThem) {
  EXPECT_TRUE(QueryBool("true"));
  EXPECT_TRUE(QueryBool("1"));
  EXPECT_TRUE(QueryBool(""));
  EXPECT_TRUE(QueryBool("yes"));
  EXPECT_FALSE(QueryBool("0"));
  EXPECT_FALSE(QueryBool("false"));
  EXPECT_FALSE(QueryBool("FALSE"));
}

struct Forbidden {
  Params params;
  const char* message;
};

TEST(ListWatchOptions, RejectsWhatValidateListOptionsForbids) {
  const Forbidden cases[] = {
      {{{"sendInitialEvents", "true"}, {"resourceVersionMatch", "NotOlderThan"}},
       "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"},
      {{{"watch", "1"}, {"sendInitialEvents", "true"}, {"allowWatchBookmarks", "true"}},
       "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
       "resourceVersionMatch to NotOlderThan"},
      {{{"watch", "1"}, {"sendInitialEvents", "true"}, {"resourceVersionMatch", "NotOlderThan"}},
       "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks "
       "to true"},
      {{{"watch", "1"}, {"resourceVersion", "5"}, {"resourceVersionMatch", "NotOlderThan"}},
       "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
      {{{"resourceVersionMatch", "NotOlderThan"}},
       "resourceVersionMatch is forbidden unless resourceVersion is provided"},
      {{{"resourceVersion", "0"}, {"resourceVersionMatch", "Exact"}},
       "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""},
      {{{"resourceVersion", "3"}, {"resourceVersionMatch", "Newest"}},
       "resourceVersionMatch: Unsupported value: \"Newest\""},
      {{{"resourceVersion", "3"}, {"continue", "abc"}},
       "specifying resource version is not allowed when using continue"},
      {{{"limit", "-1"}}, "limit: Invalid value: -1"},
  };
  for (const Forbidden& c : cases) {
    absl::StatusOr<ListWatchOptions> options = Parse(c.params);
    ASSERT_FALSE(options.ok()) << c.message;
    EXPECT_EQ(HttpCode(options.status()), 422) << options.status();
    EXPECT_EQ(Reason(options.status()), "Invalid");
    EXPECT_THAT(std::string(options.status().message()),
                HasSubstr("ListOptions.meta.k8s.io \"\" is invalid"));
    EXPECT_THAT(std::string(options.status().message()), HasSubstr(c.message));
  }
}

TEST(ListWatchOptions, BadNumbersAndSelectorsAreBadRequests) {
  for (const Params& params :
       {Params{{"limit", "ten"}}, Params{{"timeoutSeconds", "1.5"}},
        Params{{"resourceVersion", "abc"}}, Params{{"resourceVersion", "-4"}},
        Params{{"fieldSelector", "spec.pool=x"}}, Params{{"labelSelector", "a in (b)"}}}) {
    absl::StatusOr<ListWatchOptions> options = Parse(params);
    ASSERT_FALSE(options.ok()) << params.begin()->first;
    EXPECT_EQ(HttpCode(options.status()), 400) << options.status();
  }
  EXPECT_THAT(std::string(Parse({{"limit", "ten"}}).status().message()),
              HasSubstr("invalid value for limit"));
  EXPECT_THAT(std::string(Parse({{"resourceVersion", "abc"}}).status().message()),
              HasSubstr("invalid resource version \"abc\""));
}

TEST(ContinueToken, RoundTripsAndRejectsForeignTokens) {
  const std::string token = EncodeContinueToken(17, "team-a/claim-3");
  absl::StatusOr<ContinuePoint> point = DecodeContinueToken(token);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->resource_version, 17);
  EXPECT_EQ(point->last_key, "team-a/claim-3");
  for (const char* bad : {"!!!", "e30", "eyJ2IjoieCJ9"}) {  // not base64, {}, {"v":"x"}
    absl::StatusOr<ContinuePoint> rejected = DecodeContinueToken(bad);
    ASSERT_FALSE(rejected.ok()) << bad;
    EXPECT_EQ(HttpCode(rejected.status()), 400);
    EXPECT_THAT(std::string(rejected.status().message()), HasSubstr("continue key is not valid"));
  }
}

}  // namespace
}  // namespace kdp::manager::resourceapi
