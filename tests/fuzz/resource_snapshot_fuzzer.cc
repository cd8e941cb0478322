// Fuzzes the reader of the local resource API's persisted objects (`<kubelet-root>/kdp/
// resources.json`, loaded at start by StorePersister::Load through ObjectStore::Restore,
// manager/src/resourceapi/store.h): a file on disk that a crash, a full disk or a hand edit may
// have damaged. The input is the file's text.
//
// Properties checked beyond "no crash": a refusal is INVALID_ARGUMENT (which Load turns into
// DATA_LOSS naming the file); a restored store's snapshot serializes, restores into a fresh store
// and gives the same snapshot again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/time/time.h"
#include "manager/src/controlplane/resourceapi/store.h"

namespace {

namespace ra = kdp::manager::resourceapi;
using Json = nlohmann::json;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "resource_snapshot_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

ra::StoreOptions Options() {
  return {.node_name = "node-1", .now = [] { return absl::FromUnixSeconds(1767225600); }};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As StorePersister::Load parses the file.
  const Json snapshot = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (snapshot.is_discarded()) return 0;
  ra::ObjectStore store(Options());
  const absl::Status restored = store.Restore(snapshot);
  if (!restored.ok()) {
    if (restored.code() != absl::StatusCode::kInvalidArgument) {
      Fail("Restore failed with a code other than INVALID_ARGUMENT", restored.ToString());
    }
    return 0;
  }
  const Json saved = store.Snapshot();
  std::string text;
  try {
    text = saved.dump();
  } catch (const Json::exception& e) {
    Fail("the restored store's snapshot cannot be written", e.what());
  }
  ra::ObjectStore again(Options());
  if (absl::Status s = again.Restore(Json::parse(text)); !s.ok()) {
    Fail("the store's own snapshot does not restore", s.ToString() + "\n" + text);
  }
  if (again.Snapshot() != saved) Fail("the snapshot changed through a restore", text);
  return 0;
}
