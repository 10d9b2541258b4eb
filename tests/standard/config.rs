//! The ProviderConfig and the end user's input: invalid input reported and not retried, a fixed
//! ProviderConfig healing objects, every object re-reconciled when the ProviderConfig changes,
//! and the `openmcp.cloud/operation` annotation.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;
use service_provider::Mode;
use service_provider::kube::api::{Patch, PatchParams};
use service_provider::testing::{TestError, eventually, is_ready, ready_reason, reason};

use crate::support::{self, TIMEOUT};
use crate::velero::Velero;

const NAMESPACE: &str = "project-config--ws-a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_version_is_reported_not_retried_and_healed_by_the_provider_config()
-> Result<(), TestError> {
    let mut config = crate::velero_config();
    config["pollInterval"] = json!("1s");
    let platform = support::platform::<Velero>(&config)
        .modes([Mode::Standard])
        .start()
        .await?;
    let bad = platform
        .create_tenant(&format!("{NAMESPACE}/bad"), json!({ "version": "9.9.9" }))
        .await?;
    let invalid = bad
        .wait_until("the version to be refused", |o| {
            ready_reason(o) == Some(reason::INVALID_USER_INPUT)
        })
        .await?;
    let condition = invalid
        .status
        .as_ref()
        .unwrap()
        .condition("Ready")
        .unwrap()
        .clone();
    assert_eq!(condition.status, "False");
    assert!(
        condition.message.contains("1.15.0") && condition.message.contains("1.16.1"),
        "{}",
        condition.message
    );
    assert_eq!(
        invalid.status.as_ref().unwrap().phase,
        Some(service_provider::Phase::Progressing)
    );

    // Once the platform finished granting access (its last updates re-trigger the object), over
    // several poll intervals: no retries with backoff, at most one reconcile per interval, and no
    // status write after the first (nothing changed).
    let platform_ns =
        service_provider::openmcp::naming::stable_mcp_namespace("bad", NAMESPACE).unwrap();
    for suffix in ["mcp", "wl"] {
        let name = service_provider::openmcp::naming::stable_request_name("velero", "bad", suffix)
            .unwrap();
        platform
            .platform()
            .wait_for(
                &format!("{platform_ns}/{name}"),
                |o: &service_provider::openmcp::AccessRequest| o.is_ready(),
            )
            .await?;
    }
    let invalid_series = r#"service_provider_reconciles_total{mode="standard",result="invalid"}"#;
    // A reconcile is counted when it returns, after the status write waited for above.
    eventually("the refused reconcile to be counted", TIMEOUT, || async {
        platform.metric(invalid_series)
    })
    .await?;
    let invalid_reconciles = || platform.metric(invalid_series).unwrap_or_default();
    let status_writes = || {
        platform
            .env()
            .onboarding()
            .requests("patch", "veleroes/status")
    };
    let (reconciles_before, writes_before) = (invalid_reconciles(), status_writes());
    let started = Instant::now();
    // A measurement over a fixed window, not a wait for a result.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let intervals = started.elapsed().as_secs_f64();
    let reconciles = invalid_reconciles() - reconciles_before;
    // One more for a trigger from the platform's last grant updates.
    assert!(
        reconciles <= intervals + 2.0,
        "{reconciles} reconciles in {intervals:.1} poll intervals"
    );
    assert_eq!(
        status_writes() - writes_before,
        0,
        "status rewritten although it did not change"
    );

    // The platform operator offers the version: the object becomes Ready without being touched.
    config["versions"] = json!([{ "version": "1.15.0" }, { "version": "9.9.9" }]);
    platform.set_provider_config(&config).await?;
    let healed = bad.wait_ready().await?;
    assert_eq!(
        healed.metadata.generation,
        Some(1),
        "the object itself was not changed"
    );
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_config_change_reconciles_every_object() -> Result<(), TestError> {
    let mut config = crate::velero_config();
    let platform = support::platform::<Velero>(&config)
        .modes([Mode::Standard])
        .start()
        .await?;
    let mut tenants = Vec::new();
    for name in ["one", "two", "three"] {
        let key = format!("{NAMESPACE}/{name}");
        tenants.push(
            platform
                .create_tenant(&key, json!({ "version": "1.15.0" }))
                .await?,
        );
    }
    for tenant in &tenants {
        tenant.wait_ready().await?;
    }
    config["imageRepository"] = json!("mirror.test/velero");
    platform.set_provider_config(&config).await?;
    let workload = tenants[0].workload().await?;
    eventually(
        "every worker to use the new repository",
        TIMEOUT,
        || async {
            for tenant in &tenants {
                let ns = format!("velero-{}", tenant.identity().stable_id());
                let deployment: Deployment =
                    workload.get_opt(&format!("{ns}/velero")).await.ok()??;
                let image = deployment
                    .spec
                    .template
                    .spec?
                    .containers
                    .first()?
                    .image
                    .clone()?;
                if image != "mirror.test/velero/velero:1.15.0" {
                    return None;
                }
            }
            Some(())
        },
    )
    .await?;
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operation_annotation_pauses_and_forces_reconciles() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Standard])
        .start()
        .await?;
    let tenant = platform
        .create_tenant(
            &format!("{NAMESPACE}/annotated"),
            json!({ "version": "1.15.0" }),
        )
        .await?;
    tenant.wait_ready().await?;

    // `ignore`: a spec change is seen (a reconcile runs) but not acted on.
    let skipped = || {
        platform
            .metric(r#"service_provider_reconciles_total{mode="standard",result="skipped"}"#)
            .unwrap_or_default()
    };
    let skipped_before = skipped();
    tenant
        .api()
        .patch(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "annotations": { "openmcp.cloud/operation": "ignore" } },
                "spec": { "version": "1.16.1" },
            })),
        )
        .await?;
    eventually("the ignored object to be looked at", TIMEOUT, || async {
        (skipped() > skipped_before).then_some(())
    })
    .await?;
    let ignored = tenant.get().await?;
    assert_eq!(ignored.metadata.generation, Some(2));
    assert_eq!(
        ignored.status.as_ref().unwrap().observed_generation,
        Some(1),
        "an ignored object is not reconciled"
    );

    // `reconcile`: forces a reconcile and is removed.
    tenant
        .api()
        .patch(
            tenant.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { "openmcp.cloud/operation": "reconcile" } } })),
        )
        .await?;
    let done = tenant
        .wait_until("the forced reconcile of generation 2", |o| {
            is_ready(o)
                && o.metadata.generation == Some(2)
                && !o
                    .metadata
                    .annotations
                    .clone()
                    .unwrap_or_default()
                    .contains_key("openmcp.cloud/operation")
        })
        .await?;
    assert_eq!(
        done.status.unwrap().extra.installed_version.as_deref(),
        Some("1.16.1")
    );
    platform.stop().await;
    Ok(())
}
