//! The Flux API types a provider declares to install a Helm chart the openMCP way —
//! `source.toolkit.fluxcd.io/v1` `OCIRepository` and `HelmRepository`, `helm.toolkit.fluxcd.io/v2`
//! `HelmRelease` — written once, with the field names of Flux's Go API types
//! (fluxcd/source-controller `api/v1/ocirepository_types.go`, `helmrepository_types.go`;
//! fluxcd/helm-controller `api/v2/helmrelease_types.go`, `reference_types.go`).
//!
//! Only the fields a provider sets are here; Flux's defaults stand for the rest, and the runtime
//! reads status through its generic readiness rules (`Ready` condition for the current
//! generation).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;

fn is_false(b: &bool) -> bool {
    !*b
}

/// A Secret or other object in the same namespace (Flux `meta.LocalObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalObjectReference {
    /// Name of the referent.
    pub name: String,
}

/// A key of a Secret in the same namespace (Flux `meta.SecretKeyReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyReference {
    /// Name of the Secret.
    pub name: String,
    /// Key in the Secret; Flux reads `value` or `value.yaml` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Where Flux finds the kubeconfig of the cluster it installs into (Flux
/// `meta.KubeConfigReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigReference {
    /// The Secret holding the kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyReference>,
}

/// Status every Flux object reports (the part the runtime reads).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FluxStatus {
    /// The generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions; `Ready` summarises the object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The artifact's URL (sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Which artifact of an OCI repository to pull (Flux `OCIRepositoryRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OCIRepositoryRef {
    /// An image digest; wins over the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A semver range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Which layer of the artifact to use (Flux `OCILayerSelector`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OCILayerSelector {
    /// The layer's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// `extract` or `copy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}

/// An OCI artifact repository Flux pulls from (`source.toolkit.fluxcd.io/v1` `OCIRepository`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "OCIRepository",
    plural = "ocirepositories",
    namespaced,
    status = "FluxStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct OCIRepositorySpec {
    /// `oci://host/path` of the repository.
    pub url: String,
    /// Which artifact to pull.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<OCIRepositoryRef>,
    /// Which layer to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_selector: Option<OCILayerSelector>,
    /// `generic`, `aws`, `azure` or `gcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret with the registry's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A Secret with TLS certificates for the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// How often the repository is checked.
    pub interval: Duration,
    /// Timeout of a pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Plain HTTP.
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// Stop reconciling.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,
}

/// A Helm chart repository served over HTTP(S) (`source.toolkit.fluxcd.io/v1` `HelmRepository`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "HelmRepository",
    plural = "helmrepositories",
    namespaced,
    status = "FluxStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct HelmRepositorySpec {
    /// The repository's URL.
    pub url: String,
    /// A Secret with the repository's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A Secret with TLS certificates for the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Send the credentials to other hosts the index points at.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pass_credentials: bool,
    /// How often the index is fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Plain HTTP.
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// Timeout of a fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Stop reconciling.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,
    /// `default` or `oci`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// A source object in any namespace (Flux helm-controller `CrossNamespaceSourceReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceSourceReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `OCIRepository` or `HelmChart`.
    pub kind: String,
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent; the HelmRelease's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// An object in any namespace (Flux helm-controller `CrossNamespaceObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceObjectReference {
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `HelmRepository`, `GitRepository` or `Bucket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the referent.
    pub name: String,
    /// Namespace of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The chart of a HelmRelease, from a HelmRepository (Flux `HelmChartTemplate`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelmChartTemplate {
    /// Which chart.
    pub spec: HelmChartTemplateSpec,
}

/// Which chart, in which version, from which source (Flux `HelmChartTemplateSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartTemplateSpec {
    /// Chart name in the repository.
    pub chart: String,
    /// Version or semver range; latest when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The source.
    pub source_ref: CrossNamespaceObjectReference,
    /// How often the chart is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
}

/// How remediation retries a failed install (Flux `InstallRemediation`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallRemediation {
    /// Retries before giving up; negative is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
}

