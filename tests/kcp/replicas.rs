//! Several replicas: workspaces sharded by a stable hash of the logical cluster name, so no
//! workspace is reconciled by two replicas; and leader election on kcp mode's own Lease.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;
use service_provider::kube::Api;
use service_provider::kube::api::DeleteParams;
use service_provider_apiserver::kcp::KcpOptions;
use service_provider_runtime::modes::kcp::Sharding;

use crate::common::{self, TIMEOUT};
use crate::velero::Velero;
use service_provider::testing::eventually;

const CONSUMERS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shares_split_the_workspaces() {
    let env =
        common::env::<Velero>(common::velero_config(), CONSUMERS, KcpOptions::default()).await;
    let consumers = common::consumers(&env);
    let mut replicas = Vec::new();
    for index in 0..2 {
        let mut settings = common::settings::<Velero>(&env);
        settings.sharding = Sharding::new(index, 2).unwrap();
        replicas.push(common::start::<Velero>(&env, settings, |_| {}).await);
    }
    for ws in &consumers {
        common::create::<Velero>(&env, ws, "velero", json!({ "version": "1.15.0" })).await;
    }
    common::wait_ready::<Velero>(&env, &consumers, "velero").await;
    // Each replica minted tokens only for the workspaces of its share: every workspace was
    // served by exactly one of them.
    for (index, (_, source)) in replicas.iter().enumerate() {
        let share = Sharding::new(index as u32, 2).unwrap();
        let owned = consumers.iter().filter(|ws| share.owns(&ws.name)).count() as u64;
        assert_eq!(source.credentials().minted(), owned, "replica {index}");
        assert_eq!(
            source.engaged(),
            CONSUMERS,
            "every replica watches every workspace"
        );
    }
    for (runtime, _) in replicas {
        common::stop(runtime).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_mode_elects_a_leader_on_its_own_lease() {
    let env = common::env::<Velero>(common::velero_config(), 2, KcpOptions::default()).await;
    let consumers = common::consumers(&env);
    let start = |identity: &'static str| {
        let env = &env;
        async move {
            common::start::<Velero>(env, common::settings::<Velero>(env), |options| {
                options.leader_elect = true;
                options.leader.identity = identity.to_owned();
                options.leader.lease_duration = Duration::from_secs(4);
                options.leader.renew_deadline = Duration::from_secs(3);
                options.leader.retry_period = Duration::from_secs(1);
            })
            .await
        }
    };
    let first = start("replica-a").await;
    let second = start("replica-b").await;
    for ws in &consumers {
        common::create::<Velero>(&env, ws, "velero", json!({ "version": "1.15.0" })).await;
    }
    common::wait_ready::<Velero>(&env, &consumers, "velero").await;
    let leases: Api<Lease> = Api::namespaced(env.platform().client(), env.pod_namespace());
    let lease = leases.get("velero-kcp").await.expect("kcp mode's Lease");
    let holder = lease.spec.unwrap().holder_identity.unwrap();
    let (a, b) = (
        first.1.credentials().minted(),
        second.1.credentials().minted(),
    );
    assert!(a == 0 || b == 0, "only the leader reconciles ({a}, {b})");
    assert_eq!(a + b, consumers.len() as u64);
    let (leader, standby, standby_identity) = if a > 0 {
        (first, second, "replica-b")
    } else {
        (second, first, "replica-a")
    };
    assert_ne!(holder, standby_identity, "the leader holds the Lease");

    // The leader stops; the standby takes over and handles the next change.
    common::stop(leader.0).await;
    let veleros = common::objects::<Velero>(&env, &consumers[0]);
    veleros
        .delete("velero", &DeleteParams::default())
        .await
        .unwrap();
    common::wait(&veleros, "velero", |o: Option<&Velero>| o.is_none()).await;
    eventually("the standby to hold the Lease", TIMEOUT, || {
        let leases = leases.clone();
        async move {
            let lease = leases.get("velero-kcp").await.ok()?;
            (lease.spec?.holder_identity? == standby_identity).then_some(())
        }
    })
    .await
    .unwrap();
    common::stop(standby.0).await;
}
