//! A reconcile with nothing to do makes no API call: the examples' resource sets (the tenant's
//! cluster, the workload cluster, a kcp workspace) are seen through watches, not read again,
//! and a worker's token is not read back from its Secret while it is good.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use service_provider::prelude::*;
use service_provider::testing::{TestError, TestPlatform};

use crate::eso::ExternalSecretsOperator;
use crate::{helm_topology, support};

/// The requests the provider made while every tenant was resynced, by `cluster verb resource`;
/// watches (long-running, counted when they start) aside. Only the provider's: the simulated
/// platform's controllers relist whenever a real kube-apiserver ends one of their watches.
async fn resync_requests<P: Reconcile>(
    platform: &TestPlatform<P>,
) -> Result<BTreeMap<String, u64>, TestError> {
    // The first resync after Ready may still read what its watches had not listed yet.
    platform.resync().await?;
    let before = platform.env().provider_requests();
    // The provider's requests are told from the platform's: its creating the tenant counts.
    assert!(
        before.keys().any(|request| request.contains(" patch ")),
        "no request of the provider counted: {before:?}"
    );
    platform.resync().await?;
    let after = platform.env().provider_requests();
    Ok(after
        .into_iter()
        .filter(|(request, _)| !request.contains(" watch "))
        .filter_map(|(request, n)| {
            let made = n - before.get(&request).copied().unwrap_or(0);
            (made > 0).then_some((request, made))
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cert_manager_reconciled_with_nothing_to_do_makes_no_api_call() -> Result<(), TestError> {
    let platform = helm_topology::platform().await?;
    helm_topology::ca_bundle(&platform).await?;
    let tenants = [
        platform
            .create_tenant("certs", json!({ "version": "1.17.2" }))
            .await?,
        platform
            .create_kcp_tenant("certs", json!({ "version": "1.17.2" }))
            .await?,
    ];
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }

    let requests = resync_requests(&platform).await?;
    assert_eq!(requests, BTreeMap::new(), "a resync of two Ready tenants");
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_secrets_reconciled_with_nothing_to_do_makes_no_api_call() -> Result<(), TestError>
{
    let platform = support::platform::<ExternalSecretsOperator>(json!({
        "chartURL": "oci://registry.test/charts/external-secrets",
        "chartPullSecret": "chart-creds",
        "imagePullSecrets": [{ "name": "regcred" }],
        "pollInterval": "10m",
    }))
    .timeout(Duration::from_secs(60))
    .start()
    .await?;
    for name in ["chart-creds", "regcred"] {
        platform
            .pull_secret(name, "registry.test", "robot", "s3cret")
            .await?;
    }
    let tenant = platform
        .create_tenant("secrets", json!({ "version": "0.10.0" }))
        .await?;
    tenant.wait_ready().await?;

    let requests = resync_requests(&platform).await?;
    assert_eq!(requests, BTreeMap::new(), "a resync of a Ready tenant");
    platform.stop().await;
    Ok(())
}
