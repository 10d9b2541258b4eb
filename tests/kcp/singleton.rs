//! One object per workspace is served (the seed's "oldest wins", documented in the README): a
//! second object in a bound workspace says which one serves the workspace, and takes over when
//! that one is deleted.

use serde_json::json;
use service_provider::kube::api::DeleteParams;
use service_provider_apiserver::kcp::KcpOptions;

use crate::common;
use crate::velero::Velero;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oldest_object_serves_the_workspace_and_the_next_takes_over() {
    let env = common::env::<Velero>(common::velero_config(), 1, KcpOptions::default()).await;
    let (runtime, source) =
        common::start::<Velero>(&env, common::settings::<Velero>(&env), |_| {}).await;
    let ws = &common::consumers(&env)[0];
    let api = common::objects::<Velero>(&env, ws);
    common::create::<Velero>(&env, ws, "first", json!({ "version": "1.15.0" })).await;
    common::wait(&api, "first", common::ready::<Velero>).await;

    common::create::<Velero>(&env, ws, "second", json!({ "version": "1.16.1" })).await;
    let refused = common::wait(&api, "second", |o: Option<&Velero>| {
        o.and_then(common::ready_condition)
            .is_some_and(|(status, reason, _)| {
                status == "False" && reason == "DuplicateInWorkspace"
            })
    })
    .await
    .unwrap();
    let (_, _, message) = common::ready_condition(&refused).unwrap();
    assert!(message.contains("default/first"), "{message}");
    assert!(
        refused.metadata.finalizers.is_none_or(|f| f.is_empty()),
        "a refused object gets no finalizer"
    );
    assert_eq!(
        source.credentials().minted(),
        1,
        "no access for the refused object"
    );

    api.delete("first", &DeleteParams::default()).await.unwrap();
    common::wait(&api, "first", |o: Option<&Velero>| o.is_none()).await;
    let second = common::wait(&api, "second", common::ready::<Velero>)
        .await
        .unwrap();
    assert_eq!(
        second.status.unwrap().extra.installed_version.as_deref(),
        Some("1.16.1")
    );
    assert_eq!(
        source.credentials().minted(),
        2,
        "a new ServiceAccount token for the new owner"
    );
    common::stop(runtime).await;
}
