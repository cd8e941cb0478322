// The schema table of the OpenAPI v3 documents (openapi.h): one line per schema or property, kept
// as data so that the schemas read like the API they describe. openapi.cc expands it into
// kube-openapi's JSON once per document. Descriptions are upstream's doc comments (k8s.io/api
// core/v1 and resource/v1 types.go, apimachinery meta/v1), shortened to their first sentences.
//
// The fields are those manifests commonly carry: kubectl 1.30+ builds strategic merge patches for
// core kinds by walking these schemas and warns (then falls back to its compiled-in types) on a
// map or list field they do not describe. Patch strategies and list types are upstream's, so a
// patch kubectl builds from them means what the server's merge of it does.
//
// Format (the literal is exempt from the column limit, as the style guide allows raw strings):
//   <schema> [<extra>...] | <description>             opens a schema
//     <property> <type> [<extra>...] | <description>  (indented) a property of the open schema
// <schema> and named types are short names: core.X (io.k8s.api.core.v1.X), meta.X
// (io.k8s.apimachinery.pkg.apis.meta.v1.X), res.X (io.k8s.api.resource.<version>.X, for each
// served version), ev.X (io.k8s.api.events.v1.X), Quantity, IntOrString, RawExtension.
// <type>: string | boolean | int32 | int64 | object (free-form) | []T | {}T (a map to T) | a named
// type.
// <extra>: atomic | set (x-kubernetes-list-type); map:k1,k2 (a list map with those keys);
// merge:k and retain:k (a list map keyed by k with patch merge key k and strategy merge, or
// merge,retainKeys); mergekey:k (merge key and strategy only); strategy:merge; enum:A|B;
// mapatomic (x-kubernetes-map-type atomic); required:a,b (on a schema).
// Descriptions @apiVersion, @kind and @metadata stand for the standard TypeMeta/ObjectMeta texts.
#include <string_view>

#include "manager/src/controlplane/resourceapi/openapi.h"

