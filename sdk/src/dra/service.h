// The gRPC face of a DRA driver's node service: k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and
// ...v1beta1.DRAPlugin on one server (their messages are identical except v1's Device.share_id),
// both converted to and from the one DraNodeServer code path, on gRPC's sync API (vendor code may
// block). RPC-level errors carry the DraNodeServer's status code and message; per-claim errors go
// into the response map, keyed by claim UID. Private to the SDK.
//
// Thread-safety: thread-safe; the DraNodeServer must outlive the grpc::Server serving these.
#ifndef KDP_SDK_SRC_DRA_SERVICE_H_
#define KDP_SDK_SRC_DRA_SERVICE_H_

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "sdk/src/dra/node_server.h"

namespace kdp::internal {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

class DraServiceV1 final : public drav1::DRAPlugin::Service {
 public:
  explicit DraServiceV1(DraNodeServer* server) : server_(server) {}
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drav1::NodePrepareResourcesRequest* request,
                                    drav1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const drav1::NodeUnprepareResourcesRequest* request,
                                      drav1::NodeUnprepareResourcesResponse* response) override;

 private:
  DraNodeServer* const server_;
};

class DraServiceV1beta1 final : public drav1beta1::DRAPlugin::Service {
 public:
  explicit DraServiceV1beta1(DraNodeServer* server) : server_(server) {}
  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const drav1beta1::NodePrepareResourcesRequest* request,
                                    drav1beta1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext* context, const drav1beta1::NodeUnprepareResourcesRequest* request,
      drav1beta1::NodeUnprepareResourcesResponse* response) override;

 private:
  DraNodeServer* const server_;
};

}  // namespace kdp::internal

#endif  // KDP_SDK_SRC_DRA_SERVICE_H_
