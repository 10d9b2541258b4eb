//! `/metrics`, `/healthz` and `/readyz` of a running provider.

use serde_json::json;
use service_provider::testing::{TestError, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::flaky::Flaky;
use crate::support;

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
async fn metrics_and_probes_are_served() -> Result<(), TestError> {
    let platform = support::platform::<Flaky>(json!({}))
        .serve_endpoints()
        .start()
        .await?;
    let tenant = platform
        .create_tenant("project-metrics--ws-a/measured", json!({}))
        .await?;
    tenant.wait_ready().await?;

    let endpoints = platform.endpoints().expect("metrics and probes served");
    let probes = endpoints.health;
    assert!(get(probes, "/healthz").await.starts_with("HTTP/1.1 200"));
    assert!(get(probes, "/readyz").await.starts_with("HTTP/1.1 200"));
    // The reconcile is counted when it returns, just after its status write became visible.
    let addr = endpoints.metrics;
    let metrics = eventually(
        "the reconcile to be counted",
        support::TIMEOUT,
        || async move {
            let metrics = get(addr, "/metrics").await;
            metrics.contains("result=\"ready\"").then_some(metrics)
        },
    )
    .await?;
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
    platform.stop().await;
    Ok(())
}

/// The value of `series` (name and labels exactly as written) in a `/metrics` response.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// controller-runtime's names and labels, as the dashboards and alerts built for Go providers
/// query them, after a reconcile that succeeded, one that failed and one that asked to be
/// requeued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_runtimes_metrics_count_successes_errors_and_requeues() -> Result<(), TestError>
{
    const NAMESPACE: &str = "project-cr-metrics--ws-a";
    // No poll interval: a ready object is done (`success`) unless it asks for a requeue.
    let platform = support::platform::<Flaky>(json!({ "pollInterval": "0s" }))
        .serve_endpoints()
        .concurrency(3)
        .leader_election()
        .start()
        .await?;
    let controller = platform.provider_name().to_owned();
    let mut tenants = Vec::new();
    for (name, spec) in [
        ("succeeds", json!({})),
        ("fails", json!({ "fail": true })),
        ("requeues", json!({ "requeueSeconds": 3600 })),
    ] {
        tenants.push(
            platform
                .create_tenant(&format!("{NAMESPACE}/{name}"), spec)
                .await?,
        );
    }
    let c = format!(r#"controller="{controller}""#);
    let q = format!(r#"name="{controller}",controller="{controller}""#);
    let total =
        |result: &str| format!(r#"controller_runtime_reconcile_total{{{c},result="{result}"}}"#);
    let addr = platform.endpoints().expect("metrics served").metrics;
    // `fails` is retried with backoff, so its second failure shows the retry too.
    let metrics = eventually(
        "a success, two errors and a requeue_after to be counted",
        support::TIMEOUT,
        || {
            let (success, error, requeue_after) =
                (total("success"), total("error"), total("requeue_after"));
            async move {
                let metrics = get(addr, "/metrics").await;
                (sample(&metrics, &success)? >= 1.0
                    && sample(&metrics, &error)? >= 2.0
                    && sample(&metrics, &requeue_after)? >= 1.0)
                    .then_some(metrics)
            }
        },
    )
    .await?;
    let value = |series: String| {
        sample(&metrics, &series).unwrap_or_else(|| panic!("{series} missing:\n{metrics}"))
    };
    let errors = value(format!("controller_runtime_reconcile_errors_total{{{c}}}"));
    assert!(
        errors >= 2.0,
        "every failed reconcile is an error: {errors}"
    );
    assert_eq!(
        value(total("requeue")),
        0.0,
        "no result asks for a rate-limited requeue"
    );
    assert_eq!(
        value(format!(
            "controller_runtime_terminal_reconcile_errors_total{{{c}}}"
        )),
        0.0,
        "a transient error is retried, not terminal"
    );
    assert_eq!(
        value(format!(
            "controller_runtime_max_concurrent_reconciles{{{c}}}"
        )),
        3.0
    );
    let active = value(format!("controller_runtime_active_workers{{{c}}}"));
    assert!((0.0..=3.0).contains(&active), "{active}");
    let reconciles = value(format!(
        "controller_runtime_reconcile_time_seconds_count{{{c}}}"
    ));
    assert!(reconciles >= 4.0, "{reconciles}");
    assert!(
        metrics.contains(&format!(
            r#"controller_runtime_reconcile_time_seconds_bucket{{le="0.005",{c}}}"#
        )),
        "controller-runtime's first bucket:\n{metrics}"
    );
    assert!(value(format!("workqueue_adds_total{{{q}}}")) >= 4.0);
    assert!(
        value(format!("workqueue_retries_total{{{q}}}")) >= 2.0,
        "the backoff after each failure and the requeue_after are retries"
    );
    assert!(value(format!("workqueue_queue_duration_seconds_count{{{q}}}")) >= 4.0);
    assert!(value(format!("workqueue_work_duration_seconds_count{{{q}}}")) >= 4.0);
    let depth = value(format!(r#"workqueue_depth{{{q},priority=""}}"#));
    assert!((0.0..=3.0).contains(&depth), "{depth}");
    assert_eq!(
        value(format!(
            r#"leader_election_master_status{{name="{controller}-standard"}}"#
        )),
        1.0,
        "this replica holds the standard mode's Lease"
    );
    platform.stop().await;
    Ok(())
}
