//! The author's test kit itself (`service_provider::testing`): a timeout says what is stuck — the
//! object's condition and Events, the access the platform has not granted — keys that do not
//! fit a kind's scope are refused with a fix, and a test writes what an end user or platform
//! operator would (pull secrets, CRDs, objects) in a line each.

use std::time::Duration;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use service_provider::k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use service_provider::openmcp::AccessRequest;
use service_provider::testing::{TestError, TestPlatform, ready_reason, reason};

use crate::support;
use crate::velero::Velero;

/// Long enough for a reconcile on a loaded machine to have happened, short enough for a test
/// that waits for something that must not happen.
const SHORT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_explains_the_condition_and_events_and_a_new_spec_recovers() {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([service_provider::Mode::Standard])
        .start()
        .await
        .expect("the platform starts");
    let tenant = platform
        .create_tenant("project-kit--ws-a/tenant-a", json!({ "version": "9.9.9" }))
        .await
        .expect("the tenant is created");
    assert_eq!(
        (tenant.namespace(), tenant.name()),
        ("project-kit--ws-a", "tenant-a")
    );

    // The provider refuses the version; waiting for that works, waiting for Ready times out
    // with what is stuck.
    tenant
        .wait_until("to refuse the version", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.condition("Ready"))
                .is_some_and(|c| c.reason == reason::INVALID_USER_INPUT)
        })
        .await
        .expect("the version is refused");
    let err = tenant.with_timeout(SHORT).wait_ready().await.unwrap_err();
    let message = err.to_string();
    println!("{message}");
    assert!(matches!(err, TestError::Timeout { .. }), "{message}");
    for expected in [
        "waiting for Velero project-kit--ws-a/tenant-a to be Ready",
        "phase Progressing",
        "condition Ready=False InvalidUserInput",
        "9.9.9",
        "finalizers: velero.services.open-control-plane.io/finalizer",
        "no access request is pending",
    ] {
        assert!(message.contains(expected), "{expected:?} in:\n{message}");
    }
    // Debug is the message, so `-> Result<(), TestError>` tests print it readably.
    assert_eq!(format!("{err:?}"), message);
    let events = tenant.events().await.expect("the Events");
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("InvalidUserInput")),
        "{events:?}"
    );

    // The end user fixes the spec: Ready for the new generation.
    tenant
        .set_spec(json!({ "version": "1.15.0" }))
        .await
        .expect("the spec is replaced");
    let ready = tenant.wait_ready().await.expect("Ready");
    assert_eq!(ready.metadata.generation, Some(2));
    assert_eq!(
        ready.status.unwrap().extra.installed_version.as_deref(),
        Some("1.15.0")
    );

    // Keys are checked against the kind's scope.
    let mcp = tenant.mcp();
    let namespaced = mcp.get::<ConfigMap>("hello").await.unwrap_err().to_string();
    assert!(namespaced.contains("`namespace/name`"), "{namespaced}");
    let cluster_scoped = mcp
        .get::<Namespace>("default/default")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        cluster_scoped.contains("cluster-scoped"),
        "{cluster_scoped}"
    );
    assert!(mcp.get_opt::<Namespace>("nope").await.unwrap().is_none());
    platform.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_names_the_access_the_platform_has_not_granted() {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([service_provider::Mode::Standard])
        .start()
        .await
        .expect("the platform starts");
    // The ControlPlane is Ready; then the platform stops answering, so the provider's
    // AccessRequest for the tenant's MCP stays unanswered.
    platform
        .env()
        .create_control_plane(common_namespace(), "tenant-b")
        .await
        .expect("the ControlPlane is Ready");
    platform.env().operator().stop();
    let tenant = platform
        .create_tenant("tenant-b", json!({ "version": "1.15.0" }))
        .await
        .expect("the tenant is created");
    platform
        .platform()
        .wait_for::<AccessRequest>(
            &format!(
                "{}/velero--tenant-b--mcp",
                service_provider::openmcp::naming::stable_mcp_namespace(
                    "tenant-b",
                    common_namespace()
                )
                .unwrap()
            ),
            |_| true,
        )
        .await
        .expect("the provider asks for access");
    let message = tenant
        .with_timeout(SHORT)
        .wait_ready()
        .await
        .unwrap_err()
        .to_string();
    println!("{message}");
    assert!(message.contains("access not granted yet:"), "{message}");
    assert!(
        message.contains("AccessRequest mcp--")
            && message.contains("/velero--tenant-b--mcp: Pending (no answer from the platform)"),
        "{message}"
    );
    platform.stop().await;
}

