//! Helm charts the openMCP way: a Flux source (`OCIRepository` for an `oci://` chart URL,
//! `HelmRepository` for an `http(s)://` one) and a `HelmRelease` on the workload cluster that
//! installs into the tenant's cluster through its kubeconfig, declared as members of a resource
//! set from the resolved ProviderConfig version.
//!
//! Where each part of a chart may go depends on the tenant's cluster. An MCP runs pods, so the
//! whole chart goes there. A kcp workspace runs none: only the chart's API part (its CRDs and
//! kinds a workspace serves) may go there, and the part that runs (controllers, webhooks,
//! Services) goes to the workload cluster, into the tenant's namespace beside the Flux objects,
//! where it reaches the workspace through the tenant kubeconfig Secret. The author declares the
//! kinds each part installs ([`HelmInstall::installs`], [`ChartSplit`]); a chart that would put a
//! kind that runs into a workspace is invalid input, never a release that cannot work.

use std::collections::BTreeMap;
use std::fmt;

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
use crate::tenant::Mode;

/// Key of the kubeconfig in the Secret the HelmRelease reads (as the Go providers set it).
pub(crate) const KUBECONFIG_KEY: &str = "kubeconfig";
/// Media type of a Helm chart layer: selected explicitly, because charts pushed by different
/// tools order their layers differently (service-provider-external-secrets `flux.go`).
const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Annotation on a HelmRelease listing the kinds its chart was declared to install
/// (`apps/v1/Deployment,v1/Service`): what a reader (and the simulated Flux, which checks them
/// against what the target cluster serves) learns about where the release may go.
pub(crate) const CHART_KINDS_ANNOTATION: &str = "service-provider.openmcp.cloud/chart-kinds";
/// Suffix of the release of a chart's running part on the workload cluster (kcp mode).
const WORKLOAD_RELEASE_SUFFIX: &str = "-workload";
/// What replaces the version in a [`HelmChart::tag_format`].
const VERSION_PLACEHOLDER: &str = "{version}";

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
        Ok(Self::with_url(version, url))
    }

    /// The chart of a resolved ProviderConfig version, from `default_url` when the version names
    /// no `chartURL` (a provider whose chart has a well-known home).
    pub fn from_version_or(version: &VersionSpec, default_url: &str) -> Self {
        let url = version
            .chart_url
            .clone()
            .unwrap_or_else(|| default_url.to_owned());
        Self::with_url(version, url)
    }

    fn with_url(version: &VersionSpec, url: String) -> Self {
        HelmChart {
            url,
            version: Some(
                version
                    .chart_version
                    .clone()
                    .unwrap_or_else(|| version.version.clone()),
            ),
            pull_secret: version.chart_pull_secret.clone(),
            values: version.values.clone(),
        }
    }

    /// Writes the chart version the way the chart's registry tags it: `format` with
    /// `{version}` replaced, e.g. `"v{version}"` for a chart tagged `v1.17.2` for version
    /// `1.17.2`. A version already in that form (a `chartVersion` the operator wrote as the tag)
    /// is kept.
    pub fn tag_format(mut self, format: &str) -> Self {
        if let Some(version) = self.version.take() {
            let (prefix, suffix) = format
                .split_once(VERSION_PLACEHOLDER)
                .unwrap_or((format, ""));
            let tagged = version.len() > prefix.len() + suffix.len()
                && version.starts_with(prefix)
                && version.ends_with(suffix);
            self.version = Some(if tagged {
                version
            } else {
                format.replacen(VERSION_PLACEHOLDER, &version, 1)
            });
        }
        self
    }
}

/// A kind a chart installs: its `apiVersion` and `kind`, e.g.
/// `ChartKind::new("apps/v1", "Deployment")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChartKind {
    /// `group/version`, or `v1` for the core group.
    pub api_version: String,
    /// The kind.
    pub kind: String,
}

impl ChartKind {
    /// A kind by `apiVersion` and `kind`.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        ChartKind {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }

