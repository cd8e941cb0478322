#include "manager/src/controlplane/resourceapi/table.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"

namespace kdp::manager::resourceapi {
namespace {

using ::testing::ElementsAre;
using Json = nlohmann::json;

// kubectl get's Accept header, verbatim.
constexpr char kKubectlAccept[] =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s."
    "io,application/json";

// 2024-05-01T12:00:00Z, the "now" every age below is measured from.
const absl::Time kNow = absl::FromUnixSeconds(1714564800);

std::string Ago(absl::Duration d) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", kNow - d, absl::UTCTimeZone());
}

TableOptions Options() { return TableOptions{.now = kNow}; }

Json Meta(const std::string& name, absl::Duration age) {
  return {{"name", name}, {"uid", "uid-" + name}, {"creationTimestamp", Ago(age)}};
}

// The one row of a single-object table.
Json OnlyRow(std::string_view resource, const Json& object,
             const TableOptions& options = Options()) {
  Json table = ToTable(resource, {object}, Json::object(), "v1", options);
  EXPECT_EQ(table["rows"].size(), 1u);
  return table["rows"][0];
}

std::vector<std::string> ColumnNames(const Json& table) {
  std::vector<std::string> names;
  for (const Json& c : table["columnDefinitions"]) names.push_back(c["name"]);
  return names;
}

std::vector<int> Priorities(const Json& table) {
  std::vector<int> priorities;
  for (const Json& c : table["columnDefinitions"]) priorities.push_back(c["priority"]);
  return priorities;
}

// ---- Accept negotiation ----

TEST(Table, KubectlAcceptHeaderPicksV1) { EXPECT_EQ(TableVersionFromAccept(kKubectlAccept), "v1"); }

TEST(Table, PlainJsonOrNoHeaderIsNotATable) {
  EXPECT_EQ(TableVersionFromAccept("application/json"), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept(""), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("*/*"), std::nullopt);
  // The first acceptable clause wins: plain JSON before the Table means no Table.
  EXPECT_EQ(
      TableVersionFromAccept("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"),
      std::nullopt);
}

TEST(Table, V1beta1TableIsHonoured) {
  EXPECT_EQ(TableVersionFromAccept("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), "v1beta1");
  EXPECT_EQ(TableVersionFromAccept(" application/json ; as=Table ; g=meta.k8s.io ; v=v1beta1 "),
            "v1beta1");
}

TEST(Table, AcceptQualityOrdersClauses) {
  EXPECT_EQ(TableVersionFromAccept(
                "application/json;q=0.5,application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            "v1beta1");
  EXPECT_EQ(TableVersionFromAccept(
                "application/json;as=Table;v=v1;g=meta.k8s.io;q=0.1,application/json;q=0.9"),
            std::nullopt);
  // Wildcards sort after concrete types of the same quality.
  EXPECT_EQ(TableVersionFromAccept("*/*,application/json;as=Table;v=v1;g=meta.k8s.io"), "v1");
}

TEST(Table, UnservableClausesAreSkipped) {
  // Another transform, another group or version, and a Table in protobuf or YAML cannot be
  // answered, so the next clause decides.
  EXPECT_EQ(TableVersionFromAccept("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,"
                                   "application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            "v1beta1");
  EXPECT_EQ(
      TableVersionFromAccept("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"),
      std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("application/yaml;as=Table;v=v1;g=meta.k8s.io"), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("application/json;as=Table;v=v2;g=meta.k8s.io"), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("application/json;as=Table;v=v1"), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("application/json;as=Table;v=v1;g=example.com"), std::nullopt);
  EXPECT_EQ(TableVersionFromAccept("*/*;as=Table;v=v1;g=meta.k8s.io"), "v1");
}

// ---- HumanDuration ----

TEST(Table, HumanDurationBoundaries) {
  const absl::Duration kDay = absl::Hours(24);
  const absl::Duration kYear = 365 * kDay;
  const absl::Duration ms = absl::Milliseconds(1);
  EXPECT_EQ(HumanDuration(absl::Seconds(-2)), "<invalid>");
  EXPECT_EQ(HumanDuration(absl::Seconds(-2) + absl::Nanoseconds(1)), "0s");
  EXPECT_EQ(HumanDuration(absl::ZeroDuration()), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(1) - ms), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(5)), "5s");
  EXPECT_EQ(HumanDuration(absl::Minutes(2) - ms), "119s");
  EXPECT_EQ(HumanDuration(absl::Minutes(2)), "2m");
  EXPECT_EQ(HumanDuration(absl::Minutes(2) + absl::Seconds(3)), "2m3s");
  EXPECT_EQ(HumanDuration(absl::Minutes(10) - ms), "9m59s");
  EXPECT_EQ(HumanDuration(absl::Minutes(10) + absl::Seconds(1)), "10m");
  EXPECT_EQ(HumanDuration(absl::Hours(3) - ms), "179m");
  EXPECT_EQ(HumanDuration(absl::Hours(3)), "3h");
  EXPECT_EQ(HumanDuration(absl::Hours(3) + absl::Minutes(1)), "3h1m");
  EXPECT_EQ(HumanDuration(absl::Hours(8) - ms), "7h59m");
  EXPECT_EQ(HumanDuration(absl::Hours(8) + absl::Minutes(59)), "8h");
  EXPECT_EQ(HumanDuration(2 * kDay - ms), "47h");
  EXPECT_EQ(HumanDuration(2 * kDay), "2d");
  EXPECT_EQ(HumanDuration(2 * kDay + absl::Hours(3)), "2d3h");
  EXPECT_EQ(HumanDuration(8 * kDay - ms), "7d23h");
  EXPECT_EQ(HumanDuration(8 * kDay + absl::Hours(23)), "8d");
  EXPECT_EQ(HumanDuration(2 * kYear - ms), "729d");
  EXPECT_EQ(HumanDuration(2 * kYear + kDay), "2y1d");
  EXPECT_EQ(HumanDuration(8 * kYear - ms), "7y364d");
  EXPECT_EQ(HumanDuration(8 * kYear + 364 * kDay), "8y");
}

// ---- Table shape and includeObject ----

TEST(Table, ShapeCopiesListMetadataAndDefinesColumns) {
  Json list_meta = {{"resourceVersion", "42"},
                    {"continue", "tok"},
                    {"remainingItemCount", 3},
                    {"selfLink", "/ignored"}};
  Json table = ToTable("deviceclasses", {}, list_meta, "v1", Options());
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"],
            Json({{"resourceVersion", "42"}, {"continue", "tok"}, {"remainingItemCount", 3}}));
  EXPECT_EQ(table["rows"], Json::array());
  ASSERT_EQ(table["columnDefinitions"].size(), 2u);
  const Json& name = table["columnDefinitions"][0];
  EXPECT_EQ(name["name"], "Name");
  EXPECT_EQ(name["type"], "string");
  EXPECT_EQ(name["format"], "name");
  EXPECT_EQ(name["priority"], 0);
  EXPECT_THAT(name["description"].get<std::string>(),
              ::testing::StartsWith("Name must be unique within a namespace."));
  const Json& age = table["columnDefinitions"][1];
  EXPECT_EQ(age["name"], "Age");
  EXPECT_EQ(age["format"], "");  // present and empty, as the API server writes it
  EXPECT_THAT(age["description"].get<std::string>(),
              ::testing::StartsWith("CreationTimestamp is a timestamp"));

  EXPECT_EQ(ToTable("deviceclasses", {}, Json::object(), "v1beta1", Options())["apiVersion"],
            "meta.k8s.io/v1beta1");
  EXPECT_EQ(ToTable("deviceclasses", {}, Json::object(), "v1", Options())["metadata"],
            Json::object());
}

TEST(Table, NoHeadersLeavesOutColumnDefinitions) {
  TableOptions options = Options();
  options.no_headers = true;
  Json table = ToTable("nodes", {}, Json::object(), "v1", options);
  ASSERT_TRUE(table.contains("columnDefinitions"));
  EXPECT_TRUE(table["columnDefinitions"].is_null());
}

TEST(Table, IncludeObjectModes) {
  Json klass = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "DeviceClass"},
                {"metadata", Meta("gpu.example.com", absl::Hours(4))},
                {"spec", {{"selectors", Json::array()}}}};
  Json row = OnlyRow("deviceclasses", klass);
  EXPECT_EQ(row["cells"], Json({"gpu.example.com", "4h"}));
  EXPECT_EQ(row["object"], Json({{"kind", "PartialObjectMetadata"},
                                 {"apiVersion", "meta.k8s.io/v1"},
                                 {"metadata", klass["metadata"]}}));

  Json beta = ToTable("deviceclasses", {klass}, Json::object(), "v1beta1", Options());
  EXPECT_EQ(beta["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

  TableOptions none = Options();
  none.include_object = TableOptions::IncludeObject::kNone;
  EXPECT_FALSE(OnlyRow("deviceclasses", klass, none).contains("object"));

  TableOptions whole = Options();
  whole.include_object = TableOptions::IncludeObject::kObject;
  EXPECT_EQ(OnlyRow("deviceclasses", klass, whole)["object"], klass);
}

TEST(Table, ParseIncludeObject) {
  EXPECT_EQ(*ParseIncludeObject(""), TableOptions::IncludeObject::kMetadata);
  EXPECT_EQ(*ParseIncludeObject("Metadata"), TableOptions::IncludeObject::kMetadata);
  EXPECT_EQ(*ParseIncludeObject("None"), TableOptions::IncludeObject::kNone);
  EXPECT_EQ(*ParseIncludeObject("Object"), TableOptions::IncludeObject::kObject);

  absl::StatusOr<TableOptions::IncludeObject> bad = ParseIncludeObject("object");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpCode(bad.status()), 400);
  EXPECT_EQ(Reason(bad.status()), "BadRequest");
  EXPECT_EQ(ToStatusObject(bad.status())["message"],
            "Unable to convert to Table as requested: includeObject: Invalid value: \"object\": "
            "must be 'Metadata', 'Object', 'None', or empty");
}

// ---- Nodes ----

Json Node(const std::string& name, const std::string& ready) {
  Json node = {
      {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", Meta(name, 5 * absl::Hours(24))}};
  node["status"] = {
      {"conditions",
       {{{"type", "MemoryPressure"}, {"status", "False"}}, {{"type", "Ready"}, {"status", ready}}}},
      {"addresses",
       {{{"type", "Hostname"}, {"address", name}},
        {{"type", "InternalIP"}, {"address", "10.0.0.5"}}}},
      {"nodeInfo",
       {{"kubeletVersion", "v1.34.0"},
        {"osImage", "Debian GNU/Linux 12 (bookworm)"},
        {"kernelVersion", "6.1.0-18-amd64"},
        {"containerRuntimeVersion", "containerd://1.7.13"}}}};
  return node;
}

TEST(Table, NodeColumns) {
  Json table = ToTable("nodes", {}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                          "OS-Image", "Kernel-Version", "Container-Runtime"));
  EXPECT_THAT(Priorities(table), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1, 1));
  EXPECT_EQ(table["columnDefinitions"][4]["description"], "Kubelet Version reported by the node.");
}

TEST(Table, ReadyNodeWithRoleLabel) {
  Json node = Node("node-1", "True");
  node["metadata"]["labels"] = {{"kubernetes.io/hostname", "node-1"},
                                {"node-role.kubernetes.io/control-plane", ""}};
  EXPECT_EQ(OnlyRow("nodes", node)["cells"],
            Json({"node-1", "Ready", "control-plane", "5d", "v1.34.0", "10.0.0.5", "<none>",
                  "Debian GNU/Linux 12 (bookworm)", "6.1.0-18-amd64", "containerd://1.7.13"}));

  // Roles come from both label forms, sorted and deduplicated; an empty role is no role.
  node["metadata"]["labels"] = {{"node-role.kubernetes.io/worker", "true"},
                                {"node-role.kubernetes.io/", "x"},
                                {"kubernetes.io/role", "master"},
                                {"node-role.kubernetes.io/master", ""}};
  EXPECT_EQ(OnlyRow("nodes", node)["cells"][2], "master,worker");
}

TEST(Table, NotReadyUnknownAndCordonedNodes) {
  Json node = Node("node-2", "False");
  EXPECT_EQ(OnlyRow("nodes", node)["cells"][1], "NotReady");
  EXPECT_EQ(OnlyRow("nodes", node)["cells"][2], "<none>");
  node["spec"]["unschedulable"] = true;
  EXPECT_EQ(OnlyRow("nodes", node)["cells"][1], "NotReady,SchedulingDisabled");
  node["status"]["conditions"][1]["status"] = "Unknown";
  EXPECT_EQ(OnlyRow("nodes", node)["cells"][1], "NotReady,SchedulingDisabled");

  // No Ready condition, no node info: Unknown, an empty version, <unknown> for the wide ones.
  Json bare = {{"metadata", Meta("node-3", absl::Seconds(30))}};
  EXPECT_EQ(OnlyRow("nodes", bare)["cells"],
            Json({"node-3", "Unknown", "<none>", "30s", "", "<none>", "<none>", "<unknown>",
                  "<unknown>", "<unknown>"}));
}

// ---- DRA kinds ----

Json Claim(const std::string& name) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", Meta(name, absl::Minutes(3))},
          {"spec", {{"devices", {{"requests", Json::array()}}}}}};
}

TEST(Table, ResourceClaimStates) {
  Json table = ToTable("resourceclaims", {}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "State", "Age"));

