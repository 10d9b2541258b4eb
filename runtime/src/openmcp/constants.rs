//! The label, annotation, finalizer and value strings of openMCP, spelled as the Go API packages
//! spell them (`openmcp-operator/api/constants`, `api/clusters/v1alpha1/constants.go`,
//! `api/core/v2alpha1/constants.go`, `opencontrolplane-runtime/pkg/clusterprovider`).

/// The base API group of openMCP.
pub const OPENMCP_GROUP: &str = "openmcp.cloud";
/// The group of ClusterRequest, AccessRequest and Cluster.
pub const CLUSTERS_GROUP: &str = "clusters.openmcp.cloud";
/// The group of the ControlPlane (`v2alpha1`).
pub const CORE_GROUP: &str = "core.open-control-plane.io";

/// CRD label naming the cluster a CRD is installed on (`platform` or `onboarding`).
pub const CLUSTER_LABEL: &str = "openmcp.cloud/cluster";
/// Annotation requesting an operation on an object.
pub const OPERATION_ANNOTATION: &str = "openmcp.cloud/operation";
/// [`OPERATION_ANNOTATION`] value: do not reconcile the object.
pub const OPERATION_IGNORE: &str = "ignore";
/// [`OPERATION_ANNOTATION`] value: reconcile once now, then remove the annotation.
pub const OPERATION_RECONCILE: &str = "reconcile";

/// Label: the controller (provider) that manages an object.
pub const MANAGED_BY_LABEL: &str = "openmcp.cloud/managed-by";
/// Label: what a managed object is for; `<namespace>.<name>.<registration id>` of the
/// reconciled object on access requests (see [`crate::openmcp::naming::managed_purpose`]).
pub const MANAGED_PURPOSE_LABEL: &str = "openmcp.cloud/managed-purpose";
/// Label: the name of the onboarding-cluster object an access request serves.
pub const ONBOARDING_NAME_LABEL: &str = "openmcp.cloud/onboarding-name";
/// Label: the namespace of the onboarding-cluster object an access request serves.
pub const ONBOARDING_NAMESPACE_LABEL: &str = "openmcp.cloud/onboarding-namespace";

/// Finalizer the platform operator puts on ClusterRequests and AccessRequests while it holds
/// resources for them (`openmcp.md` §1.1).
pub const CLUSTER_ACCESS_FINALIZER: &str = "clusters.openmcp.cloud/clusteraccess";
/// Finalizer of the ClusterRequest controller (`ClusterRequestFinalizer`).
pub const CLUSTER_REQUEST_FINALIZER: &str = "clusters.openmcp.cloud/request";
/// Prefix of the finalizers a Cluster carries, one per ClusterRequest pointing at it, followed by
/// the request's uid (`RequestFinalizerOnClusterPrefix`); their count is the tenancy count.
pub const REQUEST_FINALIZER_ON_CLUSTER_PREFIX: &str = "request.clusters.openmcp.cloud/";

/// Annotation on a Cluster: its Kubernetes version.
pub const K8S_VERSION_ANNOTATION: &str = "clusters.openmcp.cloud/k8sversion";
/// Annotation on a Cluster: provider-specific information.
pub const PROVIDER_INFO_ANNOTATION: &str = "clusters.openmcp.cloud/providerinfo";
/// Annotation on a Cluster: the cluster profile's name.
pub const PROFILE_NAME_ANNOTATION: &str = "clusters.openmcp.cloud/profile";
/// Annotation on a Cluster: the environment.
pub const ENVIRONMENT_ANNOTATION: &str = "clusters.openmcp.cloud/environment";
/// Annotation on a Cluster: the cluster provider.
pub const PROVIDER_ANNOTATION: &str = "clusters.openmcp.cloud/provider";
/// Label on a Cluster (value `"true"`): delete it when its last request goes.
pub const DELETE_WITHOUT_REQUESTS_LABEL: &str = "clusters.openmcp.cloud/delete-without-requests";
/// Label the operator adds to AccessRequests: the cluster provider responsible for them
/// (Go `ProviderLabel = GroupName + "/provider"`; on a Cluster it names its provider).
pub const PROVIDER_LABEL: &str = "clusters.openmcp.cloud/provider";
/// Label the operator adds to AccessRequests: the cluster profile (Go `ProfileLabel`).
pub const PROFILE_LABEL: &str = "clusters.openmcp.cloud/profile";
/// Annotation on an AccessRequest for local debugging (`DEV_DEBUG=true`): the API server URL
/// to use instead of the one in the granted kubeconfig.
pub const LOCAL_ACCESS_ANNOTATION: &str = "clusters.open-control-plane.io/local-access";

/// Cluster purpose: the platform cluster.
pub const PURPOSE_PLATFORM: &str = "platform";
/// Cluster purpose: the onboarding cluster.
pub const PURPOSE_ONBOARDING: &str = "onboarding";
/// Cluster purpose: a tenant's MCP cluster.
pub const PURPOSE_MCP: &str = "mcp";
/// Cluster purpose: a workload cluster.
pub const PURPOSE_WORKLOAD: &str = "workload";