    /// The kind's API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Does an object of this kind run, or route to, pods: does it need a cluster with nodes?
    /// Such kinds belong to the part of a chart that a kcp workspace cannot hold.
    pub fn runs(&self) -> bool {
        const RUNS: &[(&str, &[&str])] = &[
            (
                "",
                &[
                    "Pod",
                    "Service",
                    "Endpoints",
                    "PersistentVolumeClaim",
                    "ReplicationController",
                ],
            ),
            (
                "apps",
                &["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"],
            ),
            ("batch", &["Job", "CronJob"]),
            ("autoscaling", &["HorizontalPodAutoscaler"]),
            ("policy", &["PodDisruptionBudget"]),
            ("discovery.k8s.io", &["EndpointSlice"]),
            ("networking.k8s.io", &["Ingress", "NetworkPolicy"]),
            // A webhook configuration calls a Service of the chart, which runs where the pods do.
            (
                "admissionregistration.k8s.io",
                &[
                    "ValidatingWebhookConfiguration",
                    "MutatingWebhookConfiguration",
                ],
            ),
        ];
        RUNS.iter()
            .any(|(group, kinds)| *group == self.group() && kinds.contains(&self.kind.as_str()))
    }

    /// Parses one entry of [`CHART_KINDS_ANNOTATION`], which only the Flux stand-in reads back.
    #[cfg(any(test, feature = "dev"))]
    pub(crate) fn parse(entry: &str) -> Option<Self> {
        let (api_version, kind) = entry.trim().rsplit_once('/')?;
        (!api_version.is_empty() && !kind.is_empty()).then(|| ChartKind::new(api_version, kind))
    }
}

impl fmt::Display for ChartKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}

/// What one release of a chart gets: values over the chart's and the install's, and the kinds
/// the chart installs with them.
#[derive(Clone, Debug, Default)]
pub struct ChartPart {
    /// Values merged over the chart's and [`HelmInstall::values`] (these win).
    pub values: Option<Value>,
    /// The kinds the chart installs with these values.
    pub installs: Vec<ChartKind>,
}

/// How a chart is split where the tenant's cluster runs no pods (a kcp workspace): two releases
/// of the same chart with different values.
#[derive(Clone, Debug, Default)]
pub struct ChartSplit {
    /// Into the workspace: values that leave only the API part (CRDs, and kinds a workspace
    /// serves, such as RBAC or ConfigMaps). A kind that runs here is invalid input.
    pub api: ChartPart,
    /// Onto the workload cluster, into [`HelmInstall::namespace`]: values that leave only the
    /// part that runs (controllers, webhooks, Services). It reaches the workspace with
    /// credentials of its own ([`Context::worker_credentials`], a Secret in the same namespace
    /// to mount). Installed after the API part.
    pub workload: ChartPart,
}

/// One Helm install of a tenant: which chart, where its Flux objects live on the workload
/// cluster, where it installs in the tenant's cluster, and (for a kcp workspace, which runs no
/// pods) how it splits.
#[derive(Clone, Debug, Default)]
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
    /// The kinds the whole chart installs with `values`. Optional in standard mode; in kcp mode
    /// without a [`kcp_split`](Self::kcp_split) every kind must be one a workspace holds.
    pub installs: Vec<ChartKind>,
    /// In kcp mode: the chart as two releases, its API part into the workspace and its running
    /// part onto the workload cluster. Unused in standard mode, where the MCP runs it all.
    pub kcp_split: Option<ChartSplit>,
}

impl HelmInstall {
    /// Name of the Secret, in [`namespace`](Self::namespace) on the workload cluster, holding
    /// the tenant's kubeconfig under the key `kubeconfig`: Flux's access for installing the
    /// chart, which is the provider's. A running part should not mount it; give it
    /// [`Context::worker_credentials`] instead.
    pub fn kubeconfig_secret(&self) -> String {
        format!("{}-kubeconfig", self.name)
    }
}

