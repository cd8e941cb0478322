#include "manager/src/dra/plugin/conversion.h"

namespace kdp::manager::dra {
namespace {

// Claim and the per-claim results have the same fields in both versions; templates keep the
// four directions in one place.
template <typename Out, typename In>
void CopyClaims(const In& in, Out* out) {
  for (const auto& claim : in.claims()) {
    auto* c = out->add_claims();
    c->set_namespace_(claim.namespace_());
    c->set_uid(claim.uid());
    c->set_name(claim.name());
  }
}

template <typename Out, typename In>
void CopyDevice(const In& in, Out* out) {
  out->mutable_request_names()->Add(in.request_names().begin(), in.request_names().end());
  out->set_pool_name(in.pool_name());
  out->set_device_name(in.device_name());
  out->mutable_cdi_device_ids()->Add(in.cdi_device_ids().begin(), in.cdi_device_ids().end());
}

template <typename Out, typename In>
void CopyPrepareResults(const In& in, Out* out) {
  for (const auto& [uid, result] : in.claims()) {
    auto& r = (*out->mutable_claims())[uid];
    for (const auto& device : result.devices()) CopyDevice(device, r.add_devices());
    r.set_error(result.error());
  }
}

template <typename Out, typename In>
void CopyUnprepareResults(const In& in, Out* out) {
  for (const auto& [uid, result] : in.claims())
    (*out->mutable_claims())[uid].set_error(result.error());
}

}  // namespace

drapbv1beta1::NodePrepareResourcesRequest ToV1Beta1(const drapb::NodePrepareResourcesRequest& in) {
  drapbv1beta1::NodePrepareResourcesRequest out;
  CopyClaims(in, &out);
  return out;
}

drapbv1beta1::NodeUnprepareResourcesRequest ToV1Beta1(
    const drapb::NodeUnprepareResourcesRequest& in) {
  drapbv1beta1::NodeUnprepareResourcesRequest out;
  CopyClaims(in, &out);
  return out;
}

drapbv1beta1::NodePrepareResourcesResponse ToV1Beta1(
    const drapb::NodePrepareResourcesResponse& in) {
  drapbv1beta1::NodePrepareResourcesResponse out;
  CopyPrepareResults(in, &out);  // share_id dropped: v1beta1 has no such field
  return out;
}

drapbv1beta1::NodeUnprepareResourcesResponse ToV1Beta1(
    const drapb::NodeUnprepareResourcesResponse& in) {
  drapbv1beta1::NodeUnprepareResourcesResponse out;
  CopyUnprepareResults(in, &out);
  return out;
}

drapb::NodePrepareResourcesRequest ToV1(const drapbv1beta1::NodePrepareResourcesRequest& in) {
  drapb::NodePrepareResourcesRequest out;
  CopyClaims(in, &out);
  return out;
}

drapb::NodeUnprepareResourcesRequest ToV1(const drapbv1beta1::NodeUnprepareResourcesRequest& in) {
  drapb::NodeUnprepareResourcesRequest out;
  CopyClaims(in, &out);
  return out;
}

drapb::NodePrepareResourcesResponse ToV1(const drapbv1beta1::NodePrepareResourcesResponse& in) {
  drapb::NodePrepareResourcesResponse out;
  CopyPrepareResults(in, &out);
  return out;
}

drapb::NodeUnprepareResourcesResponse ToV1(const drapbv1beta1::NodeUnprepareResourcesResponse& in) {
  drapb::NodeUnprepareResourcesResponse out;
  CopyUnprepareResults(in, &out);
  return out;
}

}  // namespace kdp::manager::dra
