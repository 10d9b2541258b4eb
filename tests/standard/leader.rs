//! Two replicas with leader election: exactly one reconciles; when it stops, the other takes
//! over.

use std::time::Duration;

use serde_json::json;
use service_provider::Mode;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider_runtime::ops::metrics::{Metrics, ReconcileResult};
use service_provider_runtime::runner::RunOptions;

use crate::common;
use crate::flaky::Flaky;

const NAMESPACE: &str = "project-leader--ws-a";

fn reconciles(metrics: &Metrics) -> u64 {
    [
        ReconcileResult::ready,
        ReconcileResult::waiting,
        ReconcileResult::progressing,
        ReconcileResult::error,
        ReconcileResult::skipped,
    ]
    .into_iter()
    .map(|r| metrics.reconcile_count(Mode::Standard, r))
    .sum()
}

fn elect(options: &mut RunOptions, identity: &str) {
    options.leader_elect = true;
    options.leader.identity = identity.to_owned();
    options.leader.lease_duration = Duration::from_secs(4);
    options.leader.renew_grace = Duration::from_secs(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_and_the_other_takes_over() {
    let env = common::env::<Flaky>(json!({}), &[(NAMESPACE, "first"), (NAMESPACE, "second")]).await;
    let first = common::start::<Flaky>(&env, |o| elect(o, "replica-1")).await;
    let second = common::start::<Flaky>(&env, |o| elect(o, "replica-2")).await;
    let flakies: Api<Flaky> = Api::namespaced(env.onboarding().client(), NAMESPACE);

    common::create::<Flaky>(&env, &ControlPlaneRef::new(NAMESPACE, "first"), json!({})).await;
    common::wait(&flakies, "first", common::ready::<Flaky>).await;
    // A reconcile is counted when it returns, just after its status write became visible.
    let (m1, m2) = (first.metrics().clone(), second.metrics().clone());
    let (a, b) = common::eventually("the reconciles to be counted", common::TIMEOUT, || {
        let (m1, m2) = (m1.clone(), m2.clone());
        async move {
            let (a, b) = (reconciles(&m1), reconciles(&m2));
            (a + b > 0).then_some((a, b))
        }
    })
    .await;
    assert!(
        (a > 0) != (b > 0),
        "exactly one replica reconciles: {a} and {b}"
    );
    let (leader, standby) = if a > 0 {
        (first, second)
    } else {
        (second, first)
    };
    let standby_metrics = standby.metrics().clone();

    // The leader stops (gracefully, releasing its Lease); the standby takes over.
    common::stop(leader).await;
    common::create::<Flaky>(&env, &ControlPlaneRef::new(NAMESPACE, "second"), json!({})).await;
    common::wait(&flakies, "second", common::ready::<Flaky>).await;
    assert!(reconciles(&standby_metrics) > 0, "the standby took over");
    common::stop(standby).await;
}