namespace kdp::manager::resourceapi::openapi_internal {
namespace {

constexpr char kTable[] =
    // k8s.io/apimachinery/pkg/apis/meta/v1.
    R"table(
meta.ObjectMeta | ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.
  name string | Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Cannot be updated.
  generateName string | GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided.
  namespace string | Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the "default" namespace. Must be a DNS_LABEL. Cannot be updated.
  uid string | UID is the unique in time and space value for this object. Populated by the system. Read-only.
  resourceVersion string | An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. Populated by the system. Read-only.
  generation int64 | A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.
  creationTimestamp meta.Time | CreationTimestamp is a timestamp representing the server time when this object was created. Populated by the system. Read-only. Null for lists.
  deletionTimestamp meta.Time | DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. Set by the server when a graceful deletion is requested. Read-only.
  deletionGracePeriodSeconds int64 | Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. Read-only.
  labels {}string | Map of string keys and values that can be used to organize and categorize (scope and select) objects.
  annotations {}string | Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata.
  ownerReferences []meta.OwnerReference merge:uid | List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected.
  finalizers []string strategy:merge set | Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list.
  managedFields []object atomic | ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping.
meta.OwnerReference required:apiVersion,kind,name,uid mapatomic | OwnerReference contains enough information to let you identify an owning object.
  apiVersion string | API version of the referent.
  kind string | Kind of the referent.
  name string | Name of the referent.
  uid string | UID of the referent.
  controller boolean | If true, this reference points to the managing controller.
  blockOwnerDeletion boolean | If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.
meta.ListMeta | ListMeta describes metadata that synthetic resources must have, including lists and various status objects.
  resourceVersion string | String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed.
  continue string | continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available.
  remainingItemCount int64 | remainingItemCount is the number of subsequent items in the list which are not included in this list response.
meta.Condition required:type,status,lastTransitionTime,reason,message | Condition contains details for one aspect of the current state of this API Resource.
  type string | type of condition in CamelCase or in foo.example.com/CamelCase.
  status string | status of the condition, one of True, False, Unknown.
  observedGeneration int64 | observedGeneration represents the .metadata.generation that the condition was set based upon.
  lastTransitionTime meta.Time | lastTransitionTime is the last time the condition transitioned from one status to another.
  reason string | reason contains a programmatic identifier indicating the reason for the condition's last transition.
  message string | message is a human readable message indicating details about the transition.
meta.Status | Status is a return value for calls that don't return other objects.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ListMeta | Standard list metadata.
  status string | Status of the operation. One of: "Success" or "Failure".
  message string | A human-readable description of the status of this operation.
  reason string | A machine-readable description of why this operation is in the "Failure" status.
  details object | Extended data associated with the reason.
  code int32 | Suggested HTTP return code for this status, 0 if not set.
meta.DeleteOptions | DeleteOptions may be provided when deleting an API object.
  apiVersion string | @apiVersion
  kind string | @kind
  dryRun []string atomic | When present, indicates that modifications should not be persisted.
  gracePeriodSeconds int64 | The duration in seconds before the object should be deleted.
  preconditions meta.Preconditions | Must be fulfilled before a deletion is carried out.
  propagationPolicy string | Whether and how garbage collection will be performed.
  orphanDependents boolean | Deprecated: please use the PropagationPolicy.
meta.Preconditions | Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.
  resourceVersion string | Specifies the target ResourceVersion
  uid string | Specifies the target UID.
meta.WatchEvent required:type,object | Event represents a single event to a watched resource.
  type string | Type of the event: ADDED, MODIFIED, DELETED, ERROR or BOOKMARK.
  object RawExtension | Object is the object of the event: the new state of the object for ADDED and MODIFIED, its last state for DELETED, a Status for ERROR.
)table"
    // k8s.io/api/core/v1: the served core kinds and the types they use.
    R"table(
core.Pod | Pod is a collection of containers that can run on a host. This resource is created by clients and scheduled onto hosts.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | @metadata
  spec core.PodSpec | Specification of the desired behavior of the pod.
  status core.PodStatus | Most recently observed status of the pod. This data may not be up to date. Populated by the system. Read-only.
core.PodSpec required:containers | PodSpec is a description of a pod.
  volumes []core.Volume retain:name | List of volumes that can be mounted by containers belonging to the pod.
  initContainers []core.Container merge:name | List of initialization containers belonging to the pod. Init containers are executed in order prior to containers being started.
  containers []core.Container merge:name | List of containers belonging to the pod. Containers cannot currently be added or removed. There must be at least one container in a Pod. Cannot be updated.
  restartPolicy string enum:Always|Never|OnFailure | Restart policy for all containers within the pod. One of Always, OnFailure, Never. Default to Always.
  terminationGracePeriodSeconds int64 | Optional duration in seconds the pod needs to terminate gracefully. Defaults to 30 seconds.
  activeDeadlineSeconds int64 | Optional duration in seconds the pod may be active on the node relative to StartTime before the system will actively try to mark it failed and kill associated containers.
  dnsPolicy string enum:ClusterFirst|ClusterFirstWithHostNet|Default|None | Set DNS policy for the pod. Defaults to "ClusterFirst".
  nodeSelector {}string mapatomic | NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node.
  serviceAccountName string | ServiceAccountName is the name of the ServiceAccount to use to run this pod.
  automountServiceAccountToken boolean | AutomountServiceAccountToken indicates whether a service account token should be automatically mounted.
  nodeName string | NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod.
  hostNetwork boolean | Host networking requested for this pod. Use the host's network namespace. Default to false.
  hostPID boolean | Use the host's pid namespace. Optional: Default to false.
  hostIPC boolean | Use the host's ipc namespace. Optional: Default to false.
  shareProcessNamespace boolean | Share a single process namespace between all of the containers in a pod.
  securityContext core.PodSecurityContext | SecurityContext holds pod-level security attributes and common container settings.
  imagePullSecrets []core.LocalObjectReference merge:name | ImagePullSecrets is an optional list of references to secrets in the same namespace to use for pulling any of the images used by this PodSpec.
  hostname string | Specifies the hostname of the Pod.
  subdomain string | If specified, the fully qualified Pod hostname will be "<hostname>.<subdomain>.<pod namespace>.svc.<cluster domain>".
  affinity core.Affinity | If specified, the pod's scheduling constraints
  schedulerName string | If specified, the pod will be dispatched by specified scheduler. If not specified, the pod will be dispatched by default scheduler.
  tolerations []core.Toleration atomic | If specified, the pod's tolerations.
  priorityClassName string | If specified, indicates the pod's priority.
  priority int32 | The priority value. The higher the value, the higher the priority.
  runtimeClassName string | RuntimeClassName refers to a RuntimeClass object in the node.k8s.io group, which should be used to run this pod.
  enableServiceLinks boolean | EnableServiceLinks indicates whether information about services should be injected into pod's environment variables.
  overhead {}Quantity | Overhead represents the resource overhead associated with running a pod for a given RuntimeClass.
  resourceClaims []core.PodResourceClaim retain:name | ResourceClaims defines which ResourceClaims must be allocated and reserved before the Pod is allowed to start. The resources will be made available to those containers which consume them by name. This field is immutable.
core.Container required:name | A single application container that you want to run within a pod.
  name string | Name of the container specified as a DNS_LABEL. Each container in a pod must have a unique name (DNS_LABEL). Cannot be updated.
  image string | Container image name.
  command []string atomic | Entrypoint array. Not executed within a shell. The container image's ENTRYPOINT is used if this is not provided. Cannot be updated.
  args []string atomic | Arguments to the entrypoint. The container image's CMD is used if this is not provided. Cannot be updated.
  workingDir string | Container's working directory. Cannot be updated.
  ports []core.ContainerPort mergekey:containerPort map:containerPort,protocol | List of ports to expose from the container. Cannot be updated.
  envFrom []core.EnvFromSource atomic | List of sources to populate environment variables in the container. Cannot be updated.
  env []core.EnvVar merge:name | List of environment variables to set in the container. Cannot be updated.
  resources core.ResourceRequirements | Compute Resources required by this container. Cannot be updated.
  restartPolicy string | RestartPolicy defines the restart behavior of individual containers in a pod. The only allowed value is "Always", for init containers that run as sidecars.
  volumeMounts []core.VolumeMount merge:mountPath | Pod volumes to mount into the container's filesystem. Cannot be updated.
  volumeDevices []core.VolumeDevice merge:devicePath | volumeDevices is the list of block devices to be used by the container.
  livenessProbe core.Probe | Periodic probe of container liveness. Container will be restarted if the probe fails.
  readinessProbe core.Probe | Periodic probe of container service readiness. Container will be removed from service endpoints if the probe fails.
  startupProbe core.Probe | StartupProbe indicates that the Pod has successfully initialized.
  lifecycle object | Actions that the management system should take in response to container lifecycle events.
  terminationMessagePath string | Path at which the file to which the container's termination message will be written is mounted into the container's filesystem.
  terminationMessagePolicy string enum:FallbackToLogsOnError|File | Indicate how the termination message should be populated.
  imagePullPolicy string enum:Always|IfNotPresent|Never | Image pull policy. One of Always, Never, IfNotPresent. Defaults to Always if :latest tag is specified, or IfNotPresent otherwise. Cannot be updated.
  securityContext core.SecurityContext | SecurityContext defines the security options the container should be run with.
  stdin boolean | Whether this container should allocate a buffer for stdin in the container runtime.
  stdinOnce boolean | Whether the container runtime should close the stdin channel after it has been opened by a single attach.
  tty boolean | Whether this container should allocate a TTY for itself.
core.ContainerPort required:containerPort | ContainerPort represents a network port in a single container.
  name string | If specified, this must be an IANA_SVC_NAME and unique within the pod.
  containerPort int32 | Number of port to expose on the pod's IP address.
  hostPort int32 | Number of port to expose on the host.
  hostIP string | What host IP to bind the external port to.
  protocol string enum:SCTP|TCP|UDP | Protocol for port. Must be UDP, TCP, or SCTP. Defaults to "TCP".
core.EnvVar required:name | EnvVar represents an environment variable present in a Container.
  name string | Name of the environment variable.
  value string | Variable references $(VAR_NAME) are expanded using the previously defined environment variables in the container and any service environment variables.
  valueFrom core.EnvVarSource | Source for the environment variable's value. Cannot be used if value is not empty.
core.EnvVarSource | EnvVarSource represents a source for the value of an EnvVar.
  fieldRef core.ObjectFieldSelector | Selects a field of the pod.
  resourceFieldRef core.ResourceFieldSelector | Selects a resource of the container: only resources limits and requests are currently supported.
  configMapKeyRef core.KeySelector | Selects a key of a ConfigMap.
  secretKeyRef core.KeySelector | Selects a key of a secret in the pod's namespace
core.ObjectFieldSelector required:fieldPath mapatomic | ObjectFieldSelector selects an APIVersioned field of an object.
  apiVersion string | Version of the schema the FieldPath is written in terms of.
  fieldPath string | Path of the field to select in the specified API version.
core.ResourceFieldSelector required:resource mapatomic | ResourceFieldSelector represents container resources (cpu, memory) and their output format
  containerName string | Container name: required for volumes, optional for env vars
  resource string | Required: resource to select
  divisor Quantity | Specifies the output format of the exposed resources, defaults to "1"
core.KeySelector required:key mapatomic | Selects a key from a ConfigMap or a Secret.
  name string | Name of the referent.
  key string | The key to select.
  optional boolean | Specify whether the ConfigMap or the Secret or its key must be defined
core.EnvFromSource | EnvFromSource represents the source of a set of ConfigMaps or Secrets
  prefix string | Optional text to prepend to the name of each environment variable.
  configMapRef core.LocalObjectReference | The ConfigMap to select from
  secretRef core.LocalObjectReference | The Secret to select from
core.LocalObjectReference mapatomic | LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.
  name string | Name of the referent.
core.ResourceRequirements | ResourceRequirements describes the compute resource requirements.
  limits {}Quantity | Limits describes the maximum amount of compute resources allowed.
  requests {}Quantity | Requests describes the minimum amount of compute resources required. If Requests is omitted for a container, it defaults to Limits if that is explicitly specified.
  claims []core.ResourceClaim map:name | Claims lists the names of resources, defined in spec.resourceClaims, that are used by this container. This field is immutable. It can only be set for containers.
core.ResourceClaim required:name | ResourceClaim references one entry in PodSpec.ResourceClaims.
  name string | Name must match the name of one entry in pod.spec.resourceClaims of the Pod where this field is used. It makes that resource available inside a container.
  request string | Request is the name chosen for a request in the referenced claim. If empty, everything from the claim is made available, otherwise only the result of this request.
core.VolumeMount required:name,mountPath | VolumeMount describes a mounting of a Volume within a container.
  name string | This must match the Name of a Volume.
  readOnly boolean | Mounted read-only if true, read-write otherwise (false or unspecified). Defaults to false.
  mountPath string | Path within the container at which the volume should be mounted. Must not contain ':'.
  subPath string | Path within the volume from which the container's volume should be mounted. Defaults to "" (volume's root).
  mountPropagation string enum:Bidirectional|HostToContainer|None | mountPropagation determines how mounts are propagated from the host to container and the other way around.
