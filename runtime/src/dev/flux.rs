//! A stand-in for Flux's source-controller and helm-controller on every simulated workload
//! cluster: the Flux CRDs are installed when the cluster is created, and `OCIRepository`,
//! `HelmRepository` and `HelmRelease` objects get the `Ready` condition Flux would give them —
//! after a short delay when they are well-formed and what they refer to exists, `Ready=False`
//! with Flux's reason otherwise. What it does not do is listed in the module docs of
//! [`crate::dev`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, CustomResourceExt, ResourceExt};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::dev::DevError;
use crate::dev::hosting::ClusterHandle;
use crate::resources::flux::{HelmRelease, HelmRepository, OCIRepository};
use crate::resources::helm::{CHART_KINDS_ANNOTATION, ChartKind};

/// How long a well-formed Flux object takes to become Ready (a pull, an install).
pub const READY_AFTER: Duration = Duration::from_millis(300);
/// How often an object that is not Ready is looked at again (Flux retries at its interval).
const RETRY: Duration = Duration::from_millis(500);
/// Annotation on a HelmRelease that makes its simulated install fail with the annotation's value
/// as the message (reason `InstallFailed`): fault injection for tests, as the embedded server
/// injects API errors.
pub const FAIL_INSTALL_ANNOTATION: &str = "dev.service-provider.openmcp.cloud/fail-install";
const FIELD_MANAGER: &str = "simulated-flux";

/// A Flux kind the stand-in serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    OciRepository,
    HelmRepository,
    HelmRelease,
}

impl Kind {
    fn resource(self) -> ApiResource {
        match self {
            Kind::OciRepository => ApiResource::erase::<OCIRepository>(&()),
            Kind::HelmRepository => ApiResource::erase::<HelmRepository>(&()),
            Kind::HelmRelease => ApiResource::erase::<HelmRelease>(&()),
        }
    }
}

/// Whether the workload cluster the stand-in serves is still served by the simulated platform.
pub(crate) type Served = Arc<dyn Fn() -> bool + Send + Sync>;

/// Installs the Flux CRDs on a new workload cluster (waiting until they are Established) and
/// starts the stand-in controllers for it; they end when the simulation stops or the cluster
/// `served` says the cluster is no longer served.
pub(crate) async fn start(
    stop: &CancellationToken,
    served: Served,
    cluster: &ClusterHandle,
) -> Result<(), DevError> {
    let client = cluster.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in [
        OCIRepository::crd(),
        HelmRepository::crd(),
        HelmRelease::crd(),
    ] {
        let name = crd.name_any();
        crds.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(DevError::kube(format!("installing the Flux CRD {name}")))?;
        let established = |c: Option<&CustomResourceDefinition>| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        };
        let wait = kube::runtime::wait::await_condition(crds.clone(), &name, established);
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .map_err(|_| DevError::Timeout {
                what: format!("the Flux CRD {name} to be established"),
                timeout: Duration::from_secs(30),
            })?
            .map_err(|e| DevError::Start(format!("waiting for the Flux CRD {name}: {e}")))?;
    }
    let busy = Arc::new(Mutex::new(HashSet::new()));
    for kind in [Kind::OciRepository, Kind::HelmRepository, Kind::HelmRelease] {
        tokio::spawn(watch(
            stop.clone(),
            served.clone(),
            client.clone(),
            kind,
            busy.clone(),
        ));
    }
    Ok(())
}

/// Watches one kind; every object not Ready for its generation gets a reconciler task.
async fn watch(
    stop: CancellationToken,
    served: Served,
    client: kube::Client,
    kind: Kind,
    busy: Arc<Mutex<HashSet<(Kind, String, String)>>>,
) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.resource());
    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()));
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = stream.next() => event,
        };
        let object = match event {
            Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => o,
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => {
                // A cluster that is no longer served ends its controllers.
                if !served() {
                    return;
                }
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // A ready object is left alone, unless a test injects a failure into it.
        let fault = kind == Kind::HelmRelease
            && object.annotations().contains_key(FAIL_INSTALL_ANNOTATION)
            && !failed(&object);
        if object.metadata.deletion_timestamp.is_some() || (ready_for_generation(&object) && !fault)
        {
            continue;
        }
        let (Some(namespace), name) = (object.namespace(), object.name_any()) else {
            continue;
        };
        if !busy.lock().insert((kind, namespace.clone(), name.clone())) {
            continue;
        }
        let (client, busy, stop) = (client.clone(), busy.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = reconcile(&client, kind, &namespace, &name) => {}
            }
            busy.lock().remove(&(kind, namespace, name));
        });
    }
}

