//! The ProviderConfig: the platform operator's settings for a provider, one cluster-scoped object
//! on the platform cluster named like the provider.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{ConfigMapKeySelector, LocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::ClusterResourceScope;
use kube::core::object::HasStatus;
use kube::{CustomResourceExt, Resource};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::error::Error;

/// The ProviderConfig resource generated for a provider.
///
/// Implemented by `#[service_provider]`; its spec holds [`ProviderConfigCommon`] and the author's
/// `config` fields side by side.
pub trait ProviderConfigResource:
    Resource<DynamicType = (), Scope = ClusterResourceScope>
    + HasStatus<Status = ProviderConfigStatus>
    + CustomResourceExt
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The author's `config` fields.
    type Config;

    /// The fields every ProviderConfig has.
    fn common(&self) -> &ProviderConfigCommon;

    /// The author's fields.
    fn config(&self) -> &Self::Config;
}

/// What a provider author's `config` type must be: the fields are merged into the ProviderConfig's
/// `spec`, so they need a schema and serde, and the runtime shares them across reconciles.
///
/// Blanket-implemented; declare the type with `#[service_provider::api_type]` to get the derives.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the `config` of a service provider",
    label = "needs Clone, Debug, Serialize, Deserialize and JsonSchema",
    note = "declare it with `#[service_provider::api_type]` and `#[derive(Clone, Debug)]`"
)]
pub trait ProviderConfigFields:
    Clone + Debug + Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static
{
}

impl<T> ProviderConfigFields for T where
    T: Clone + Debug + Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static
{
}

/// Status of a ProviderConfig, written by the runtime: whether it was understood.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions, keyed by `type`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::openmcp::common::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The ProviderConfig of a provider that declares no `config` type: no extra fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoConfig {}

/// The fields every ProviderConfig has, whatever the provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfigCommon {
    /// The versions of the service end users may ask for. Each Service API object's
    /// `spec.version` must name one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::provider_config::versions_schema")]
    pub versions: Vec<VersionSpec>,

    /// How often every object is reconciled even when nothing changed, to repair drift.
    #[serde(default = "default_poll_interval")]
    pub poll_interval: Duration,

    /// Pull secrets, in the provider's namespace on the platform cluster, for the images the
    /// provider installs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,

    /// A CA bundle (PEM, in a ConfigMap key in the provider's namespace on the platform cluster)
    /// that what the provider installs must trust, e.g. a private registry's CA; copied where
    /// the provider needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle_ref: Option<ConfigMapKeySelector>,

    /// Serve tenants in kcp workspaces through an APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kcp: Option<KcpConfig>,

    /// Order a workload cluster for each tenant (providers declared with
    /// `workload_cluster = optional` use one only when this is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_cluster: Option<WorkloadClusterConfig>,
}

fn default_poll_interval() -> Duration {
    Duration::from_secs(60)
}

/// One version of the service that end users may ask for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionSpec {
    /// The version end users write in `spec.version`.
    pub version: String,
    /// Version of the Helm chart (or other artifact) that installs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_version: Option<String>,
    /// Where the chart comes from, e.g. `oci://registry.example/charts/velero`.
    #[serde(default, rename = "chartURL", skip_serializing_if = "Option::is_none")]
    pub chart_url: Option<String>,
    /// Pull secret for the chart, in the provider's namespace on the platform cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_pull_secret: Option<String>,
    /// Free-form values for this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::provider_config::free_form_schema")]
    pub values: Option<serde_json::Value>,
}

/// Where the provider finds its kcp provider workspace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KcpConfig {
    /// Path of the workspace that holds the APIExport, e.g. `root:my-org:services`.
    pub provider_workspace: String,
    /// Secret on the platform cluster with a `kubeconfig` for the provider workspace.
    pub kubeconfig_secret_ref: SecretReference,
    /// Name of the APIExport; defaults to the Service API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_export_name: Option<String>,
}

/// A Secret by name and namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct SecretReference {
    /// Name of the Secret.
    pub name: String,
    /// Namespace of the Secret.
    pub namespace: String,
}

/// How the workload cluster is ordered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkloadClusterConfig {
    /// `spec.purpose` of the ClusterRequest; `workload` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

impl ProviderConfigCommon {
    /// The offered version an end user asked for, or an invalid-input error that lists the offered
    /// versions so the end user can pick one.
    pub fn resolve_version(&self, requested: &str) -> Result<&VersionSpec, Error> {
        if let Some(found) = self.versions.iter().find(|v| v.version == requested) {
            return Ok(found);
        }
        let offered: Vec<&str> = self.versions.iter().map(|v| v.version.as_str()).collect();
        Err(Error::invalid_input(if offered.is_empty() {
            format!(
                "version {requested:?} is not offered: the ProviderConfig offers no versions; \
                 a platform operator must add it to spec.versions"
            )
        } else {
            format!(
                "version {requested:?} is not offered; choose one of: {}",
                offered.join(", ")
            )
        }))
    }
}

/// Schema of `versions`: a list keyed by `version`.
pub fn versions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<VersionSpec>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["version"]),
    );
    schema
}

/// Schema of a free-form JSON value: any object, kept as written.
pub fn free_form_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_version_lists_offered_versions() {
        let common = ProviderConfigCommon {
            versions: vec![
                VersionSpec {
                    version: "1.15.0".into(),
                    ..Default::default()
                },
                VersionSpec {
                    version: "1.16.1".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(common.resolve_version("1.16.1").unwrap().version, "1.16.1");
        let err = common.resolve_version("2.0.0").unwrap_err();
        assert!(err.is_invalid_input());
        assert!(err.to_string().contains("1.15.0, 1.16.1"), "{err}");
    }

    #[test]
    fn poll_interval_defaults_to_one_minute() {
        let common: ProviderConfigCommon = serde_json::from_str("{}").unwrap();
        assert_eq!(common.poll_interval, Duration::from_secs(60));
    }
}