core.VolumeDevice required:name,devicePath | volumeDevice describes a mapping of a raw block device within a container.
  name string | name must match the name of a persistentVolumeClaim in the pod
  devicePath string | devicePath is the path inside of the container that the device will be mapped to.
core.Probe | Probe describes a health check to be performed against a container to determine whether it is alive or ready to receive traffic.
  exec core.ExecAction | Exec specifies a command to execute in the container.
  httpGet core.HTTPGetAction | HTTPGet specifies an HTTP GET request to perform.
  tcpSocket core.TCPSocketAction | TCPSocket specifies a connection to a TCP port.
  initialDelaySeconds int32 | Number of seconds after the container has started before liveness probes are initiated.
  timeoutSeconds int32 | Number of seconds after which the probe times out. Defaults to 1 second.
  periodSeconds int32 | How often (in seconds) to perform the probe. Default to 10 seconds.
  successThreshold int32 | Minimum consecutive successes for the probe to be considered successful after having failed. Defaults to 1.
  failureThreshold int32 | Minimum consecutive failures for the probe to be considered failed after having succeeded. Defaults to 3.
core.ExecAction | ExecAction describes a "run in container" action.
  command []string atomic | Command is the command line to execute inside the container.
core.HTTPGetAction required:port | HTTPGetAction describes an action based on HTTP Get requests.
  path string | Path to access on the HTTP server.
  port IntOrString | Name or number of the port to access on the container.
  host string | Host name to connect to, defaults to the pod IP.
  scheme string enum:HTTP|HTTPS | Scheme to use for connecting to the host. Defaults to HTTP.
core.TCPSocketAction required:port | TCPSocketAction describes an action based on opening a socket
  port IntOrString | Number or name of the port to access on the container.
  host string | Optional: Host name to connect to, defaults to the pod IP.
core.SecurityContext | SecurityContext holds security configuration that will be applied to a container.
  capabilities core.Capabilities | The capabilities to add/drop when running containers.
  privileged boolean | Run container in privileged mode. Defaults to false.
  runAsUser int64 | The UID to run the entrypoint of the container process.
  runAsGroup int64 | The GID to run the entrypoint of the container process.
  runAsNonRoot boolean | Indicates that the container must run as a non-root user.
  readOnlyRootFilesystem boolean | Whether this container has a read-only root filesystem. Default is false.
  allowPrivilegeEscalation boolean | AllowPrivilegeEscalation controls whether a process can gain more privileges than its parent process.
core.Capabilities | Adds and removes POSIX capabilities from running containers.
  add []string atomic | Added capabilities
  drop []string atomic | Removed capabilities
core.PodSecurityContext | PodSecurityContext holds pod-level security attributes and common container settings.
  runAsUser int64 | The UID to run the entrypoint of the container process.
  runAsGroup int64 | The GID to run the entrypoint of the container process.
  runAsNonRoot boolean | Indicates that the container must run as a non-root user.
  fsGroup int64 | A special supplemental group that applies to all containers in a pod.
  supplementalGroups []int64 atomic | A list of groups applied to the first process run in each container, in addition to the container's primary GID.
core.Toleration | The pod this Toleration is attached to tolerates any taint that matches the triple <key,value,effect> using the matching operator <operator>.
  key string | Key is the taint key that the toleration applies to. Empty means match all taint keys.
  operator string enum:Equal|Exists | Operator represents a key's relationship to the value. Defaults to Equal.
  value string | Value is the taint value the toleration matches to.
  effect string enum:NoExecute|NoSchedule|PreferNoSchedule | Effect indicates the taint effect to match. Empty means match all taint effects.
  tolerationSeconds int64 | TolerationSeconds represents the period of time the toleration (which must be of effect NoExecute) tolerates the taint.
