//! The optional reconcile timeout: a hung `create_or_update` becomes a failed reconcile with a
//! condition saying so, and its worker is free for other objects meanwhile.

use std::time::Duration;

use serde_json::json;
use service_provider::dev::ControlPlaneRef;

use crate::common;
use crate::flaky::Flaky;
use service_provider::testing::eventually;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_reconcile_times_out_with_a_condition_and_frees_its_worker() {
    const NAMESPACE: &str = "project-timeout--ws-a";
    let env = common::env::<Flaky>(json!({}), &[(NAMESPACE, "hangs"), (NAMESPACE, "waits")]).await;
    // One worker: without the timeout, `waits` would wait an hour for `hangs`.
    let runtime = common::start::<Flaky>(&env, |o| {
        o.concurrency = 1;
        o.reconcile.timeout = Some(Duration::from_secs(1));
    })
    .await;
    let hangs = ControlPlaneRef::new(NAMESPACE, "hangs");
    common::create::<Flaky>(&env, &hangs, json!({ "delaySeconds": 3600 })).await;
    let objects = common::objects::<Flaky>(&env, &hangs);
    common::wait(&objects, "hangs", |o: Option<&Flaky>| {
        o.and_then(common::ready_condition)
            .is_some_and(|(_, reason, _)| reason == "ReconcileTimedOut")
    })
    .await;
    let waits = ControlPlaneRef::new(NAMESPACE, "waits");
    common::create::<Flaky>(&env, &waits, json!({})).await;
    common::wait(&objects, "waits", common::ready::<Flaky>).await;

    let hung = objects.get("hangs").await.unwrap();
    let (status, reason, message) = common::ready_condition(&hung).unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ReconcileTimedOut")
    );
    assert!(
        message.contains("create_or_update did not finish within 1s"),
        "the condition says what timed out and after how long: {message}"
    );
    // Retried with backoff: it times out again, and again is counted.
    let timeouts = eventually("a second timeout", common::TIMEOUT, || async {
        let timeouts = runtime.metrics().encode().lines().find_map(|l| {
            l.strip_prefix(r#"controller_runtime_reconcile_timeouts_total{controller="flaky"} "#)
                .map(str::to_owned)
        })?;
        let timeouts: f64 = timeouts.parse().ok()?;
        (timeouts >= 2.0).then_some(timeouts)
    })
    .await
    .unwrap();
    assert!(timeouts >= 2.0);
    common::stop(runtime).await;
}
