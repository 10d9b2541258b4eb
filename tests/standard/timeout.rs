//! The optional reconcile timeout: a hung `create_or_update` becomes a failed reconcile with a
//! condition saying so, and its worker is free for other objects meanwhile.

use std::time::Duration;

use serde_json::json;
use service_provider::testing::{TestError, eventually, ready_reason};

use crate::flaky::Flaky;
use crate::support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_reconcile_times_out_with_a_condition_and_frees_its_worker() -> Result<(), TestError>
{
    // One worker: without the timeout, `waits` would wait an hour for `hangs`.
    let platform = support::platform::<Flaky>(json!({}))
        .concurrency(1)
        .reconcile_timeout(Duration::from_secs(1))
        .start()
        .await?;
    let hangs = platform
        .create_tenant("hangs", json!({ "delaySeconds": 3600 }))
        .await?;
    hangs
        .wait_until("the reconcile to time out", |o| {
            ready_reason(o) == Some("ReconcileTimedOut")
        })
        .await?;
    let waits = platform.create_tenant("waits", json!({})).await?;
    waits.wait_ready().await?;

    let hung = hangs.get().await?;
    let (status, reason, message) = support::ready_condition(&hung).unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ReconcileTimedOut")
    );
    assert!(
        message.contains("create_or_update did not finish within 1s"),
        "the condition says what timed out and after how long: {message}"
    );
    // Retried with backoff: it times out again, and again is counted.
    let counter = format!(
        r#"controller_runtime_reconcile_timeouts_total{{controller="{}"}}"#,
        platform.provider_name()
    );
    let timeouts = eventually("a second timeout", support::TIMEOUT, || async {
        platform
            .metric(&counter)
            .filter(|timeouts| *timeouts >= 2.0)
    })
    .await
    .unwrap();
    assert!(timeouts >= 2.0);
    platform.stop().await;
    Ok(())
}