core.Volume required:name | Volume represents a named volume in a pod that may be accessed by any container in the pod.
  name string | name of the volume. Must be a DNS_LABEL and unique within the pod.
  hostPath core.HostPathVolumeSource | hostPath represents a pre-existing file or directory on the host machine that is directly exposed to the container.
  emptyDir core.EmptyDirVolumeSource | emptyDir represents a temporary directory that shares a pod's lifetime.
  configMap core.ConfigMapVolumeSource | configMap represents a configMap that should populate this volume
  secret core.SecretVolumeSource | secret represents a secret that should populate this volume.
  persistentVolumeClaim core.PersistentVolumeClaimVolumeSource | persistentVolumeClaimVolumeSource represents a reference to a PersistentVolumeClaim in the same namespace.
core.HostPathVolumeSource required:path | Represents a host path mapped into a pod.
  path string | path of the directory on the host.
  type string | type for HostPath Volume. Defaults to "".
core.EmptyDirVolumeSource | Represents an empty directory for a pod.
  medium string | medium represents what type of storage medium should back this directory.
  sizeLimit Quantity | sizeLimit is the total amount of local storage required for this EmptyDir volume.
core.ConfigMapVolumeSource | Adapts a ConfigMap into a volume.
  name string | Name of the referent.
  items []core.KeyToPath atomic | items, if unspecified, each key-value pair in the Data field of the referenced ConfigMap will be projected into the volume as a file.
  defaultMode int32 | defaultMode is optional: mode bits used to set permissions on created files by default.
  optional boolean | optional specify whether the ConfigMap or its keys must be defined
core.SecretVolumeSource | Adapts a Secret into a volume.
  secretName string | secretName is the name of the secret in the pod's namespace to use.
  items []core.KeyToPath atomic | items If unspecified, each key-value pair in the Data field of the referenced Secret will be projected into the volume as a file.
  defaultMode int32 | defaultMode is Optional: mode bits used to set permissions on created files by default.
  optional boolean | optional field specify whether the Secret or its keys must be defined
core.KeyToPath required:key,path | Maps a string key to a path within a volume.
  key string | key is the key to project.
  path string | path is the relative path of the file to map the key to.
  mode int32 | mode is Optional: mode bits used to set permissions on this file.
core.PersistentVolumeClaimVolumeSource required:claimName | PersistentVolumeClaimVolumeSource references the user's PVC in the same namespace.
  claimName string | claimName is the name of a PersistentVolumeClaim in the same namespace as the pod using this volume.
  readOnly boolean | readOnly Will force the ReadOnly setting in VolumeMounts. Default false.
core.PodResourceClaim required:name | PodResourceClaim references exactly one ResourceClaim, either directly or by naming a ResourceClaimTemplate which is then turned into a ResourceClaim for the pod.
  name string | Name uniquely identifies this resource claim inside the pod. This must be a DNS_LABEL.
  resourceClaimName string | ResourceClaimName is the name of a ResourceClaim object in the same namespace as this pod. Exactly one of ResourceClaimName and ResourceClaimTemplateName must be set.
  resourceClaimTemplateName string | ResourceClaimTemplateName is the name of a ResourceClaimTemplate object in the same namespace as this pod. The template will be used to create a new ResourceClaim, which will be bound to this pod. Exactly one of ResourceClaimName and ResourceClaimTemplateName must be set.
core.Affinity | Affinity is a group of affinity scheduling rules.
  nodeAffinity core.NodeAffinity | Describes node affinity scheduling rules for the pod.
  podAffinity object | Describes pod affinity scheduling rules (e.g. co-locate this pod in the same node, zone, etc. as some other pod(s)).
  podAntiAffinity object | Describes pod anti-affinity scheduling rules (e.g. avoid putting this pod in the same node, zone, etc. as some other pod(s)).
core.NodeAffinity | Node affinity is a group of node affinity scheduling rules.
  requiredDuringSchedulingIgnoredDuringExecution core.NodeSelector | If the affinity requirements specified by this field are not met at scheduling time, the pod will not be scheduled onto the node.
  preferredDuringSchedulingIgnoredDuringExecution []core.PreferredSchedulingTerm atomic | The scheduler will prefer to schedule pods to nodes that satisfy the affinity expressions specified by this field.
