//! Deletion: finalizers, propagation policies and garbage collection, namespace lifecycle,
//! deletecollection.

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy, WatchEvent,
    WatchParams,
};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::common::*;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "b"}})).unwrap()
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut obj = cm("f");
    obj.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let mut events = api
        .watch(
            &WatchParams::default(),
            &created.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();

    let r = api.delete("f", &DeleteParams::default()).await.unwrap();
    let pending = r.left().expect("a pending deletion returns the object");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let ev = tokio::time::timeout(TIMEOUT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Modified(o) if o.metadata.deletion_timestamp.is_some()));
    // Still readable, and no new finalizers may be added.
    let got = api.get("f").await.unwrap();
    let s = status(
        api.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/cleanup", "x.io/new"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 422, "{}", s.message);
    // Deleting again changes nothing.
    api.delete("f", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        api.get("f").await.unwrap().resource_version(),
        got.resource_version()
    );

    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(code(api.get("f").await.unwrap_err()), 404);
    let ev = tokio::time::timeout(TIMEOUT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Deleted(o) if o.name_any() == "f"));
}

fn owned_by(name: &str, owner: &ConfigMap, block: bool) -> Secret {
    let mut s: Secret = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let mut r = owner.controller_owner_ref(&()).unwrap();
    r.block_owner_deletion = Some(block);
    s.metadata.owner_references = Some(vec![r]);
    s
}

#[tokio::test]
async fn garbage_collection_background_foreground_orphan() {
    let c = cluster().await;
    let owners: Api<ConfigMap> = Api::default_namespaced(c.client());
    let deps: Api<Secret> = Api::default_namespaced(c.client());

    // Background (the default): the owner goes at once, dependents follow.
    let o = owners
        .create(&PostParams::default(), &cm("bg"))
        .await
        .unwrap();
    deps.create(&PostParams::default(), &owned_by("bg-dep", &o, false))
        .await
        .unwrap();
    owners.delete("bg", &DeleteParams::default()).await.unwrap();
    assert_eq!(code(owners.get("bg").await.unwrap_err()), 404);
    service_provider_apiserver::wait_for(
        &deps,
        "bg-dep",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();

    // Foreground: dependents first, the owner waits with the foregroundDeletion finalizer.
    let o = owners
        .create(&PostParams::default(), &cm("fg"))
        .await
        .unwrap();
    let mut d = owned_by("fg-dep", &o, true);
    d.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    deps.create(&PostParams::default(), &d).await.unwrap();
    owners
        .delete(
            "fg",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let owner = owners.get("fg").await.unwrap();
    assert!(
        owner
            .finalizers()
            .contains(&"foregroundDeletion".to_string())
    );
    service_provider_apiserver::wait_for(&deps, "fg-dep", TIMEOUT, |d: Option<&Secret>| {
        d.is_some_and(|d| d.metadata.deletion_timestamp.is_some())
    })
    .await
    .unwrap();
    assert!(
        owners.get("fg").await.is_ok(),
        "the owner waits for its blocking dependent"
    );
    deps.patch(
        "fg-dep",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    service_provider_apiserver::wait_for(
        &owners,
        "fg",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();

    // Orphan: dependents stay, without the owner reference.
    let o = owners
        .create(&PostParams::default(), &cm("or"))
        .await
        .unwrap();
    deps.create(&PostParams::default(), &owned_by("or-dep", &o, false))
        .await
        .unwrap();
    owners
        .delete(
            "or",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Orphan),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    service_provider_apiserver::wait_for(
        &owners,
        "or",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();
    let dep = deps.get("or-dep").await.unwrap();
    assert!(dep.owner_references().is_empty());

    // A dependent whose owner never existed (by uid) is collected too.
    let mut ghost = owned_by("ghost-dep", &o, false);
    ghost.metadata.owner_references.as_mut().unwrap()[0].uid =
        "00000000-0000-0000-0000-000000000000".into();
    deps.create(&PostParams::default(), &ghost).await.unwrap();
    service_provider_apiserver::wait_for(
        &deps,
        "ghost-dep",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_content() {
    let c = cluster().await;
    let nss: Api<Namespace> = Api::all(c.client());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
    )
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(c.client(), "doomed");
    api.create(&PostParams::default(), &cm("one"))
        .await
        .unwrap();
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/x".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();

    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let ns = nss.get("doomed").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let s = status(
        api.create(&PostParams::default(), &cm("new"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "configmaps \"new\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );
    eventually("the namespace to empty but for the held object", || async {
        api.list(&ListParams::default())
            .await
            .map(|l| l.items.iter().map(|o| o.name_any()).collect::<Vec<_>>() == ["held"])
            .unwrap_or(false)
    })
    .await;
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    service_provider_apiserver::wait_for(
        &nss,
        "doomed",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();

    let s = status(
        nss.delete("default", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
}

#[tokio::test]
async fn delete_collection_and_preconditions() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    for n in ["a", "b", "c"] {
        let mut o = cm(n);
        o.metadata.labels = Some(
            [(
                "group".to_string(),
                if n == "c" { "keep" } else { "drop" }.to_string(),
            )]
            .into(),
        );
        api.create(&PostParams::default(), &o).await.unwrap();
    }
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("group=drop"),
    )
    .await
    .unwrap();
    let left: Vec<String> = api
        .list(&ListParams::default().labels("group"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.name_any())
        .collect();
    assert_eq!(left, ["c"]);

    let s = status(
        api.delete(
            "c",
            &DeleteParams {
                preconditions: Some(kube::api::Preconditions {
                    uid: Some("wrong".into()),
                    resource_version: None,
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 409);
    let dry = api
        .delete(
            "c",
            &DeleteParams {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        dry.right().is_some(),
        "built-ins answer a deletion with a Status"
    );
    assert!(api.get("c").await.is_ok(), "dry run deletes nothing");
}

/// Marking an object with a generation deleted bumps the generation, once, so that controllers
/// comparing `status.observedGeneration` see the deletion; objects without one get none.
#[tokio::test]
async fn a_pending_deletion_moves_the_generation_on() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    let mut w = widget("held", 1);
    w.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let pending = api
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("pending");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.generation, Some(2));
    api.delete("held", &DeleteParams::default()).await.unwrap();
    assert_eq!(api.get("held").await.unwrap().metadata.generation, Some(2));

    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::default_namespaced(client.clone());
    let d = serde_json::from_value(json!({"metadata": {"name": "d", "finalizers": ["example.com/cleanup"]},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let pending = deployments
        .delete("d", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("pending");
    assert_eq!(pending.metadata.generation, Some(2));

    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut obj = cm("no-generation");
    obj.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    cms.create(&PostParams::default(), &obj).await.unwrap();
    let pending = cms
        .delete("no-generation", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("pending");
    assert_eq!(pending.metadata.generation, None);
}
