//! kcp at scale: `cargo bench -p service-provider-apiserver --bench kcp` (release).
//!
//! N workspaces (default 10,000; `KCP_BENCH_WORKSPACES` overrides), each with an APIBinding to one
//! export and one bound object, created over HTTPS with `kube::Client`; then one wildcard list and
//! one wildcard watch through the export's virtual workspace. Prints times and the resident memory
//! the server added; asserts nothing (targets: setup ≤ 30 s, initial list ≤ 2 s, ≤ 500 MiB).

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use kube::Api;
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use service_provider_apiserver::kcp::{Kcp, KcpOptions};

const CONCURRENCY: usize = 64;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("valid object")
}

fn main() {
    let n: usize = std::env::var("KCP_BENCH_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(run(n));
}

async fn run(n: usize) {
    let rss_before = rss_kib();
    let mut opts = KcpOptions::default();
    if let Some(h) = std::env::var("KCP_BENCH_HISTORY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        opts = opts.history(h);
    }
    let kcp = Kcp::start("bench", opts).await.expect("start kcp");
    let token = kcp.admin_token().to_string();
    let schemas = ar(
        "apis.kcp.io",
        "v1alpha1",
        "APIResourceSchema",
        "apiresourceschemas",
    );
    let exports = ar("apis.kcp.io", "v1alpha2", "APIExport", "apiexports");
    let bindings = ar("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings");
    let workspaces = ar("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces");
    let cowboys = ar("wildwest.dev", "v1alpha1", "Cowboy", "cowboys");

    let setup = Instant::now();
    let provider = kcp
        .create_workspace("root:provider")
        .await
        .expect("provider");
    let pc = kcp.client(&provider.path);
    Api::<DynamicObject>::all_with(pc.clone(), &schemas)
        .create(
            &PostParams::default(),
            &obj(json!({
                "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
                "metadata": {"name": "v1.cowboys.wildwest.dev"},
                "spec": {
                    "group": "wildwest.dev",
                    "names": {"plural": "cowboys", "singular": "cowboy", "kind": "Cowboy", "listKind": "CowboyList"},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                        "subresources": {"status": {}},
                        "schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {"intent": {"type": "string"}}},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}]
                }
            })),
        )
        .await
        .expect("schema");
    Api::<DynamicObject>::all_with(pc.clone(), &exports)
        .create(
            &PostParams::default(),
            &obj(json!({
                "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": "cowboys"},
                "spec": {"resources": [{"group": "wildwest.dev", "name": "cowboys",
                    "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}}]}
            })),
        )
        .await
        .expect("export");

    // Workspaces, created in root over HTTP; the controllers schedule and initialize them.
    let t = Instant::now();
    let root = kcp.client("root");
    let ws_api = Api::<DynamicObject>::all_with(root.clone(), &workspaces);
    stream::iter(0..n)
        .map(|i| {
            let api = ws_api.clone();
            async move {
                api.create(
                    &PostParams::default(),
                    &obj(
                        json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                        "metadata": {"name": format!("c{i}")}, "spec": {}}),
                    ),
                )
                .await
                .expect("workspace");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    for i in 0..n {
        kcp.wait_workspace(&format!("root:c{i}"), Duration::from_secs(120))
            .await
            .expect("workspace ready");
    }
    let t_ws = t.elapsed();
    let rss_ws = rss_kib();

    // Counts Bound bindings with one wildcard watch.
    let wild_bindings = Api::<DynamicObject>::all_with(kcp.wildcard_client(0), &bindings);
    let rv = wild_bindings
        .list(&ListParams::default().limit(1))
        .await
        .expect("list bindings")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let mut events = wild_bindings
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .expect("watch bindings")
        .boxed();
    let bound = tokio::spawn(async move {
        let mut done = std::collections::HashSet::new();
        while done.len() < n {
            match events.try_next().await? {
                Some(WatchEvent::Added(b) | WatchEvent::Modified(b))
                    if b.data.pointer("/status/phase") == Some(&json!("Bound")) =>
                {
                    if let Some(c) = b
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("kcp.io/cluster"))
                    {
                        done.insert(c.clone());
                    }
                }
                Some(_) => {}
                None => break,
            }
        }
        Ok::<usize, kube::Error>(done.len())
    });

    // One APIBinding per workspace, all through one client (one connection pool), as a tenant-facing
    // front proxy sees them.
    let t = Instant::now();
    let front = kcp.client_for_url(&kcp.url(), &token);
    stream::iter(0..n)
        .map(|i| {
            let front = front.clone();
            async move {
                let req = kube::core::Request::new(format!(
                    "/clusters/root:c{i}/apis/apis.kcp.io/v1alpha2/apibindings"
                ))
                .create(
                    &PostParams::default(),
                    serde_json::to_vec(&json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
                        "metadata": {"name": "cowboys"},
                        "spec": {"reference": {"export": {"path": "root:provider", "name": "cowboys"}}}}))
                    .expect("json"),
                )
                .expect("request");
                front
                    .request::<DynamicObject>(req)
                    .await
                    .expect("binding");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let _ = tokio::time::timeout(Duration::from_secs(300), bound)
        .await
        .expect("every binding Bound in time")
        .expect("binding watch");
    let t_bind = t.elapsed();
    let rss_bind = rss_kib();

    // One bound object per workspace.
    let t = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let front = front.clone();
            async move {
                let req = kube::core::Request::new(format!(
                    "/clusters/root:c{i}/apis/wildwest.dev/v1alpha1/namespaces/default/cowboys"
                ))
                .create(
                    &PostParams::default(),
                    serde_json::to_vec(
                        &json!({"apiVersion": "wildwest.dev/v1alpha1", "kind": "Cowboy",
                        "metadata": {"name": "cowboy"}, "spec": {"intent": format!("ride-{i}")}}),
                    )
                    .expect("json"),
                )
                .expect("request");
                front.request::<DynamicObject>(req).await.expect("cowboy");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let t_obj = t.elapsed();
    let t_setup = setup.elapsed();
    let rss_setup = rss_kib();

    // The provider's view: one wildcard list and one wildcard watch through the virtual workspace.
    let slices = ar(
        "apis.kcp.io",
        "v1alpha1",
        "APIExportEndpointSlice",
        "apiexportendpointslices",
    );
    let slice = Api::<DynamicObject>::all_with(pc.clone(), &slices)
        .get("cowboys")
        .await
        .expect("slice");
    let url = slice.data["status"]["endpoints"][0]["url"]
        .as_str()
        .expect("an endpoint")
        .to_string();
    let vw = kcp.client_for_url(&format!("{url}/clusters/*"), &token);
    let all = Api::<DynamicObject>::all_with(vw, &cowboys);
    let t = Instant::now();
    let list = all.list(&ListParams::default()).await.expect("list");
    let t_list = t.elapsed();
    let listed = list.items.len();
    assert_eq!(listed, n, "the list sees every bound object");
    drop(list);
    let t = Instant::now();
    let mut watch = all
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    let mut seen = 0;
    let mut clusters = std::collections::HashSet::new();
    while seen < n {
        match watch.try_next().await {
            Ok(Some(WatchEvent::Added(o))) => {
                if let Some(c) = o
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kcp.io/cluster"))
                {
                    clusters.insert(c.clone());
                }
                seen += 1;
            }
            Ok(Some(_)) => {}
            other => panic!("watch ended after {seen} events: {other:?}"),
        }
    }
    let t_watch = t.elapsed();
    drop(watch);
    let rss_after = rss_kib();

    let shard = kcp.shard(0).expect("root shard");
    println!("kcp benchmark: {n} workspaces, each with an APIBinding and one bound object");
    println!(
        "  workspaces created and Ready     {:>8.2} s",
        t_ws.as_secs_f64()
    );
    println!(
        "  bindings created and Bound       {:>8.2} s",
        t_bind.as_secs_f64()
    );
    println!(
        "  bound objects created            {:>8.2} s",
        t_obj.as_secs_f64()
    );
    println!(
        "  setup total                      {:>8.2} s   (target ≤ 30 s)",
        t_setup.as_secs_f64()
    );
    println!(
        "  wildcard LIST through the VW     {:>8.3} s   (target ≤ 2 s; {listed} items)",
        t_list.as_secs_f64()
    );
    println!(
        "  wildcard WATCH, all ADDED events {:>8.3} s   ({seen} events from {} clusters)",
        t_watch.as_secs_f64(),
        clusters.len()
    );
    println!(
        "  resident memory: workspaces {:.1} MiB, +bindings {:.1} MiB, +objects {:.1} MiB",
        (rss_ws.saturating_sub(rss_before)) as f64 / 1024.0,
        (rss_bind.saturating_sub(rss_ws)) as f64 / 1024.0,
        (rss_setup.saturating_sub(rss_bind)) as f64 / 1024.0,
    );
    println!(
        "  resident memory after setup     {:>8.1} MiB",
        (rss_setup.saturating_sub(rss_before)) as f64 / 1024.0
    );
    println!(
        "  resident memory added           {:>8.1} MiB (target ≤ 500 MiB; {:.1} KiB per workspace)",
        (rss_after.saturating_sub(rss_before)) as f64 / 1024.0,
        (rss_after.saturating_sub(rss_before)) as f64 / n as f64
    );
    println!(
        "  shard resourceVersion            {:>8}",
        shard.resource_version()
    );
}