fn ready_for_generation(object: &DynamicObject) -> bool {
    let status = object.data.get("status");
    let observed = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64);
    let ready = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    ready && observed == object.metadata.generation
}

fn failed(object: &DynamicObject) -> bool {
    object
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "False")
        })
}

/// What Flux would say about an object: `Ok` ready (reason, message), `Err` not.
enum Verdict {
    Ready(&'static str, String),
    /// Waiting for something Flux retries on its own (`Ready=Unknown`, `Reconciling=True`).
    Waiting(&'static str, String),
    /// Failed (`Ready=False`).
    Failed(&'static str, String),
}

/// Brings one object to its verdict after [`READY_AFTER`], retrying until it is Ready, gone, or
/// changed (a new generation gets a new task from the watch).
async fn reconcile(client: &kube::Client, kind: Kind, namespace: &str, name: &str) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &kind.resource());
    tokio::time::sleep(READY_AFTER).await;
    let mut written: Option<(String, String, String)> = None;
    loop {
        let Ok(Some(object)) = api.get_opt(name).await else {
            return;
        };
        if object.metadata.deletion_timestamp.is_some() {
            return;
        }
        let verdict = match kind {
            Kind::OciRepository => oci_repository(client, &object).await,
            Kind::HelmRepository => helm_repository(client, &object).await,
            Kind::HelmRelease => helm_release(client, &object).await,
        };
        let (status, reason, message) = match &verdict {
            Verdict::Ready(r, m) => ("True", *r, m.clone()),
            Verdict::Waiting(r, m) => ("Unknown", *r, m.clone()),
            Verdict::Failed(r, m) => ("False", *r, m.clone()),
        };
        let now = (status.to_owned(), reason.to_owned(), message.clone());
        if written.as_ref() != Some(&now) {
            let generation = object.metadata.generation;
            let time = k8s_openapi::jiff::Timestamp::now().to_string();
            let mut conditions = vec![json!({
                "type": "Ready", "status": status, "reason": reason, "message": message,
                "observedGeneration": generation, "lastTransitionTime": time,
            })];
            if matches!(verdict, Verdict::Waiting(..)) {
                conditions.push(json!({
                    "type": "Reconciling", "status": "True", "reason": "Progressing",
                    "message": message, "observedGeneration": generation, "lastTransitionTime": time,
                }));
            }
            let patch = json!({ "status": {
                "observedGeneration": if matches!(verdict, Verdict::Waiting(..)) { Value::Null } else { json!(generation) },
                "conditions": conditions,
            }});
            if api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_err()
            {
                return;
            }
            written = Some(now);
        }
        if matches!(verdict, Verdict::Ready(..)) {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// The Secret `name` in `namespace`, or why not (Flux's message).
async fn secret(client: &kube::Client, namespace: &str, name: &str) -> Result<Secret, String> {
    match Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
    {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(format!("secrets \"{name}\" not found")),
        Err(e) => Err(e.to_string()),
    }
}

fn str_at<'a>(object: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    object.data.pointer(pointer).and_then(Value::as_str)
}

/// A digest standing in for the pulled artifact's: stable for the same URL and reference.
fn digest(parts: &[&str]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, parts.join("@").as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

async fn oci_repository(client: &kube::Client, object: &DynamicObject) -> Verdict {
    let ns = object.namespace().unwrap_or_default();
    let url = str_at(object, "/spec/url").unwrap_or_default();
    let valid = url
        .strip_prefix("oci://")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(host, path)| !host.is_empty() && !path.is_empty());
    if !valid {
        return Verdict::Failed(
            "URLInvalid",
            format!("URL must be in format 'oci://<domain>/<org>/<repo>': {url:?}"),
        );
    }
    if let Some(secret_name) = str_at(object, "/spec/secretRef/name")
        && let Err(e) = secret(client, &ns, secret_name).await
    {
        return Verdict::Failed("AuthenticationFailed", e);
    }
    let tag = str_at(object, "/spec/ref/tag").unwrap_or("latest");
    Verdict::Ready(
        "Succeeded",
        format!(
            "stored artifact for digest '{tag}@sha256:{}'",
            digest(&[url, tag])
        ),
    )
}

async fn helm_repository(client: &kube::Client, object: &DynamicObject) -> Verdict {
    let ns = object.namespace().unwrap_or_default();
    let url = str_at(object, "/spec/url").unwrap_or_default();
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Verdict::Failed("URLInvalid", format!("invalid Helm repository URL {url:?}"));
    }
    if let Some(secret_name) = str_at(object, "/spec/secretRef/name")
        && let Err(e) = secret(client, &ns, secret_name).await
    {
        return Verdict::Failed("AuthenticationFailed", e);
    }
    Verdict::Ready(
        "Succeeded",
        format!("stored artifact: revision 'sha256:{}'", digest(&[url])),
    )
}

async fn helm_release(client: &kube::Client, object: &DynamicObject) -> Verdict {
    let ns = object.namespace().unwrap_or_default();
    if let Some(message) = object.annotations().get(FAIL_INSTALL_ANNOTATION) {
        return Verdict::Failed("InstallFailed", message.clone());
    }
    // The source: an OCIRepository (chartRef) or a HelmRepository (chart.spec.sourceRef).
    let (source_kind, source_ns, source_name, chart) = match (
        object.data.pointer("/spec/chartRef"),
        object.data.pointer("/spec/chart/spec"),
    ) {
        (Some(r), None) => (
            r["kind"].as_str().unwrap_or_default().to_owned(),
            r["namespace"].as_str().unwrap_or(&ns).to_owned(),
            r["name"].as_str().unwrap_or_default().to_owned(),
            r["name"].as_str().unwrap_or_default().to_owned(),
        ),
        (None, Some(c)) => (
            c["sourceRef"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            c["sourceRef"]["namespace"]
                .as_str()
                .unwrap_or(&ns)
                .to_owned(),
            c["sourceRef"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            c["chart"].as_str().unwrap_or_default().to_owned(),
        ),
        _ => {
            return Verdict::Failed(
                "InvalidChartReference",
                "exactly one of spec.chart and spec.chartRef must be set".into(),
            );
        }
    };
    let kind = match source_kind.as_str() {
        "OCIRepository" => Kind::OciRepository,
        "HelmRepository" => Kind::HelmRepository,
        other => {
            return Verdict::Failed(
                "InvalidChartReference",
                format!("unsupported source kind {other:?}"),
            );
        }
    };
    let sources: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &source_ns, &kind.resource());
    match sources.get_opt(&source_name).await {
        Ok(Some(source)) if ready_for_generation(&source) => {}
        Ok(_) => {
            return Verdict::Waiting(
                "Progressing",
                format!("{source_kind} {source_ns}/{source_name} is not ready"),
            );
        }
        Err(e) => return Verdict::Failed("ArtifactFailed", e.to_string()),
    }
    // The cluster it installs into, through the kubeconfig Secret.
    let target = match str_at(object, "/spec/kubeConfig/secretRef/name") {
        None => client.clone(),
        Some(secret_name) => {
            let key = str_at(object, "/spec/kubeConfig/secretRef/key").unwrap_or("value");
            let kubeconfig = match secret(client, &ns, secret_name).await {
                Ok(s) => s.data.and_then(|d| d.get(key).map(|v| v.0.clone())),
                Err(e) => {
                    return Verdict::Failed(
                        "InstallFailed",
                        format!("could not get kubeconfig: {e}"),
                    );
                }
            };
            let Some(kubeconfig) = kubeconfig else {
                return Verdict::Failed(
                    "InstallFailed",
                    format!("secret {secret_name} has no key {key:?}"),
                );
            };
            match crate::access::clients::ClientFactory::new()
                .client(&kubeconfig)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    return Verdict::Failed("InstallFailed", format!("invalid kubeconfig: {e}"));
                }
            }
        }
    };
    if let Some(kinds) = object.annotations().get(CHART_KINDS_ANNOTATION)
        && let Some(verdict) = unserved_kind(&target, kinds).await
    {
        return verdict;
    }
    let target_ns = str_at(object, "/spec/targetNamespace")
        .unwrap_or(&ns)
        .to_owned();
    let create = object
        .data
        .pointer("/spec/install/createNamespace")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let namespaces: Api<Namespace> = Api::all(target);
    match namespaces.get_opt(&target_ns).await {
        Ok(Some(_)) => {}
        Ok(None) if create => {
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(target_ns.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            if let Err(e) = namespaces.create(&PostParams::default(), &namespace).await
                && !matches!(&e, kube::Error::Api(s) if s.code == 409)
            {
                return Verdict::Failed(
                    "InstallFailed",
                    format!("Kubernetes cluster unreachable: {e}"),
                );
            }
        }
        Ok(None) => {
            return Verdict::Failed(
                "InstallFailed",
                format!("create: failed to create: namespaces \"{target_ns}\" not found"),
            );
        }
        Err(e) => {
            return Verdict::Failed(
                "InstallFailed",
                format!("Kubernetes cluster unreachable: {e}"),
            );
        }
    }
    let release = str_at(object, "/spec/releaseName")
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{target_ns}-{}", object.name_any()));
    let version = str_at(object, "/spec/chart/spec/version").unwrap_or("latest");
    Verdict::Ready(
        "InstallSucceeded",
        format!(
            "Helm install succeeded for release {target_ns}/{release}.v1 with chart {chart}@{version}"
        ),
    )
}

/// Fails the install as Helm does when the target cluster does not serve a built-in kind the
/// chart was declared to install (a Deployment into a kcp workspace). Kinds of other groups are
/// the chart's own CRDs, which Helm installs first.
async fn unserved_kind(target: &kube::Client, kinds: &str) -> Option<Verdict> {
    for kind in kinds.split(',').filter_map(ChartKind::parse) {
        let group = kind.group();
        if group.contains('.') && !group.ends_with(".k8s.io") {
            continue;
        }
        let served = if group.is_empty() {
            target.list_core_api_resources(&kind.api_version).await
        } else {
            target.list_api_group_resources(&kind.api_version).await
        };
        let missing = match served {
            Ok(list) => !list.resources.iter().any(|r| r.kind == kind.kind),
            Err(kube::Error::Api(s)) if s.code == 404 => true,
            Err(e) => {
                return Some(Verdict::Failed(
                    "InstallFailed",
                    format!("Kubernetes cluster unreachable: {e}"),
                ));
            }
        };
        if missing {
            return Some(Verdict::Failed(
                "InstallFailed",
                format!(
                    "Helm install failed: unable to build kubernetes objects from release manifest: \
                     resource mapping not found: no matches for kind \"{}\" in version \"{}\"; \
                     ensure CRDs are installed first",
                    kind.kind, kind.api_version
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_means_ready_for_the_current_generation() {
        let object = |observed: i64| -> DynamicObject {
            serde_json::from_value(json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": {"name": "h", "generation": 2},
                "status": {"observedGeneration": observed, "conditions": [{"type": "Ready", "status": "True"}]}}))
            .unwrap()
        };
        assert!(ready_for_generation(&object(2)));
        assert!(!ready_for_generation(&object(1)));
        let _ = Kind::HelmRelease.resource();
        assert_eq!(
            <OCIRepository as kube::Resource>::kind(&()),
            "OCIRepository"
        );
    }
}
