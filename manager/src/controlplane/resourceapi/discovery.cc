#include "manager/src/controlplane/resourceapi/discovery.h"

#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/types.h"

namespace kdp::manager::resourceapi {
namespace {

using Json = nlohmann::json;

Json GroupVersion(std::string_view version) {
  return {{"groupVersion", std::string(kGroup) + "/" + std::string(version)}, {"version", version}};
}

Json Verbs(Kind kind) {
  // The manager writes the Node and the Pods; clients read and watch them.
  if (kind == Kind::kNode || kind == Kind::kPod) return Json::array({"get", "list", "watch"});
  Json verbs = Json::array();
  for (const char* verb : kServedVerbs) verbs.push_back(verb);
  return verbs;
}

// The APIResourceList entries of `info` (and of its status subresource).
void AddResource(const KindInfo& info, Json* resources) {
  Json short_names = Json::array();
  Json categories = Json::array();
  switch (info.kind) {
    case Kind::kNode:
      short_names.push_back("no");
      break;
    case Kind::kNamespace:
      short_names.push_back("ns");
      break;
    case Kind::kPod:
      short_names.push_back("po");
      categories.push_back("all");
      break;
    case Kind::kEvent:
      // events.k8s.io's Event has no short name: `ev` is the core one's alone.
      if (*info.group == '\0') short_names.push_back("ev");
      break;
    default:
      break;
  }
  Json entry = {{"name", info.resource},
                {"singularName", info.singular},
                {"namespaced", info.namespaced},
                {"kind", info.name},
                {"verbs", Verbs(info.kind)}};
  if (!short_names.empty()) entry["shortNames"] = std::move(short_names);
  if (!categories.empty()) entry["categories"] = std::move(categories);
  resources->push_back(std::move(entry));
  if (info.has_status) {
    const bool read_only = info.kind == Kind::kNode || info.kind == Kind::kPod;
    resources->push_back(
        {{"name", std::string(info.resource) + "/status"},
         {"singularName", ""},
         {"namespaced", info.namespaced},
         {"kind", info.name},
         {"verbs", read_only ? Json::array({"get"}) : Json::array({"get", "update"})}});
  }
}

}  // namespace

nlohmann::json ApiGroup() {
  return {{"kind", "APIGroup"},
          {"apiVersion", "v1"},
          {"name", kGroup},
          {"versions", Json::array({GroupVersion(kVersionV1), GroupVersion(kVersionV1beta1)})},
          {"preferredVersion", GroupVersion(kVersionV1)}};
}

nlohmann::json EventsApiGroup() {
  const Json v1 = {{"groupVersion", kEventsV1}, {"version", kVersionV1}};
  return {{"kind", "APIGroup"},
          {"apiVersion", "v1"},
          {"name", kEventsGroup},
          {"versions", Json::array({v1})},
          {"preferredVersion", v1}};
}

nlohmann::json ApiGroupList() {
  Json groups = Json::array();
  for (Json group : {ApiGroup(), EventsApiGroup()}) {
    group.erase("kind");
    group.erase("apiVersion");
    groups.push_back(std::move(group));
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

nlohmann::json ApiResourceList(std::string_view version) {
  Json resources = Json::array();
  for (const KindInfo& info : AllKinds()) {
    if (info.group != std::string_view(kGroup)) continue;
    AddResource(info, &resources);
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", std::string(kGroup) + "/" + std::string(version)},
          {"resources", std::move(resources)}};
}

nlohmann::json EventsApiResourceList() {
  Json resources = Json::array();
  AddResource(EventsV1Info(), &resources);
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", kEventsV1},
          {"resources", std::move(resources)}};
}

nlohmann::json CoreApiVersions() {
  return {{"kind", "APIVersions"},
          {"versions", Json::array({"v1"})},
          {"serverAddressByClientCIDRs",
           Json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1"}}})}};
}

nlohmann::json CoreApiResourceList() {
  Json resources = Json::array();
  for (const KindInfo& info : AllKinds()) {
    if (*info.group == '\0') AddResource(info, &resources);
  }
  return {{"kind", "APIResourceList"}, {"groupVersion", "v1"}, {"resources", std::move(resources)}};
}

nlohmann::json VersionInfo(const std::string& git_version) {
  // "v1.34.0" -> major "1", minor "34".
  std::string major, minor;
  size_t start = git_version.rfind('v', 0) == 0 ? 1 : 0;
  size_t dot = git_version.find('.', start);
  if (dot != std::string::npos) {
    major = git_version.substr(start, dot - start);
    size_t dot2 = git_version.find('.', dot + 1);
    minor = git_version.substr(dot + 1, dot2 == std::string::npos ? dot2 : dot2 - dot - 1);
  }
  return {{"major", major},
          {"minor", minor},
          {"gitVersion", git_version},
          {"gitCommit", ""},
          {"gitTreeState", "clean"},
          {"buildDate", "1970-01-01T00:00:00Z"},
          {"goVersion", "kdp-manager"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

}  // namespace kdp::manager::resourceapi
