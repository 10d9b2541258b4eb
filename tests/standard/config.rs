//! The ProviderConfig and the end user's input: invalid input reported and not retried, a fixed
//! ProviderConfig healing objects, every object re-reconciled when the ProviderConfig changes,
//! and the `openmcp.cloud/operation` annotation.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;
use service_provider::dev::ControlPlaneRef;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use service_provider::testing::{TestError, eventually};
use service_provider::{Mode, ServiceProvider};
use service_provider_runtime::ops::metrics::ReconcileResult;

use crate::common::{self, TIMEOUT};
use crate::velero::Velero;

const NAMESPACE: &str = "project-config--ws-a";

fn provider_configs(env: &service_provider::dev::TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<<Velero as ServiceProvider>::ProviderConfig>(&());
    Api::all_with(env.platform().client(), &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_version_is_reported_not_retried_and_healed_by_the_provider_config() {
    let mut config = common::velero_config();
    config["pollInterval"] = json!("1s");
    let env = common::env::<Velero>(config, &[(NAMESPACE, "bad")]).await;
    let cp = ControlPlaneRef::new(NAMESPACE, "bad");
    let runtime = common::start::<Velero>(&env, |_| {}).await;
    common::create::<Velero>(&env, &cp, json!({ "version": "9.9.9" })).await;
    let veleros = common::objects::<Velero>(&env, &cp);
    let invalid = common::wait(&veleros, "bad", |o: Option<&Velero>| {
        o.and_then(|o| o.status.as_ref())
            .and_then(|s| s.condition("Ready"))
            .is_some_and(|c| c.reason == "InvalidUserInput")
    })
    .await
    .unwrap();
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
    let requests: Api<service_provider::openmcp::AccessRequest> =
        Api::namespaced(env.platform().client(), &platform_ns);
    for suffix in ["mcp", "wl"] {
        let name = service_provider::openmcp::naming::stable_request_name("velero", "bad", suffix)
            .unwrap();
        common::wait(
            &requests,
            &name,
            |o: Option<&service_provider::openmcp::AccessRequest>| o.is_some_and(|o| o.is_ready()),
        )
        .await;
    }
    let metrics = runtime.metrics().clone();
    let status_writes = || env.onboarding().requests("patch", "veleroes/status");
    let (reconciles_before, writes_before) = (
        metrics.reconcile_count(Mode::Standard, ReconcileResult::invalid),
        status_writes(),
    );
    let started = Instant::now();
    // A measurement over a fixed window, not a wait for a result.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let intervals = started.elapsed().as_secs_f64();
    let reconciles =
        metrics.reconcile_count(Mode::Standard, ReconcileResult::invalid) - reconciles_before;
    // One more for a trigger from the platform's last grant updates.
    assert!(
        reconciles as f64 <= intervals + 2.0,
        "{reconciles} reconciles in {intervals:.1} poll intervals"
    );
    assert_eq!(
        status_writes() - writes_before,
        0,
        "status rewritten although it did not change"
    );

    // The platform operator offers the version: the object becomes Ready without being touched.
    provider_configs(&env)
        .patch(
            "velero",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "versions": [{ "version": "1.15.0" }, { "version": "9.9.9" }] } })),
        )
        .await
        .unwrap();
    let healed = common::wait(&veleros, "bad", common::ready::<Velero>)
        .await
        .unwrap();
    assert_eq!(
        healed.metadata.generation,
        Some(1),
        "the object itself was not changed"
    );
    common::stop(runtime).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_config_change_reconciles_every_object() -> Result<(), TestError> {
    let mut config = common::velero_config();
    let platform = common::platform::<Velero>(&config)
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
async fn the_operation_annotation_pauses_and_forces_reconciles() {
    let env = common::env::<Velero>(common::velero_config(), &[(NAMESPACE, "annotated")]).await;
    let cp = ControlPlaneRef::new(NAMESPACE, "annotated");
    let runtime = common::start::<Velero>(&env, |_| {}).await;
    common::create::<Velero>(&env, &cp, json!({ "version": "1.15.0" })).await;
    let veleros = common::objects::<Velero>(&env, &cp);
    common::wait(&veleros, "annotated", common::ready::<Velero>).await;

    // `ignore`: a spec change is seen (a reconcile runs) but not acted on.
    let metrics = runtime.metrics().clone();
    let skipped_before = metrics.reconcile_count(Mode::Standard, ReconcileResult::skipped);
    veleros
        .patch(
            "annotated",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "annotations": { "openmcp.cloud/operation": "ignore" } },
                "spec": { "version": "1.16.1" },
            })),
        )
        .await
        .unwrap();
    eventually("the ignored object to be looked at", TIMEOUT, || {
        let metrics = metrics.clone();
        async move {
            (metrics.reconcile_count(Mode::Standard, ReconcileResult::skipped) > skipped_before)
                .then_some(())
        }
    })
    .await
    .unwrap();
    let ignored = veleros.get("annotated").await.unwrap();
    assert_eq!(ignored.metadata.generation, Some(2));
    assert_eq!(
        ignored.status.as_ref().unwrap().observed_generation,
        Some(1),
        "an ignored object is not reconciled"
    );

    // `reconcile`: forces a reconcile and is removed.
    veleros
        .patch(
            "annotated",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { "openmcp.cloud/operation": "reconcile" } } })),
        )
        .await
        .unwrap();
    let done = common::wait(&veleros, "annotated", |o: Option<&Velero>| {
        common::ready(o)
            && o.is_some_and(|o| o.metadata.generation == Some(2))
            && o.is_some_and(|o| {
                !o.metadata
                    .annotations
                    .clone()
                    .unwrap_or_default()
                    .contains_key("openmcp.cloud/operation")
            })
    })
    .await
    .unwrap();
    assert_eq!(
        done.status.unwrap().extra.installed_version.as_deref(),
        Some("1.16.1")
    );
    common::stop(runtime).await;
}
