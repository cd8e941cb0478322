// The discovery documents of the local resource API (APIGroupList, APIGroup, APIResourceList,
// APIVersions, /version), shaped like the API server's, listing what ResourceApiServer serves.
//
// Thread-safety: pure functions; thread-safe.
#ifndef KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_DISCOVERY_H_
#define KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_DISCOVERY_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace kdp::manager::resourceapi {

// The verbs served on the resources clients write, as discovery lists them.
inline constexpr const char* kServedVerbs[] = {
    "create", "delete", "deletecollection", "get", "list", "update", "watch"};

// GET /apis: an APIGroupList with resource.k8s.io and events.k8s.io.
nlohmann::json ApiGroupList();
// GET /apis/resource.k8s.io: the APIGroup, v1 preferred.
nlohmann::json ApiGroup();
// GET /apis/resource.k8s.io/<version>: the APIResourceList (REQUIRES: a served version).
nlohmann::json ApiResourceList(std::string_view version);
// GET /apis/events.k8s.io: the APIGroup (v1 only); GET /apis/events.k8s.io/v1: its
// APIResourceList (events, every verb served, no short name), over the same stored Events as
// the core group's.
nlohmann::json EventsApiGroup();
nlohmann::json EventsApiResourceList();
// GET /api: APIVersions ["v1"]; GET /api/v1: the core APIResourceList (nodes, namespaces, pods,
// events, with the API server's short names; nodes and pods read-only: the manager writes them).
nlohmann::json CoreApiVersions();
nlohmann::json CoreApiResourceList();
// GET /version for `git_version` ("v1.34.0").
nlohmann::json VersionInfo(const std::string& git_version);

}  // namespace kdp::manager::resourceapi

#endif  // KDP_MANAGER_SRC_CONTROLPLANE_RESOURCEAPI_DISCOVERY_H_