/// Request phase: neither granted nor denied yet.
pub const REQUEST_PENDING: &str = "Pending";
/// Request phase: granted.
pub const REQUEST_GRANTED: &str = "Granted";
/// Request phase: denied.
pub const REQUEST_DENIED: &str = "Denied";

/// Status phase of openMCP resources: ready.
pub const PHASE_READY: &str = "Ready";
/// Status phase of openMCP resources: being created or updated.
pub const PHASE_PROGRESSING: &str = "Progressing";
/// Status phase of openMCP resources: being deleted.
pub const PHASE_TERMINATING: &str = "Terminating";

/// Key of the kubeconfig in an AccessRequest's Secret (always present).
pub const SECRET_KEY_KUBECONFIG: &str = "kubeconfig";
/// Key of the credential's expiry (RFC 3339) in an AccessRequest's Secret.
pub const SECRET_KEY_EXPIRATION_TIMESTAMP: &str = "expirationTimestamp";
/// Key of the credential's creation time in an AccessRequest's Secret.
pub const SECRET_KEY_CREATION_TIMESTAMP: &str = "creationTimestamp";
/// Key of the API server URL in an AccessRequest's Secret.
pub const SECRET_KEY_HOST: &str = "host";
/// Key of the API server's CA bundle in an AccessRequest's Secret.
pub const SECRET_KEY_CA_CRT: &str = "ca.crt";
/// Key of the bearer token in an AccessRequest's Secret.
pub const SECRET_KEY_TOKEN: &str = "token";
/// Key of the OIDC client id in an AccessRequest's Secret (OIDC access only).
pub const SECRET_KEY_CLIENT_ID: &str = "clientID";

/// Registration id of the MCP cluster in the Go runtime (`clusteraccess.MCPClusterID`).
pub const MCP_CLUSTER_ID: &str = "mcp";
/// Registration id of the workload cluster (`clusteraccess.WorkloadClusterID`).
pub const WORKLOAD_CLUSTER_ID: &str = "workload";
/// Name suffix of the MCP AccessRequest (`<ctrl>--<name>--mcp`).
pub const MCP_REQUEST_SUFFIX: &str = "mcp";
/// Name suffix of the workload ClusterRequest and AccessRequest (`<ctrl>--<name>--wl`).
pub const WORKLOAD_REQUEST_SUFFIX: &str = "wl";
/// Local name of the onboarding access requested by `init` (`<api group>--onboarding-init`).
pub const ONBOARDING_INIT_LOCAL_NAME: &str = "onboarding-init";
/// Local name of the onboarding access requested by `run` (`<api group>--onboarding-run`).
pub const ONBOARDING_RUN_LOCAL_NAME: &str = "onboarding-run";

/// ControlPlane finalizer of the ControlPlane controller.
pub const MCP_FINALIZER: &str = "core.open-control-plane.io/mcp";
/// Label on objects created for a ControlPlane: its name.
pub const MCP_NAME_LABEL: &str = "core.open-control-plane.io/mcp-name";
/// Label on objects created for a ControlPlane: its namespace.
pub const MCP_NAMESPACE_LABEL: &str = "core.open-control-plane.io/mcp-namespace";
/// Prefix of finalizers services put on a ControlPlane they depend on.
pub const SERVICE_DEPENDENCY_FINALIZER_PREFIX: &str = "services.openmcp.cloud/";
/// Prefix of the finalizers a ControlPlane carries for its ClusterRequests.
pub const CLUSTER_REQUEST_FINALIZER_PREFIX: &str = "request.clusters.openmcp.cloud/";
/// Name of the default OIDC provider in `ControlPlane.status.access`.
pub const DEFAULT_OIDC_PROVIDER_NAME: &str = "default";
/// ControlPlane condition: the ClusterRequest is granted.
pub const CONDITION_CLUSTER_REQUEST_READY: &str = "ClusterRequestReady";
/// ControlPlane condition: every access is ready.
pub const CONDITION_ALL_ACCESS_READY: &str = "AllAccessReady";
/// ControlPlane condition: every Service API object of the ControlPlane is gone (deletion).
pub const CONDITION_ALL_SERVICES_DELETED: &str = "AllServicesDeleted";
/// ControlPlane condition: every ClusterRequest of the ControlPlane is gone (deletion).
pub const CONDITION_ALL_CLUSTER_REQUESTS_DELETED: &str = "AllClusterRequestsDeleted";

/// Environment variable the platform operator injects: the pod's name.
pub const ENV_POD_NAME: &str = "POD_NAME";
/// Environment variable the platform operator injects: the pod's namespace.
pub const ENV_POD_NAMESPACE: &str = "POD_NAMESPACE";
/// Environment variable the platform operator injects: the pod's IP.
pub const ENV_POD_IP: &str = "POD_IP";
/// Environment variable the platform operator injects: the pod's ServiceAccount.
pub const ENV_POD_SERVICE_ACCOUNT_NAME: &str = "POD_SERVICE_ACCOUNT_NAME";
