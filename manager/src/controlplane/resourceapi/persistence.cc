#include "manager/src/controlplane/resourceapi/persistence.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/logging.h"

namespace kdp::manager::resourceapi {

absl::Status StorePersister::Load(const std::string& path, ObjectStore* store) {
  absl::StatusOr<std::string> text = kdp::ReadFile(path);
  if (absl::IsNotFound(text.status())) return absl::OkStatus();
  if (!text.ok()) return text.status();
  const nlohmann::json snapshot = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (snapshot.is_discarded()) {
    return absl::DataLossError(absl::StrCat(path,
                                            ": not JSON; remove it to start with no "
                                            "DeviceClasses, ResourceClaims or slices"));
  }
  if (absl::Status restored = store->Restore(snapshot); !restored.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": ", restored.message()));
  }
  return absl::OkStatus();
}

StorePersister::StorePersister(std::string path, ObjectStore* store, absl::Duration delay)
    : path_(std::move(path)), store_(store), delay_(delay) {
  store_->SetDurabilityHook([this] { return Flush(); });
}

StorePersister::~StorePersister() {
  Stop();
  store_->SetDurabilityHook({});
}

void StorePersister::Start() {
  thread_ = std::thread([this] { Run(); });
}

absl::Status StorePersister::Flush() {
  absl::MutexLock write(&write_mu_);
  const int64_t version = store_->PersistedVersion();
  {
    absl::MutexLock lock(&mu_);
    if (version == written_version_) return absl::OkStatus();
  }
  // The snapshot is taken after `version` was read: it holds at least that version.
  const std::string content = store_->Snapshot().dump();
  if (absl::Status written = kdp::WriteFileDurably(path_, content, 0600); !written.ok()) {
    return written;
  }
  absl::MutexLock lock(&mu_);
  written_version_ = version;
  return absl::OkStatus();
}

void StorePersister::Run() {
  for (;;) {
    int64_t written = 0;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      written = written_version_;
    }
    if (store_->WaitForPersistedChange(written, absl::Milliseconds(200))) {
      absl::SleepFor(delay_);  // coalesce a burst of changes into one write
      if (absl::Status flushed = Flush(); !flushed.ok()) {
        KDP_LOG_WARNING("Cannot write the resource store; retrying", "path", path_, "err",
                        flushed.message());
        absl::SleepFor(absl::Seconds(1));
      }
    }
  }
}

void StorePersister::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (absl::Status flushed = Flush(); !flushed.ok()) {
    KDP_LOG_ERROR("Cannot write the resource store at shutdown", "path", path_, "err",
                  flushed.message());
  }
}

}  // namespace kdp::manager::resourceapi
