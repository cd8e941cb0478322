// v1 ↔ v1beta1 conversion of the DRA node service messages, for drivers that only serve
// k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin (the kubelet's V1Beta1ClientWrapper): the DRA
// manager always speaks v1, the plugin client converts at the wire. Field by field; v1's
// Device.share_id (1.35+) has no v1beta1 counterpart and is dropped on the way down (a v1beta1
// response never carries one).
//
// Thread-safety: pure functions.
#ifndef KDP_MANAGER_SRC_DRA_PLUGIN_CONVERSION_H_
#define KDP_MANAGER_SRC_DRA_PLUGIN_CONVERSION_H_

#include "dra/v1beta1/api.pb.h"
#include "manager/src/dra/plugin/plugin.h"

namespace kdp::manager::dra {

namespace drapbv1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

drapbv1beta1::NodePrepareResourcesRequest ToV1Beta1(const drapb::NodePrepareResourcesRequest& in);
drapbv1beta1::NodeUnprepareResourcesRequest ToV1Beta1(
    const drapb::NodeUnprepareResourcesRequest& in);
drapbv1beta1::NodePrepareResourcesResponse ToV1Beta1(const drapb::NodePrepareResourcesResponse& in);
drapbv1beta1::NodeUnprepareResourcesResponse ToV1Beta1(
    const drapb::NodeUnprepareResourcesResponse& in);

drapb::NodePrepareResourcesRequest ToV1(const drapbv1beta1::NodePrepareResourcesRequest& in);
drapb::NodeUnprepareResourcesRequest ToV1(const drapbv1beta1::NodeUnprepareResourcesRequest& in);
drapb::NodePrepareResourcesResponse ToV1(const drapbv1beta1::NodePrepareResourcesResponse& in);
drapb::NodeUnprepareResourcesResponse ToV1(const drapbv1beta1::NodeUnprepareResourcesResponse& in);

}  // namespace kdp::manager::dra

#endif  // KDP_MANAGER_SRC_DRA_PLUGIN_CONVERSION_H_