core.PreferredSchedulingTerm required:weight,preference | An empty preferred scheduling term matches all objects with implicit weight 0 (i.e. it's a no-op).
  weight int32 | Weight associated with matching the corresponding nodeSelectorTerm, in the range 1-100.
  preference core.NodeSelectorTerm | A node selector term, associated with the corresponding weight.
core.NodeSelector required:nodeSelectorTerms mapatomic | A node selector represents the union of the results of one or more label queries over a set of nodes; that is, it represents the OR of the selectors represented by the node selector terms.
  nodeSelectorTerms []core.NodeSelectorTerm atomic | Required. A list of node selector terms. The terms are ORed.
core.NodeSelectorTerm mapatomic | A null or empty node selector term matches no objects. The requirements of them are ANDed.
  matchExpressions []core.NodeSelectorRequirement atomic | A list of node selector requirements by node's labels.
  matchFields []core.NodeSelectorRequirement atomic | A list of node selector requirements by node's fields.
core.NodeSelectorRequirement required:key,operator | A node selector requirement is a selector that contains values, a key, and an operator that relates the key and values.
  key string | The label key that the selector applies to.
  operator string enum:DoesNotExist|Exists|Gt|In|Lt|NotIn | Represents a key's relationship to a set of values.
  values []string atomic | An array of string values.
core.PodStatus | PodStatus represents information about the status of a pod. Status may trail the actual state of a system.
  phase string enum:Failed|Pending|Running|Succeeded|Unknown | The phase of a Pod is a simple, high-level summary of where the Pod is in its lifecycle.
  conditions []core.PodCondition merge:type | Current service state of pod.
  message string | A human readable message indicating details about why the pod is in this condition.
  reason string | A brief CamelCase message indicating details about why the pod is in this state.
  nominatedNodeName string | nominatedNodeName is set only when this pod preempts other pods on the node.
  hostIP string | hostIP holds the IP address of the host to which the pod is assigned.
  podIP string | podIP address allocated to the pod.
  startTime meta.Time | RFC 3339 date and time at which the object was acknowledged by the Kubelet.
  initContainerStatuses []core.ContainerStatus atomic | Statuses of init containers in this pod.
  containerStatuses []core.ContainerStatus atomic | Statuses of containers in this pod. Each container in the pod should have at most one status in this list.
  qosClass string enum:BestEffort|Burstable|Guaranteed | The Quality of Service (QOS) classification assigned to the pod based on resource requirements.
  resourceClaimStatuses []core.PodResourceClaimStatus retain:name | Status of resource claims.
core.PodCondition required:type,status | PodCondition contains details for the current condition of this pod.
  type string | Type is the type of the condition.
  status string | Status is the status of the condition. Can be True, False, Unknown.
  lastProbeTime meta.Time | Last time we probed the condition.
  lastTransitionTime meta.Time | Last time the condition transitioned from one status to another.
  reason string | Unique, one-word, CamelCase reason for the condition's last transition.
  message string | Human-readable message indicating details about last transition.
core.ContainerStatus required:name,ready,restartCount,image,imageID | ContainerStatus contains details for the current status of this container.
  name string | Name is a DNS_LABEL representing the unique name of the container.
  state core.ContainerState | State holds details about the container's current condition.
  lastState core.ContainerState | LastTerminationState holds the last termination state of the container.
  ready boolean | Ready specifies whether the container is currently passing its readiness check.
  restartCount int32 | RestartCount holds the number of times the container has been restarted.
  image string | Image is the name of container image that the container is running.
  imageID string | ImageID is the image ID of the container's image.
  containerID string | ContainerID is the ID of the container in the format '<type>://<container_id>'.
  started boolean | Started indicates whether the container has finished its postStart lifecycle hook and passed its startup probe.
core.ContainerState | ContainerState holds a possible state of container. Only one of its members may be specified.
  waiting core.ContainerStateWaiting | Details about a waiting container
  running core.ContainerStateRunning | Details about a running container
  terminated core.ContainerStateTerminated | Details about a terminated container
core.ContainerStateWaiting | ContainerStateWaiting is a waiting state of a container.
  reason string | (brief) reason the container is not yet running.
  message string | Message regarding why the container is not yet running.
core.ContainerStateRunning | ContainerStateRunning is a running state of a container.
  startedAt meta.Time | Time at which the container was last (re-)started
core.ContainerStateTerminated required:exitCode | ContainerStateTerminated is a terminated state of a container.
  exitCode int32 | Exit status from the last termination of the container
  signal int32 | Signal from the last termination of the container
  reason string | (brief) reason from the last termination of the container
  message string | Message regarding the last termination of the container
  startedAt meta.Time | Time at which previous execution of the container started
  finishedAt meta.Time | Time at which the container last terminated
  containerID string | Container's ID in the format '<type>://<container_id>'
core.PodResourceClaimStatus required:name | PodResourceClaimStatus is stored in the PodStatus for each PodResourceClaim which references a ResourceClaimTemplate.
  name string | Name uniquely identifies this resource claim inside the pod. This must match the name of an entry in pod.spec.resourceClaims.
  resourceClaimName string | ResourceClaimName is the name of the ResourceClaim that was generated for the Pod in the namespace of the Pod. If this is unset, then generating a ResourceClaim was not necessary.
core.Node | Node is a worker node in Kubernetes. Each node will have a unique identifier in the cache (i.e. in etcd).
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | @metadata
  spec core.NodeSpec | Spec defines the behavior of a node.
  status core.NodeStatus | Most recently observed status of the node. Populated by the system. Read-only.
core.NodeSpec | NodeSpec describes the attributes that a node is created with.
  podCIDR string | PodCIDR represents the pod IP range assigned to the node.
  podCIDRs []string strategy:merge set | podCIDRs represents the IP ranges assigned to the node for usage by Pods on that node.
  providerID string | ID of the node assigned by the cloud provider.
  unschedulable boolean | Unschedulable controls node schedulability of new pods. By default, node is schedulable.
  taints []core.Taint atomic | If specified, the node's taints.
core.Taint required:key,effect | The node this Taint is attached to has the "effect" on any pod that does not tolerate the Taint.
  key string | Required. The taint key to be applied to a node.
  value string | The taint value corresponding to the taint key.
  effect string enum:NoExecute|NoSchedule|PreferNoSchedule | Required. The effect of the taint on pods that do not tolerate the taint.
  timeAdded meta.Time | TimeAdded represents the time at which the taint was added.
core.NodeStatus | NodeStatus is information about the current status of a node.
  capacity {}Quantity | Capacity represents the total resources of a node.
  allocatable {}Quantity | Allocatable represents the resources of a node that are available for scheduling. Defaults to Capacity.
  conditions []core.NodeCondition merge:type | Conditions is an array of current observed node conditions.
  addresses []core.NodeAddress mergekey:type atomic | List of addresses reachable to the node.
  daemonEndpoints object | Endpoints of daemons running on the Node.
  nodeInfo core.NodeSystemInfo | Set of ids/uuids to uniquely identify the node.
core.NodeCondition required:type,status | NodeCondition contains condition information for a node.
  type string | Type of node condition.
  status string | Status of the condition, one of True, False, Unknown.
  lastHeartbeatTime meta.Time | Last time we got an update on a given condition.
  lastTransitionTime meta.Time | Last time the condition transit from one status to another.
  reason string | (brief) reason for the condition's last transition.
  message string | Human readable message indicating details about last transition.
core.NodeAddress required:type,address | NodeAddress contains information for the node's address.
  type string | Node address type, one of Hostname, ExternalIP or InternalIP.
  address string | The node address.
core.NodeSystemInfo | NodeSystemInfo is a set of ids/uuids to uniquely identify the node.
  machineID string | MachineID reported by the node.
  systemUUID string | SystemUUID reported by the node.
  bootID string | Boot ID reported by the node.
  kernelVersion string | Kernel Version reported by the node from 'uname -r'.
  osImage string | OS Image reported by the node from /etc/os-release.
  containerRuntimeVersion string | ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).
  kubeletVersion string | Kubelet Version reported by the node.
  kubeProxyVersion string | Deprecated: KubeProxy Version reported by the node.
  operatingSystem string | The Operating System reported by the node
  architecture string | The Architecture reported by the node
core.Namespace | Namespace provides a scope for Names. Use of multiple namespaces is optional.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | @metadata
  spec core.NamespaceSpec | Spec defines the behavior of the Namespace.
  status core.NamespaceStatus | Status describes the current status of a Namespace.
core.NamespaceSpec | NamespaceSpec describes the attributes on a Namespace.
  finalizers []string atomic | Finalizers is an opaque list of values that must be empty to permanently remove object from storage.
core.NamespaceStatus | NamespaceStatus is information about the current status of a Namespace.
  phase string enum:Active|Terminating | Phase is the current lifecycle phase of the namespace.
  conditions []core.NamespaceCondition merge:type | Represents the latest available observations of a namespace's current state.
