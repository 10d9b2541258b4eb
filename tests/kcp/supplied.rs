//! Workspace credentials supplied by the platform in a Secret instead of minted: the runtime
//! waits for the Secret, hands its kubeconfig to the author, and creates nothing in the workspace.

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use serde_json::json;
use service_provider::Identity;
use service_provider::kube::Api;
use service_provider::kube::api::PostParams;
use service_provider_apiserver::kcp::KcpOptions;
use service_provider_runtime::modes::kcp::WorkspaceCredentials;

use crate::common;
use crate::velero::Velero;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_supplied_kubeconfig_is_used_as_is() {
    let env = common::env::<Velero>(common::velero_config(), 1, KcpOptions::default()).await;
    let mut settings = common::settings::<Velero>(&env);
    settings.credentials = WorkspaceCredentials::Secret {
        namespace: env.pod_namespace().to_owned(),
    };
    let (runtime, source) = common::start::<Velero>(&env, settings, |_| {}).await;
    let ws = &common::consumers(&env)[0];
    let api = common::objects::<Velero>(&env, ws);
    common::create::<Velero>(&env, ws, "velero", json!({ "version": "1.15.0" })).await;
    let waiting = common::wait(&api, "velero", |o: Option<&Velero>| {
        o.and_then(common::ready_condition)
            .is_some_and(|(_, reason, _)| reason == "WaitingForAccess")
    })
    .await
    .unwrap();
    let (_, _, message) = common::ready_condition(&waiting).unwrap();
    assert!(message.contains(&format!("kcp-{}", ws.name)), "{message}");

    // The platform operator's identity for the workspace, put into the Secret.
    let admin = common::admin(&env, ws);
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
    let kubeconfig = env.kcp().unwrap().kcp().kubeconfig_for(
        &ws.name,
        "system:serviceaccount:default:platform-issued",
        &token,
    );
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("kcp-{}", ws.name), "namespace": env.pod_namespace()},
        "stringData": {"kubeconfig": kubeconfig},
    }))
    .unwrap();
    Api::<Secret>::namespaced(env.platform().client(), env.pod_namespace())
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    common::wait(&api, "velero", common::ready::<Velero>).await;
    // The worker got the supplied kubeconfig; nothing was minted or created in the workspace.
    let identity = Identity {
        cluster: Some(ws.name.clone()),
        namespace: "default".into(),
        name: "velero".into(),
    };
    let workload = env.workload_clusters().into_iter().next().unwrap();
    let handed = Api::<Secret>::namespaced(
        workload.client(),
        &format!("velero-{}", identity.stable_id()),
    )
    .get("tenant-kubeconfig")
    .await
    .unwrap();
    let handed = String::from_utf8(handed.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    assert_eq!(handed, kubeconfig);
    assert_eq!(source.credentials().minted(), 0);
    assert!(
        Api::<ServiceAccount>::namespaced(admin, "openmcp-system")
            .get_opt("velero")
            .await
            .unwrap()
            .is_none()
    );
    common::stop(runtime).await;
}
