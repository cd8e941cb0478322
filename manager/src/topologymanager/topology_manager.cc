#include "manager/src/topologymanager/topology_manager.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "manager/src/admission/errors.h"

namespace kdp::manager {
const char* TopologyScopeName(TopologyScope scope) {
  return scope == TopologyScope::kPod ? "pod" : "container";
}

absl::StatusOr<TopologyScope> ParseTopologyScope(std::string_view text) {
  if (text == "container") return TopologyScope::kContainer;
  if (text == "pod") return TopologyScope::kPod;
  // The kubelet's validation text.
  return absl::InvalidArgumentError(
      absl::StrCat("invalid configuration: topologyManagerScope (--topology-manager-scope) \"",
                   std::string(text), "\" must be one of: \"container\", or \"pod\""));
}

absl::StatusOr<TopologyManager> TopologyManager::Create(TopologyManagerConfig config,
                                                        std::vector<HintProvider*> providers) {
  KDP_RETURN_IF_ERROR(ValidateNumaInfo(config.policy, config.options, config.numa));
  return TopologyManager(std::move(config), std::move(providers));
}

TopologyAdmission TopologyManager::Admit(const Pod& pod) {
  TopologyAdmission result;
  const std::string pod_name = absl::StrCat(pod.namespace_, "/", pod.name);
  auto allocate = [&](const Container& container, const std::optional<NumaMask>& affinity) -> bool {
    for (HintProvider* provider : providers_) {
      if (absl::Status status = provider->Allocate(pod, container, affinity); !status.ok()) {
        result.reason = errors::kUnexpectedAdmissionError;
        result.message = errors::AllocateFailed(status.message());
        return false;
      }
    }
    return true;
  };
  auto reject_affinity = [&](const std::string& container) {
    KDP_LOG_INFO("Topology Affinity Error: resources cannot be aligned", "pod", pod_name,
                 "containerName", container, "policy", TopologyPolicyName(config_.policy));
    result.reason = kTopologyAffinityErrorReason;
    result.message = kTopologyAffinityErrorMessage;
  };

  if (config_.policy == TopologyPolicy::kNone) {
    for (const Container* container : ContainersInAdmissionOrder(pod)) {
      if (!allocate(*container, std::nullopt)) return result;
    }
    result.admitted = true;
    return result;
  }

  if (config_.scope == TopologyScope::kPod) {
    std::vector<ProviderHints> hints;
    for (HintProvider* provider : providers_) hints.push_back(provider->GetPodTopologyHints(pod));
    const PolicyDecision decision = Merge(config_.policy, config_.options, config_.numa, hints);
    KDP_LOG_INFO("Topology manager: pod's best hint", "pod", pod_name, "hint",
                 decision.best.ToString(), "admit", decision.admit);
    if (!decision.admit) {
      reject_affinity("");
      return result;
    }
    for (const Container* container : ContainersInAdmissionOrder(pod)) {
      result.hints[container->name] = decision.best;
      if (!allocate(*container, decision.best.numa_affinity)) return result;
    }
    result.admitted = true;
    return result;
  }

  for (const Container* container : ContainersInAdmissionOrder(pod)) {
    std::vector<ProviderHints> hints;
    for (HintProvider* provider : providers_) {
      hints.push_back(provider->GetTopologyHints(pod, *container));
    }
    const PolicyDecision decision = Merge(config_.policy, config_.options, config_.numa, hints);
    KDP_LOG_INFO("Topology manager: container's best hint", "pod", pod_name, "containerName",
                 container->name, "hint", decision.best.ToString(), "admit", decision.admit);
    // As upstream: a rejected container stores no hint.
    if (!decision.admit) {
      reject_affinity(container->name);
      return result;
    }
    result.hints[container->name] = decision.best;
    if (!allocate(*container, decision.best.numa_affinity)) return result;
  }
  result.admitted = true;
  return result;
}

}  // namespace kdp::manager
