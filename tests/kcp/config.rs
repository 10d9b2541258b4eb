//! kcp mode switched on by the ProviderConfig's `kcp` block, and a ProviderConfig change
//! re-reconciling every engaged workspace.

use serde_json::json;
use service_provider::Mode;
use service_provider::testing::{TestError, ready_reason};

use crate::support::ready_condition;
use crate::velero::Velero;
use crate::velero_config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_config_change_reaches_every_workspace() -> Result<(), TestError> {
    // kcp mode switched on by the ProviderConfig's `kcp` block, whose Secret holds the provider
    // workspace kubeconfig: the provider is given no kcp flag.
    let platform = crate::support::platform::<Velero>(velero_config())
        .modes([Mode::Kcp])
        .kcp_from_provider_config()
        .start()
        .await?;
    let mut tenants = Vec::new();
    for workspace in ["consumer-0", "consumer-1"] {
        let tenant = platform
            .create_kcp_tenant(workspace, json!({ "version": "1.15.0" }))
            .await?;
        tenant.wait_ready().await?;
        tenants.push(tenant);
    }
    // The platform operator withdraws 1.15.0: every workspace's object says so.
    let mut withdrawn = velero_config();
    withdrawn["versions"] = json!([{ "version": "1.16.1" }]);
    platform.set_provider_config(withdrawn).await?;
    for tenant in &tenants {
        let refused = tenant
            .wait_until("1.15.0 to be refused", |o| {
                ready_reason(o) == Some("InvalidUserInput")
            })
            .await?;
        let (_, _, message) = ready_condition(&refused).expect("a Ready condition");
        assert!(message.contains("1.16.1"), "{message}");
    }
    // And back.
    platform.set_provider_config(velero_config()).await?;
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }
    platform.stop().await;
    Ok(())
}
