//! cert-manager for a tenant's control plane, in both modes: its Helm chart is installed by
//! Flux on the workload cluster.
//!
//! Where the chart goes depends on the tenant's cluster ([`service_provider::ChartSplit`]):
//! - an MCP runs pods, so the whole chart goes there (the HelmRelease reads the MCP's
//!   kubeconfig);
//! - a kcp workspace runs none, so only cert-manager's CRDs go into the workspace, and its
//!   controller runs on the workload cluster, in the tenant's namespace there, pointed at the
//!   workspace with worker credentials of its own (a ServiceAccount in the workspace with
//!   cert-manager's rules only, its token renewed by the runtime).
//!
//! The platform's pull secrets and CA bundle (`imagePullSecrets`, `caBundleRef`) are copied
//! where the pods run and mounted. Deleting it is blocked while the end user still has
//! Certificates: removing the CRDs would delete them. Everything else — dependency order, readiness, `status.resources`, pruning,
//! reverse-order deletion — is the runtime's.
//!
//! ```sh
//! cargo run --example cert-manager     # dev: a simulated platform with a Flux stand-in
//! ```

use service_provider::k8s_openapi::api::core::v1::Namespace;
use service_provider::k8s_openapi::api::rbac::v1::PolicyRule;
use service_provider::kube::api::ObjectMeta;
use service_provider::prelude::*;
use service_provider::serde_json::{Value, json};
use service_provider::{
    CaBundle, ChartKind, ChartPart, ChartSplit, HelmChart, HelmInstall, Location, Mode,
    WorkerAccess,
};

/// cert-manager for a tenant's control plane.
#[service_provider(
    group = "cert-manager.services.openmcp.cloud",
    version = "v1alpha1",
    kind = "CertManager",
    workload_cluster = required,
    kcp,
    // Uninstalling removes cert-manager's CRDs, and with them the end user's Certificates.
    deletion_guard(group = "cert-manager.io", version = "v1", kind = "Certificate"),
)]
pub struct CertManagerSpec {
    /// cert-manager version; must be offered in ProviderConfig `spec.versions`.
    pub version: String,
}

/// Where the jetstack chart lives, for a version whose ProviderConfig entry names no `chartURL`.
pub const DEFAULT_CHART: &str = "oci://quay.io/jetstack/charts/cert-manager";
/// The chart is tagged `v1.17.2` for cert-manager 1.17.2.
const TAG_FORMAT: &str = "v{version}";
/// cert-manager's namespace in an MCP; it may hold the end user's Issuers, so it stays.
const NAMESPACE: &str = "cert-manager";
/// Where the components find the platform's CA bundle: a file the system trust store reads.
const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/openmcp-ca-bundle.pem";
/// Where the running part mounts the tenant kubeconfig on the workload cluster (kcp mode).
const TENANT_KUBECONFIG_DIR: &str = "/etc/cert-manager/tenant";

/// What the chart installs: its API part, and the part that runs.
fn api_kinds() -> Vec<ChartKind> {
    vec![
        ChartKind::new("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        // The aggregated roles that let the end user's admins edit Certificates.
        ChartKind::new("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ]
}

fn running_kinds() -> Vec<ChartKind> {
    vec![
        ChartKind::new("v1", "ServiceAccount"),
        ChartKind::new("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ChartKind::new("apps/v1", "Deployment"),
        ChartKind::new("v1", "Service"),
        ChartKind::new(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        ChartKind::new(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
        ),
    ]
}

/// What cert-manager's components do in the tenant's workspace (its chart's ClusterRoles, in
/// short): their own API, the Secrets they issue into, Events, leader election, and the CA
/// injection into webhook configurations and CRDs.
fn worker_rules() -> Vec<PolicyRule> {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|g| (*g).to_owned()).collect()),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..Default::default()
    };
    let read_write = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    vec![
        rule(
            &["cert-manager.io", "acme.cert-manager.io"],
            &["*"],
            &read_write,
        ),
        rule(&[""], &["secrets"], &read_write),
        rule(&[""], &["events"], &["create", "patch"]),
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "create", "update"],
        ),
        rule(
            &["admissionregistration.k8s.io", "apiextensions.k8s.io"],
            &[
                "validatingwebhookconfigurations",
                "mutatingwebhookconfigurations",
                "customresourcedefinitions",
            ],
            &["get", "list", "watch", "update", "patch"],
        ),
    ]
}

/// Values for one cert-manager component (controller, webhook, cainjector): the platform's CA
/// bundle trusted (mounted into the system trust directory), and in kcp mode the tenant's
/// workspace reached through the mounted kubeconfig Secret.
fn component(ca: Option<&CaBundle>, tenant_kubeconfig: Option<&str>) -> Value {
    let mut args = Vec::new();
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if let Some(ca) = ca {
        volumes.push(json!({ "name": "ca-bundle", "configMap": { "name": ca.name } }));
        mounts.push(json!({ "name": "ca-bundle", "mountPath": CA_BUNDLE_PATH,
            "subPath": ca.key, "readOnly": true }));
    }
    if let Some(secret) = tenant_kubeconfig {
        args.push(json!(format!(
            "--kubeconfig={TENANT_KUBECONFIG_DIR}/kubeconfig"
        )));
        volumes.push(json!({ "name": "tenant-kubeconfig", "secret": { "secretName": secret } }));
        mounts.push(
            json!({ "name": "tenant-kubeconfig", "mountPath": TENANT_KUBECONFIG_DIR,
            "readOnly": true }),
        );
    }
    json!({ "extraArgs": args, "volumes": volumes, "volumeMounts": mounts })
}

