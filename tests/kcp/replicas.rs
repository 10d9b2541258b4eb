//! Several replicas: workspaces sharded by a stable hash of the logical cluster name, so no
//! workspace is reconciled by two replicas; and leader election on kcp mode's own Lease.

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;
use service_provider::Mode;
use service_provider::kube::Api;
use service_provider::testing::{Tenant, TestError, eventually};
use service_provider_runtime::modes::kcp::Sharding;

use crate::support::TIMEOUT;
use crate::velero::Velero;

const CONSUMERS: usize = 6;

/// `n` workspaces `team-0` … with a Velero each, all Ready.
async fn tenants(
    platform: &service_provider::testing::TestPlatform<Velero>,
    n: usize,
) -> Result<Vec<Tenant<Velero>>, TestError> {
    let mut tenants = Vec::new();
    for i in 0..n {
        tenants.push(
            platform
                .create_kcp_tenant(&format!("team-{i}"), json!({ "version": "1.15.0" }))
                .await?,
        );
    }
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }
    Ok(tenants)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shares_split_the_workspaces() -> Result<(), TestError> {
    let platform = crate::support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .kcp_shares(2)
        .start()
        .await?;
    let second = platform.start_replica().await?;
    let consumers = tenants(&platform, CONSUMERS).await?;
    // Each replica minted tokens only for the workspaces of its share: every workspace was
    // served by exactly one of them.
    let sources = [
        platform.kcp_source().expect("kcp mode runs"),
        second.kcp_source().expect("kcp mode runs"),
    ];
    for (index, source) in sources.iter().enumerate() {
        let share = Sharding::new(index as u32, 2).unwrap();
        let owned = consumers
            .iter()
            .filter(|t| share.owns(crate::workspace_cluster(t)))
            .count() as u64;
        assert_eq!(source.credentials().minted(), owned, "replica {index}");
        assert_eq!(
            source.engaged(),
            CONSUMERS,
            "every replica watches every workspace"
        );
    }
    second.stop().await;
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_mode_elects_a_leader_on_its_own_lease() -> Result<(), TestError> {
    let mut platform = crate::support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .leader_election()
        .start()
        .await?;
    let second = platform.start_replica().await?;
    let consumers = tenants(&platform, 2).await?;
    let leases: Api<Lease> = Api::namespaced(
        platform.env().platform().client(),
        platform.env().pod_namespace(),
    );
    let lease = leases.get("velero-kcp").await?;
    let holder = lease.spec.unwrap().holder_identity.unwrap();
    let (a, b) = (
        platform.kcp_source().unwrap().credentials().minted(),
        second.kcp_source().unwrap().credentials().minted(),
    );
    assert!(a == 0 || b == 0, "only the leader reconciles ({a}, {b})");
    assert_eq!(a + b, consumers.len() as u64);
    let (leader, standby) = if a > 0 {
        ("replica-0", "replica-1")
    } else {
        ("replica-1", "replica-0")
    };
    assert_eq!(holder, leader, "the leader holds the Lease");

    // The leader stops; the standby takes over and handles the next change.
    let second = if leader == "replica-0" {
        platform.stop_provider().await?;
        Some(second)
    } else {
        second.stop().await;
        None
    };
    consumers[0].delete().await?;
    consumers[0].wait_gone().await?;
    eventually("the standby to hold the Lease", TIMEOUT, || {
        let leases = leases.clone();
        async move {
            let lease = leases.get("velero-kcp").await.ok()?;
            (lease.spec?.holder_identity? == standby).then_some(())
        }
    })
    .await?;
    if let Some(second) = second {
        second.stop().await;
    }
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_settings_without_kcp_mode_are_refused() {
    let refused = |builder: service_provider::testing::TestPlatformBuilder<Velero>| async move {
        match builder.start_without_provider().await {
            Err(TestError::Usage(message)) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    };
    let message = refused(
        crate::support::platform::<Velero>(crate::velero_config())
            .modes([Mode::Standard])
            .kcp_shares(2),
    )
    .await;
    assert!(
        message.contains("kcp_shares") && message.contains("Mode::Kcp"),
        "{message}"
    );
    let message = refused(
        crate::support::platform::<Velero>(crate::velero_config())
            .modes([Mode::Kcp])
            .kcp_shares(0),
    )
    .await;
    assert!(message.contains("kcp_shares(0)"), "{message}");
}