  Json claim = Claim("gpu-claim");
  EXPECT_EQ(OnlyRow("resourceclaims", claim)["cells"], Json({"gpu-claim", "pending", "3m"}));

  claim["status"]["allocation"] = {{"devices", {{"results", Json::array()}}}};
  EXPECT_EQ(OnlyRow("resourceclaims", claim)["cells"][1], "allocated");

  claim["status"]["reservedFor"] = {{{"resource", "pods"}, {"name", "web-0"}, {"uid", "u1"}}};
  EXPECT_EQ(OnlyRow("resourceclaims", claim)["cells"][1], "allocated,reserved");

  claim["metadata"]["deletionTimestamp"] = Ago(absl::Seconds(1));
  EXPECT_EQ(OnlyRow("resourceclaims", claim)["cells"][1], "deleted,allocated,reserved");

  Json deleted = Claim("gone");
  deleted["metadata"]["deletionTimestamp"] = Ago(absl::Seconds(1));
  EXPECT_EQ(OnlyRow("resourceclaims", deleted)["cells"][1], "deleted");
}

TEST(Table, ResourceSliceTemplateAndClassColumns) {
  Json slice = {{"metadata", Meta("node-1-gpu.example.com-abcde", absl::Seconds(90))},
                {"spec",
                 {{"driver", "gpu.example.com"},
                  {"nodeName", "node-1"},
                  {"pool", {{"name", "node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
  Json table = ToTable("resourceslices", {slice}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Node", "Driver", "Pool", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"],
            Json({"node-1-gpu.example.com-abcde", "node-1", "gpu.example.com", "node-1", "90s"}));

  // A network-attached pool has no node name: the cell is empty, not <none>.
  slice["spec"].erase("nodeName");
  slice["spec"]["allNodes"] = true;
  EXPECT_EQ(OnlyRow("resourceslices", slice)["cells"][1], "");

  Json tmpl = {{"metadata", Meta("gpu-template", absl::Hours(30))}};
  table = ToTable("resourceclaimtemplates", {tmpl}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], Json({"gpu-template", "30h"}));
  EXPECT_THAT(ColumnNames(ToTable("deviceclasses", {}, Json::object(), "v1", Options())),
              ElementsAre("Name", "Age"));
}

TEST(Table, NamespaceRow) {
  Json ns = {{"metadata", Meta("default", absl::Hours(24 * 3 + 5))},
             {"status", {{"phase", "Active"}}}};
  Json table = ToTable("namespaces", {ns}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Status", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], Json({"default", "Active", "3d5h"}));
}

TEST(Table, UnknownResourceGetsTheDefaultTable) {
  Json lease = {{"metadata", Meta("lease-1", absl::Hours(1))}};
  Json table = ToTable("leases", {lease}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Created At"));
  EXPECT_EQ(table["columnDefinitions"][1]["type"], "date");
  EXPECT_EQ(table["columnDefinitions"][1]["format"], "");
  EXPECT_EQ(table["rows"][0]["cells"], Json({"lease-1", "2024-05-01T11:00:00Z"}));
  // A missing creation timestamp prints as Go's zero time; a missing one in AGE is <unknown>.
  EXPECT_EQ(OnlyRow("leases", Json({{"metadata", {{"name", "x"}}}}))["cells"][1],
            "0001-01-01T00:00:00Z");
  EXPECT_EQ(OnlyRow("deviceclasses", Json({{"metadata", {{"name", "x"}}}}))["cells"][1],
            "<unknown>");
}

// ---- Pods ----

Json RunningPod() {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", Meta("web-0", absl::Minutes(7))},
      {"spec", {{"nodeName", "node-1"}, {"containers", {{{"name", "app"}}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {{{"type", "Initialized"}, {"status", "True"}}, {{"type", "Ready"}, {"status", "True"}}}},
        {"podIPs", {{{"ip", "10.244.0.7"}}}},
        {"containerStatuses",
         {{{"name", "app"},
           {"ready", true},
           {"restartCount", 0},
           {"state", {{"running", {{"startedAt", Ago(absl::Minutes(6))}}}}}}}}}}};
}

TEST(Table, PodColumns) {
  Json table = ToTable("pods", {}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Ready", "Status", "Restarts", "Age", "IP",
                                              "Node", "Nominated Node", "Readiness Gates"));
  EXPECT_THAT(Priorities(table), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1));
  // RESTARTS is a string column: "3 (5m ago)" is not a number.
  EXPECT_EQ(table["columnDefinitions"][3]["type"], "string");
}

TEST(Table, RunningPod) {
  Json row = OnlyRow("pods", RunningPod());
  EXPECT_EQ(row["cells"], Json({"web-0", "1/1", "Running", "0", "7m", "10.244.0.7", "node-1",
                                "<none>", "<none>"}));
  EXPECT_FALSE(row.contains("conditions"));
}

TEST(Table, FailedPodWithReason) {
  Json pod = RunningPod();
  pod["status"] = {{"phase", "Failed"},
                   {"reason", "Evicted"},
                   {"message", "The node was low on resource: memory."}};
  Json row = OnlyRow("pods", pod);
  EXPECT_EQ(row["cells"],
            Json({"web-0", "0/1", "Evicted", "0", "7m", "<none>", "node-1", "<none>", "<none>"}));
  EXPECT_EQ(row["conditions"], Json::array({{{"type", "Completed"},
                                             {"status", "True"},
                                             {"reason", "Failed"},
                                             {"message", "The pod failed."}}}));
}

TEST(Table, PodStatusFromContainerStates) {
  Json pod = RunningPod();
  Json& cs = pod["status"]["containerStatuses"][0];
  cs["ready"] = false;
  cs["restartCount"] = 3;
  cs["state"] = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
  cs["lastState"] = {
      {"terminated",
       {{"exitCode", 1}, {"reason", "Error"}, {"finishedAt", Ago(absl::Minutes(5))}}}};
  Json cells = OnlyRow("pods", pod)["cells"];
  EXPECT_EQ(cells[1], "0/1");
  EXPECT_EQ(cells[2], "CrashLoopBackOff");
  EXPECT_EQ(cells[3], "3 (5m ago)");

  cs["state"] = {{"terminated", {{"exitCode", 137}, {"signal", 9}}}};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "Signal:9");
  cs["state"] = {{"terminated", {{"exitCode", 2}}}};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "ExitCode:2");
}

TEST(Table, PodInitAndTerminating) {
  Json pod = RunningPod();
  pod["spec"]["initContainers"] = {{{"name", "setup"}}};
  pod["status"]["phase"] = "Pending";
  pod["status"]["conditions"][0]["status"] = "False";
  pod["status"]["initContainerStatuses"] = {
      {{"name", "setup"}, {"restartCount", 0}, {"state", {{"running", Json::object()}}}}};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "Init:0/1");
  pod["status"]["initContainerStatuses"][0]["state"] = {
      {"waiting", {{"reason", "ImagePullBackOff"}}}};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "Init:ImagePullBackOff");
  pod["status"]["initContainerStatuses"][0]["state"] = {
      {"terminated", {{"exitCode", 1}, {"reason", "Error"}}}};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "Init:Error");

  Json terminating = RunningPod();
  terminating["metadata"]["deletionTimestamp"] = Ago(absl::Seconds(-30));
  EXPECT_EQ(OnlyRow("pods", terminating)["cells"][2], "Terminating");
  terminating["status"]["reason"] = "NodeLost";
  EXPECT_EQ(OnlyRow("pods", terminating)["cells"][2], "Unknown");
}

