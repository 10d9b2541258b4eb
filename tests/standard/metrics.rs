//! `/metrics`, `/healthz` and `/readyz` of a running provider.

use serde_json::json;
use service_provider::dev::ControlPlaneRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;
use crate::flaky::Flaky;

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: provider\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_probes_are_served() {
    const NAMESPACE: &str = "project-metrics--ws-a";
    let env = common::env::<Flaky>(json!({}), &[(NAMESPACE, "measured")]).await;
    let runtime = common::start::<Flaky>(&env, |o| {
        o.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
        o.health_addr = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let cp = ControlPlaneRef::new(NAMESPACE, "measured");
    common::create::<Flaky>(&env, &cp, json!({})).await;
    common::wait(
        &common::objects::<Flaky>(&env, &cp),
        "measured",
        common::ready::<Flaky>,
    )
    .await;

    let probes = runtime.health_addr().expect("probes served");
    assert!(get(probes, "/healthz").await.starts_with("HTTP/1.1 200"));
    assert!(get(probes, "/readyz").await.starts_with("HTTP/1.1 200"));
    // The reconcile is counted when it returns, just after its status write became visible.
    let addr = runtime.metrics_addr().expect("metrics served");
    let metrics = common::eventually(
        "the reconcile to be counted",
        common::TIMEOUT,
        || async move {
            let metrics = get(addr, "/metrics").await;
            metrics.contains("result=\"ready\"").then_some(metrics)
        },
    )
    .await;
    for series in [
        "service_provider_reconciles_total{mode=\"standard\",result=\"ready\"}",
        "service_provider_reconcile_duration_seconds_bucket{",
        "service_provider_leader{mode=\"standard\"} 1",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    assert!(
        !metrics.contains("measured"),
        "no object names in metric labels"
    );
    common::stop(runtime).await;
}
