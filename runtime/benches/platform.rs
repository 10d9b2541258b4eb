//! How fast and how big the simulated openMCP platform is: time and resident memory to create N
//! ControlPlanes (each with its namespace, ClusterRequest and MCP cluster) and to grant each of
//! them MCP access (an AccessRequest with a ServiceAccount, RBAC, token and kubeconfig Secret),
//! plus the latency of single grants.
//!
//! `cargo bench -p service-provider-runtime --features dev --bench platform -- [N] [listeners]`
//! (N defaults to 1000; `listeners` hosts every MCP cluster on its own listener instead of as a
//! logical cluster of one shared shard).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use service_provider_runtime::dev::{Hosting, TestEnv};
use service_provider_runtime::openmcp::naming::stable_mcp_namespace;
use service_provider_runtime::openmcp::{
    AccessRequest, AccessRequestSpec, ObjectReference, RoleRef, TokenConfig,
};

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn access_request(name: &str, ns: &str, cr: &str) -> AccessRequest {
    let mut ar = AccessRequest::new(
        name,
        AccessRequestSpec {
            request_ref: Some(ObjectReference {
                name: cr.into(),
                namespace: ns.into(),
            }),
            token: Some(TokenConfig {
                role_refs: vec![RoleRef::cluster_role("cluster-admin")],
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    ar.metadata.namespace = Some(ns.into());
    ar
}

/// Waits until every AccessRequest named in `names` is granted for its generation.
async fn wait_granted(
    platform: kube::Client,
    mut names: HashSet<(String, String)>,
) -> Result<(), String> {
    let stream = watcher(
        Api::<AccessRequest>::all(platform),
        watcher::Config::default(),
    )
    .applied_objects()
    .default_backoff();
    futures::pin_mut!(stream);
    while let Some(ar) = stream.try_next().await.map_err(|e| e.to_string())? {
        if ar.is_ready() {
            names.remove(&(ar.namespace().unwrap_or_default(), ar.name_any()));
            if names.is_empty() {
                return Ok(());
            }
        }
    }
    Err("the AccessRequest watch ended".to_string())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let hosting = if args.iter().any(|a| a == "listeners") {
        Hosting::Listeners
    } else {
        Hosting::LogicalClusters
    };
    let before = rss_mib();
    let started = Instant::now();
    let env = TestEnv::builder()
        .hosting(hosting)
        .timeout(Duration::from_secs(600))
        .start()
        .await?;
    let base = rss_mib();
    println!(
        "platform: {hosting:?}, {n} ControlPlanes; empty environment up in {:?}, RSS {before:.1} -> {base:.1} MiB",
        started.elapsed()
    );

    // N ControlPlanes to Ready (namespace, ClusterRequest, MCP cluster each).
    let cps: Vec<_> = (0..n)
        .map(|i| {
            service_provider_runtime::dev::ControlPlaneRef::new(
                "project-bench--ws-bench",
                format!("cp-{i}"),
            )
        })
        .collect();
    let t = Instant::now();
    env.create_control_planes(&cps, 64).await?;
    env.wait_control_planes_ready(&cps, Duration::from_secs(600))
        .await?;
    let cp_time = t.elapsed();
    let after_cps = rss_mib();

    // MCP access for each.
    let platform = env.platform().client();
    let mut names = HashSet::new();
    let mut requests = Vec::new();
    for cp in &cps {
        let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
        let name = format!("bench--{}--mcp", cp.name);
        names.insert((ns.clone(), name.clone()));
        requests.push(access_request(&name, &ns, &cp.name));
    }
    let t = Instant::now();
    let waiter = tokio::spawn(wait_granted(platform.clone(), names));
    futures::stream::iter(requests.into_iter().map(|ar| {
        let api =
            Api::<AccessRequest>::namespaced(platform.clone(), &ar.namespace().unwrap_or_default());
        async move { api.create(&PostParams::default(), &ar).await.map(|_| ()) }
    }))
    .buffer_unordered(64)
    .try_collect::<Vec<()>>()
    .await?;
    waiter.await??;
    let grant_time = t.elapsed();
    let after_grants = rss_mib();

    // Single-grant latency, one at a time, on the first ControlPlanes.
    let samples = n.min(200);
    let mut latencies = Vec::with_capacity(samples);
    for cp in cps.iter().take(samples) {
        let ns = stable_mcp_namespace(&cp.name, &cp.namespace)?;
        let name = format!("latency--{}--mcp", cp.name);
        let api = Api::<AccessRequest>::namespaced(platform.clone(), &ns);
        let t = Instant::now();
        api.create(
            &PostParams::default(),
            &access_request(&name, &ns, &cp.name),
        )
        .await?;
        service_provider_apiserver::wait_for(
            &api,
            &name,
            Duration::from_secs(30),
            |o: Option<&AccessRequest>| o.is_some_and(AccessRequest::is_ready),
        )
        .await?;
        latencies.push(t.elapsed());
    }
    latencies.sort();

    println!(
        "{n} ControlPlanes Ready in {cp_time:?} ({:.0}/s); RSS {base:.1} -> {after_cps:.1} MiB ({:.1} KiB per ControlPlane)",
        n as f64 / cp_time.as_secs_f64(),
        (after_cps - base) * 1024.0 / n as f64
    );
    println!(
        "{n} MCP AccessRequests Granted in {grant_time:?} ({:.0}/s); RSS {after_cps:.1} -> {after_grants:.1} MiB ({:.1} KiB per grant)",
        n as f64 / grant_time.as_secs_f64(),
        (after_grants - after_cps) * 1024.0 / n as f64
    );
    println!(
        "single grant, create -> Granted, {samples} samples: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
    println!(
        "total: {:.1} MiB resident for {n} tenants ({:.1} KiB per tenant incl. access)",
        after_grants,
        (after_grants - base) * 1024.0 / n as f64
    );
    env.stop();
    Ok(())
}
