//! Workspace credentials supplied by the platform in a Secret instead of minted: the runtime
//! waits for the Secret, hands its kubeconfig to the author, and creates nothing in the workspace.

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use serde_json::json;
use service_provider::Mode;
use service_provider::dev::WorkspaceCredentials;
use service_provider::kube::Api;
use service_provider::kube::api::PostParams;
use service_provider::testing::TestError;

use crate::support::{self, ready_condition};
use crate::velero::Velero;

/// Where the platform puts the workspace kubeconfigs: the provider's own namespace.
const SECRETS_NAMESPACE: &str = "openmcp-system";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_supplied_kubeconfig_is_used_as_is() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .kcp_workspace_credentials(WorkspaceCredentials::Secret {
            namespace: SECRETS_NAMESPACE.into(),
        })
        .start()
        .await?;
    let ws = platform
        .create_kcp_tenant("velero", json!({ "version": "1.15.0" }))
        .await?;
    let cluster = crate::workspace_cluster(&ws).to_owned();
    let waiting = ws
        .wait_until("to wait for the supplied kubeconfig", |o| {
            ready_condition(o).is_some_and(|(_, reason, _)| reason == "WaitingForAccess")
        })
        .await?;
    let (_, _, message) = ready_condition(&waiting).unwrap();
    assert!(message.contains(&format!("kcp-{cluster}")), "{message}");

    // The platform operator's identity for the workspace, put into the Secret.
    let admin = ws.mcp().client();
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "platform-issued"}})).unwrap();
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    sas.create(&PostParams::default(), &sa).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "platform-issued"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "platform-issued", "namespace": "default"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let request = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let token = sas
        .create_token_request("platform-issued", &PostParams::default(), &request)
        .await
        .unwrap();
    let token = serde_json::to_value(token).unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let kubeconfig = platform.env().kcp().unwrap().kcp().kubeconfig_for(
        &cluster,
        "system:serviceaccount:default:platform-issued",
        &token,
    );
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("kcp-{cluster}"), "namespace": SECRETS_NAMESPACE},
        "stringData": {"kubeconfig": kubeconfig},
    }))
    .unwrap();
    Api::<Secret>::namespaced(platform.env().platform().client(), SECRETS_NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    ws.wait_ready().await?;
    // The worker got the supplied kubeconfig; nothing was minted or created in the workspace.
    let workload = platform.workload_clusters().into_iter().next().unwrap();
    let handed = Api::<Secret>::namespaced(
        workload.client(),
        &format!("velero-{}", ws.identity().stable_id()),
    )
    .get("tenant-kubeconfig")
    .await
    .unwrap();
    let handed = String::from_utf8(handed.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    assert_eq!(handed, kubeconfig);
    let source = platform.kcp_source().expect("kcp mode runs");
    assert_eq!(source.credentials().minted(), 0);
    assert!(
        Api::<ServiceAccount>::namespaced(admin, "openmcp-system")
            .get_opt("velero")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(platform.env().pod_namespace(), SECRETS_NAMESPACE);
    platform.stop().await;
    Ok(())
}
