//! Helm charts the openMCP way: a Flux source (`OCIRepository` for an `oci://` chart URL,
//! `HelmRepository` for an `http(s)://` one) and a `HelmRelease` on the workload cluster that
//! installs into the tenant's cluster through its kubeconfig, declared as members of a resource
//! set from the resolved ProviderConfig version.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use serde_json::Value;

use crate::context::Context;
use crate::error::Error;
use crate::provider::ServiceProvider;
use crate::provider_config::VersionSpec;
use crate::resources::apply::{ApplySet, MemberRef};
use crate::resources::flux::{
    CrossNamespaceObjectReference, CrossNamespaceSourceReference, HelmChartTemplate,
    HelmChartTemplateSpec, HelmRelease, HelmReleaseSpec, HelmRepository, HelmRepositorySpec,
    Install, InstallRemediation, KubeConfigReference, LocalObjectReference, OCILayerSelector,
    OCIRepository, OCIRepositoryRef, OCIRepositorySpec, SecretKeyReference, Upgrade,
    UpgradeRemediation,
};
use crate::status::resources::Location;

/// Key of the kubeconfig in the Secret the HelmRelease reads (as the Go providers set it).
pub(crate) const KUBECONFIG_KEY: &str = "kubeconfig";
/// Media type of a Helm chart layer: selected explicitly, because charts pushed by different
/// tools order their layers differently (service-provider-external-secrets `flux.go`).
const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// Where a chart comes from: what a ProviderConfig version (`chartURL`, `chartVersion`,
/// `chartPullSecret`, `values`) says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HelmChart {
    /// `oci://registry/path/chart`, or `https://host/repo/chart` (the last segment is the chart's
    /// name in the repository at the rest). A URL without a scheme is taken as `oci://`.
    pub url: String,
    /// Chart version (an OCI tag, or a version or semver range in a Helm repository).
    pub version: Option<String>,
    /// Secret in the provider's namespace on the platform cluster with the registry's
    /// credentials; copied next to the source.
    pub pull_secret: Option<String>,
    /// Helm values from the platform operator.
    pub values: Option<Value>,
}

impl HelmChart {
    /// The chart of a resolved ProviderConfig version; its `chartURL` must be set.
    pub fn from_version(version: &VersionSpec) -> Result<Self, Error> {
        let url = version.chart_url.clone().ok_or_else(|| {
            Error::invalid_input(format!(
                "version {} has no chartURL in the ProviderConfig; a platform operator must set it",
                version.version
            ))
        })?;
        Ok(HelmChart {
            url,
            version: Some(
                version
                    .chart_version
                    .clone()
                    .unwrap_or_else(|| version.version.clone()),
            ),
            pull_secret: version.chart_pull_secret.clone(),
            values: version.values.clone(),
        })
    }
}

/// One Helm release of a tenant: which chart, where its Flux objects live on the workload
/// cluster, where it installs in the tenant's cluster.
#[derive(Clone, Debug)]
pub struct HelmInstall {
    /// Name of the Flux objects (and of the Helm release).
    pub name: String,
    /// The tenant's namespace on the workload cluster, holding the Flux objects, the tenant
    /// kubeconfig and the chart pull secret copy. Add the Namespace itself to the set: the
    /// members wait for it.
    pub namespace: String,
    /// Namespace in the tenant's cluster the chart installs into (and keeps its release in).
    pub target_namespace: String,
    /// The chart.
    pub chart: HelmChart,
    /// The provider author's values, merged over the chart's (the author's win).
    pub values: Option<Value>,
}

/// The members a [`Context::helm_release`] added.
#[derive(Clone, Debug)]
pub struct HelmMembers {
    /// The HelmRelease.
    pub release: MemberRef,
    /// The OCIRepository or HelmRepository.
    pub source: MemberRef,
    /// The Secret with the tenant's kubeconfig.
    pub kubeconfig: MemberRef,
    /// The chart pull secret copy, if any.
    pub pull_secret: Option<MemberRef>,
}