TEST(Table, CompletedContainerBesideARunningOne) {
  // Statuses are read last to first, so the first container's state is the one shown; its
  // "Completed" turns into Running while another container still runs ready (NotReady when the
  // pod lacks the Ready condition).
  Json pod = RunningPod();
  pod["spec"]["containers"] = {{{"name", "init-like"}}, {{"name", "app"}}};
  Json running = pod["status"]["containerStatuses"][0];
  Json completed = {{"name", "init-like"},
                    {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}};
  pod["status"]["containerStatuses"] = {completed, running};
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][1], "1/2");
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "Running");
  pod["status"]["conditions"][1]["status"] = "False";
  EXPECT_EQ(OnlyRow("pods", pod)["cells"][2], "NotReady");
  // Once every container has completed the pod shows Completed, and its row is marked.
  pod["status"] = {{"phase", "Succeeded"}, {"containerStatuses", {completed, completed}}};
  Json row = OnlyRow("pods", pod);
  EXPECT_EQ(row["cells"][1], "0/2");
  EXPECT_EQ(row["cells"][2], "Completed");
  EXPECT_EQ(row["conditions"][0]["reason"], "Succeeded");
  EXPECT_EQ(row["conditions"][0]["message"], "The pod has completed successfully.");
}

TEST(Table, PodReadinessGatesAndNominatedNode) {
  Json pod = RunningPod();
  pod["spec"]["readinessGates"] = {{{"conditionType", "example.com/lb"}},
                                   {{"conditionType", "example.com/dns"}}};
  pod["status"]["conditions"].push_back({{"type", "example.com/lb"}, {"status", "True"}});
  pod["status"]["nominatedNodeName"] = "node-2";
  Json cells = OnlyRow("pods", pod)["cells"];
  EXPECT_EQ(cells[7], "node-2");
  EXPECT_EQ(cells[8], "1/2");
}