/// Install settings (Flux `Install`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Install {
    /// Timeout of the install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// What to do on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<InstallRemediation>,
    /// `Skip`, `Create` or `CreateReplace` for the chart's CRDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<String>,
    /// Create the target namespace.
    #[serde(default, skip_serializing_if = "is_false")]
    pub create_namespace: bool,
}

/// How remediation retries a failed upgrade (Flux `UpgradeRemediation`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeRemediation {
    /// Retries before giving up; negative is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    /// Remediate the last failure too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
}

/// Upgrade settings (Flux `Upgrade`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Upgrade {
    /// Timeout of the upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// What to do on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<UpgradeRemediation>,
    /// `Skip`, `Create` or `CreateReplace` for the chart's CRDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<String>,
}

/// Uninstall settings (Flux `Uninstall`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Uninstall {
    /// Timeout of the uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Keep the release history.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_history: bool,
}

/// A Helm release Flux installs and keeps up to date (`helm.toolkit.fluxcd.io/v2`
/// `HelmRelease`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "helm.toolkit.fluxcd.io",
    version = "v2",
    kind = "HelmRelease",
    plural = "helmreleases",
    namespaced,
    status = "FluxStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseSpec {
    /// The chart from a HelmRepository; exactly one of `chart` and `chartRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<HelmChartTemplate>,
    /// The chart from an OCIRepository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_ref: Option<CrossNamespaceSourceReference>,
    /// How often the release is reconciled.
    pub interval: Duration,
    /// The cluster to install into; the one Flux runs in when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// Stop reconciling.
    #[serde(default, skip_serializing_if = "is_false")]
    pub suspend: bool,
    /// The Helm release name; `[<targetNamespace>-]<name>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// Namespace the chart's objects go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Namespace of the Helm release storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_namespace: Option<String>,
    /// Timeout of every Helm action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Releases kept in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history: Option<i64>,
    /// Install settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Install>,
    /// Upgrade settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<Upgrade>,
    /// Uninstall settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninstall: Option<Uninstall>,
    /// The chart's values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::provider_config::free_form_schema")]
    pub values: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use serde_json::json;

    #[test]
    fn field_names_are_fluxs() {
        let repo = OCIRepository::new(
            "eso",
            OCIRepositorySpec {
                url: "oci://ghcr.io/external-secrets/charts/external-secrets".into(),
                reference: Some(OCIRepositoryRef {
                    tag: Some("0.10.0".into()),
                    ..Default::default()
                }),
                secret_ref: Some(LocalObjectReference {
                    name: "pull".into(),
                }),
                interval: Duration::from_secs(60),
                ..Default::default()
            },
        );
        assert_eq!(
            OCIRepository::api_version(&()),
            "source.toolkit.fluxcd.io/v1"
        );
        assert_eq!(OCIRepository::plural(&()), "ocirepositories");
        let spec = serde_json::to_value(&repo.spec).unwrap();
        assert_eq!(
            spec,
            json!({"url": "oci://ghcr.io/external-secrets/charts/external-secrets",
                "ref": {"tag": "0.10.0"}, "secretRef": {"name": "pull"}, "interval": "1m"})
        );
        let release = HelmReleaseSpec {
            chart_ref: Some(CrossNamespaceSourceReference {
                kind: "OCIRepository".into(),
                name: "eso".into(),
                ..Default::default()
            }),
            interval: Duration::from_secs(60),
            kube_config: Some(KubeConfigReference {
                secret_ref: Some(SecretKeyReference {
                    name: "kubeconfig".into(),
                    key: Some("kubeconfig".into()),
                }),
            }),
            target_namespace: Some("external-secrets".into()),
            install: Some(Install {
                create_namespace: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(HelmRelease::api_version(&()), "helm.toolkit.fluxcd.io/v2");
        assert_eq!(
            serde_json::to_value(&release).unwrap(),
            json!({"chartRef": {"kind": "OCIRepository", "name": "eso"}, "interval": "1m",
                "kubeConfig": {"secretRef": {"name": "kubeconfig", "key": "kubeconfig"}},
                "targetNamespace": "external-secrets", "install": {"createNamespace": true}})
        );
    }
}
