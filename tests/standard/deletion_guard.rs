//! `deletion_guard(...)`: an end user's Backup holds Velero's uninstall, in standard mode and in
//! a kcp workspace; the status names it, and the uninstall goes on as soon as the last one is
//! deleted, brought by a watch on the guarded kind rather than by a re-check (the poll interval
//! here is ten minutes, far beyond the test's timeout).

use std::time::{Duration, Instant};

use serde_json::json;
use service_provider::Mode;
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::testing::{Tenant, TestError, reason};

use crate::support;
use crate::testkit::{Backup, BackupSpec};
use crate::velero::Velero;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_holds_the_uninstall_until_it_is_deleted_in_both_modes() -> Result<(), TestError> {
    let mut config = crate::velero_config();
    config["pollInterval"] = json!("10m");
    let platform = support::platform::<Velero>(config)
        .modes([Mode::Standard, Mode::Kcp])
        .timeout(Duration::from_secs(30))
        .start()
        .await?;
    let standard = platform
        .create_tenant("guarded", json!({ "version": "1.15.0" }))
        .await?;
    let kcp = platform
        .create_kcp_tenant("guarded", json!({ "version": "1.15.0" }))
        .await?;
    for tenant in [&standard, &kcp] {
        let seconds = held_until_the_last_backup_goes(tenant).await?;
        println!(
            "{:?}: Velero gone {seconds:.2} s after the last Backup was deleted",
            tenant.mode()
        );
    }
    platform.stop().await;
    Ok(())
}

/// Blocks `tenant`'s deletion with two Backups, releases it, and returns the seconds from the
/// last Backup's deletion to the Velero object gone.
async fn held_until_the_last_backup_goes(tenant: &Tenant<Velero>) -> Result<f64, TestError> {
    tenant.wait_ready().await?;
    let cluster = tenant.mcp();
    for name in ["nightly", "weekly"] {
        let mut backup = Backup::new(name, BackupSpec::default());
        backup.metadata.namespace = Some("default".into());
        cluster.create(&backup).await?;
    }
    tenant.delete().await?;
    let blocked = tenant
        .wait_until("to be blocked by the Backups", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.condition(reason::DELETION_BLOCKED))
                .is_some_and(|c| c.status == "True")
        })
        .await?;
    let condition = blocked
        .status
        .as_ref()
        .and_then(|s| s.condition(reason::DELETION_BLOCKED))
        .expect("the condition waited for");
    assert_eq!(condition.reason, reason::USER_RESOURCES_PRESENT);
    assert!(
        condition
            .message
            .starts_with("2 Backup object(s) (velero.io/v1) remain in the cluster: default/nightly, default/weekly"),
        "{}",
        condition.message
    );
    // Nothing was uninstalled while the Backups were there.
    assert!(
        cluster
            .get_opt::<CustomResourceDefinition>("backups.velero.io")
            .await?
            .is_some()
    );

    cluster.delete::<Backup>("default/nightly").await?;
    tenant
        .wait_until("to name only the Backup left", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.condition(reason::DELETION_BLOCKED))
                .is_some_and(|c| c.message.starts_with("1 Backup object(s)"))
        })
        .await?;
    cluster.delete::<Backup>("default/weekly").await?;
    let released = Instant::now();
    tenant.wait_gone().await?;
    Ok(released.elapsed().as_secs_f64())
}
