//! The worker's workspace token: refreshed at 80% of its lifetime (before it expires), and
//! replaced after the workspace refuses a revoked one (401).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::Mode;
use service_provider::dev::{KcpOptions, WorkspaceCredentials};
use service_provider::kube::Api;
use service_provider::kube::api::{DeleteParams, Patch, PatchParams};
use service_provider::testing::TestError;

use crate::support;
use crate::velero::Velero;

/// The tokens live this long here (kcp's minimum is lowered for the test).
const LIFETIME: Duration = Duration::from_secs(15);

fn token_of(kubeconfig: &str) -> String {
    let parsed: serde_json::Value = serde_norway::from_str(kubeconfig).expect("kubeconfig YAML");
    parsed["users"][0]["user"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The `exp` claim of a JWT, in seconds since the epoch.
fn expiry(token: &str) -> u64 {
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .expect("base64url");
    let claims: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON claims");
    claims["exp"].as_u64().expect("exp")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_refreshed_before_expiry_and_replaced_after_a_401() -> Result<(), TestError> {
    let platform = support::platform::<Velero>(crate::velero_config())
        .modes([Mode::Kcp])
        .kcp_options(KcpOptions::default().min_token_expiration_seconds(1))
        .kcp_workspace_credentials(WorkspaceCredentials::Mint { lifetime: LIFETIME })
        .start()
        .await?;
    let ws = platform
        .create_kcp_tenant("velero", json!({ "version": "1.15.0" }))
        .await?;
    ws.wait_ready().await?;
    let source = platform.kcp_source().expect("kcp mode runs");
    let workload = platform
        .workload_clusters()
        .into_iter()
        .next()
        .expect("a workload cluster");
    let secrets: Api<Secret> = Api::namespaced(
        workload.client(),
        &format!("velero-{}", ws.identity().stable_id()),
    );
    let kubeconfig =
        |s: &Secret| String::from_utf8(s.data.as_ref().unwrap()["kubeconfig"].0.clone()).unwrap();
    // Read after the count: a refresh in between (the machine may be slow enough for 80% of the
    // lifetime to pass since Ready) only makes the token newer than the count says.
    let minted_before = source.credentials().minted();
    assert!(minted_before >= 1, "a token was minted for the worker");
    let first = kubeconfig(&secrets.get("tenant-kubeconfig").await.unwrap());
    let first_token = token_of(&first);

    // Refreshed at 80% of the lifetime: a new token reaches the worker while the old one is
    // still valid.
    let old = first_token.clone();
    let refreshed = support::wait(&secrets, "tenant-kubeconfig", move |s: Option<&Secret>| {
        s.is_some_and(|s| token_of(&kubeconfig(s)) != old)
    })
    .await
    .unwrap();
    let seen = now();
    assert!(
        seen <= expiry(&first_token),
        "the new token arrived at {seen}, after the old one expired at {}",
        expiry(&first_token)
    );
    let second = kubeconfig(&refreshed);
    let factory = service_provider_runtime::access::clients::ClientFactory::new();
    let client = factory.client(second.as_bytes()).await.unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .get("backups.velero.io")
        .await
        .expect("the refreshed token works");
    assert!(
        source.credentials().minted() > minted_before,
        "the refresh minted a new token"
    );

    // Revoked: the tenant's admin deletes the ServiceAccount. The next 401 the runtime sees (on
    // the next reconcile, here triggered by a label) brings a new ServiceAccount and token.
    Api::<ServiceAccount>::namespaced(ws.mcp().client(), "openmcp-system")
        .delete("velero", &DeleteParams::default())
        .await
        .unwrap();
    let err = Api::<CustomResourceDefinition>::all(client)
        .get("backups.velero.io")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, service_provider::kube::Error::Api(s) if s.code == 401),
        "{err}"
    );
    let second_token = token_of(&second);
    ws.api()
        .patch(
            ws.name(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "touched": "yes" } } })),
        )
        .await
        .unwrap();
    let replaced = support::wait(&secrets, "tenant-kubeconfig", move |s: Option<&Secret>| {
        s.is_some_and(|s| {
            let token = token_of(&kubeconfig(s));
            token != second_token && token != first_token
        })
    })
    .await
    .unwrap();
    let client = factory
        .client(kubeconfig(&replaced).as_bytes())
        .await
        .unwrap();
    Api::<CustomResourceDefinition>::all(client)
        .get("backups.velero.io")
        .await
        .expect("the replacement token works");
    assert!(
        Api::<ServiceAccount>::namespaced(ws.mcp().client(), "openmcp-system")
            .get_opt("velero")
            .await
            .unwrap()
            .is_some(),
        "the ServiceAccount is back"
    );
    ws.wait_ready().await?;
    platform.stop().await;
    Ok(())
}
