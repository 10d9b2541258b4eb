//! kcp mode under faults on two shards — wildcard watches dropped every couple of seconds, 410 on
//! resume, 10% 5xx from the virtual workspace, a shard restart — still brings every object to
//! Ready, and deleting them all leaves nothing behind.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use serde_json::json;
use service_provider::Mode;
use service_provider::dev::KcpOptions;
use service_provider::kube::Api;
use service_provider::kube::api::ListParams;
use service_provider::openmcp::{AccessRequest, ClusterRequest};
use service_provider::testing::{TestError, eventually, is_ready};
use service_provider_apiserver::FaultRule;

use crate::support::TIMEOUT;
use crate::velero::Velero;
use crate::velero_config;

const CONSUMERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_gets_ready_under_faults_and_nothing_is_orphaned() -> Result<(), TestError> {
    let mut platform = crate::support::platform::<Velero>(velero_config())
        .modes([Mode::Kcp])
        .kcp_options(KcpOptions::default().shards(2))
        .start_without_provider()
        .await?;
    let kcp = platform.env().kcp().expect("kcp runs").kcp().clone();
    // The consumers' workspaces are bound before the provider starts.
    let mut workspaces = Vec::new();
    for i in 0..CONSUMERS {
        workspaces.push(
            platform
                .create_kcp_workspace(&format!("consumer-{i}"))
                .await?,
        );
    }
    assert!(
        workspaces.iter().any(|w| w.shard() == 0) && workspaces.iter().any(|w| w.shard() == 1),
        "the consumers live on both shards"
    );
    platform.start_provider().await?;
    let source = platform.kcp_source().expect("kcp mode runs");
    eventually("an endpoint per shard", TIMEOUT, || async {
        (source.endpoint_urls().len() == 2).then_some(())
    })
    .await?;

    // Faults: 10% 5xx from every virtual workspace throughout.
    for shard in kcp.shards() {
        shard.vw_faults().inject(FaultRule::new(503).rate(0.1));
    }
    // Workspaces on the root shard (which is also the front and holds the provider workspace)
    // get their objects across a restart of that shard and dropped watches.
    let (on_root, on_other): (Vec<_>, Vec<_>) = workspaces.iter().partition(|w| w.shard() == 0);
    let mut tenants = Vec::new();
    for ws in &on_root {
        tenants.push(
            ws.create_tenant("velero", json!({ "version": "1.15.0" }))
                .await?,
        );
    }
    kcp.shard(0).unwrap().restart().await.unwrap();
    for shard in kcp.shards() {
        shard.drop_watches();
    }
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }
    // The other shard goes down; its workspaces get objects meanwhile (through the front), its
    // watch history is forgotten, and it comes back: the watches resume into a 410 and list again.
    let other = kcp.shard(1).unwrap();
    let lists_before_410 = object_lists(&other);
    other.stop().await;
    for ws in &on_other {
        tenants.push(
            ws.create_tenant("velero", json!({ "version": "1.15.0" }))
                .await?,
        );
    }
    other.expire_resource_versions();
    other.start().await.unwrap();
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }
    // The watch resumed from a resourceVersion the shard had forgotten: it got 410 Expired and
    // listed again (kube's watcher lists only after a 410; the endpoints did not change).
    assert!(
        object_lists(&other) > lists_before_410,
        "the provider listed the restarted shard's objects again after the 410"
    );
    // From now on watches drop every 300 ms, every other time with the history forgotten.
    let chaos = {
        let kcp = kcp.clone();
        tokio::spawn(async move {
            for round in 0u32.. {
                tokio::time::sleep(Duration::from_millis(300)).await;
                for shard in kcp.shards() {
                    if round % 2 == 1 {
                        shard.expire_resource_versions();
                    }
                    shard.drop_watches();
                }
            }
        })
    };
    // Changes still arrive through the dropped and expired watches.
    for tenant in &tenants {
        tenant.set_spec(json!({ "version": "1.16.1" })).await?;
    }
    for tenant in &tenants {
        let upgraded = tenant
            .wait_until("1.16.1 to be Ready", |o| {
                is_ready(o) && o.metadata.generation == Some(2)
            })
            .await?;
        assert_eq!(
            upgraded.status.unwrap().extra.installed_version.as_deref(),
            Some("1.16.1")
        );
    }
    assert_eq!(
        source.credentials().minted(),
        CONSUMERS as u64,
        "one token per workspace"
    );

    // Everything deleted, under the same faults: nothing orphaned.
    for tenant in &tenants {
        tenant.delete().await?;
    }
    for tenant in &tenants {
        tenant.wait_gone().await?;
    }
    chaos.abort();
    for shard in kcp.shards() {
        shard.vw_faults().clear();
    }
    for ws in &workspaces {
        assert!(
            ws.cluster()
                .get_opt::<ServiceAccount>("openmcp-system/velero")
                .await?
                .is_none(),
            "no ServiceAccount left in {}",
            ws.path()
        );
    }
    let managed = ListParams::default().labels("openmcp.cloud/managed-by=velero");
    eventually("the access requests to be gone", TIMEOUT, || {
        let managed = managed.clone();
        let platform = platform.platform().client();
        async move {
            let ars = Api::<AccessRequest>::all(platform.clone())
                .list(&managed)
                .await
                .ok()?;
            let crs = Api::<ClusterRequest>::all(platform)
                .list(&managed)
                .await
                .ok()?;
            (ars.items.is_empty() && crs.items.is_empty()).then_some(())
        }
    })
    .await?;
    for workload in platform.workload_clusters() {
        if let Ok(namespaces) = workload.list::<Namespace>(None).await {
            let left: Vec<String> = namespaces
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .filter(|n| n.starts_with("velero-"))
                .collect();
            assert_eq!(left, Vec::<String>::new(), "no worker namespace left");
        }
    }
    // Once the watches caught up, nothing is left to reconcile.
    eventually("the caches to catch up", TIMEOUT, || async {
        service_provider_runtime::controller::Source::keys(source)
            .is_empty()
            .then_some(())
    })
    .await?;
    // The faults did happen.
    let mut refused = 0;
    let mut watches = 0;
    let mut lists = 0;
    for shard in kcp.shards() {
        for (key, n) in shard.counters().snapshot() {
            if key.cluster == service_provider_apiserver::kcp::VIRTUAL_WORKSPACE_SURFACE {
                if key.code == 503 {
                    refused += n;
                }
                if key.verb == "watch" && key.resource == "veleroes" {
                    watches += n;
                }
                if key.verb == "list" && key.resource == "veleroes" && key.code == 200 {
                    lists += n;
                }
            }
        }
    }
    eprintln!(
        "faults: {refused} virtual-workspace requests answered 503, {watches} object watches opened, {lists} lists"
    );
    assert!(refused > 0, "the virtual workspace answered 503");
    assert!(
        watches > 4,
        "object watches were dropped and re-opened ({watches})"
    );
    assert!(
        lists > 2,
        "a resume from a forgotten resourceVersion listed again ({lists})"
    );
    platform.stop().await;
    Ok(())
}

/// Successful lists of the Service API objects through a shard's virtual workspace.
fn object_lists(shard: &service_provider_apiserver::kcp::KcpShard) -> u64 {
    shard
        .counters()
        .snapshot()
        .into_iter()
        .filter(|(k, _)| {
            k.cluster == service_provider_apiserver::kcp::VIRTUAL_WORKSPACE_SURFACE
                && k.verb == "list"
                && k.resource == "veleroes"
                && k.code == 200
        })
        .map(|(_, n)| n)
        .sum()
}