core.NamespaceCondition required:type,status | NamespaceCondition contains details about state of namespace.
  type string | Type of namespace controller condition.
  status string | Status of the condition, one of True, False, Unknown.
  lastTransitionTime meta.Time | Last time the condition transitioned from one status to another.
  reason string | Unique, one-word, CamelCase reason for the condition's last transition.
  message string | Human-readable message indicating details about last transition.
core.Event required:metadata,involvedObject | Event is a report of an event somewhere in the cluster. Events have a limited retention time and triggers and messages may evolve with time. Events should be treated as informative, best-effort, supplemental data.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | @metadata
  involvedObject core.ObjectReference | The object that this event is about.
  reason string | This should be a short, machine understandable string that gives the reason for the transition into the object's current status.
  message string | A human-readable description of the status of this operation.
  source core.EventSource | The component reporting this event. Should be a short machine understandable string.
  firstTimestamp meta.Time | The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)
  lastTimestamp meta.Time | The time at which the most recent occurrence of this event was recorded.
  count int32 | The number of times this event has occurred.
  type string | Type of this event (Normal, Warning), new types could be added in the future
  eventTime meta.MicroTime | Time when this Event was first observed.
  series object | Data about the Event series this event represents or nil if it's a singleton Event.
  action string | What action was taken/failed regarding to the Regarding object.
  related core.ObjectReference | Optional secondary object for more complex actions.
  reportingComponent string | Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`.
  reportingInstance string | ID of the controller instance, e.g. `kubelet-xyzf`.
core.ObjectReference mapatomic | ObjectReference contains enough information to let you inspect or modify the referred object.
  kind string | Kind of the referent.
  namespace string | Namespace of the referent.
  name string | Name of the referent.
  uid string | UID of the referent.
  apiVersion string | API version of the referent.
  resourceVersion string | Specific resourceVersion to which this reference is made, if any.
  fieldPath string | If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.
core.EventSource | EventSource contains information for an event.
  component string | Component from which the event is generated.
  host string | Node name on which the event is generated.
ev.Event required:eventTime | Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system. Events have a limited retention time and triggers and messages may evolve with time. Events should be treated as informative, best-effort, supplemental data.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | @metadata
  eventTime meta.MicroTime | eventTime is the time when this Event was first observed. It is required.
  series ev.EventSeries | series is data about the Event series this event represents or nil if it's a singleton Event.
  reportingController string | reportingController is the name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`. This field cannot be empty for new Events.
  reportingInstance string | reportingInstance is the ID of the controller instance, e.g. `kubelet-xyzf`. This field cannot be empty for new Events and it can have at most 128 characters.
  action string | action is what action was taken/failed regarding to the regarding object. It is machine-readable. This field cannot be empty for new Events and it can have at most 128 characters.
  reason string | reason is why the action was taken. It is human-readable. This field cannot be empty for new Events and it can have at most 128 characters.
  regarding core.ObjectReference | regarding contains the object this Event is about. In most cases it's an Object reporting controller implements, e.g. ReplicaSetController implements ReplicaSets and this event is emitted because it acts on some changes in a ReplicaSet object.
  related core.ObjectReference | related is the optional secondary object for more complex actions. E.g. when regarding object triggers a creation or deletion of related object.
  note string | note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB.
  type string | type is the type of this event (Normal, Warning), new types could be added in the future. It is machine-readable. This field cannot be empty for new Events.
  deprecatedSource core.EventSource | deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.
  deprecatedFirstTimestamp meta.Time | deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.
  deprecatedLastTimestamp meta.Time | deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.
  deprecatedCount int32 | deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type.
ev.EventSeries required:count,lastObservedTime | EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time. How often to update the EventSeries is up to the event reporters.
  count int32 | count is the number of occurrences in this series up to the last heartbeat time.
  lastObservedTime meta.MicroTime | lastObservedTime is the time when last Event from the series was seen before last heartbeat.
)table"
    // k8s.io/api/resource/v1. openapi.cc derives v1beta1's flat DeviceRequest and its Device with
    // a `basic` BasicDevice from these; the other types are the same in both versions.
    R"table(
res.ResourceSlice required:spec | ResourceSlice represents one or more resources in a pool of similar resources, managed by a common driver. A pool may span more than one ResourceSlice, and exactly how many ResourceSlices comprise a pool is determined by the driver.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | Standard object metadata
  spec res.ResourceSliceSpec | Contains the information published by the driver. Changing the spec automatically increments the metadata.generation number.
res.ResourceSliceSpec required:driver,pool | ResourceSliceSpec contains the information published by the driver in one ResourceSlice.
  driver string | Driver identifies the DRA driver providing the capacity information. Must be a DNS subdomain. This field is immutable.
  pool res.ResourcePool | Pool describes the pool that this ResourceSlice belongs to.
  nodeName string | NodeName identifies the node which provides the resources in this pool. Exactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.
  nodeSelector core.NodeSelector | NodeSelector defines which nodes have access to the resources in the pool, when that pool is not limited to a single node.
  allNodes boolean | AllNodes indicates that all nodes have access to the resources in the pool.
  devices []res.Device atomic | Devices lists some or all of the devices in this pool. Must not have more than 128 entries.
  perDeviceNodeSelection boolean | PerDeviceNodeSelection defines whether the access from nodes to resources in the pool is set on the ResourceSlice level or on each device.
  sharedCounters []res.CounterSet atomic | SharedCounters defines a list of counter sets, each of which has a name and a list of counters available.
res.ResourcePool required:name,generation,resourceSliceCount | ResourcePool describes the pool that ResourceSlices belong to.
  name string | Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. This field is immutable.
  generation int64 | Generation tracks the change in a pool over time. Consumers of ResourceSlices should only consider resources from the pool with the highest generation number.
  resourceSliceCount int64 | ResourceSliceCount is the total number of ResourceSlices in the pool at this generation number. Must be greater than zero.
res.Device required:name | Device represents one individual hardware instance that can be selected based on its attributes. Besides the name, exactly one field must be set.
  name string | Name is unique identifier among all devices managed by the driver in the pool. It must be a DNS label.
  attributes {}res.DeviceAttribute | Attributes defines the set of attributes for this device. The name of each attribute must be unique in that set.
  capacity {}res.DeviceCapacity | Capacity defines the set of capacities for this device. The name of each capacity must be unique in that set.
  consumesCounters []res.DeviceCounterConsumption atomic | ConsumesCounters defines a list of references to sharedCounters and the set of counters that the device will consume from those counter sets.
  nodeName string | NodeName identifies the node where the device is available. Must only be set if Spec.PerDeviceNodeSelection is set to true.
  nodeSelector core.NodeSelector | NodeSelector defines the nodes where the device is available. Must only be set if Spec.PerDeviceNodeSelection is set to true.
  allNodes boolean | AllNodes indicates that all nodes have access to the device. Must only be set if Spec.PerDeviceNodeSelection is set to true.
  taints []res.DeviceTaint atomic | If specified, these are the driver-defined taints.
