//! Failure: 100 objects under injected API faults (5xx, dropped watches, a restart) all become
//! Ready and leave nothing behind when deleted; a panicking reconcile is reported in its object's
//! status while the others proceed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use serde_json::json;
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, ListParams};
use service_provider::openmcp::{AccessRequest, ClusterRequest};
use service_provider_apiserver::{FaultRule, Faults};

use crate::flaky::Flaky;
use crate::support::{self, TIMEOUT};
use crate::velero::Velero;
use service_provider::Mode;
use service_provider::testing::{TestError, eventually, ready_reason};

const NAMESPACE: &str = "project-faults--ws-a";
const OBJECTS: usize = 100;

/// Faults on every cluster: platform, onboarding, and the shard(s) hosting MCP and workload
/// clusters (logical clusters of one shard share its faults: each shard gets one rule).
fn faults_on(env: &TestEnv, on: bool) {
    let clusters = [env.platform().clone(), env.onboarding().clone()]
        .into_iter()
        .chain(env.mcp(&ControlPlaneRef::new(NAMESPACE, "tenant-000")))
        .chain(env.workload_clusters());
    let mut seen: Vec<*const Faults> = Vec::new();
    for cluster in clusters {
        let faults = std::ptr::from_ref(cluster.faults());
        if seen.contains(&faults) {
            continue;
        }
        seen.push(faults);
        if on {
            cluster.faults().inject(FaultRule::new(500).rate(0.1));
        } else {
            cluster.faults().clear();
        }
    }
}