// ---- Events ----

TEST(Table, EventColumnsAndRow) {
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", Meta("web-0.17c1", absl::Minutes(20))},
                {"involvedObject",
                 {{"kind", "Pod"}, {"name", "web-0"}, {"fieldPath", "spec.containers{app}"}}},
                {"reason", "BackOff"},
                {"message", "Back-off restarting failed container\n"},
                {"type", "Warning"},
                {"source", {{"component", "kubelet"}, {"host", "node-1"}}},
                {"firstTimestamp", Ago(absl::Minutes(20))},
                {"lastTimestamp", Ago(absl::Seconds(40))},
                {"count", 12}};
  Json table = ToTable("events", {event}, Json::object(), "v1", Options());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Last Seen", "Type", "Reason", "Object", "Subobject",
                                              "Source", "Message", "First Seen", "Count", "Name"));
  EXPECT_THAT(Priorities(table), ElementsAre(0, 0, 0, 0, 1, 1, 0, 1, 1, 1));
  EXPECT_EQ(table["columnDefinitions"][9]["format"], "name");
  EXPECT_EQ(
      table["rows"][0]["cells"],
      Json({"40s", "Warning", "BackOff", "pod/web-0", "spec.containers{app}", "kubelet, node-1",
            "Back-off restarting failed container", "20m", 12, "web-0.17c1"}));
}