/// `overlay` merged into `base`: objects key by key, anything else replaced.
pub(crate) fn merge_values(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (k, v) in overlay {
                match base.get_mut(k) {
                    Some(existing) => merge_values(existing, v),
                    None => {
                        base.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

impl<P: ServiceProvider> Context<P> {
    /// Declares in `set`, on the workload cluster, what installs `install.chart` into the
    /// tenant's cluster the openMCP way: a Secret with the tenant's kubeconfig (key
    /// `kubeconfig`), the chart pull secret copied from the platform, the Flux source
    /// (`OCIRepository` for `oci://`, `HelmRepository` for `http(s)://`) and a `HelmRelease`
    /// whose `kubeConfig.secretRef` names that Secret, with `targetNamespace` and
    /// `storageNamespace` in the tenant's cluster, the ProviderConfig's poll interval as its
    /// interval and the chart's values merged with the author's. The HelmRelease waits for
    /// the others to be ready; its `Ready` condition decides the tenant's readiness.
    pub async fn helm_release(
        &self,
        set: &mut ApplySet,
        install: HelmInstall,
    ) -> Result<HelmMembers, Error> {
        let at = Location::WorkloadCluster;
        let interval = self.common().poll_interval;
        let ns = install.namespace.clone();
        let meta = |name: String| ObjectMeta {
            name: Some(name),
            namespace: Some(ns.clone()),
            ..Default::default()
        };

        let kubeconfig_name = format!("{}-kubeconfig", install.name);
        let kubeconfig = set
            .add_to(
                at,
                &Secret {
                    metadata: meta(kubeconfig_name.clone()),
                    data: Some(BTreeMap::from([(
                        KUBECONFIG_KEY.to_owned(),
                        ByteString(self.mcp().kubeconfig().to_vec()),
                    )])),
                    ..Default::default()
                },
            )?
            .key();
        let pull_secret = match &install.chart.pull_secret {
            Some(source) => {
                let copies = self
                    .copy_pull_secrets(set, at, &ns, std::slice::from_ref(source))
                    .await?;
                copies.members.into_iter().zip(copies.names).next()
            }
            None => None,
        };
        let secret_ref = pull_secret
            .as_ref()
            .map(|(_, name)| LocalObjectReference { name: name.clone() });

        let url = install.chart.url.trim();
        let (source, chart_ref, chart) = if let Some(repo) = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
        {
            let (repo_path, chart_name) = repo.rsplit_once('/').ok_or_else(|| {
                Error::invalid_input(format!(
                    "chart URL {url} names no chart: write https://<repository>/<chart>"
                ))
            })?;
            let scheme = if url.starts_with("https://") {
                "https"
            } else {
                "http"
            };
            let mut repository = HelmRepository::new(
                &install.name,
                HelmRepositorySpec {
                    url: format!("{scheme}://{repo_path}"),
                    secret_ref,
                    interval: Some(interval),
                    ..Default::default()
                },
            );
            repository.metadata.namespace = Some(ns.clone());
            let source = source_entry(set.add_to(at, &repository)?, &pull_secret);
            let chart = HelmChartTemplate {
                spec: HelmChartTemplateSpec {
                    chart: chart_name.to_owned(),
                    version: install.chart.version.clone(),
                    source_ref: CrossNamespaceObjectReference {
                        kind: Some("HelmRepository".into()),
                        name: install.name.clone(),
                        namespace: Some(ns.clone()),
                        ..Default::default()
                    },
                    interval: Some(interval),
                },
            };
            (source, None, Some(chart))
        } else {
            let oci = if url.starts_with("oci://") {
                url.to_owned()
            } else {
                format!("oci://{url}")
            };
            let mut repository = OCIRepository::new(
                &install.name,
                OCIRepositorySpec {
                    url: oci,
                    reference: install.chart.version.clone().map(|tag| OCIRepositoryRef {
                        tag: Some(tag),
                        ..Default::default()
                    }),
                    layer_selector: Some(OCILayerSelector {
                        media_type: Some(HELM_CHART_LAYER.into()),
                        operation: Some("extract".into()),
                    }),
                    secret_ref,
                    interval,
                    ..Default::default()
                },
            );
            repository.metadata.namespace = Some(ns.clone());
            let source = source_entry(set.add_to(at, &repository)?, &pull_secret);
            let chart_ref = CrossNamespaceSourceReference {
                kind: "OCIRepository".into(),
                name: install.name.clone(),
                namespace: Some(ns.clone()),
                ..Default::default()
            };
            (source, Some(chart_ref), None)
        };

        let values = match (install.chart.values.clone(), &install.values) {
            (Some(mut base), Some(overlay)) => {
                merge_values(&mut base, overlay);
                Some(base)
            }
            (base, overlay) => base.or_else(|| overlay.clone()),
        };
        let mut release = HelmRelease::new(
            &install.name,
            HelmReleaseSpec {
                chart,
                chart_ref,
                interval,
                kube_config: Some(KubeConfigReference {
                    secret_ref: Some(SecretKeyReference {
                        name: kubeconfig_name,
                        key: Some(KUBECONFIG_KEY.into()),
                    }),
                }),
                target_namespace: Some(install.target_namespace.clone()),
                storage_namespace: Some(install.target_namespace.clone()),
                install: Some(Install {
                    remediation: Some(InstallRemediation { retries: Some(3) }),
                    create_namespace: true,
                    ..Default::default()
                }),
                upgrade: Some(Upgrade {
                    remediation: Some(UpgradeRemediation {
                        retries: Some(3),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                values,
                ..Default::default()
            },
        );
        release.metadata.namespace = Some(ns.clone());
        let mut entry = set
            .add_to(at, &release)?
            .depends_on(&source)
            .depends_on(&kubeconfig);
        if let Some((member, _)) = &pull_secret {
            entry = entry.depends_on(member);
        }
        let release = entry.key();
        Ok(HelmMembers {
            release,
            source,
            kubeconfig,
            pull_secret: pull_secret.map(|(m, _)| m),
        })
    }
}

/// A source waits for its credentials.
fn source_entry(
    entry: crate::resources::apply::Entry<'_>,
    pull_secret: &Option<(MemberRef, String)>,
) -> MemberRef {
    match pull_secret {
        Some((member, _)) => entry.depends_on(member).key(),
        None => entry.key(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_merge_key_by_key_and_the_overlay_wins() {
        let mut base = json!({"image": {"repository": "r", "tag": "1"}, "replicas": 1});
        merge_values(
            &mut base,
            &json!({"image": {"tag": "2"}, "global": {"x": true}}),
        );
        assert_eq!(
            base,
            json!({"image": {"repository": "r", "tag": "2"}, "replicas": 1, "global": {"x": true}})
        );
    }

    #[test]
    fn a_version_without_chart_url_is_the_operators_to_fix() {
        let version = VersionSpec {
            version: "1.0".into(),
            ..Default::default()
        };
        let err = HelmChart::from_version(&version).unwrap_err();
        assert!(err.to_string().contains("chartURL"), "{err}");
        let version = VersionSpec {
            version: "1.0".into(),
            chart_url: Some("oci://r/c".into()),
            ..Default::default()
        };
        assert_eq!(
            HelmChart::from_version(&version)
                .unwrap()
                .version
                .as_deref(),
            Some("1.0")
        );
    }
}