res.DeviceAttribute | DeviceAttribute must have exactly one field set.
  int int64 | IntValue is a number.
  bool boolean | BoolValue is a true/false value.
  string string | StringValue is a string. Must not be longer than 64 characters.
  version string | VersionValue is a semantic version according to semver.org spec 2.0.0. Must not be longer than 64 characters.
res.DeviceCapacity required:value | DeviceCapacity describes a quantity associated with a device.
  value Quantity | Value defines how much of a certain capacity that device has.
res.CounterSet required:name,counters | CounterSet defines a named set of counters that are available to be used by devices defined in the ResourcePool.
  name string | Name defines the name of the counter set. It must be a DNS label.
  counters {}res.Counter | Counters defines the set of counters for this CounterSet.
res.Counter required:value | Counter describes a quantity associated with a device.
  value Quantity | Value defines how much of a certain device counter is available.
res.DeviceCounterConsumption required:counterSet,counters | DeviceCounterConsumption defines a set of counters that a device will consume from a CounterSet.
  counterSet string | CounterSet is the name of the set from which the counters defined will be consumed.
  counters {}res.Counter | Counters defines the counters that will be consumed by the device.
res.DeviceTaint required:key,effect | The device this taint is attached to has the "effect" on any claim which does not tolerate the taint and, through the claim, to pods using the claim.
  key string | The taint key to be applied to a device. Must be a label name.
  value string | The taint value corresponding to the taint key. Must be a label value.
  effect string enum:NoExecute|NoSchedule|None | The effect of the taint on claims that do not tolerate the taint and through such claims on the pods using them.
  timeAdded meta.Time | TimeAdded represents the time at which the taint was added.
res.DeviceClass required:spec | DeviceClass is a vendor- or admin-provided resource that contains device configuration and selectors. It can be referenced in the device requests of a claim to apply these presets. Cluster scoped.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | Standard object metadata
  spec res.DeviceClassSpec | Spec defines what can be allocated and how to configure it. This is mutable.
res.DeviceClassSpec | DeviceClassSpec is used in a [DeviceClass] to define what can be allocated and how to configure it.
  selectors []res.DeviceSelector atomic | Each selector must be satisfied by a device which is claimed via this class.
  config []res.DeviceClassConfiguration atomic | Config defines configuration parameters that apply to each device that is claimed via this class.
  extendedResourceName string | ExtendedResourceName is the extended resource name for the devices of this class.
res.DeviceClassConfiguration | DeviceClassConfiguration is used in DeviceClass.
  opaque res.OpaqueDeviceConfiguration | Opaque provides driver-specific configuration parameters.
res.DeviceSelector | DeviceSelector must have exactly one field set.
  cel res.CELDeviceSelector | CEL contains a CEL expression for selecting a device.
res.CELDeviceSelector required:expression | CELDeviceSelector contains a CEL expression for selecting a device.
  expression string | Expression is a CEL expression which evaluates a single device. It must evaluate to true when the device under consideration satisfies the desired criteria, and false when it does not. Its input is an object named "device" with driver, attributes and capacity.
res.OpaqueDeviceConfiguration required:driver,parameters | OpaqueDeviceConfiguration contains configuration parameters for a driver in a format defined by the driver vendor.
  driver string | Driver is used to determine which kubelet plugin needs to be passed these configuration parameters.
  parameters RawExtension | Parameters can contain arbitrary data. It is the responsibility of the driver developer to handle validation and versioning.
res.ResourceClaim required:spec | ResourceClaim describes a request for access to resources in the cluster, for use by workloads. The status stanza tracks whether this claim has been satisfied and what specific resources have been allocated.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | Standard object metadata
  spec res.ResourceClaimSpec | Spec describes what is being requested and how to configure it. The spec is immutable.
  status res.ResourceClaimStatus | Status describes whether the claim is ready to use and what has been allocated.
res.ResourceClaimSpec | ResourceClaimSpec defines what is being requested in a ResourceClaim and how to configure it.
  devices res.DeviceClaim | Devices defines how to request devices.
res.DeviceClaim | DeviceClaim defines how to request devices with a ResourceClaim.
  requests []res.DeviceRequest atomic | Requests represent individual requests for distinct devices which must all be satisfied. If empty, nothing needs to be allocated.
  constraints []res.DeviceConstraint atomic | These constraints must be satisfied by the set of devices that get allocated for the claim.
  config []res.DeviceClaimConfiguration atomic | This field holds configuration for multiple potential drivers which could satisfy requests in this claim.
res.DeviceRequest required:name | DeviceRequest is a request for devices required for a claim. With FirstAvailable it is also possible to provide a prioritized list of requests.
  name string | Name can be used to reference this request in a pod.spec.containers[].resources.claims entry and in a constraint of the claim. Must be a DNS label.
  exactly res.ExactDeviceRequest | Exactly specifies the details for a single request that must be met exactly for the request to be satisfied. One of Exactly or FirstAvailable must be set.
  firstAvailable []res.DeviceSubRequest atomic | FirstAvailable contains subrequests, of which exactly one will be selected by the scheduler, trying them in order.
res.ExactDeviceRequest required:deviceClassName | ExactDeviceRequest is a request for one or more identical devices.
  deviceClassName string | DeviceClassName references a specific DeviceClass, which can define additional configuration and selectors to be inherited by this request.
  selectors []res.DeviceSelector atomic | Selectors define criteria which must be satisfied by a specific device in order for that device to be considered for this request.
  allocationMode string enum:All|ExactCount | AllocationMode and its related fields define how devices are allocated to satisfy this request: ExactCount (the default, with count) or All.
  count int64 | Count is used only when the count mode is "ExactCount". Must be greater than zero. Defaults to one.
  adminAccess boolean | AdminAccess indicates that this is a claim for administrative access to the device(s).
  tolerations []res.DeviceToleration atomic | If specified, the request's tolerations.
  capacity object | Capacity defines resource requirements against each capacity (consumable capacity, alpha).