TEST(Table, EventFromTheNewEventsApi) {
  // Written through events.k8s.io: eventTime, reporting fields and a series, no count.
  Json event = {{"metadata", Meta("claim.1", absl::Minutes(4))},
                {"involvedObject", {{"kind", "ResourceClaim"}, {"name", "gpu-claim"}}},
                {"reason", "Allocated"},
                {"type", "Normal"},
                {"eventTime", "2024-05-01T11:55:59.500000Z"},  // 4m0.5s before kNow
                {"reportingComponent", "kdp-manager"},
                {"reportingInstance", "node-1"}};
  Json cells = OnlyRow("events", event)["cells"];
  EXPECT_EQ(cells[0], "4m");  // no lastTimestamp: the first-seen age
  EXPECT_EQ(cells[3], "resourceclaim/gpu-claim");
  EXPECT_EQ(cells[5], "kdp-manager, node-1");
  EXPECT_EQ(cells[7], "4m");
  EXPECT_EQ(cells[8], 1);

  event["series"] = {{"count", 5}, {"lastObservedTime", Ago(absl::Seconds(10))}};
  cells = OnlyRow("events", event)["cells"];
  EXPECT_EQ(cells[0], "10s");
  EXPECT_EQ(cells[8], 5);

  Json kind_only = {{"involvedObject", {{"kind", "Node"}}}};
  cells = OnlyRow("events", kind_only)["cells"];
  EXPECT_EQ(cells[0], "<unknown>");
  EXPECT_EQ(cells[3], "node");
  EXPECT_EQ(cells[5], "");
}

}  // namespace
}  // namespace kdp::manager::resourceapi
