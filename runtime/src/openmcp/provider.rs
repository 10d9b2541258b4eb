//! `openmcp.cloud/v1alpha1` ServiceProvider: how the platform operator deploys a provider, and
//! where the provider registers the Service API kinds it serves.

use k8s_openapi::api::core::v1::{TopologySpreadConstraint, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::openmcp::common::LocalObjectReference;

/// How the platform operator deploys a provider (`DeploymentSpec`, shared with ClusterProvider
/// and PlatformService).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "openmcp.cloud",
    version = "v1alpha1",
    kind = "ServiceProvider",
    // The trait an author implements is `ServiceProvider`; the object that deploys a provider
    // is named for what it is, so the two never meet in one scope.
    root = "ServiceProviderObject",
    status = "ServiceProviderStatus",
    label("openmcp.cloud/cluster", "platform"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    selectable = ".status.phase",
    doc = "ServiceProvider is the Schema for the serviceproviders API.",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// Image is the name of the image of a provider.
    #[schemars(length(min = 1))]
    pub image: String,
    /// ImagePullSecrets are secrets in the same namespace, for pulling the provider image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// InitCommand runs the init job (default `["init"]`); `--environment`, `--verbosity` and
    /// `--provider-name` are appended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_command: Vec<String>,
    /// RunCommand runs the controllers (default `["run"]`); the same flags are appended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_command: Vec<String>,
    /// Env is a list of environment variables of the init job and the deployment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub env: Vec<EnvVar>,
    /// Verbosity is the verbosity level of the provider: DEBUG, INFO (default) or ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["DEBUG", "INFO", "ERROR", "debug", "info", "error"], "default" = "INFO"))]
    pub verbosity: Option<String>,
    /// RunReplicas is the number of replicas of the provider (default 1); more than one adds
    /// `--leader-elect=true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub run_replicas: Option<i32>,
    /// TopologySpreadConstraints spread the provider pods across failure domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Additional volumes of the main container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_volumes: Vec<Volume>,
    /// Additional volume mounts of the main container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_volume_mounts: Vec<VolumeMount>,
    /// Metrics endpoint of the provider. Shape from `openmcp.md` §2
    /// (`{disabled, path, port}`), not read in the Go source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
}

/// An environment variable of the provider's containers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvVar {
    /// Name is the name of the environment variable.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Value is the value of the environment variable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// Where the provider serves Prometheus metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsConfig {
    /// Turns the metrics endpoint off. Always written: openmcp-operator's CRD requires it
    /// (`MetricsConfiguration.Disabled` has no `omitempty`).
    #[serde(default)]
    pub disabled: bool,
    /// Path of the endpoint (default `/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Port of the endpoint (default 8080).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// A Group/Version/Kind (`metav1.GroupVersionKind`).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct GroupVersionKind {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// The observed state of a ServiceProvider. `observedGeneration` is required by the schema, as in
/// Go, but reads as 0 when absent, as Go's `encoding/json` reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["observedGeneration"]))]
pub struct ServiceProviderStatus {
    /// Conditions: Initialized (InitPending, InitRunning, InitCompleted, InitJobCreationFailed),
    /// Ready, Uninstalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// ObservedGeneration is the last observed generation.
    #[serde(default)]
    pub observed_generation: i64,
    /// Phase: Progressing, Ready or Uninstalling.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Resources lists the Service API kinds this provider serves; deleting a ControlPlane deletes
    /// its objects of these kinds first. Written by the provider's `init`
    /// (`RegisterGVKsAtServiceProvider`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<GroupVersionKind>,
}
