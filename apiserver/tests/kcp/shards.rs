//! Several shards in one process, and faults and counters per shard and surface.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use service_provider_apiserver::FaultRule;
use service_provider_apiserver::kcp::{
    Kcp, KcpOptions, VIRTUAL_WORKSPACE_SURFACE, WORKSPACE_SURFACE,
};

use crate::common::*;

#[tokio::test]
async fn each_shard_has_its_own_url_counter_and_endpoint() {
    let kcp = Kcp::start("kcp", KcpOptions::default().shards(2))
        .await
        .unwrap();
    let (s0, s1) = (kcp.shard(0).unwrap(), kcp.shard(1).unwrap());
    assert_ne!(s0.url(), s1.url());
    assert_eq!(s0.url(), kcp.url());
    let p = kcp.create_workspace_on("root:p", 0).await.unwrap();
    let a = kcp.create_workspace_on("root:a", 1).await.unwrap();
    assert_eq!((p.shard, a.shard), (0, 1));
    // The front URL resolves workspaces on every shard; a shard serves only its own.
    assert!(
        Api::<ConfigMap>::namespaced(kcp.client(&a.path), "default")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    let on_s1 = kcp.client_for_url(
        &format!("{}/clusters/{}", s1.url(), a.name),
        kcp.admin_token(),
    );
    assert!(
        Api::<ConfigMap>::namespaced(on_s1, "default")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    let wrong = kcp.client_for_url(
        &format!("{}/clusters/{}", s1.url(), p.name),
        kcp.admin_token(),
    );
    assert_eq!(
        code(
            Api::<ConfigMap>::namespaced(wrong, "default")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        ),
        403
    );
    // One resourceVersion counter per shard: writes on shard 1 leave shard 0's counter alone.
    let rv0 = s0.resource_version();
    let rv1 = s1.resource_version();
    Api::<ConfigMap>::namespaced(kcp.client(&a.path), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(s0.resource_version(), rv0);
    assert!(s1.resource_version() > rv1);

    // The export on shard 0, its first binding on shard 1: only shard 1's endpoint is listed.
    let prov = provider_in(&kcp, &p).await;
    bind(&kcp, &a, &prov, "cowboys", json!([])).await;
    let slice = wait_obj(&slices(&kcp.client(&p.path)), "cowboys", "endpoint", |v| {
        !endpoint_urls(v).is_empty()
    })
    .await;
    assert_eq!(
        endpoint_urls(&slice),
        [format!(
            "{}/services/apiexport/{}/cowboys",
            s1.url(),
            p.name
        )]
    );
    // A binding on shard 0 adds shard 0's endpoint.
    let b = kcp.create_workspace_on("root:b", 0).await.unwrap();
    bind(&kcp, &b, &prov, "cowboys", json!([])).await;
    let slice = wait_obj(
        &slices(&kcp.client(&p.path)),
        "cowboys",
        "two endpoints",
        |v| endpoint_urls(v).len() == 2,
    )
    .await;
    assert_eq!(
        endpoint_urls(&slice),
        [
            format!("{}/services/apiexport/{}/cowboys", s0.url(), p.name),
            format!("{}/services/apiexport/{}/cowboys", s1.url(), p.name)
        ]
    );
    // Each shard's virtual workspace sees its own shard's consumers.
    cowboys(&kcp.client(&a.path), "default")
        .create(&PostParams::default(), &cowboy("on-1", "x"))
        .await
        .unwrap();
    cowboys(&kcp.client(&b.path), "default")
        .create(&PostParams::default(), &cowboy("on-0", "x"))
        .await
        .unwrap();
    for (url, want) in endpoint_urls(&slice).iter().zip(["on-0", "on-1"]) {
        let c = kcp.client_for_url(&format!("{url}/clusters/*"), kcp.admin_token());
        let names: Vec<String> = all_cowboys(&c)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        assert_eq!(names, [want]);
    }
    // A shard added later gets its own URL too.
    let s2 = kcp.add_shard().await.unwrap();
    assert_eq!(s2.index(), 2);
    let c = kcp.create_workspace_on("root:late", 2).await.unwrap();
    assert_eq!(c.shard, 2);
}

/// The provider's schema and export in an existing workspace.
async fn provider_in(
    kcp: &Kcp,
    ws: &service_provider_apiserver::kcp::WorkspaceInfo,
) -> service_provider_apiserver::kcp::WorkspaceInfo {
    let c = kcp.client(&ws.path);
    schemas(&c)
        .create(&PostParams::default(), &cowboy_schema("v1", json!({})))
        .await
        .unwrap();
    exports(&c, "v1alpha2")
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": "cowboys"},
                "spec": {"resources": [{"group": "wildwest.dev", "name": "cowboys", "schema": "v1.cowboys.wildwest.dev", "storage": {"crd": {}}}]}
            })),
        )
        .await
        .unwrap();
    wait_obj(&exports(&c, "v1alpha2"), "cowboys", "identity", |v| {
        v.pointer("/status/identityHash").is_some()
    })
    .await;
    ws.clone()
}

#[tokio::test]
async fn faults_and_counters_are_per_shard_and_surface() {
    let kcp = kcp().await;
    let p = provider(&kcp, "p").await;
    let a = consumer(&kcp, "a", &p).await;
    let slice = wait_obj(&slices(&kcp.client(&p.path)), "cowboys", "endpoint", |v| {
        !endpoint_urls(v).is_empty()
    })
    .await;
    let url = endpoint_urls(&slice).remove(0);
    let shard = kcp.shard(0).unwrap();
    let mut cfg = kcp.config_for_url(&format!("{url}/clusters/*"), kcp.admin_token());
    cfg.default_retry = false;
    let vw = kube::Client::try_from(cfg).unwrap();
    let mut cfg = kcp.config_for_url(&a.url, kcp.admin_token());
    cfg.default_retry = false;
    let ws = kube::Client::try_from(cfg).unwrap();
    shard.counters().reset();
    shard
        .vw_faults()
        .inject(FaultRule::new(503).verb("list").times(1));
    assert_eq!(
        code(
            all_cowboys(&vw)
                .list(&ListParams::default())
                .await
                .unwrap_err()
        ),
        503
    );
    // The workspace surface is unaffected.
    assert!(
        cowboys(&ws, "default")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    assert!(all_cowboys(&vw).list(&ListParams::default()).await.is_ok());
    shard.faults().inject(
        FaultRule::new(500)
            .verb("list")
            .resource("cowboys")
            .times(1),
    );
    assert_eq!(
        code(
            cowboys(&ws, "default")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        ),
        500
    );
    assert!(all_cowboys(&vw).list(&ListParams::default()).await.is_ok());
    let count = |surface: &str, code: u16| {
        shard
            .counters()
            .snapshot()
            .into_iter()
            .filter(|(k, _)| {
                k.cluster == surface
                    && k.verb == "list"
                    && k.resource == "cowboys"
                    && k.code == code
            })
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(count(VIRTUAL_WORKSPACE_SURFACE, 503), 1);
    assert_eq!(count(VIRTUAL_WORKSPACE_SURFACE, 200), 2);
    assert_eq!(count(WORKSPACE_SURFACE, 200), 1);
    assert_eq!(count(WORKSPACE_SURFACE, 500), 1);
}
