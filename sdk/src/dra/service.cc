#include "sdk/src/dra/service.h"

#include <atomic>
#include <type_traits>
#include <vector>

#include "common/grpc_status.h"
#include "common/logging.h"

namespace kdp::internal {
namespace {

// Numbers requests in the log, as the Go helper's requestID.
std::atomic<int64_t> next_request_id{1};

template <typename Request>
std::vector<ClaimRef> ClaimRefs(const Request& request) {
  std::vector<ClaimRef> refs;
  refs.reserve(request.claims_size());
  for (const auto& claim : request.claims()) {
    refs.push_back({.namespace_ = claim.namespace_(), .name = claim.name(), .uid = claim.uid()});
  }
  return refs;
}

template <typename Request, typename Response>
grpc::Status Prepare(DraNodeServer* server, const char* version, const Request& request,
                     Response* response) {
  const int64_t id = next_request_id.fetch_add(1);
  KDP_LOG_DEBUG("NodePrepareResources", "requestID", id, "version", version, "claims",
                request.claims_size());
  absl::StatusOr<std::map<std::string, ClaimPrepareOutcome>> outcomes =
      server->NodePrepareResources(ClaimRefs(request));
  if (!outcomes.ok()) {
    KDP_LOG_WARNING("NodePrepareResources failed", "requestID", id, "err",
                    outcomes.status().ToString());
    return ToGrpcStatus(outcomes.status());
  }
  auto& claims = *response->mutable_claims();
  for (const auto& [uid, outcome] : *outcomes) {
    auto& out = claims[uid];
    out.set_error(outcome.error);
    if (!outcome.error.empty()) {
      KDP_LOG_WARNING("Claim not prepared", "requestID", id, "claimUID", uid, "err", outcome.error);
      continue;
    }
    for (const PreparedDevice& device : outcome.devices) {
      auto* d = out.add_devices();
      for (const std::string& name : device.requests) d->add_request_names(name);
      d->set_pool_name(device.pool);
      d->set_device_name(device.device);
      for (const std::string& cdi : device.cdi_device_ids) d->add_cdi_device_ids(cdi);
      // share_id exists in v1 only (optional field 5, kubelet/helper ≥ 1.35).
      if constexpr (std::is_same_v<Response, drav1::NodePrepareResourcesResponse>) {
        if (!device.share_id.empty()) d->set_share_id(device.share_id);
      }
    }
  }
  return grpc::Status::OK;
}

template <typename Request, typename Response>
grpc::Status Unprepare(DraNodeServer* server, const char* version, const Request& request,
                       Response* response) {
  const int64_t id = next_request_id.fetch_add(1);
  KDP_LOG_DEBUG("NodeUnprepareResources", "requestID", id, "version", version, "claims",
                request.claims_size());
  absl::StatusOr<std::map<std::string, std::string>> errors =
      server->NodeUnprepareResources(ClaimRefs(request));
  if (!errors.ok()) {
    KDP_LOG_WARNING("NodeUnprepareResources failed", "requestID", id, "err",
                    errors.status().ToString());
    return ToGrpcStatus(errors.status());
  }
  auto& claims = *response->mutable_claims();
  for (const auto& [uid, error] : *errors) {
    claims[uid].set_error(error);
    if (!error.empty()) {
      KDP_LOG_WARNING("Claim not unprepared", "requestID", id, "claimUID", uid, "err", error);
    }
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status DraServiceV1::NodePrepareResources(grpc::ServerContext*,
                                                const drav1::NodePrepareResourcesRequest* request,
                                                drav1::NodePrepareResourcesResponse* response) {
  return Prepare(server_, "v1", *request, response);
}

grpc::Status DraServiceV1::NodeUnprepareResources(
    grpc::ServerContext*, const drav1::NodeUnprepareResourcesRequest* request,
    drav1::NodeUnprepareResourcesResponse* response) {
  return Unprepare(server_, "v1", *request, response);
}

grpc::Status DraServiceV1beta1::NodePrepareResources(
    grpc::ServerContext*, const drav1beta1::NodePrepareResourcesRequest* request,
    drav1beta1::NodePrepareResourcesResponse* response) {
  return Prepare(server_, "v1beta1", *request, response);
}

grpc::Status DraServiceV1beta1::NodeUnprepareResources(
    grpc::ServerContext*, const drav1beta1::NodeUnprepareResourcesRequest* request,
    drav1beta1::NodeUnprepareResourcesResponse* response) {
  return Unprepare(server_, "v1beta1", *request, response);
}

}  // namespace kdp::internal