/// `component` for the controller (the chart's top-level keys), the webhook and the cainjector.
fn components(ca: Option<&CaBundle>, tenant_kubeconfig: Option<&str>) -> Value {
    let one = component(ca, tenant_kubeconfig);
    let mut values = one.clone();
    values["webhook"] = one.clone();
    values["cainjector"] = one;
    values
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    }
}

impl Reconcile for CertManager {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
        let chart = HelmChart::from_version_or(
            cx.common().resolve_version(&self.spec.version)?,
            DEFAULT_CHART,
        )
        .tag_format(TAG_FORMAT);
        let mut set = cx.resource_set("cert-manager");
        // The Flux objects live in the tenant's namespace on the shared workload cluster.
        let flux_namespace = format!("cert-manager-{}", cx.identity().stable_id());
        set.add_to(Location::WorkloadCluster, &namespace(&flux_namespace))?;
        // Pull secrets and the CA bundle go where the pods run: the MCP, or beside the Flux
        // objects.
        set.add(&namespace(NAMESPACE))?.orphan();
        let (pods_at, pods_namespace) = match cx.mode() {
            Mode::Standard => (Location::ManagedControlPlane, NAMESPACE.to_owned()),
            Mode::Kcp => (Location::WorkloadCluster, flux_namespace.clone()),
        };
        let pulls = cx
            .image_pull_secrets(&mut set, pods_at, &pods_namespace)
            .await?;
        let ca = cx
            .copy_ca_bundle(&mut set, pods_at, &pods_namespace)
            .await?;
        let names: Vec<Value> = pulls.names.iter().map(|n| json!({ "name": n })).collect();

        let mut values = components(ca.as_ref(), None);
        values["global"] = json!({ "imagePullSecrets": names });
        let mut install = HelmInstall {
            name: "cert-manager".into(),
            namespace: flux_namespace,
            target_namespace: NAMESPACE.into(),
            chart,
            values: Some(values),
            installs: [api_kinds(), running_kinds()].concat(),
            kcp_split: None,
        };
        // In a kcp workspace: the same chart twice. The jetstack chart has no switch that leaves
        // only its CRDs, so a kcp platform's ProviderConfig names a chart that renders only them
        // under `crdsOnly`; every cert-manager component then runs on the workload cluster,
        // pointed at the workspace with credentials of its own that can do only what
        // cert-manager does (not the provider's access).
        let worker = match cx.mode() {
            Mode::Standard => None,
            Mode::Kcp => Some(
                cx.worker_credentials(
                    &mut set,
                    WorkerAccess {
                        name: "cert-manager".into(),
                        service_account_namespace: NAMESPACE.into(),
                        secret_namespace: install.namespace.clone(),
                        rules: worker_rules(),
                        token_lifetime: None,
                    },
                )
                .await?,
            ),
        };
        let mut workload = components(ca.as_ref(), worker.as_ref().map(|w| w.secret_name.as_str()));
        workload["crds"] = json!({ "enabled": false });
        install.kcp_split = Some(ChartSplit {
            api: ChartPart {
                values: Some(json!({ "crds": { "enabled": true }, "crdsOnly": true })),
                installs: api_kinds(),
            },
            workload: ChartPart {
                values: Some(workload),
                installs: running_kinds(),
            },
        });
        let helm = cx.helm_release(&mut set, install).await?;
        // Every release waits for what its pods mount: pull secrets, CA bundle, credentials.
        let mounted: Vec<_> = pulls
            .members
            .iter()
            .chain(ca.as_ref().map(|ca| &ca.member))
            .chain(worker.as_ref().map(|w| &w.secret))
            .cloned()
            .collect();
        for release in [Some(helm.release), helm.workload_release]
            .into_iter()
            .flatten()
        {
            if let Some(mut entry) = set.entry(&release) {
                for member in &mounted {
                    entry = entry.depends_on(member);
                }
            }
        }
        set.apply().await?;
        Ok(Outcome::ready())
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
        // The deletion guard has already waited for the end user's Certificates to go. In
        // reverse order: the HelmReleases first; cert-manager's namespace in the MCP stays.
        cx.resource_set("cert-manager").delete().await?;
        Ok(Deletion::done())
    }
}

/// The provider binary, with a sample for `dev`.
pub fn app() -> service_provider::App<CertManager> {
    service_provider::App::new().dev_samples(
        json!({ "versions": [{ "version": "1.17.2" }] }),
        json!({ "version": "1.17.2" }),
    )
}

fn main() -> std::process::ExitCode {
    app().run()
}
