//! Fault injection and request counters.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use service_provider_apiserver::FaultRule;

use crate::common::*;

fn no_retry(c: &service_provider_apiserver::Cluster) -> kube::Client {
    let mut cfg = c.config();
    cfg.default_retry = false;
    kube::Client::try_from(cfg).unwrap()
}

#[tokio::test]
async fn error_rates_codes_and_retry_after() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(no_retry(&c));
    c.faults().inject(
        FaultRule::new(503)
            .verb("list")
            .resource("configmaps")
            .rate(0.5),
    );
    let mut codes = Vec::new();
    for _ in 0..4 {
        codes.push(
            api.list(&ListParams::default())
                .await
                .map(|_| 200)
                .unwrap_or_else(code),
        );
    }
    assert_eq!(
        codes,
        [200, 503, 200, 503],
        "a rate of 0.5 fails every second matching request"
    );
    assert!(
        api.get("kube-root-ca.crt").await.is_ok(),
        "other verbs are unaffected"
    );
    c.faults().clear();

    c.faults()
        .inject(FaultRule::new(429).verb("create").retry_after(3).times(1));
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    let s = status(api.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(s.details.unwrap().retry_after_seconds, 3);
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the rule fired once");

    c.faults()
        .inject(FaultRule::new(409).verb("update").times(1));
    let got = api.get("x").await.unwrap();
    assert_eq!(
        code(
            api.replace("x", &PostParams::default(), &got)
                .await
                .unwrap_err()
        ),
        409
    );
    c.faults().inject(FaultRule::new(500).times(1));
    assert_eq!(code(api.get("x").await.unwrap_err()), 500);

    // kube's default client retries 429/503 by itself.
    c.faults().inject(FaultRule::new(503).verb("get").times(1));
    let retrying: Api<ConfigMap> = Api::default_namespaced(c.client());
    assert!(retrying.get("x").await.is_ok());
}

#[tokio::test]
async fn added_latency() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    api.get("kube-root-ca.crt").await.unwrap();
    c.faults().set_latency(Duration::from_millis(200));
    let t = Instant::now();
    api.get("kube-root-ca.crt").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));
    c.faults().clear();
}

#[tokio::test]
async fn counters_by_verb_resource_and_code() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    c.counters().reset();
    api.list(&ListParams::default()).await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    let _ = api.get("missing").await;
    assert_eq!(c.counters().get("list", "configmaps", 200), 2);
    assert_eq!(c.counters().get("get", "configmaps", 404), 1);
    assert_eq!(c.counters().total("get", "configmaps"), 1);
    let snap = c.counters().snapshot();
    assert!(snap.iter().all(|(k, _)| k.cluster == "cluster"));
    let text = c
        .client()
        .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
        .await
        .unwrap();
    assert!(text.contains("apiserver_request_total{cluster=\"cluster\",verb=\"list\",resource=\"configmaps\",code=\"200\"} 2"), "{text}");
}
