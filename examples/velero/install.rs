//! What Velero installs and removes: its CRDs in the tenant's cluster, and on the workload
//! cluster a namespace per tenant with the tenant's kubeconfig and the Velero server.
//!
//! Shared by `main.rs` and its hand-written kube-derive twin (`xtask/macro-cost/velero_by_hand.rs`),
//! which differ only in how the types are declared.

use service_provider::Location;
use service_provider::k8s_openapi::ByteString;
use service_provider::k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use service_provider::k8s_openapi::api::core::v1::{
    Container, LocalObjectReference, Namespace, PodSpec, PodTemplateSpec, Secret,
    SecretVolumeSource, Volume, VolumeMount,
};
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use service_provider::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use service_provider::kube::api::ObjectMeta;
use service_provider::prelude::*;

use super::{Velero, VeleroSpec, VeleroStatus};

/// The group of Velero's own API, installed into the tenant's cluster.
const VELERO_GROUP: &str = "velero.io";
/// Velero's kinds, as (kind, plural).
const VELERO_KINDS: [(&str, &str); 4] = [
    ("Backup", "backups"),
    ("Restore", "restores"),
    ("Schedule", "schedules"),
    ("BackupStorageLocation", "backupstoragelocations"),
];
/// Name of the worker Deployment and of its tenant-kubeconfig Secret.
const WORKER: &str = "velero";
const TENANT_KUBECONFIG: &str = "tenant-kubeconfig";
/// Where the worker finds the tenant's kubeconfig.
const KUBECONFIG_DIR: &str = "/etc/velero/tenant";

/// A Velero CRD: the real ones carry full schemas; these keep every field.
fn velero_crd(kind: &str, plural: &str) -> CustomResourceDefinition {
    let preserve = JSONSchemaProps {
        type_: Some("object".into()),
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Default::default()
    };
    CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(format!("{plural}.{VELERO_GROUP}")),
            ..Default::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: VELERO_GROUP.into(),
            names: CustomResourceDefinitionNames {
                kind: kind.into(),
                plural: plural.into(),
                singular: Some(kind.to_lowercase()),
                ..Default::default()
            },
            scope: "Namespaced".into(),
            versions: vec![CustomResourceDefinitionVersion {
                name: "v1".into(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(preserve),
                }),
                ..Default::default()
            }],
            ..Default::default()
        },
        status: None,
    }
}

/// The tenant's namespace on the shared workload cluster: stable, and distinct for every tenant
/// in both modes.
fn worker_namespace(cx: &Context<Velero>) -> String {
    format!("velero-{}", cx.identity().stable_id())
}

fn worker_deployment(
    namespace: &str,
    image: &str,
    spec: &VeleroSpec,
    repository: &str,
) -> Deployment {
    let labels = std::collections::BTreeMap::from([("app".to_owned(), WORKER.to_owned())]);
    let plugins = spec
        .plugins
        .iter()
        .map(|p| Container {
            name: p.name.clone(),
            image: Some(format!("{repository}/{}:{}", p.name, p.version)),
            ..Default::default()
        })
        .collect::<Vec<_>>();
    Deployment {
        metadata: ObjectMeta {
            name: Some(WORKER.into()),
            namespace: Some(namespace.into()),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    init_containers: (!plugins.is_empty()).then_some(plugins),
                    containers: vec![Container {
                        name: WORKER.into(),
                        image: Some(image.into()),
                        args: Some(vec![
                            "server".into(),
                            format!("--kubeconfig={KUBECONFIG_DIR}/kubeconfig"),
                        ]),
                        volume_mounts: Some(vec![VolumeMount {
                            name: TENANT_KUBECONFIG.into(),
                            mount_path: KUBECONFIG_DIR.into(),
                            read_only: Some(true),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }],
                    volumes: Some(vec![Volume {
                        name: TENANT_KUBECONFIG.into(),
                        secret: Some(SecretVolumeSource {
                            secret_name: Some(TENANT_KUBECONFIG.into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    }
}

impl Reconcile for Velero {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
        // An unknown version is the end user's to fix: reported, not retried.
        let offered = cx.common().resolve_version(&self.spec.version)?;
        let tag = offered.chart_version.as_deref().unwrap_or(&offered.version);
        let repository = cx.config().image_repository.trim_end_matches('/');
        let image = format!("{repository}/velero:{tag}");

        // Velero's API goes into the tenant's cluster; the worker runs on the workload cluster,
        // next to the tenant's kubeconfig and the platform's pull secrets. The runtime applies
        // the namespace first and holds the object Progressing until the worker is available.
        let mut set = cx.resource_set("velero");
        for (kind, plural) in VELERO_KINDS {
            set.add(&velero_crd(kind, plural))?;
        }
        let namespace = worker_namespace(cx);
        let workload = Location::WorkloadCluster;
        set.add_to(
            workload,
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )?;
        set.add_to(
            workload,
            &Secret {
                metadata: ObjectMeta {
                    name: Some(TENANT_KUBECONFIG.into()),
                    namespace: Some(namespace.clone()),
                    ..Default::default()
                },
                data: Some(
                    [(
                        "kubeconfig".to_owned(),
                        ByteString(cx.mcp().kubeconfig().to_vec()),
                    )]
                    .into(),
                ),
                ..Default::default()
            },
        )?;
        let pull_secrets = cx
            .image_pull_secrets(&mut set, workload, &namespace)
            .await?;
        let mut deployment = worker_deployment(&namespace, &image, &self.spec, repository);
        if let Some(pod) = deployment.spec.template.spec.as_mut() {
            pod.image_pull_secrets = (!pull_secrets.names.is_empty()).then(|| {
                pull_secrets
                    .names
                    .iter()
                    .map(|name| LocalObjectReference { name: name.clone() })
                    .collect()
            });
        }
        let mut entry = set.add_to(workload, &deployment)?;
        for secret in &pull_secrets.members {
            entry = entry.depends_on(secret);
        }
        let report = set.apply().await?;

        Ok(Outcome::ready().with_status(VeleroStatus {
            installed_version: report.ready().then(|| offered.version.clone()),
            image: Some(image),
            worker_namespace: Some(namespace),
        }))
    }

    async fn delete(&self, cx: &Context<Self>) -> Result<Deletion<VeleroStatus>, Error> {
        // No end user's Backup is left (`deletion_guard` held the uninstall until then), so
        // everything the set installed goes, the worker before its namespace; the runtime keeps
        // the object Terminating until it is gone.
        cx.resource_set("velero").delete().await?;
        Ok(Deletion::done())
    }
}