/// The members a [`Context::helm_release`] added.
#[derive(Clone, Debug)]
pub struct HelmMembers {
    /// The HelmRelease into the tenant's cluster (in kcp mode with a split, of the API part).
    pub release: MemberRef,
    /// In kcp mode with a [`ChartSplit`]: the HelmRelease of the running part on the workload
    /// cluster.
    pub workload_release: Option<MemberRef>,
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
    ///
    /// In kcp mode the workspace gets only what it can hold: with a
    /// [`kcp_split`](HelmInstall::kcp_split), the API part as above and the running part as a
    /// second HelmRelease (`<name>-workload`) installing onto the workload cluster itself, into
    /// `install.namespace`; without one, the chart's declared kinds must all be kinds a workspace
    /// holds. Anything else is invalid input, returned before anything is declared.
    pub async fn helm_release(
        &self,
        set: &mut ApplySet,
        install: HelmInstall,
    ) -> Result<HelmMembers, Error> {
        let plans = release_plans(&install, self.mode())?;
        let at = Location::WorkloadCluster;
        let interval = self.common().poll_interval;
        let ns = install.namespace.clone();
        let meta = |name: String| ObjectMeta {
            name: Some(name),
            namespace: Some(ns.clone()),
            ..Default::default()
        };

        let kubeconfig_name = install.kubeconfig_secret();
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

        let mut releases = Vec::with_capacity(plans.len());
        for plan in plans {
            let mut values = install.chart.values.clone();
            for overlay in [&install.values, &plan.values].into_iter().flatten() {
                match &mut values {
                    Some(base) => merge_values(base, overlay),
                    None => values = Some(overlay.clone()),
                }
            }
            let target_namespace = plan.target_namespace.to_owned();
            let mut release = HelmRelease::new(
                &plan.name,
                HelmReleaseSpec {
                    chart: chart.clone(),
                    chart_ref: chart_ref.clone(),
                    interval,
                    kube_config: plan.into_tenant.then(|| KubeConfigReference {
                        secret_ref: Some(SecretKeyReference {
                            name: kubeconfig_name.clone(),
                            key: Some(KUBECONFIG_KEY.into()),
                        }),
                    }),
                    target_namespace: Some(target_namespace.clone()),
                    storage_namespace: Some(target_namespace),
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
            if !plan.installs.is_empty() {
                let kinds: Vec<String> = plan.installs.iter().map(ToString::to_string).collect();
                release.metadata.annotations = Some(BTreeMap::from([(
                    CHART_KINDS_ANNOTATION.to_owned(),
                    kinds.join(","),
                )]));
            }
            // The running part reads the tenant kubeconfig too, and needs the API part's CRDs.
            let mut entry = set
                .add_to(at, &release)?
                .depends_on(&source)
                .depends_on(&kubeconfig);
            if let Some((member, _)) = &pull_secret {
                entry = entry.depends_on(member);
            }
            for earlier in &releases {
                entry = entry.depends_on(earlier);
            }
            releases.push(entry.key());
        }
        let mut releases = releases.into_iter();
        let release = releases.next().expect("every install has a release");
        Ok(HelmMembers {
            release,
            workload_release: releases.next(),
            source,
            kubeconfig,
            pull_secret: pull_secret.map(|(m, _)| m),
        })
    }
}

/// One HelmRelease of an install.
struct ReleasePlan<'a> {
    name: String,
    /// Into the tenant's cluster through its kubeconfig, or onto the workload cluster itself.
    into_tenant: bool,
    target_namespace: &'a str,
    values: Option<Value>,
    installs: &'a [ChartKind],
}

/// The releases `install` becomes in `mode`, or why the chart cannot go where it would.
fn release_plans(install: &HelmInstall, mode: Mode) -> Result<Vec<ReleasePlan<'_>>, Error> {
    let into_tenant = |values: Option<Value>, installs| ReleasePlan {
        name: install.name.clone(),
        into_tenant: true,
        target_namespace: &install.target_namespace,
        values,
        installs,
    };
    match (mode, &install.kcp_split) {
        (Mode::Standard, _) => Ok(vec![into_tenant(None, &install.installs)]),
        (Mode::Kcp, None) => {
            if install.installs.is_empty() {
                return Err(Error::invalid_input(format!(
                    "chart {} of Helm install {:?} declares no kinds, so nothing shows it fits into \
                     a kcp workspace, which runs no pods: list what it installs in \
                     `HelmInstall::installs`, or split it with `HelmInstall::kcp_split`",
                    install.chart.url, install.name
                )));
            }
            refuse_running_kinds(install, &install.installs, "`HelmInstall::installs`")?;
            Ok(vec![into_tenant(None, &install.installs)])
        }
        (Mode::Kcp, Some(split)) => {
            refuse_running_kinds(install, &split.api.installs, "`kcp_split.api.installs`")?;
            Ok(vec![
                into_tenant(split.api.values.clone(), &split.api.installs),
                ReleasePlan {
                    name: format!("{}{WORKLOAD_RELEASE_SUFFIX}", install.name),
                    into_tenant: false,
                    target_namespace: &install.namespace,
                    values: split.workload.values.clone(),
                    installs: &split.workload.installs,
                },
            ])
        }
    }
}

