#include "manager/src/controlplane/resourceapi/table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "manager/src/controlplane/resourceapi/api_errors.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/kinds.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;
using Path = std::initializer_list<const char*>;

// One clause of an Accept header as goautoneg.ParseAccept splits it.
struct AcceptClause {
  std::string type = {}, subtype = {};
  double q = 1.0;
  std::map<std::string, std::string> params = {};
};

std::string Strip(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

std::vector<AcceptClause> ParseAccept(std::string_view accept) {
  std::vector<AcceptClause> clauses;
  for (absl::string_view part : absl::StrSplit(std::string(accept), ',')) {
    std::vector<absl::string_view> pieces = absl::StrSplit(absl::StripAsciiWhitespace(part), ';');
    std::vector<absl::string_view> range = absl::StrSplit(pieces[0], '/');
    AcceptClause clause{.type = Strip(range[0])};
    if (range.size() > 2 || (range.size() == 1 && clause.type != "*")) continue;  // as goautoneg
    clause.subtype = range.size() == 2 ? Strip(range[1]) : "*";
    for (size_t i = 1; i < pieces.size(); ++i) {
      if (!absl::StrContains(pieces[i], '=')) continue;
      std::pair<absl::string_view, absl::string_view> kv =
          absl::StrSplit(pieces[i], absl::MaxSplits('=', 1));
      if (Strip(kv.first) != "q") {
        clause.params[Strip(kv.first)] = Strip(kv.second);
      } else if (!absl::SimpleAtod(kv.second, &clause.q) || !std::isfinite(clause.q)) {
        clause.q = 0;  // Go ignores the parse error and keeps 0; NaN would break the sort
      }
    }
    clauses.push_back(std::move(clause));
  }
  // goautoneg's order: higher q first, then concrete types before wildcards. Stable so that
  // equal clauses keep the client's order, which is what kubectl relies on.
  auto key = [](const AcceptClause& c) {
    return std::make_tuple(-c.q, c.type == "*", c.subtype == "*");
  };
  std::stable_sort(clauses.begin(), clauses.end(),
                   [&](const AcceptClause& a, const AcceptClause& b) { return key(a) < key(b); });
  return clauses;
}

// The value at `path` below `j`; null when a step is missing or not an object.
const Json& At(const Json& j, Path path) {
  static const Json* const kNull = new Json(nullptr);
  const Json* cur = &j;
  for (const char* key : path) {
    auto it = cur->is_object() ? cur->find(key) : cur->end();
    if (!cur->is_object() || it == cur->end()) return *kNull;
    cur = &*it;
  }
  return *cur;
}

// The string, integer or boolean at `path`; "", 0 or false when absent or of another type.
std::string Str(const Json& j, Path path) { return At(j, path).is_string() ? At(j, path) : ""; }
int64_t Int(const Json& j, Path path) { return At(j, path).is_number() ? At(j, path) : Json(0); }
bool Bool(const Json& j, Path path) { return At(j, path).is_boolean() && At(j, path).get<bool>(); }

// An array to iterate; empty when absent or not an array.
const Json& Arr(const Json& j, Path path) {
  static const Json* const kEmpty = new Json(Json::array());
  const Json& v = At(j, path);
  return v.is_array() ? v : *kEmpty;
}

// A metav1.Time or MicroTime; nullopt for Go's zero time (absent, null or unparsable).
std::optional<absl::Time> Timestamp(const Json& j, Path path) {
  absl::Time t;
  std::string s = Str(j, path);
  if (s.empty() || !absl::ParseTime(absl::RFC3339_full, s, &t, nullptr)) return std::nullopt;
  return t;
}

// translateTimestampSince: the age of a timestamp, "<unknown>" for the zero time.
std::string Since(const std::optional<absl::Time>& t, absl::Time now) {
  return t.has_value() ? HumanDuration(now - *t) : "<unknown>";
}

std::string Age(const Json& object, absl::Time now) {
  return Since(Timestamp(object, {"metadata", "creationTimestamp"}), now);
}

std::string Name(const Json& object) { return Str(object, {"metadata", "name"}); }
std::string OrNone(std::string s) { return s.empty() ? "<none>" : s; }
bool Deleting(const Json& o) { return !At(o, {"metadata", "deletionTimestamp"}).is_null(); }

// A TableColumnDefinition. Every printed column is a "string" except the default table's
// "Created At" ("date"); format is "name" on the Name column only.
struct Column {
  const char* name;
  int priority;  // 1: shown only by `kubectl get -o wide`
  const char* description;
};

// ObjectMeta's swagger docs for name and creationTimestamp, which most tables reuse.
constexpr char kNameDoc[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
constexpr char kAgeDoc[] =
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
constexpr char kNodeAddressesDoc[] =
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is "
    "declared as mergeable, but the merge key is not sufficiently unique, which can cause data "
    "corruption when it is merged. Callers should instead use a full-replacement patch. See "
    "https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change "
    "during the lifetime of a Node. However, there are some exceptions where this may not be "
    "possible, such as Pods that inherit a Node's address in its own status or consumers of the "
    "downward API (status.hostIP).";

constexpr Column kNameColumn = {"Name", 0, kNameDoc};
constexpr Column kAgeColumn = {"Age", 0, kAgeDoc};

constexpr Column kPodColumns[] = {
    kNameColumn,
    {"Ready", 0, "The aggregate readiness state of this pod for accepting traffic."},
    {"Status", 0, "The aggregate status of the containers in this pod."},
    {"Restarts", 0,
     "The number of times the containers in this pod have been restarted and when the last "
     "container in this pod has restarted."},
    kAgeColumn,
    {"IP", 1,
     "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
     "allocated."},
    {"Node", 1,
     "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate "
     "for scheduling by the scheduler defined in schedulerName. Once this field is set, the "
     "kubelet for this node becomes responsible for the lifecycle of this pod. This field should "
     "not be used to express a desire for the pod to be scheduled on a specific node. "
     "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"},
    {"Nominated Node", 1,
     "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot "
     "be scheduled right away as preemption victims receive their graceful termination periods. "
     "This field does not guarantee that the pod will be scheduled on this node. Scheduler may "
     "decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also "
     "decide to give the resources on this node to a higher priority pod that is created after "
     "preemption. As a result, this field may be different than PodSpec.nodeName when the pod is "
     "scheduled."},
    {"Readiness Gates", 1,
     "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when "
     "all its containers are ready AND all conditions specified in the readiness gates have status "
     "equal to \"True\" More info: "
     "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"}};

constexpr Column kNodeColumns[] = {
    kNameColumn,
    {"Status", 0, "The status of the node"},
    {"Roles", 0, "The roles of the node"},
    kAgeColumn,
    {"Version", 0, "Kubelet Version reported by the node."},
    {"Internal-IP", 1, kNodeAddressesDoc},
    {"External-IP", 1, kNodeAddressesDoc},
    {"OS-Image", 1,
     "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."},
    {"Kernel-Version", 1,
     "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."},
    {"Container-Runtime", 1,
     "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
     "containerd://1.4.2)."}};

constexpr Column kEventColumns[] = {
    {"Last Seen", 0, "The time at which the most recent occurrence of this event was recorded."},
    {"Type", 0, "Type of this event (Normal, Warning), new types could be added in the future"},
    {"Reason", 0,
     "This should be a short, machine understandable string that gives the reason for the "
     "transition into the object's current status."},
    {"Object", 0, "The object that this event is about."},
    {"Subobject", 1,
     "If referring to a piece of an object instead of an entire object, this string should contain "
     "a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For "
     "example, if the object reference is to a container within a pod, this would take on a value "
     "like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that "
     "triggered the event) or if no container name is specified \"spec.containers[2]\" (container "
     "with index 2 in this pod). This syntax is chosen only to have some well-defined way of "
     "referencing a part of an object."},
    {"Source", 1,
     "The component reporting this event. Should be a short machine understandable string."},
    {"Message", 0, "A human-readable description of the status of this operation."},
    {"First Seen", 1,
     "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"},
    {"Count", 1, "The number of times this event has occurred."},
    {"Name", 1, kNameDoc}};

constexpr Column kNamespaceColumns[] = {
    kNameColumn, {"Status", 0, "The status of the namespace"}, kAgeColumn};

constexpr Column kNameAgeColumns[] = {kNameColumn, kAgeColumn};

constexpr Column kResourceClaimColumns[] = {
    kNameColumn,
    {"State", 0, "A summary of the current state (allocated, pending, reserved, etc.)."},
    kAgeColumn};

constexpr Column kResourceSliceColumns[] = {
    kNameColumn,
    {"Node", 0,
     "NodeName identifies the node which provides the resources in this pool. A field selector can "
     "be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be "
     "used to limit access from nodes to ResourceSlices with the same node name. It also indicates "
     "to autoscalers that adding new nodes of the same type as some old node might also make new "
     "resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and "
     "PerDeviceNodeSelection must be set. This field is immutable."},
    {"Driver", 0,
     "Driver identifies the DRA driver providing the capacity information. A field selector can be "
     "used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS "
     "subdomain and should end with a DNS domain owned by the vendor of the driver. This field is "
     "immutable."},
    {"Pool", 0,
     "Name is used to identify the pool. For node-local devices, this is often the node name, but "
     "this is not required.\n\nIt must not be longer than 253 characters and must consist of one "
     "or more DNS sub-domains separated by slashes. This field is immutable."},
    kAgeColumn};

// rest.DefaultTableConvertor's columns, for resources without a printer.
constexpr Column kDefaultColumns[] = {kNameColumn, {"Created At", 0, kAgeDoc}};

// A terminated container's reason, else "Signal:<n>" or "ExitCode:<n>".
std::string TerminatedReason(const Json& terminated) {
  if (std::string why = Str(terminated, {"reason"}); !why.empty()) return why;
  if (int64_t signal = Int(terminated, {"signal"}); signal != 0) {
    return absl::StrCat("Signal:", signal);
  }
  return absl::StrCat("ExitCode:", Int(terminated, {"exitCode"}));
}

// printPod: READY, STATUS and RESTARTS from the container statuses, then the wide columns.
Json PodCells(const Json& pod, absl::Time now) {
  const Json& spec = At(pod, {"spec"});
  const Json& status = At(pod, {"status"});
  const Json& conditions = Arr(status, {"conditions"});
  int64_t total = static_cast<int64_t>(Arr(spec, {"containers"}).size());
  int64_t ready = 0;
  // Restarts (and the latest restart) of all containers, and of the sidecars alone.
  int64_t restarts = 0, sidecar_restarts = 0;
  std::optional<absl::Time> last_restart, last_sidecar_restart;
  auto count_restart = [](const Json& cs, int64_t* count, std::optional<absl::Time>* latest) {
    *count += Int(cs, {"restartCount"});
    std::optional<absl::Time> finished = Timestamp(cs, {"lastState", "terminated", "finishedAt"});
    if (finished.has_value() && (!latest->has_value() || **latest < *finished)) *latest = finished;
  };
  const std::string phase = Str(status, {"phase"});
  std::string reason = Str(status, {"reason"});
  if (reason.empty()) reason = phase;
  std::optional<bool> initialized;  // the first Initialized condition's, as Go reads it
  bool pod_ready = false;
  for (const Json& c : conditions) {
    const std::string type = Str(c, {"type"});
    const bool is_true = Str(c, {"status"}) == "True";
    if (type == "PodScheduled" && Str(c, {"reason"}) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
    if (type == "Initialized" && !initialized.has_value()) initialized = is_true;
    if (type == "Ready" && is_true) pod_ready = true;
  }
  // Sidecars (init containers with restartPolicy Always) count as containers.
  std::set<std::string> sidecars;
  const Json& init_specs = Arr(spec, {"initContainers"});
  for (const Json& c : init_specs) {
    if (Str(c, {"restartPolicy"}) != "Always") continue;
    sidecars.insert(Str(c, {"name"}));
    ++total;
  }
  bool initializing = false;
  const Json& init_statuses = Arr(status, {"initContainerStatuses"});
  for (size_t i = 0; i < init_statuses.size(); ++i) {
    const Json& cs = init_statuses[i];
    const bool sidecar = sidecars.contains(Str(cs, {"name"}));
    count_restart(cs, &restarts, &last_restart);
    if (sidecar) count_restart(cs, &sidecar_restarts, &last_sidecar_restart);
    const Json& terminated = At(cs, {"state", "terminated"});
    const std::string waiting = Str(cs, {"state", "waiting", "reason"});
    if (terminated.is_object() && Int(terminated, {"exitCode"}) == 0) continue;
    if (sidecar && Bool(cs, {"started"})) {
      if (Bool(cs, {"ready"})) ++ready;
      continue;
    }
    // The first init container that has not succeeded decides the status.
    if (terminated.is_object()) {
      reason = "Init:" + TerminatedReason(terminated);
    } else if (!waiting.empty() && waiting != "PodInitializing") {
      reason = "Init:" + waiting;
    } else {
      reason = absl::StrCat("Init:", i, "/", init_specs.size());
    }
    initializing = true;
    break;
  }

  if (!initializing || initialized.value_or(false)) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    const Json& statuses = Arr(status, {"containerStatuses"});
    for (size_t i = statuses.size(); i-- > 0;) {  // the first container's state wins
      const Json& cs = statuses[i];
      count_restart(cs, &restarts, &last_restart);
      const Json& terminated = At(cs, {"state", "terminated"});
      if (std::string why = Str(cs, {"state", "waiting", "reason"}); !why.empty()) {
        reason = why;
      } else if (terminated.is_object()) {
        reason = TerminatedReason(terminated);
      } else if (Bool(cs, {"ready"}) && At(cs, {"state", "running"}).is_object()) {
        has_running = true;
        ++ready;
      }
    }
    // A pod whose first container completed while another still runs is not "Completed".
    if (reason == "Completed" && has_running) reason = pod_ready ? "Running" : "NotReady";
  }
  if (Deleting(pod) && Str(status, {"reason"}) == "NodeLost") {
    reason = "Unknown";
  } else if (Deleting(pod) && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string restarts_cell = absl::StrCat(restarts);
  if (restarts != 0 && last_restart.has_value()) {
    absl::StrAppend(&restarts_cell, " (", Since(last_restart, now), " ago)");
  }
  std::string gates_cell = "<none>";
  if (const Json& gates = Arr(spec, {"readinessGates"}); !gates.empty()) {
    int64_t true_gates = 0;
    for (const Json& gate : gates) {
      auto it = std::find_if(conditions.begin(), conditions.end(), [&](const Json& c) {
        return Str(c, {"type"}) == Str(gate, {"conditionType"});
      });
      if (it != conditions.end() && Str(*it, {"status"}) == "True") ++true_gates;
    }
    gates_cell = absl::StrCat(true_gates, "/", gates.size());
  }
  const Json& ips = Arr(status, {"podIPs"});
  return Json::array({Name(pod), absl::StrCat(ready, "/", total), reason, restarts_cell,
                      Age(pod, now), OrNone(ips.empty() ? "" : Str(ips[0], {"ip"})),
                      OrNone(Str(spec, {"nodeName"})), OrNone(Str(status, {"nominatedNodeName"})),
                      gates_cell});
}

std::string NodeAddress(const Json& node, std::string_view type) {
  for (const Json& a : Arr(node, {"status", "addresses"})) {
    if (Str(a, {"type"}) == type) return Str(a, {"address"});
  }
  return "<none>";
}

Json NodeCells(const Json& node, absl::Time now) {
  // Only the Ready condition is printed; a later duplicate wins, as in printNode's map.
  std::vector<std::string> status;
  for (const Json& c : Arr(node, {"status", "conditions"})) {
    if (Str(c, {"type"}) == "Ready") status = {Str(c, {"status"}) == "True" ? "Ready" : "NotReady"};
  }
  if (status.empty()) status.push_back("Unknown");
  if (Bool(node, {"spec", "unschedulable"})) status.push_back("SchedulingDisabled");

  std::set<std::string> roles;  // sorted, as sets.String.List() returns them
  constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
  const Json& labels = At(node, {"metadata", "labels"});
  for (auto it = labels.is_object() ? labels.begin() : labels.end(); it != labels.end(); ++it) {
    if (it.key().starts_with(kRolePrefix) && it.key().size() > kRolePrefix.size()) {
      roles.insert(it.key().substr(kRolePrefix.size()));
    } else if (it.key() == "kubernetes.io/role" && it->is_string() && *it != "") {
      roles.insert(it->get<std::string>());
    }
  }
  auto known = [](std::string s) { return s.empty() ? std::string("<unknown>") : s; };
  const Json& info = At(node, {"status", "nodeInfo"});
  return Json::array({Name(node), absl::StrJoin(status, ","), OrNone(absl::StrJoin(roles, ",")),
                      Age(node, now), Str(info, {"kubeletVersion"}),
                      NodeAddress(node, "InternalIP"), NodeAddress(node, "ExternalIP"),
                      known(Str(info, {"osImage"})), known(Str(info, {"kernelVersion"})),
                      known(Str(info, {"containerRuntimeVersion"}))});
}

// printEvent (wide) for a core/v1 Event, with the events.k8s.io fields it may also carry.
Json EventCells(const Json& event, absl::Time now) {
  std::optional<absl::Time> first = Timestamp(event, {"firstTimestamp"});
  std::string first_seen = Since(first.has_value() ? first : Timestamp(event, {"eventTime"}), now);
  std::optional<absl::Time> last = Timestamp(event, {"lastTimestamp"});
  std::string last_seen = last.has_value() ? Since(last, now) : first_seen;
  int64_t count = Int(event, {"count"});
  if (At(event, {"series"}).is_object()) {
    last_seen = Since(Timestamp(event, {"series", "lastObservedTime"}), now);
    count = Int(event, {"series", "count"});
  } else if (count == 0) {
    count = 1;  // singleton events of the new API carry no count
  }
  std::string target = absl::AsciiStrToLower(Str(event, {"involvedObject", "kind"}));
  if (std::string name = Str(event, {"involvedObject", "name"}); !name.empty()) {
    absl::StrAppend(&target, "/", name);
  }
  std::string component = Str(event, {"source", "component"});
  if (component.empty()) component = Str(event, {"reportingComponent"});
  std::string instance = Str(event, {"source", "host"});
  if (instance.empty()) instance = Str(event, {"reportingInstance"});
  return Json::array({last_seen, Str(event, {"type"}), Str(event, {"reason"}), target,
                      Str(event, {"involvedObject", "fieldPath"}),
                      instance.empty() ? component : absl::StrCat(component, ", ", instance),
                      std::string(absl::StripAsciiWhitespace(Str(event, {"message"}))), first_seen,
                      count, Name(event)});
}

// resourceClaimState: "pending", "allocated", "allocated,reserved", "deleted", ...
Json ResourceClaimCells(const Json& claim, absl::Time now) {
  std::vector<std::string> states;
  if (Deleting(claim)) states.push_back("deleted");
  if (!At(claim, {"status", "allocation"}).is_null()) {
    states.push_back("allocated");
    if (!Arr(claim, {"status", "reservedFor"}).empty()) states.push_back("reserved");
  } else if (!Deleting(claim)) {
    states.push_back("pending");
  }
  return Json::array({Name(claim), absl::StrJoin(states, ","), Age(claim, now)});
}

// The default convertor's "Created At": RFC 3339 in UTC, Go's zero time when unset.
Json DefaultCells(const Json& object, absl::Time) {
  std::optional<absl::Time> created = Timestamp(object, {"metadata", "creationTimestamp"});
  if (!created.has_value()) return Json::array({Name(object), "0001-01-01T00:00:00Z"});
  return Json::array(
      {Name(object), absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", *created, absl::UTCTimeZone())});
}

struct Printer {
  std::span<const Column> columns;
  Json (*cells)(const Json& object, absl::Time now);
};

Printer PrinterFor(std::string_view resource) {
  if (resource == "pods") return {kPodColumns, PodCells};
  if (resource == "nodes") return {kNodeColumns, NodeCells};
  if (resource == "events") return {kEventColumns, EventCells};
  if (resource == "events.events.k8s.io") {
    // The API server prints the internal (core) Event whichever group was asked.
    return {kEventColumns, [](const Json& o, absl::Time now) {
              return EventCells(ToV1(Kind::kEvent, kEventsV1, o), now);
            }};
  }
  if (resource == "resourceclaims") return {kResourceClaimColumns, ResourceClaimCells};
  if (resource == "namespaces") {
    return {kNamespaceColumns, [](const Json& o, absl::Time now) {
              return Json::array({Name(o), Str(o, {"status", "phase"}), Age(o, now)});
            }};
  }
  if (resource == "resourceslices") {
    return {kResourceSliceColumns, [](const Json& o, absl::Time now) {
              return Json::array({Name(o), Str(o, {"spec", "nodeName"}), Str(o, {"spec", "driver"}),
                                  Str(o, {"spec", "pool", "name"}), Age(o, now)});
            }};
  }
  if (resource == "deviceclasses" || resource == "resourceclaimtemplates") {
    return {kNameAgeColumns, [](const Json& o, absl::Time now) {
              return Json::array({Name(o), Age(o, now)});
            }};
  }
  return {kDefaultColumns, DefaultCells};
}

// "<a><ua>", or "<a><ua><b><ub>" when b is not zero: HumanDuration's two-unit forms.
std::string Units(int64_t a, const char* ua, int64_t b, const char* ub) {
  return b == 0 ? absl::StrCat(a, ua) : absl::StrCat(a, ua, b, ub);
}

}  // namespace

std::optional<std::string> TableVersionFromAccept(std::string_view accept) {
  for (const AcceptClause& clause : ParseAccept(accept)) {
    // Only JSON is written here, so only clauses JSON satisfies can be answered.
    const bool json =
        (clause.type == "application" && (clause.subtype == "json" || clause.subtype == "*")) ||
        (clause.type == "*" && clause.subtype == "*");
    if (!json) continue;
    // acceptMediaTypeOptions: a stream other than watch, or a server version other than v1,
    // makes the clause unacceptable; unknown parameters are ignored.
    auto param = [&](const char* key) {
      auto it = clause.params.find(key);
      return it == clause.params.end() ? std::string() : it->second;
    };
    if (!param("stream").empty() && param("stream") != "watch") continue;
    if (!param("sv").empty() && param("sv") != "v1") continue;
    const std::string as = param("as"), g = param("g"), v = param("v");
    if (!clause.params.contains("as") && !clause.params.contains("g") &&
        !clause.params.contains("v")) {
      return std::nullopt;  // the plain object wins
    }
    if (as == "Table" && g == kTableGroup && (v == "v1" || v == "v1beta1")) return v;
  }
  return std::nullopt;
}

absl::StatusOr<TableOptions::IncludeObject> ParseIncludeObject(std::string_view value) {
  if (value.empty() || value == "Metadata") return TableOptions::IncludeObject::kMetadata;
  if (value == "None") return TableOptions::IncludeObject::kNone;
  if (value == "Object") return TableOptions::IncludeObject::kObject;
  // ValidateTableOptions, reported by optionsForTransform as a BadRequest.
  FieldError error =
      Invalid("includeObject", value, "must be 'Metadata', 'Object', 'None', or empty");
  return BadRequestError(
      absl::StrCat("Unable to convert to Table as requested: ", error.ToString()));
}

nlohmann::json ToTable(std::string_view resource, const std::vector<nlohmann::json>& objects,
                       const nlohmann::json& list_metadata, std::string_view table_version,
                       const TableOptions& options) {
  const Printer printer = PrinterFor(resource);
  const std::string api_version = absl::StrCat(kTableGroup, "/", std::string(table_version));
  Json metadata = Json::object();  // ListMeta, whose fields are all omitempty
  for (const char* key : {"resourceVersion", "continue", "remainingItemCount"}) {
    const Json& v = At(list_metadata, {key});
    if ((v.is_string() && v != "") || v.is_number()) metadata[key] = v;
  }
  Json columns = nullptr;  // Go's nil slice
  if (!options.no_headers) {
    columns = Json::array();
    for (const Column& c : printer.columns) {
      const std::string_view name = c.name;
      columns.push_back({{"name", name},
                         {"type", name == "Created At" ? "date" : "string"},
                         {"format", name == "Name" ? "name" : ""},
                         {"description", c.description},
                         {"priority", c.priority}});
    }
  }
  Json rows = Json::array();
  for (const Json& object : objects) {
    Json row = {{"cells", printer.cells(object, options.now)}};
    // printPod marks finished pods' rows.
    if (const std::string phase = Str(object, {"status", "phase"});
        resource == "pods" && (phase == "Succeeded" || phase == "Failed")) {
      row["conditions"] =
          Json::array({{{"type", "Completed"},
                        {"status", "True"},
                        {"reason", phase},
                        {"message", phase == "Failed" ? "The pod failed."
                                                      : "The pod has completed successfully."}}});
    }
    if (options.include_object == TableOptions::IncludeObject::kObject) {
      row["object"] = object;
    } else if (options.include_object == TableOptions::IncludeObject::kMetadata) {
      const Json& meta = At(object, {"metadata"});  // meta.AsPartialObjectMetadata
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", api_version},
                       {"metadata", meta.is_object() ? meta : Json::object()}};
    }
    rows.push_back(std::move(row));
  }
  return {{"kind", "Table"},
          {"apiVersion", api_version},
          {"metadata", std::move(metadata)},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

std::string HumanDuration(absl::Duration d) {
  // Go truncates toward zero (int(d.Seconds())), as ToInt64Seconds does. Up to a second in the
  // future still reads as now, to tolerate clock skew between machines.
  const int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return absl::StrCat(seconds, "s");
  const int64_t minutes = absl::ToInt64Minutes(d);
  if (minutes < 10) return Units(minutes, "m", seconds % 60, "s");
  if (minutes < 60 * 3) return absl::StrCat(minutes, "m");
  const int64_t hours = absl::ToInt64Hours(d);
  if (hours < 8) return Units(hours, "h", minutes % 60, "m");
  if (hours < 48) return absl::StrCat(hours, "h");
  if (hours < 24 * 8) return Units(hours / 24, "d", hours % 24, "h");
  if (hours < 24 * 365 * 2) return absl::StrCat(hours / 24, "d");
  if (hours < 24 * 365 * 8) return Units(hours / 24 / 365, "y", (hours / 24) % 365, "d");
  return absl::StrCat(hours / 24 / 365, "y");
}

}  // namespace kdp::manager::resourceapi