fn common_namespace() -> &'static str {
    service_provider::testing::DEFAULT_TENANT_NAMESPACE
}

/// An end user's own kind in their cluster, which no provider installs.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "widgets.example.io",
    version = "v1",
    kind = "Widget",
    namespaced
)]
struct WidgetSpec {
    size: u32,
}

/// Velero's `Backup`, as an end user would create one (the fields the example's CRD keeps).
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(group = "velero.io", version = "v1", kind = "Backup", namespaced)]
pub(crate) struct BackupSpec {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "includedNamespaces"
    )]
    included_namespaces: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kit_writes_pull_secrets_crds_and_the_end_users_objects() -> Result<(), TestError> {
    let mut config = crate::velero_config();
    config["imagePullSecrets"] = json!([{ "name": "regcred" }]);
    let platform = TestPlatform::<Velero>::builder()
        .provider_config(config)
        .modes([service_provider::Mode::Standard])
        .start()
        .await?;
    // The credential the ProviderConfig names, in one line; the provider copies it to its worker.
    let source = platform
        .pull_secret("regcred", "registry.test", "robot", "s3cret")
        .await?;
    let tenant = platform
        .create_tenant("tenant-w", json!({ "version": "1.15.0" }))
        .await?;
    let ready = tenant.wait_ready().await?;
    assert_eq!(ready_reason(&ready), Some(reason::RECONCILE_SUCCESS));
    let worker_ns = ready.status.unwrap().extra.worker_namespace.unwrap();
    let copy: Secret = tenant
        .workload()
        .await?
        .get(&format!("{worker_ns}/{}-regcred", platform.provider_name()))
        .await?;
    assert_eq!(copy.data, source.data);

    // The end user's own kind and object, created and applied through the kit, outlive the
    // provider's uninstall: it removes only what it installed.
    let mcp = tenant.mcp();
    mcp.install_crd::<Widget>().await?;
    let mut widget = Widget::new("w", WidgetSpec { size: 1 });
    widget.metadata.namespace = Some("default".into());
    mcp.create(&widget).await?;
    widget.spec.size = 2;
    assert_eq!(mcp.apply(&widget).await?.spec.size, 2);
    assert_eq!(mcp.list::<Widget>(Some("default")).await?.len(), 1);

    // An end user's Backup blocks the uninstall until it is deleted.
    let mut backup = Backup::new("nightly", BackupSpec::default());
    backup.metadata.namespace = Some("default".into());
    mcp.create(&backup).await?;
    tenant.delete().await?;
    tenant
        .wait_until("to be blocked by the Backup", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.condition(reason::DELETION_BLOCKED))
                .is_some_and(|c| c.status == "True")
        })
        .await?;
    mcp.delete::<Backup>("default/nightly").await?;
    tenant.wait_gone().await?;
    mcp.wait_gone::<CustomResourceDefinition>("backups.velero.io")
        .await?;
    assert_eq!(mcp.get::<Widget>("default/w").await?.spec.size, 2);
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_to_another_service_api_is_refused_with_both_names() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([service_provider::Mode::Standard])
        .start()
        .await?;
    let tenant = platform
        .create_tenant("tenant-u", json!({ "version": "1.15.0" }))
        .await?;
    let message = match tenant.as_release::<crate::widget::Widget>() {
        Err(TestError::Usage(message)) => message,
        other => panic!("expected a usage error, got {other:?}"),
    };
    assert!(
        message.contains("Tenant::as_release") && message.contains("Widget.widgets.versions.test"),
        "{message}"
    );
    match platform.upgrade::<crate::widget::Widget>().await {
        Err(TestError::Usage(message)) => assert!(
            message.contains("Velero.") && message.contains("Widget."),
            "{message}"
        ),
        Err(other) => panic!("expected a usage error, got {other}"),
        Ok(_) => panic!("a Widget release of the Velero provider was rolled out"),
    }
    Ok(())
}