/// Invalid input when a kind that runs would go into a kcp workspace.
fn refuse_running_kinds(
    install: &HelmInstall,
    kinds: &[ChartKind],
    declared_in: &str,
) -> Result<(), Error> {
    let running: Vec<String> = kinds
        .iter()
        .filter(|k| k.runs())
        .map(ToString::to_string)
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "chart {} of Helm install {:?} would put {} into the tenant's kcp workspace (declared in \
         {declared_in}), but a workspace runs no pods: install the part that runs on the workload \
         cluster with `HelmInstall::kcp_split` (`workload` values that keep only it, `api` values \
         that keep only the CRDs)",
        install.chart.url,
        install.name,
        running.join(", ")
    )))
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
    fn a_tag_format_writes_the_version_as_the_registry_tags_it() {
        let version = |v: &str, chart: Option<&str>| VersionSpec {
            version: v.into(),
            chart_version: chart.map(Into::into),
            ..Default::default()
        };
        let tag = |v: VersionSpec| {
            HelmChart::from_version_or(&v, "oci://quay.io/jetstack/charts/cert-manager")
                .tag_format("v{version}")
                .version
                .unwrap()
        };
        assert_eq!(tag(version("1.17.2", None)), "v1.17.2");
        // An operator who wrote the tag itself is not second-guessed.
        assert_eq!(tag(version("1.17.2", Some("v1.17.3"))), "v1.17.3");
        let chart = HelmChart::from_version_or(&version("1.0", None), "oci://r/default");
        assert_eq!(chart.url, "oci://r/default");
        assert_eq!(
            chart.tag_format("{version}-rc").version.as_deref(),
            Some("1.0-rc")
        );
    }

    #[test]
    fn kinds_that_run_are_refused_in_a_kcp_workspace_and_split_onto_the_workload_cluster() {
        let crd = ChartKind::new("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let deployment = ChartKind::new("apps/v1", "Deployment");
        let service = ChartKind::new("v1", "Service");
        assert!(!crd.runs() && deployment.runs() && service.runs());
        assert!(!ChartKind::new("v1", "ConfigMap").runs());
        assert_eq!(
            ChartKind::parse(" apps/v1/Deployment"),
            Some(deployment.clone())
        );
        assert_eq!(ChartKind::parse("v1/Service"), Some(service.clone()));
        assert_eq!(ChartKind::parse("Service"), None);

        let whole = HelmInstall {
            name: "cert-manager".into(),
            namespace: "cm-1".into(),
            target_namespace: "cert-manager".into(),
            chart: HelmChart {
                url: "oci://r/cert-manager".into(),
                ..Default::default()
            },
            installs: vec![crd.clone(), deployment.clone(), service.clone()],
            ..Default::default()
        };
        // An MCP runs everything.
        let plans = release_plans(&whole, Mode::Standard).unwrap();
        assert_eq!(plans.len(), 1);
        assert!(plans[0].into_tenant);
        // A workspace does not.
        let err = release_plans(&whole, Mode::Kcp).err().unwrap();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("apps/v1/Deployment, v1/Service")
                && err.to_string().contains("kcp_split"),
            "{err}"
        );
        let undeclared = HelmInstall {
            installs: vec![],
            ..whole.clone()
        };
        let err = release_plans(&undeclared, Mode::Kcp).err().unwrap();
        assert!(err.to_string().contains("declares no kinds"), "{err}");

        let split = HelmInstall {
            kcp_split: Some(ChartSplit {
                api: ChartPart {
                    values: Some(json!({"crds": {"enabled": true}})),
                    installs: vec![crd.clone()],
                },
                workload: ChartPart {
                    values: Some(json!({"crds": {"enabled": false}})),
                    installs: vec![deployment.clone(), service.clone()],
                },
            }),
            ..whole.clone()
        };
        let plans = release_plans(&split, Mode::Kcp).unwrap();
        assert_eq!(
            plans
                .iter()
                .map(|p| (p.name.as_str(), p.into_tenant, p.target_namespace))
                .collect::<Vec<_>>(),
            [
                ("cert-manager", true, "cert-manager"),
                ("cert-manager-workload", false, "cm-1")
            ]
        );
        // A split whose API part still runs something is refused too.
        let mut leaky = split.clone();
        leaky.kcp_split.as_mut().unwrap().api.installs.push(service);
        let err = release_plans(&leaky, Mode::Kcp).err().unwrap();
        assert!(err.to_string().contains("kcp_split.api.installs"), "{err}");
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
