// Fuzzes what `kdpctl apply -f` hands kdp-manager: the manifest splitter and YAML → JSON
// conversion (manager/src/admin/manifest.h), then each document as the Apply path checks it
// (admin_server.cc CheckDocument): Pods through ParsePodManifestDocument, DeviceClass /
// ResourceClaim / ResourceClaimTemplate through v1beta1 → v1 conversion, defaulting and the
// resource API codec's validation, then a create in a fresh object store. The whole text is also
// given to ParsePodManifest (the single-document entry point).
//
// Properties checked beyond "no crash": a parsed Pod survives PodToJson → PodFromJson unchanged;
// a resource object that validates decodes into the typed model, and the typed model's encoding
// validates again (what the manager writes back must be what it accepts).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "kdp/admin/v1/admin.pb.h"
#include "manager/src/admin/manifest.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/store.h"
#include "manager/src/pod/pod_json.h"
#include "manager/src/pod/pod_manifest.h"

namespace {

namespace ra = kdp::manager::resourceapi;
using Json = nlohmann::json;

// Inputs beyond this are cut: YAML parsing is linear, but a long input only slows the search.
constexpr size_t kMaxInput = 64 * 1024;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "manifest_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void CheckStatusCode(const absl::Status& status, const char* what) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    Fail(what, status.ToString());
  }
}

void CheckPod(const kdp::manager::Pod& pod) {
  const Json json = kdp::manager::PodToJson(pod);
  (void)json.dump();  // must not throw (PodToJson replaces invalid UTF-8)
  absl::StatusOr<kdp::manager::Pod> again = kdp::manager::PodFromJson(json, "fuzz", "");
  if (!again.ok()) Fail("PodFromJson rejects PodToJson's output", again.status().ToString());
  if (!(*again == pod)) Fail("the Pod changed through PodToJson/PodFromJson", json.dump());
}

// The typed model of a valid object, encoded again, must validate.
void CheckTyped(ra::Kind kind, const Json& object) {
  std::optional<Json> encoded;
  switch (kind) {
    case ra::Kind::kDeviceClass: {
      absl::StatusOr<ra::DeviceClass> typed = ra::DecodeDeviceClass(object);
      if (!typed.ok()) Fail("Validate passed but DecodeDeviceClass failed", object.dump());
      encoded = ra::EncodeDeviceClass(*typed);
      break;
    }
    case ra::Kind::kResourceClaim: {
      absl::StatusOr<ra::ResourceClaim> typed = ra::DecodeResourceClaim(object);
      if (!typed.ok()) Fail("Validate passed but DecodeResourceClaim failed", object.dump());
      encoded = ra::EncodeResourceClaim(*typed);
      break;
    }
    case ra::Kind::kResourceClaimTemplate: {
      absl::StatusOr<ra::ResourceClaimTemplate> typed = ra::DecodeResourceClaimTemplate(object);
      if (!typed.ok())
        Fail("Validate passed but DecodeResourceClaimTemplate failed", object.dump());
      encoded = ra::EncodeResourceClaimTemplate(*typed);
      break;
    }
    default:
      return;
  }
  ra::Normalize(kind, &*encoded);
  if (absl::Status valid = ra::Validate(kind, *encoded); !valid.ok()) {
    Fail("the typed object's encoding does not validate",
         valid.ToString() +
             "\nfrom: " + object.dump(-1, ' ', false, Json::error_handler_t::replace) +
             "\nencoded: " + encoded->dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

// admin_server.cc CheckDocument, then the store's create.
void CheckDocument(const kdp::manager::ManifestDocument& doc) {
  if (doc.kind == "Pod" && doc.api_version == "v1") {
    absl::StatusOr<kdp::manager::Pod> pod =
        kdp::manager::ParsePodManifestDocument(doc.node, doc.source);
    CheckStatusCode(pod.status(), "ParsePodManifestDocument: undocumented code");
    if (pod.ok()) CheckPod(*pod);
    return;
  }
  std::optional<ra::Kind> kind;
  for (const ra::KindInfo& info : ra::AllKinds()) {
    if (doc.kind == info.name && info.kind != ra::Kind::kResourceSlice &&
        info.kind != ra::Kind::kNode) {
      kind = info.kind;
    }
  }
  const std::string prefix = "resource.k8s.io/";
  if (!kind.has_value() || !doc.api_version.starts_with(prefix)) return;
  const std::string version = doc.api_version.substr(prefix.size());
  if (!ra::IsServedVersion(version)) return;
  Json object = ra::ToV1(*kind, version, doc.json);
  if (ra::InfoOf(*kind).namespaced) {
    Json& metadata = object["metadata"];
    if (!metadata.is_object()) metadata = Json::object();
    if (!metadata.contains("namespace")) metadata["namespace"] = "default";
  }
  ra::Normalize(*kind, &object);
  const absl::Status valid = ra::Validate(*kind, object);
  CheckStatusCode(valid, "Validate: undocumented code");
  if (!valid.ok()) return;
  CheckTyped(*kind, object);
  ra::ObjectStore store(
      {.node_name = "node-1", .now = [] { return absl::FromUnixSeconds(1767225600); }});
  absl::StatusOr<Json> created = store.Create(*kind, object);
  if (!created.ok()) Fail("a valid object was not created", created.status().ToString());
  // The REST server answers with dump() and the persister writes Snapshot().dump(): neither may
  // throw on what the store accepted.
  try {
    (void)created->dump();
    (void)store.Snapshot().dump();
  } catch (const Json::exception& e) {
    Fail("the stored object cannot be written as JSON", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  // The manifest arrives as ApplyRequest.manifest, a proto3 string: gRPC refuses a request whose
  // manifest is not UTF-8 before kdp-manager sees it, so such inputs are parsed the same way and
  // dropped here. (Protobuf logs each refusal; the fuzzer silences that.)
  static const bool kQuiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)kQuiet;
  std::string wire(1, '\x0a');  // field 1 (manifest), length-delimited
  for (size_t n = size;; n >>= 7) {
    wire.push_back(static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0)));
    if (n <= 0x7f) break;
  }
  wire.append(reinterpret_cast<const char*>(data), size);
  kdp::admin::v1::ApplyRequest request;
  if (!request.ParseFromString(wire)) return 0;
  const std::string& text = request.manifest();

  absl::StatusOr<kdp::manager::Pod> pod = kdp::manager::ParsePodManifest(text, "fuzz.yaml");
  CheckStatusCode(pod.status(), "ParsePodManifest: undocumented code");
  if (pod.ok()) CheckPod(*pod);

  absl::StatusOr<std::vector<kdp::manager::ManifestDocument>> documents =
      kdp::manager::SplitManifest(text, "fuzz.yaml");
  CheckStatusCode(documents.status(), "SplitManifest: undocumented code");
  if (!documents.ok()) return 0;
  for (const kdp::manager::ManifestDocument& doc : *documents) {
    (void)doc.json.dump(-1, ' ', false, Json::error_handler_t::replace);
    CheckDocument(doc);
  }
  return 0;
}
