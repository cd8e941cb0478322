// Fuzzes the local resource API's protobuf request bodies (manager/src/resourceapi/protobuf_codec.h
// DecodeProtobufBody): what a Go DRA driver POSTs and PUTs as application/vnd.kubernetes.protobuf.
// The first input byte picks the URL version (even: v1, odd: v1beta1); the rest is the body
// ("k8s\0" + runtime.Unknown). A body that decodes goes the JSON path the REST server takes:
// conversion to v1, defaulting, validation, and a create in a fresh object store.
//
// Properties checked beyond "no crash": errors are BadRequest (INVALID_ARGUMENT); the decoded
// JSON carries the URL's apiVersion and kind ResourceSlice, and it, the stored object and the
// store's snapshot serialize without throwing (the body's strings are bytes from the wire); a
// valid slice's typed model (codec.h) survives EncodeResourceSlice → DecodeResourceSlice.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "manager/src/controlplane/resourceapi/codec.h"
#include "manager/src/controlplane/resourceapi/conversion.h"
#include "manager/src/controlplane/resourceapi/kinds.h"
#include "manager/src/controlplane/resourceapi/protobuf_codec.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace {

namespace ra = kdp::manager::resourceapi;
using Json = nlohmann::json;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "resource_protobuf_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void MustDump(const Json& json, const char* what) {
  try {
    (void)json.dump();
  } catch (const Json::exception& e) {
    Fail(what, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool kQuiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)kQuiet;
  if (size == 0) return 0;
  const std::string version = (data[0] & 1) == 0 ? "v1" : "v1beta1";
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  absl::StatusOr<Json> decoded = ra::DecodeProtobufBody(ra::Kind::kResourceSlice, version, body);
  if (!decoded.ok()) {
    if (decoded.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("DecodeProtobufBody failed with a code other than INVALID_ARGUMENT",
           decoded.status().ToString());
    }
    return 0;
  }
  MustDump(*decoded, "the decoded body cannot be written as JSON");
  if (!decoded->is_object() || decoded->value("apiVersion", "") != "resource.k8s.io/" + version ||
      decoded->value("kind", "") != "ResourceSlice") {
    Fail("the decoded body lacks the URL's apiVersion or kind ResourceSlice",
         decoded->dump(-1, ' ', false, Json::error_handler_t::replace));
  }

  Json object = ra::ToV1(ra::Kind::kResourceSlice, version, *decoded);
  ra::Normalize(ra::Kind::kResourceSlice, &object);
  if (!ra::Validate(ra::Kind::kResourceSlice, object).ok()) return 0;
  // The typed model of a valid slice (counters, taints, capacity policies, node selection) encodes
  // to a slice that validates again and decodes to the same model.
  absl::StatusOr<ra::ResourceSlice> typed = ra::DecodeResourceSlice(object);
  if (!typed.ok()) Fail("a valid slice does not decode", typed.status().ToString());
  absl::StatusOr<ra::ResourceSlice> again =
      ra::DecodeResourceSlice(ra::EncodeResourceSlice(*typed));
  if (!again.ok()) Fail("the encoded slice does not validate", again.status().ToString());
  if (!(*again == *typed)) Fail("the slice changed through Encode/Decode", object.dump());
  ra::ObjectStore store(
      {.node_name = "node-1", .now = [] { return absl::FromUnixSeconds(1767225600); }});
  absl::StatusOr<Json> created = store.Create(ra::Kind::kResourceSlice, object);
  if (!created.ok()) Fail("a valid slice was not created", created.status().ToString());
  MustDump(*created, "the stored slice cannot be written as JSON");
  MustDump(store.Snapshot(), "the store's snapshot cannot be written as JSON");
  return 0;
}
