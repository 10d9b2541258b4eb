//! The author's test kit itself (`service_provider::testing`): a timeout says what is stuck — the
//! object's condition and Events, the access the platform has not granted — and keys that do not
//! fit a kind's scope are refused with a fix.

use std::time::Duration;

use serde_json::json;
use service_provider::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use service_provider::openmcp::AccessRequest;
use service_provider::testing::TestError;

use crate::common;
use crate::velero::Velero;

/// Long enough for a reconcile on a loaded machine to have happened, short enough for a test
/// that waits for something that must not happen.
const SHORT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_explains_the_condition_and_events_and_a_new_spec_recovers() {
    let platform = common::platform::<Velero>(common::velero_config())
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
                .is_some_and(|c| c.reason == "InvalidUserInput")
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
    let platform = common::platform::<Velero>(common::velero_config())
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
