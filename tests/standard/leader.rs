//! Two replicas with leader election: exactly one reconciles; when it stops, the other takes
//! over.

use std::time::Duration;

use serde_json::json;
use service_provider::kube::Api;
use service_provider::testing::{TestError, eventually};

use crate::flaky::Flaky;
use crate::support;

const NAMESPACE: &str = "project-leader--ws-a";

/// The reconciles a replica counted in standard mode, whatever their result.
fn reconciles(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with(r#"service_provider_reconciles_total{mode="standard","#))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_and_the_other_takes_over() -> Result<(), TestError> {
    let mut platform = support::platform::<Flaky>(json!({}))
        .leader_election()
        .start()
        .await?;
    let replica = platform.start_replica().await?;

    let first = platform
        .create_tenant(&format!("{NAMESPACE}/first"), json!({}))
        .await?;
    first.wait_ready().await?;
    // A reconcile is counted when it returns, just after its status write became visible.
    let (a, b) = eventually("the reconciles to be counted", support::TIMEOUT, || async {
        let (a, b) = (
            reconciles(&platform.metrics().unwrap_or_default()),
            reconciles(&replica.metrics()),
        );
        (a + b > 0.0).then_some((a, b))
    })
    .await?;
    assert!(
        (a > 0.0) != (b > 0.0),
        "exactly one replica reconciles: {a} and {b}"
    );

    // The leader stops (gracefully, releasing its Lease); the standby takes over.
    let standby = if a > 0.0 {
        platform.stop_provider().await?;
        Some(replica)
    } else {
        replica.stop().await;
        None
    };
    let second = platform
        .create_tenant(&format!("{NAMESPACE}/second"), json!({}))
        .await?;
    second.wait_ready().await?;
    eventually(
        "the standby's reconciles to be counted",
        support::TIMEOUT,
        || async {
            let metrics = match &standby {
                Some(replica) => replica.metrics(),
                None => platform.metrics().unwrap_or_default(),
            };
            (reconciles(&metrics) > 0.0).then_some(())
        },
    )
    .await?;
    if let Some(replica) = standby {
        replica.stop().await;
    }
    platform.stop().await;
    Ok(())
}

/// A Go provider's Lease: on the onboarding cluster, in the provider's namespace, named by its
/// LeaderElectionID, held and renewed by a Go replica (as client-go's LeaseLock writes it). Ours
/// campaigns for the same Lease, so it reconciles nothing while the Go replica renews, takes over
/// when the Go replica stops renewing (after the lease duration, by its own clock), writes the
/// record client-go reads (holder, duration, acquire/renew time, transitions + 1), renews it, and
/// releases it as client-go does when it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_replicas_lease_blocks_reconciles_until_it_expires() -> Result<(), TestError> {
    use service_provider::k8s_openapi::api::coordination::v1::Lease;
    use service_provider::k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    const ID: &str = "services.open-control-plane.io.flaky";
    let mut platform = support::platform::<Flaky>(json!({}))
        .leader_election_id(ID)
        .start_without_provider()
        .await?;
    let env = platform.env();
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

    let tenant = platform
        .create_tenant("project-held--ws-a/held", json!({}))
        .await?;
    platform.start_provider().await?;
    // Longer than the lease duration: the Go replica's renewals keep it held.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(
        reconciles(&platform.metrics()?),
        0.0,
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
    tenant.wait_ready().await?;
    let ours = leases.get(ID).await.unwrap().spec.unwrap();
    assert_eq!(ours.holder_identity.as_deref(), Some("replica-0"));
    assert_eq!(ours.lease_duration_seconds, Some(4));
    assert_eq!(
        ours.lease_transitions,
        Some(3),
        "a new holder: transitions + 1"
    );
    assert!(ours.acquire_time.is_some() && ours.renew_time.is_some());
    // It renews (every retry period), so a Go candidate keeps seeing it held.
    let renewed = eventually("the Lease to be renewed", support::TIMEOUT, || {
        let leases = leases.clone();
        let first = ours.renew_time.clone();
        async move {
            let spec = leases.get(ID).await.ok()?.spec?;
            (spec.renew_time != first && spec.holder_identity.as_deref() == Some("replica-0"))
                .then_some(spec)
        }
    })
    .await?;
    assert_eq!(renewed.acquire_time, ours.acquire_time, "acquireTime kept");
    assert_eq!(renewed.lease_transitions, Some(3));

    // Stopping releases it as client-go does: no holder, a one-second lease.
    platform.stop_provider().await?;
    let released = leases.get(ID).await.unwrap().spec.unwrap();
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(3));
    platform.stop().await;
    Ok(())
}
