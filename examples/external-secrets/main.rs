//! The External Secrets Operator for a tenant's control plane, ported from
//! openmcp-project/service-provider-external-secrets with the same API group, kind, spec and
//! ProviderConfig fields: ESO's Helm chart is installed into the tenant's cluster by Flux on the
//! workload cluster (an `OCIRepository` and a `HelmRelease` reading the tenant's kubeconfig),
//! with the platform's pull secrets copied where they are used. Everything else — dependency
//! order, readiness, `status.resources`, pruning and reverse-order deletion — is the runtime's.
//!
//! ```sh
//! cargo run --example external-secrets        # dev: a simulated platform with a Flux stand-in
//! ```

use service_provider::k8s_openapi::api::core::v1::Namespace;
use service_provider::kube::api::ObjectMeta;
use service_provider::prelude::*;
use service_provider::serde_json::{Value, json};
use service_provider::{HelmChart, HelmInstall, Location};

/// External Secrets Operator for a tenant's control plane.
#[service_provider(
    group = "external-secrets.services.openmcp.cloud",
    version = "v1alpha1",
    kind = "ExternalSecretsOperator",
    config = EsoConfig,
    workload_cluster = required,
)]
pub struct ExternalSecretsOperatorSpec {
    /// Version is the external-secrets Helm chart version to install.
    pub version: String,
}

/// What the platform operator configures (service-provider-external-secrets `ProviderConfigSpec`).
#[api_type]
pub struct EsoConfig {
    /// Reference to an OCI artifact repository that hosts the external-secrets Helm chart;
    /// `oci://ghcr.io/external-secrets/charts/external-secrets` when absent.
    #[serde(rename = "chartURL", default, skip_serializing_if = "Option::is_none")]
    pub chart_url: Option<String>,
    /// Secret (in the provider's namespace) with the credentials to pull the Helm chart, of type
    /// `kubernetes.io/dockerconfigjson`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_pull_secret: Option<String>,
    /// Helm values passed to the HelmRelease. `namespaceOverride` moves ESO out of the namespace
    /// `external-secrets`; the Secrets named in `global.imagePullSecrets` are copied there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "service_provider::free_form_schema")]
    pub helm_values: Option<Value>,
}

const DEFAULT_CHART: &str = "oci://ghcr.io/external-secrets/charts/external-secrets";

impl ExternalSecretsOperator {
    /// Declares what ESO needs into the tenant's resource set.
    async fn declare(&self, cx: &Context<Self>) -> Result<service_provider::ApplySet, Error> {
        let config = cx.config();
        let values = config.helm_values.clone().unwrap_or_else(|| json!({}));
        let eso_namespace = values["namespaceOverride"]
            .as_str()
            .unwrap_or("external-secrets")
            .to_owned();
        let namespace = |name: &str| Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut set = cx.resource_set("external-secrets");
        // ESO's namespace in the tenant's cluster may hold the end user's objects: it stays.
        set.add(&namespace(&eso_namespace))?.orphan();
        // Image pull secrets (the ProviderConfig's, and those the Helm values name) go where
        // ESO's pods run; the chart then refers to the copies.
        let mut sources: Vec<String> = cx
            .common()
            .image_pull_secrets
            .iter()
            .map(|s| s.name.clone())
            .collect();
        for name in values["global"]["imagePullSecrets"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = name["name"]
                .as_str()
                .filter(|n| !sources.iter().any(|s| s == n))
            {
                sources.push(name.to_owned());
            }
        }
        let pulls = cx
            .copy_pull_secrets(
                &mut set,
                Location::ManagedControlPlane,
                &eso_namespace,
                &sources,
            )
            .await?;
        // The Flux objects live in the tenant's namespace on the shared workload cluster.
        let flux_namespace = format!("eso-{}", cx.identity().stable_id());
        set.add_to(Location::WorkloadCluster, &namespace(&flux_namespace))?;
        let names: Vec<Value> = pulls.names.iter().map(|n| json!({ "name": n })).collect();
        let helm = cx
            .helm_release(
                &mut set,
                HelmInstall {
                    name: "external-secrets".into(),
                    namespace: flux_namespace,
                    target_namespace: eso_namespace,
                    chart: HelmChart {
                        url: config
                            .chart_url
                            .clone()
                            .unwrap_or_else(|| DEFAULT_CHART.into()),
                        version: Some(self.spec.version.clone()),
                        pull_secret: config.chart_pull_secret.clone(),
                        values: config.helm_values.clone(),
                    },
                    values: (!names.is_empty())
                        .then(|| json!({ "global": { "imagePullSecrets": names } })),
                    ..Default::default()
                },
            )
            .await?;
        if let Some(mut release) = set.entry(&helm.release) {
            for pull in &pulls.members {
                release = release.depends_on(pull);
            }
        }
        Ok(set)
    }
}

impl Reconcile for ExternalSecretsOperator {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        // Ready once every object is, the HelmRelease last; until then the runtime reports the
        // first one holding it up.
        self.declare(cx).await?.apply().await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        // In reverse order: the HelmRelease first, ESO's namespace orphaned; the runtime waits.
        cx.resource_set("external-secrets").delete().await?;
        Ok(Deletion::done())
    }
}

/// The provider binary, with a sample for `dev`.
pub fn app() -> service_provider::App<ExternalSecretsOperator> {
    service_provider::App::new().dev_samples(
        json!({ "pollInterval": "1m" }),
        json!({ "version": "0.10.0" }),
    )
}

fn main() -> std::process::ExitCode {
    app().run()
}
