#include "sdk/src/dra/cluster_publisher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "sdk/src/dra/pool_validation.h"
#include "sdk/src/dra/resource_slice.h"

namespace kdp::internal {

absl::Status ValidatePublisherOptions(const ResourceSlicePublisherOptions& options) {
  KDP_RETURN_IF_ERROR(ValidateDriverName(options.driver));
  if (options.owner.has_value()) {
    const SliceOwner& owner = *options.owner;
    if (owner.uid.empty() || owner.name.empty() || owner.kind.empty() ||
        owner.api_version.empty()) {
      return absl::InvalidArgumentError(
          "owner: api_version, kind, name and uid are required (a controller owner reference)");
    }
    if (owner.api_version == "v1" && owner.kind == "Node") {
      return absl::InvalidArgumentError(
          "owner: a Node owns a node plugin's slices (kdp::DraRunner), not a cluster publisher's");
    }
  }
  if (options.api_timeout <= absl::ZeroDuration() ||
      options.initial_backoff <= absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff) {
    return absl::InvalidArgumentError(
        "api_timeout and initial_backoff must be positive, max_backoff at least initial_backoff");
  }
  return absl::OkStatus();
}

ClusterSlicePublisher::ClusterSlicePublisher(const ResourceSlicePublisherOptions& options,
                                             std::shared_ptr<KubeClient> client,
                                             std::function<absl::Time()> now)
    : publisher_({.driver = options.driver,
                  .node_name = {},
                  .owner = options.owner,
                  .initial_backoff = options.initial_backoff,
                  .max_backoff = options.max_backoff,
                  .on_attempt = {},
                  .now = std::move(now)},
                 std::move(client)) {}

absl::Status ClusterSlicePublisher::Publish(std::vector<DraPool> pools) {
  KDP_RETURN_IF_ERROR(ValidateDraPools(pools, PoolScope::kCluster));
  absl::MutexLock lock(&mu_);
  if (stopped_) return absl::FailedPreconditionError("ResourceSlicePublisher was stopped");
  if (!started_) {
    started_ = true;
    publisher_.Start(std::move(pools));
  } else {
    publisher_.Publish(std::move(pools));
  }
  return absl::OkStatus();
}

void ClusterSlicePublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  publisher_.Stop();
}

bool ClusterSlicePublisher::WaitUntilPublished(absl::Duration timeout) const {
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return false;
  }
  return publisher_.WaitUntilPublished(timeout);
}

absl::StatusOr<std::unique_ptr<ResourceSlicePublisher>> ResourceSlicePublisherFactory::Make(
    const ResourceSlicePublisherOptions& options, std::shared_ptr<KubeClient> client,
    std::function<absl::Time()> now) {
  KDP_RETURN_IF_ERROR(ValidatePublisherOptions(options));
  if (client == nullptr) return absl::InvalidArgumentError("null KubeClient");
  return std::unique_ptr<ResourceSlicePublisher>(new ResourceSlicePublisher(
      std::make_unique<ClusterSlicePublisher>(options, std::move(client), std::move(now))));
}

}  // namespace kdp::internal

namespace kdp {

absl::StatusOr<std::unique_ptr<ResourceSlicePublisher>> ResourceSlicePublisher::Create(
    ResourceSlicePublisherOptions options) {
  KDP_RETURN_IF_ERROR(internal::ValidatePublisherOptions(options));
  KDP_ASSIGN_OR_RETURN(internal::KubeConfig config,
                       internal::ResolveKubeConfig(options.kubeconfig));
  config.timeout = options.api_timeout;
  KDP_ASSIGN_OR_RETURN(std::unique_ptr<internal::KubeClient> client,
                       internal::KubeClient::Create(std::move(config)));
  return internal::ResourceSlicePublisherFactory::Make(
      options, std::shared_ptr<internal::KubeClient>(std::move(client)));
}

ResourceSlicePublisher::ResourceSlicePublisher(
    std::unique_ptr<internal::ClusterSlicePublisher> impl)
    : impl_(std::move(impl)) {}

ResourceSlicePublisher::~ResourceSlicePublisher() { Stop(); }

absl::Status ResourceSlicePublisher::Publish(std::vector<DraPool> pools) {
  return impl_->Publish(std::move(pools));
}

void ResourceSlicePublisher::Stop() { impl_->Stop(); }

bool ResourceSlicePublisher::WaitUntilPublished(absl::Duration timeout) const {
  return impl_->WaitUntilPublished(timeout);
}

}  // namespace kdp