res.DeviceSubRequest required:name,deviceClassName | DeviceSubRequest describes a request for device provided in the claim.spec.devices.requests[].firstAvailable array.
  name string | Name can be used to reference this subrequest in the list of constraints or the list of configurations for the claim, as <main request>/<subrequest>.
  deviceClassName string | DeviceClassName references a specific DeviceClass.
  selectors []res.DeviceSelector atomic | Selectors define criteria which must be satisfied by a specific device in order for that device to be considered for this subrequest.
  allocationMode string enum:All|ExactCount | AllocationMode: ExactCount (the default) or All.
  count int64 | Count is used only when the count mode is "ExactCount".
  tolerations []res.DeviceToleration atomic | If specified, the request's tolerations.
  capacity object | Capacity defines resource requirements against each capacity (consumable capacity, alpha).
res.DeviceToleration | The ResourceClaim this DeviceToleration is attached to tolerates any taint that matches the triple <key,value,effect> using the matching operator <operator>.
  key string | Key is the taint key that the toleration applies to.
  operator string enum:Equal|Exists | Operator represents a key's relationship to the value. Defaults to Equal.
  value string | Value is the taint value the toleration matches to.
  effect string enum:NoExecute|NoSchedule|None | Effect indicates the taint effect to match. Empty means match all taint effects.
  tolerationSeconds int64 | TolerationSeconds represents the period of time the toleration (which must be of effect NoExecute) tolerates the taint.
res.DeviceConstraint | DeviceConstraint must have exactly one field set besides Requests.
  requests []string atomic | Requests is a list of the one or more requests in this claim which must co-satisfy this constraint.
  matchAttribute string | MatchAttribute requires that all devices in question have this attribute and that its type and value are the same across those devices.
  distinctAttribute string | DistinctAttribute requires that all devices in question have this attribute and that its type and value are unique across those devices.
res.DeviceClaimConfiguration | DeviceClaimConfiguration is used for configuration parameters in DeviceClaim.
  requests []string atomic | Requests lists the names of requests where the configuration applies. If empty, it applies to all requests.
  opaque res.OpaqueDeviceConfiguration | Opaque provides driver-specific configuration parameters.
res.ResourceClaimStatus | ResourceClaimStatus tracks whether the resource has been allocated and what the result of that was.
  allocation res.AllocationResult | Allocation is set once the claim has been allocated successfully.
  reservedFor []res.ResourceClaimConsumerReference merge:uid | ReservedFor indicates which entities are currently allowed to use the claim. There can be at most 256 such reservations.
  devices []res.AllocatedDeviceStatus map:driver,device,pool,shareID | Devices contains the status of each device allocated for this claim, as reported by the driver.
res.AllocationResult | AllocationResult contains attributes of an allocated resource.
  devices res.DeviceAllocationResult | Devices is the result of allocating devices.
  nodeSelector core.NodeSelector | NodeSelector defines where the allocated resources are available. If unset, they are available everywhere.
  allocationTimestamp meta.Time | AllocationTimestamp stores the time when the resources were allocated.
res.DeviceAllocationResult | DeviceAllocationResult is the result of allocating devices.
  results []res.DeviceRequestAllocationResult atomic | Results lists all allocated devices.
  config []res.DeviceAllocationConfiguration atomic | This field is a combination of all the claim and class configuration parameters.
res.DeviceRequestAllocationResult required:request,driver,pool,device | DeviceRequestAllocationResult contains the allocation result for one request.
  request string | Request is the name of the request in the claim which caused this device to be allocated.
  driver string | Driver specifies the name of the DRA driver whose kubelet plugin should be invoked to process the allocation once the claim is needed on a node.
  pool string | This name together with the driver name and the device name field identify which device was allocated (<driver name>/<pool name>/<device name>).
  device string | Device references one device instance via its name in the driver's resource pool. It must be a DNS label.
  adminAccess boolean | AdminAccess indicates that this device was allocated for administrative access.
  tolerations []res.DeviceToleration atomic | A copy of all tolerations specified in the request at the time when the device got allocated.
res.DeviceAllocationConfiguration required:source | DeviceAllocationConfiguration gets embedded in an AllocationResult.
  source string enum:FromClaim|FromClass | Source records whether the configuration comes from a class and thus is not something that a normal user would have been able to set or from a claim.
  requests []string atomic | Requests lists the names of requests where the configuration applies. If empty, its applies to all requests.
  opaque res.OpaqueDeviceConfiguration | Opaque provides driver-specific configuration parameters.
res.ResourceClaimConsumerReference required:resource,name,uid | ResourceClaimConsumerReference contains enough information to let you locate the consumer of a ResourceClaim.
  apiGroup string | APIGroup is the group for the resource being referenced. It is empty for the core API.
  resource string | Resource is the type of resource being referenced, for example "pods".
  name string | Name is the name of resource being referenced.
  uid string | UID identifies exactly one incarnation of the resource.
res.AllocatedDeviceStatus required:driver,pool,device | AllocatedDeviceStatus contains the status of an allocated device, if the driver chooses to report it.
  driver string | Driver specifies the name of the DRA driver whose kubelet plugin should be invoked to process the allocation once the claim is needed on a node.
  pool string | This name together with the driver name and the device name field identify which device was allocated.
  device string | Device references one device instance via its name in the driver's resource pool. It must be a DNS label.
  shareID string | ShareID uniquely identifies an individual allocation share of the device.
  conditions []meta.Condition map:type | Conditions contains the latest observation of the device's state.
  data RawExtension | Data contains arbitrary driver-specific data.
res.ResourceClaimTemplate required:spec | ResourceClaimTemplate is used to produce ResourceClaim objects.
  apiVersion string | @apiVersion
  kind string | @kind
  metadata meta.ObjectMeta | Standard object metadata
  spec res.ResourceClaimTemplateSpec | Describes the ResourceClaim that is to be generated. This field is immutable.
res.ResourceClaimTemplateSpec required:spec | ResourceClaimTemplateSpec contains the metadata and fields for a ResourceClaim.
  metadata meta.ObjectMeta | ObjectMeta may contain labels and annotations that will be copied into the ResourceClaim when creating it. No other fields are allowed.
  spec res.ResourceClaimSpec | Spec for the ResourceClaim. The entire content is copied unchanged into the ResourceClaim that gets created from this template.
)table";

}  // namespace

std::string_view SchemaTable() { return kTable; }

}  // namespace kdp::manager::resourceapi::openapi_internal
