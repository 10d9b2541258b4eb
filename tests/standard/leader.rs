//! Two replicas with leader election: exactly one reconciles; when it stops, the other takes
//! over.

use std::time::Duration;

use serde_json::json;
use service_provider::Mode;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider_runtime::cli::run::RunOptions;
use service_provider_runtime::ops::metrics::{Metrics, ReconcileResult};

use crate::common;
use crate::flaky::Flaky;
use service_provider::testing::eventually;

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
    options.leader.renew_deadline = Duration::from_secs(3);
    options.leader.retry_period = Duration::from_secs(1);
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
    let (a, b) = eventually("the reconciles to be counted", common::TIMEOUT, || {
        let (m1, m2) = (m1.clone(), m2.clone());
        async move {
            let (a, b) = (reconciles(&m1), reconciles(&m2));
            (a + b > 0).then_some((a, b))
        }
    })
    .await
    .unwrap();
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

/// A Go provider's Lease: on the onboarding cluster, in the provider's namespace, named by its
/// LeaderElectionID, held and renewed by a Go replica (as client-go's LeaseLock writes it). Ours
/// campaigns for the same Lease, so it reconciles nothing while the Go replica renews, takes over
/// when the Go replica stops renewing (after the lease duration, by its own clock), writes the
/// record client-go reads (holder, duration, acquire/renew time, transitions + 1), renews it, and
/// releases it as client-go does when it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_replicas_lease_blocks_reconciles_until_it_expires() {
    use service_provider::k8s_openapi::api::coordination::v1::Lease;
    use service_provider::k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    const HELD_NAMESPACE: &str = "project-held--ws-a";
    const ID: &str = "services.open-control-plane.io.flaky";
    let env = common::env::<Flaky>(json!({}), &[(HELD_NAMESPACE, "held")]).await;
    // The Go replica could only take its Lease where the namespace exists.
    let namespaces: Api<service_provider::k8s_openapi::api::core::v1::Namespace> =
        Api::all(env.onboarding().client());
    namespaces
        .create(
            &Default::default(),
            &serde_json::from_value(json!({ "metadata": { "name": env.pod_namespace() } }))
                .unwrap(),
        )
        .await
        .unwrap();
    let leases: Api<Lease> = Api::namespaced(env.onboarding().client(), env.pod_namespace());
    let now = || MicroTime(service_provider::k8s_openapi::jiff::Timestamp::now());
    let go_lease: Lease = serde_json::from_value(json!({
        "metadata": { "name": ID, "namespace": env.pod_namespace() },
        "spec": {
            "holderIdentity": "sp-flaky-7c9d6b5f4-x2k8q_8f3a1c2e-5b6d-4e7f-9a0b-1c2d3e4f5a6b",
            "leaseDurationSeconds": 4,
            "acquireTime": now(),
            "renewTime": now(),
            "leaseTransitions": 2,
        },
    }))
    .unwrap();
    leases.create(&Default::default(), &go_lease).await.unwrap();
    // The Go replica renews every second (controller-runtime: every RetryPeriod) until it dies.
    let renewing = Arc::new(AtomicBool::new(true));
    let go_replica = tokio::spawn({
        let (leases, renewing) = (leases.clone(), renewing.clone());
        async move {
            while renewing.load(Ordering::SeqCst) {
                let mut lease = leases.get(ID).await.unwrap();
                lease.spec.as_mut().unwrap().renew_time = Some(now());
                let _ = leases.replace(ID, &Default::default(), &lease).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    });

    let runtime = common::start::<Flaky>(&env, |o| {
        elect(o, "rust-replica-1");
        o.leader_election_id = Some(ID.to_owned());
    })
    .await;
    let cp = ControlPlaneRef::new(HELD_NAMESPACE, "held");
    common::create::<Flaky>(&env, &cp, json!({})).await;
    // Longer than the lease duration: the Go replica's renewals keep it held.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(
        reconciles(runtime.metrics()),
        0,
        "nothing is reconciled while a Go replica holds the Lease"
    );
    let held = leases.get(ID).await.unwrap().spec.unwrap();
    assert_eq!(
        held.holder_identity.as_deref(),
        Some("sp-flaky-7c9d6b5f4-x2k8q_8f3a1c2e-5b6d-4e7f-9a0b-1c2d3e4f5a6b")
    );

    // The Go replica dies without releasing: ours takes over once the Lease expired.
    renewing.store(false, Ordering::SeqCst);
    go_replica.await.unwrap();
    let flakies: Api<Flaky> = Api::namespaced(env.onboarding().client(), HELD_NAMESPACE);
    common::wait(&flakies, "held", common::ready::<Flaky>).await;
    let ours = leases.get(ID).await.unwrap().spec.unwrap();
    assert_eq!(ours.holder_identity.as_deref(), Some("rust-replica-1"));
    assert_eq!(ours.lease_duration_seconds, Some(4));
    assert_eq!(
        ours.lease_transitions,
        Some(3),
        "a new holder: transitions + 1"
    );
    assert!(ours.acquire_time.is_some() && ours.renew_time.is_some());
    // It renews (every retry period), so a Go candidate keeps seeing it held.
    let renewed = eventually("the Lease to be renewed", common::TIMEOUT, || {
        let leases = leases.clone();
        let first = ours.renew_time.clone();
        async move {
            let spec = leases.get(ID).await.ok()?.spec?;
            (spec.renew_time != first && spec.holder_identity.as_deref() == Some("rust-replica-1"))
                .then_some(spec)
        }
    })
    .await
    .unwrap();
    assert_eq!(renewed.acquire_time, ours.acquire_time, "acquireTime kept");
    assert_eq!(renewed.lease_transitions, Some(3));

    // Stopping releases it as client-go does: no holder, a one-second lease.
    common::stop(runtime).await;
    let released = leases.get(ID).await.unwrap().spec.unwrap();
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(3));
}
