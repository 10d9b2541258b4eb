//! kcp mode switched on by the ProviderConfig's `kcp` block, and a ProviderConfig change
//! re-reconciling every engaged workspace.

use serde_json::json;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use service_provider_apiserver::kcp::KcpOptions;

use crate::common::{self, TIMEOUT};
use crate::velero::{Velero, VeleroProviderConfig};
use service_provider::testing::eventually;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_config_change_reaches_every_workspace() {
    let env = common::env::<Velero>(common::velero_config(), 2, KcpOptions::default()).await;
    let configs: Api<DynamicObject> = Api::all_with(
        env.platform().client(),
        &ApiResource::erase::<VeleroProviderConfig>(&()),
    );
    // kcp mode switched on by the ProviderConfig's `kcp` block, whose Secret holds the provider
    // workspace kubeconfig.
    let secret = env.provider().unwrap().kcp_kubeconfig_secret().unwrap();
    let block = env
        .kcp()
        .unwrap()
        .provider_config_block(env.pod_namespace(), secret);
    configs
        .patch(
            "velero",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "kcp": block } })),
        )
        .await
        .unwrap();
    let provider = env.provider().unwrap();
    let mut runtime = service_provider_runtime::cli::run::Runtime::<Velero>::start(
        common::provider_platform_client(&env).await,
        service_provider_runtime::cli::run::RunOptions::new(provider.name(), env.pod_namespace()),
    )
    .await
    .unwrap();
    let settings = eventually("the ProviderConfig's kcp block", TIMEOUT, || {
        let runtime = &runtime;
        async move {
            runtime
                .kcp_settings_from_provider_config()
                .await
                .ok()
                .flatten()
        }
    })
    .await
    .unwrap();
    assert_eq!(
        settings.provider_workspace.as_deref(),
        Some(env.kcp().unwrap().provider_workspace().path.as_str())
    );
    runtime.start_kcp(settings).await.unwrap();
    let consumers = common::consumers(&env);
    for ws in &consumers {
        common::create::<Velero>(&env, ws, "velero", json!({ "version": "1.15.0" })).await;
        common::wait_ready::<Velero>(&env, [ws], "velero").await;
    }
    // The platform operator withdraws 1.15.0: every workspace's object says so.
    let withdraw = json!({ "spec": { "versions": [{ "version": "1.16.1" }] } });
    configs
        .patch("velero", &PatchParams::default(), &Patch::Merge(&withdraw))
        .await
        .unwrap();
    for ws in &consumers {
        let o = common::wait(
            &common::objects::<Velero>(&env, ws),
            "velero",
            |o: Option<&Velero>| {
                o.and_then(common::ready_condition)
                    .is_some_and(|(status, _, _)| status == "False")
            },
        )
        .await
        .unwrap();
        let (_, reason, message) = common::ready_condition(&o).unwrap();
        assert_eq!(reason, "InvalidUserInput");
        assert!(message.contains("1.16.1"), "{message}");
    }
    // And back.
    let offer =
        json!({ "spec": { "versions": [{ "version": "1.15.0" }, { "version": "1.16.1" }] } });
    configs
        .patch("velero", &PatchParams::default(), &Patch::Merge(&offer))
        .await
        .unwrap();
    common::wait_ready::<Velero>(&env, &consumers, "velero").await;
    common::stop(runtime).await;
}
