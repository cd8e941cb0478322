#include "sdk/src/dra/node_server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/path_safety.h"
#include "common/resource_name.h"
#include "common/status_macros.h"
#include "sdk/src/dra/claim_json.h"
#include "sdk/src/dra/driver_link.h"
#include "sdk/src/runtime/metrics_endpoint.h"

namespace kdp::internal {
namespace {

// The rolling-update file lock (the Go helper's serialize.lock): held while it lives.
class FileLock {
 public:
  static absl::StatusOr<std::unique_ptr<FileLock>> Acquire(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open lock file ", path));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoStatus(errno, absl::StrCat("lock ", path));
      ::close(fd);
      return status;
    }
    return std::unique_ptr<FileLock>(new FileLock(fd));
  }
  ~FileLock() { ::close(fd_); }  // Closing releases the flock.
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  const int fd_;
};

absl::Status ValidateRef(const ClaimRef& ref) {
  if (!IsDns1123Label(ref.namespace_) || !IsDns1123Subdomain(ref.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim ", GoQuote(absl::StrCat(ref.namespace_, "/", ref.name)), " uid ",
                     GoQuote(ref.uid), ": namespace must be a DNS label, name a DNS subdomain"));
  }
  // Drivers name files after claim UIDs (a CDI spec per claim): the kubelet, or whoever speaks
  // for it, must not be able to make that name climb out of its directory.
  if (absl::Status valid = ValidateUid("claim UID", ref.uid); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim ", ref.namespace_, "/", ref.name, ": ", valid.message()));
  }
  return absl::OkStatus();
}

// The claims with distinct UIDs, first occurrence kept, each validated.
absl::StatusOr<std::vector<ClaimRef>> Distinct(const std::vector<ClaimRef>& claims) {
  std::vector<ClaimRef> out;
  std::set<std::string> seen;
  for (const ClaimRef& ref : claims) {
    KDP_RETURN_IF_ERROR(ValidateRef(ref));
    if (seen.insert(ref.uid).second) out.push_back(ref);
  }
  return out;
}

std::string ErrorText(const absl::Status& status) {
  return status.message().empty() ? status.ToString() : std::string(status.message());
}

// Request names as the kubelet wants them: subrequest suffixes stripped, duplicates dropped
// (the Go helper's stripSubrequestNames).
std::vector<std::string> StripSubrequests(const std::vector<std::string>& requests) {
  std::vector<std::string> out;
  for (const std::string& request : requests) {
    std::string base = BaseRequestName(request);
    if (std::find(out.begin(), out.end(), base) == out.end()) out.push_back(std::move(base));
  }
  return out;
}

}  // namespace

DraNodeServer::DraNodeServer(DraDriver* driver, std::shared_ptr<KubeClient> client,
                             DraCheckpoint checkpoint, std::string lock_file,
                             DraNodeMetrics metrics)
    : driver_(driver),
      client_(std::move(client)),
      checkpoint_(std::move(checkpoint)),
      lock_file_(std::move(lock_file)),
      metrics_(metrics) {}

absl::Status DraNodeServer::CheckCheckpoint() const {
  absl::StatusOr<PreparedClaims> records = checkpoint_.Load();
  if (records.ok()) CountPrepared(*records);
  return records.status();
}

void DraNodeServer::CountPrepared(const PreparedClaims& records) const {
  DraDriverLink::PreparedDevices completed;
  for (const auto& [uid, record] : records) {
    if (record.completed) completed[uid] = record.devices;
  }
  if (metrics_.prepared_claims != nullptr) {
    metrics_.prepared_claims->Set(static_cast<double>(completed.size()));
  }
  driver_->link_->SetPreparedClaims(std::move(completed));
}

void DraNodeServer::Observe(const char* method, absl::Time start, const absl::Status& status,
                            int claim_errors) const {
  const std::string& driver = driver_->driver_name();
  if (metrics_.rpc_duration != nullptr) {
    metrics_.rpc_duration
        ->WithLabels({driver, method, GoGrpcCodeName(static_cast<grpc::StatusCode>(status.code()))})
        ->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  if (metrics_.claim_errors != nullptr && claim_errors > 0) {
    metrics_.claim_errors->WithLabels({driver, method})->Add(claim_errors);
  }
}

absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> DraNodeServer::NodePrepareResources(
    const std::vector<ClaimRef>& claims) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> outcomes = Prepare(claims);
  int errors = 0;
  if (outcomes.ok()) {
    for (const auto& [uid, outcome] : *outcomes) errors += outcome.error.empty() ? 0 : 1;
  }
  Observe("NodePrepareResources", start, outcomes.status(), errors);
  return outcomes;
}

absl::StatusOr<std::map<std::string, std::string>> DraNodeServer::NodeUnprepareResources(
    const std::vector<ClaimRef>& claims) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::map<std::string, std::string>> errors = Unprepare(claims);
  int failed = 0;
  if (errors.ok()) {
    for (const auto& [uid, error] : *errors) failed += error.empty() ? 0 : 1;
  }
  Observe("NodeUnprepareResources", start, errors.status(), failed);
  return errors;
}

absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> DraNodeServer::Prepare(
    const std::vector<ClaimRef>& requested) {
  KDP_ASSIGN_OR_RETURN(std::vector<ClaimRef> refs, Distinct(requested));
  std::map<std::string, ClaimPrepareOutcome> outcomes;
  if (refs.empty()) return outcomes;  // A probe (the example driver's health check sends one).

  // Fetch outside the lock: an API server round trip must not hold up other calls.
  std::vector<Claim> claims;
  for (const ClaimRef& ref : refs) {
    const std::string path = absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", ref.namespace_,
                                          "/resourceclaims/", ref.name);
    absl::StatusOr<nlohmann::json> object = client_->Get(path);
    if (!object.ok()) {
      return absl::Status(object.status().code(),
                          absl::StrCat("retrieve claim ", ref.namespace_, "/", ref.name, ": ",
                                       object.status().message()));
    }
    KDP_ASSIGN_OR_RETURN(Claim claim, DecodeClaim(*object, ref, driver_->driver_name()));
    claims.push_back(std::move(claim));
  }

  absl::MutexLock serialize(&serialize_mu_);
  std::unique_ptr<FileLock> file_lock;
  if (!lock_file_.empty()) {
    KDP_ASSIGN_OR_RETURN(file_lock, FileLock::Acquire(lock_file_));
  }
  // Re-read under the lock: with a rolling update the other instance may have written it.
  KDP_ASSIGN_OR_RETURN(PreparedClaims records, checkpoint_.Load());
  bool added = false;
  for (const ClaimRef& ref : refs) {
    if (records.count(ref.uid) == 0) {
      records[ref.uid] = PreparedClaimRecord{.ref = ref, .completed = false, .devices = {}};
      added = true;
    }
  }
  if (added) {
    // Not synced: a crash of this process keeps it, and the record after the vendor's Prepare,
    // synced into the same slot, makes both durable before the kubelet hears of the result. A
    // power loss in between loses the node's CDI specs (/var/run) with it.
    if (absl::Status stored = checkpoint_.Store(records, /*sync=*/false); !stored.ok()) {
      return absl::Status(stored.code(),
                          absl::StrCat("recording claims before prepare: ", stored.message()));
    }
  }

  std::map<std::string, PrepareResult> results = driver_->Prepare(claims);

  for (const ClaimRef& ref : refs) {
    ClaimPrepareOutcome& outcome = outcomes[ref.uid];
    auto it = results.find(ref.uid);
    if (it == results.end()) {
      outcome.error = absl::StrCat("driver ", driver_->driver_name(),
                                   " returned no result for claim ", ref.namespace_, "/", ref.name);
      continue;
    }
    if (!it->second.status.ok()) {
      outcome.error = ErrorText(it->second.status);
      continue;
    }
    for (const PreparedDevice& device : it->second.devices) {
      PreparedDevice out = device;
      out.requests = StripSubrequests(device.requests);
      outcome.devices.push_back(std::move(out));
    }
    records[ref.uid] =
        PreparedClaimRecord{.ref = ref, .completed = true, .devices = outcome.devices};
  }
  for (const auto& [uid, result] : results) {
    if (outcomes.count(uid) == 0) {
      KDP_LOG_WARNING("Prepare returned a result for a claim that was not requested; ignored",
                      "driver", driver_->driver_name(), "claimUID", uid);
    }
  }
  if (absl::Status stored = checkpoint_.Store(records); !stored.ok()) {
    return absl::Status(stored.code(),
                        absl::StrCat("recording prepared claims: ", stored.message()));
  }
  CountPrepared(records);
  return outcomes;
}

absl::StatusOr<std::map<std::string, std::string>> DraNodeServer::Unprepare(
    const std::vector<ClaimRef>& requested) {
  KDP_ASSIGN_OR_RETURN(std::vector<ClaimRef> refs, Distinct(requested));
  std::map<std::string, std::string> errors;
  if (refs.empty()) return errors;

  absl::MutexLock serialize(&serialize_mu_);
  std::unique_ptr<FileLock> file_lock;
  if (!lock_file_.empty()) {
    KDP_ASSIGN_OR_RETURN(file_lock, FileLock::Acquire(lock_file_));
  }
  KDP_ASSIGN_OR_RETURN(PreparedClaims records, checkpoint_.Load());
  std::vector<ClaimRef> known;
  for (const ClaimRef& ref : refs) {
    errors[ref.uid] = "";
    // Unknown: never prepared here, or already unprepared. Success, as the example driver and
    // the kubelet's idempotent unprepare expect.
    if (records.count(ref.uid) != 0) known.push_back(ref);
  }
  if (known.empty()) return errors;

  std::map<std::string, absl::Status> results = driver_->Unprepare(known);
  bool changed = false;
  for (const ClaimRef& ref : known) {
    auto it = results.find(ref.uid);
    if (it == results.end()) {
      errors[ref.uid] =
          absl::StrCat("driver ", driver_->driver_name(), " returned no result for claim ",
                       ref.namespace_, "/", ref.name);
    } else if (!it->second.ok()) {
      errors[ref.uid] = ErrorText(it->second);
    } else {
      records.erase(ref.uid);
      changed = true;
    }
  }
  if (changed) {
    if (absl::Status stored = checkpoint_.Store(records); !stored.ok()) {
      return absl::Status(stored.code(),
                          absl::StrCat("recording unprepared claims: ", stored.message()));
    }
    CountPrepared(records);
  }
  return errors;
}

}  // namespace kdp::internal