/// What holds objects back from Ready: how many are Ready, which side is stuck (the platform
/// granting the ClusterRequests, or the provider noticing), and each stuck object's status.
async fn stuck(env: &TestEnv, veleros: &Api<Velero>) -> String {
    let list = match veleros.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(e) => return format!("listing the objects failed: {e}"),
    };
    let not_ready: Vec<String> = list
        .items
        .iter()
        .filter(|o| !support::ready(Some(*o)))
        .map(|o| {
            format!(
                "{} (generation {:?}, status {:?})",
                o.metadata.name.as_deref().unwrap_or_default(),
                o.metadata.generation,
                o.status
            )
        })
        .collect();
    let requests: Api<ClusterRequest> = Api::all(env.platform().client());
    let phases = match requests.list(&ListParams::default()).await {
        Ok(list) => {
            let mut phases = std::collections::BTreeMap::<String, usize>::new();
            for cr in list.items {
                let phase = cr.status.map(|s| s.common.phase).unwrap_or_default();
                *phases.entry(phase).or_default() += 1;
            }
            format!("{phases:?}")
        }
        Err(e) => format!("unknown ({e})"),
    };
    format!(
        "{} of {} Ready; ClusterRequests by phase on the platform: {phases}; not Ready: {}",
        list.items.len() - not_ready.len(),
        list.items.len(),
        not_ready.join("; ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_objects_survive_faults_and_leave_nothing_behind() -> Result<(), TestError> {
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("tenant-{i:03}")).collect();
    let mut config = crate::velero_config();
    config["pollInterval"] = json!("10m");
    let mut platform = support::platform::<Velero>(config)
        .modes([Mode::Standard])
        .start_without_provider()
        .await?;
    // The ControlPlanes and their MCPs are there before the provider starts.
    let cps: Vec<ControlPlaneRef> = names
        .iter()
        .map(|name| ControlPlaneRef::new(NAMESPACE, name))
        .collect();
    platform.env().create_control_planes(&cps, 64).await?;
    platform
        .env()
        .wait_control_planes_ready(&cps, TIMEOUT)
        .await?;
    platform.start_provider().await?;
    let env = platform.env();

    faults_on(env, true);
    // Watches dropped every 2 s for the whole run.
    let dropping = Arc::new(AtomicBool::new(true));
    let dropper = tokio::spawn({
        let (platform, onboarding) = (env.platform().clone(), env.onboarding().clone());
        let dropping = dropping.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            while dropping.load(Ordering::Acquire) {
                tick.tick().await;
                for c in [&platform, &onboarding] {
                    if let Some(c) = c.dedicated_cluster() {
                        c.drop_watches();
                    }
                }
            }
        }
    });

    futures::stream::iter(names.iter())
        .for_each_concurrent(8, |name| async move {
            let cp = ControlPlaneRef::new(NAMESPACE, name);
            eventually("creating an object under faults", TIMEOUT, || async {
                let created = tokio::spawn({
                    let api: Api<Velero> =
                        Api::namespaced(env.onboarding().client(), &cp.namespace);
                    let obj: Velero = serde_json::from_value(json!({
                        "apiVersion": "velero.services.open-control-plane.io/v1alpha1",
                        "kind": "Velero",
                        "metadata": { "name": cp.name, "namespace": cp.namespace },
                        "spec": { "version": "1.15.0" },
                    }))
                    .unwrap();
                    async move { api.create(&Default::default(), &obj).await }
                })
                .await
                .unwrap();
                match created {
                    Ok(_) => Some(()),
                    Err(service_provider::kube::Error::Api(s)) if s.code == 409 => Some(()),
                    Err(_) => None,
                }
            })
            .await
            .unwrap();
        })
        .await;

    // One restart of the onboarding cluster half-way.
    env.onboarding()
        .dedicated_cluster()
        .expect("dedicated")
        .restart()
        .await
        .unwrap();

    let veleros: Api<Velero> = Api::namespaced(env.onboarding().client(), NAMESPACE);
    let all_ready = support::eventually_explained(
        "100 objects to become Ready under faults",
        Duration::from_secs(240),
        || {
            let veleros = veleros.clone();
            async move {
                let list = veleros.list(&ListParams::default()).await.ok()?;
                let ready = list
                    .items
                    .iter()
                    .filter(|o| support::ready(Some(*o)))
                    .count();
                (ready == OBJECTS).then_some(ready)
            }
        },
        || stuck(env, &veleros),
    )
    .await;
    assert_eq!(all_ready, OBJECTS);

    // Delete everything, still under faults.
    eventually("deleting every object", TIMEOUT, || {
        let veleros = veleros.clone();
        async move {
            veleros
                .delete_collection(&DeleteParams::default(), &ListParams::default())
                .await
                .ok()
                .map(|_| ())
        }
    })
    .await
    .unwrap();
    eventually("every object to be gone", Duration::from_secs(240), || {
        let veleros = veleros.clone();
        async move {
            veleros
                .list(&ListParams::default())
                .await
                .ok()
                .filter(|l| l.items.is_empty())
                .map(|_| ())
        }
    })
    .await
    .unwrap();
    dropping.store(false, Ordering::Release);
    let _ = dropper.await;
    faults_on(env, false);

    // Nothing left behind: no access requests of the provider, no worker namespaces.
    let selector = ListParams::default().labels("openmcp.cloud/managed-by=velero");
    let ars: Api<AccessRequest> = Api::all(env.platform().client());
    let crs: Api<ClusterRequest> = Api::all(env.platform().client());
    eventually("every access request to be gone", TIMEOUT, || {
        let (ars, crs, selector) = (ars.clone(), crs.clone(), selector.clone());
        async move {
            let left = ars.list(&selector).await.ok()?.items.len()
                + crs.list(&selector).await.ok()?.items.len();
            (left == 0).then_some(())
        }
    })
    .await
    .unwrap();
    for workload in env.workload_clusters() {
        let namespaces: Api<Namespace> = Api::all(workload.client());
        eventually("every worker namespace to be gone", TIMEOUT, || {
            let namespaces = namespaces.clone();
            async move {
                let list = namespaces.list(&ListParams::default()).await.ok()?;
                (!list.items.iter().any(|n| {
                    n.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("velero-"))
                }))
                .then_some(())
            }
        })
        .await
        .unwrap();
    }
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_fails_one_reconcile_not_the_process() -> Result<(), TestError> {
    let platform = support::platform::<Flaky>(json!({}))
        .modes([Mode::Standard])
        .start()
        .await?;
    let mut tenants = Vec::new();
    for name in ["calm-1", "panics", "calm-2"] {
        let spec = json!({ "panic": name == "panics" });
        tenants.push(
            platform
                .create_tenant(&format!("{NAMESPACE}/{name}"), spec)
                .await?,
        );
    }
    let panicked = tenants[1]
        .wait_until("the panic to be reported", |o| {
            ready_reason(o) == Some("ReconcilePanicked")
        })
        .await?;
    let message = panicked
        .status
        .unwrap()
        .condition("Ready")
        .unwrap()
        .message
        .clone();
    assert!(
        message.contains("create_or_update panicked") && message.contains("was told to panic"),
        "{message}"
    );
    for calm in [&tenants[0], &tenants[2]] {
        calm.wait_ready().await?;
    }
    // Still alive: a new object is served.
    platform
        .create_tenant(&format!("{NAMESPACE}/late"), json!({}))
        .await?
        .wait_ready()
        .await?;
    platform.stop().await;
    Ok(())
}
