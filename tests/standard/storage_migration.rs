//! `init`'s storage migration on the onboarding cluster (embedded, or a real kube-apiserver with
//! the suite's real backend): objects are written back at the CRD's storage version, losing
//! nothing, and the stored versions are trimmed, after which the API server lets the old version
//! go.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use service_provider::dev::TestEnv;
use service_provider::kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams,
};
use service_provider::kube::core::GroupVersionKind;
use service_provider::kube::{Api, ResourceExt};
use service_provider_runtime::cli::storage_migration::{Migration, PAGE_SIZE, migrate};

use crate::support::logs;

const CRD: &str = "gizmos.migration.test";

/// The Gizmo CRD serving `versions`, the last one stored; every version has the same schema.
fn gizmos(versions: &[&str]) -> CustomResourceDefinition {
    let schema = json!({ "openAPIV3Schema": { "type": "object", "properties": {
        "spec": { "type": "object", "properties": {
            "size": { "type": "integer" }, "color": { "type": "string" } } },
        "status": { "type": "object", "properties": { "phase": { "type": "string" } } },
    } } });
    let last = versions.len() - 1;
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({ "name": name, "served": true, "storage": i == last, "schema": schema,
                "subresources": { "status": {} } })
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": CRD },
        "spec": { "group": "migration.test", "scope": "Namespaced",
            "names": { "kind": "Gizmo", "plural": "gizmos" }, "versions": versions },
    }))
    .expect("a CRD")
}

fn at(
    client: &service_provider::kube::Client,
    version: &str,
    namespace: &str,
) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("migration.test", version, "Gizmo"),
        "gizmos",
    );
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// What a user wrote into each Gizmo, by namespace/name, and its resourceVersion.
async fn contents(
    client: &service_provider::kube::Client,
    version: &str,
) -> BTreeMap<String, (Value, String)> {
    let mut out = BTreeMap::new();
    for namespace in ["a", "b"] {
        for object in at(client, version, namespace)
            .list(&ListParams::default())
            .await
            .expect("Gizmos are listed")
        {
            let what = json!({
                "labels": object.metadata.labels,
                "annotations": object.metadata.annotations,
                "finalizers": object.metadata.finalizers,
                "spec": object.data["spec"],
                "status": object.data["status"],
            });
            out.insert(
                format!("{namespace}/{}", object.name_any()),
                (what, object.resource_version().unwrap_or_default()),
            );
        }
    }
    out
}

fn stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_rewrites_stored_objects_at_the_storage_version_and_the_old_one_can_go() {
    logs();
    let env = TestEnv::builder()
        .start()
        .await
        .expect("the simulated platform starts");
    let client = env.onboarding().client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &gizmos(&["v1"]))
        .await
        .expect("the CRD is created");
    assert_eq!(
        migrate(&client, &crds.get(CRD).await.unwrap(), PAGE_SIZE)
            .await
            .unwrap(),
        Migration::Current,
        "one version: nothing to do"
    );

    // Five Gizmos in two namespaces, stored at v1, with labels, annotations, a finalizer and
    // a status: none of it may be lost.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (namespace, count) in [("a", 3), ("b", 2)] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let gizmos = at(&client, "v1", namespace);
        for i in 0..count {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "migration.test/v1", "kind": "Gizmo",
                "metadata": { "name": format!("g{i}"), "labels": { "i": i.to_string() },
                    "annotations": { "note": "kept" }, "finalizers": ["test/keep"] },
                "spec": { "size": i, "color": "red" },
            }))
            .unwrap();
            gizmos
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
            let status = json!({ "status": { "phase": format!("phase-{i}") } });
            gizmos
                .patch_status(
                    &format!("g{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(&status),
                )
                .await
                .unwrap();
        }
    }
    // One of them is being deleted, held by its finalizer.
    at(&client, "v1", "b")
        .delete("g1", &DeleteParams::default())
        .await
        .unwrap();
    let before = contents(&client, "v1").await;
    assert_eq!(before.len(), 5);

    // v2 becomes the storage version; v1 cannot be dropped while objects may be stored in it.
    let mut crd = crds.get(CRD).await.unwrap();
    crd.spec = gizmos(&["v1", "v2"]).spec;
    crds.replace(CRD, &PostParams::default(), &crd)
        .await
        .unwrap();
    let mut crd = crds.get(CRD).await.unwrap();
    assert_eq!(stored_versions(&crd), ["v1", "v2"]);
    crd.spec = gizmos(&["v2"]).spec;
    let refused = crds.replace(CRD, &PostParams::default(), &crd).await;
    assert!(
        matches!(&refused, Err(service_provider::kube::Error::Api(status)) if status.code == 422),
        "dropping a stored version: {refused:?}"
    );

    // Two objects per page: three pages.
    let migrated = migrate(&client, &crds.get(CRD).await.unwrap(), 2)
        .await
        .expect("the migration runs");
    assert_eq!(
        migrated,
        Migration::Migrated {
            storage: "v2".into(),
            dropped: vec!["v1".into()],
            rewritten: 5,
        }
    );
    let after = contents(&client, "v2").await;
    for (key, (what, rv)) in &before {
        let (what_after, rv_after) = &after[key];
        assert_eq!(what_after, what, "{key} is as it was");
        assert_ne!(rv_after, rv, "{key} was written back");
    }
    assert_eq!(after.len(), before.len());
    let mut crd = crds.get(CRD).await.unwrap();
    assert_eq!(stored_versions(&crd), ["v2"]);

    // Idempotent: a second run writes nothing.
    assert_eq!(
        migrate(&client, &crds.get(CRD).await.unwrap(), 2)
            .await
            .unwrap(),
        Migration::Current
    );
    assert_eq!(contents(&client, "v2").await, after);

    // v1 can go now, and every Gizmo reads at v2.
    crd.spec = gizmos(&["v2"]).spec;
    crds.replace(CRD, &PostParams::default(), &crd)
        .await
        .expect("v1 is dropped once no object is stored in it");
    let read: BTreeMap<_, _> = contents(&client, "v2")
        .await
        .into_iter()
        .map(|(key, (what, _))| (key, what))
        .collect();
    let expected: BTreeMap<_, _> = before.into_iter().map(|(k, (w, _))| (k, w)).collect();
    assert_eq!(read, expected);
}
