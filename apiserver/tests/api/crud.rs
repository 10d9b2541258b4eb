//! get, list, create, update, patch with kube-apiserver's server-set fields and errors.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::common::*;

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

#[tokio::test]
async fn create_get_update_with_server_set_fields() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let created = api
        .create(&PostParams::default(), &cm("foo", &[]))
        .await
        .unwrap();
    let uid = created.uid().unwrap();
    assert!(!uid.is_empty());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1: u64 = created.resource_version().unwrap().parse().unwrap();
    assert_eq!(
        created.metadata.generation, None,
        "configmaps have no generation, as in kube-apiserver"
    );

    let got = api.get("foo").await.unwrap();
    assert_eq!(got.data, created.data);

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("k".into(), "w".into())]));
    changed.metadata.uid = Some("ignored-by-server".into());
    let e = api
        .replace("foo", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    assert_eq!(
        code(e),
        409,
        "a uid that does not match is a failed precondition"
    );
    changed.metadata.uid = None;
    let updated = api
        .replace("foo", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.uid().unwrap(), uid);
    assert!(updated.resource_version().unwrap().parse::<u64>().unwrap() > rv1);
    assert_eq!(
        updated.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );

    // The stale object (first version) is refused.
    let e = api
        .replace("foo", &PostParams::default(), &got)
        .await
        .unwrap_err();
    let s = status(e);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on configmaps \"foo\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // An update that changes nothing does not bump the resourceVersion.
    let same = api
        .replace("foo", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(same.resource_version(), updated.resource_version());
}

#[tokio::test]
async fn errors_match_kube_apiserver() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let s = status(api.get("nope").await.unwrap_err());
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (404, "NotFound", "configmaps \"nope\" not found")
    );

    api.create(&PostParams::default(), &cm("dup", &[]))
        .await
        .unwrap();
    let s = status(
        api.create(&PostParams::default(), &cm("dup", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (409, "AlreadyExists", "configmaps \"dup\" already exists")
    );

    let s = status(
        api.create(&PostParams::default(), &cm("Bad_Name", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(s.message.starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", s.message);
    assert_eq!(s.details.unwrap().causes[0].field, "metadata.name");

    let missing: Api<ConfigMap> = Api::namespaced(c.client(), "no-such-ns");
    let s = status(
        missing
            .create(&PostParams::default(), &cm("x", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "namespaces \"no-such-ns\" not found")
    );

    let deployments: Api<Deployment> = Api::default_namespaced(c.client());
    let s = status(deployments.get("nope").await.unwrap_err());
    assert_eq!(s.message, "deployments.apps \"nope\" not found");
}

#[tokio::test]
async fn generate_name_and_dry_run() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    let mut obj = cm("", &[]);
    obj.metadata.name = None;
    obj.metadata.generate_name = Some("gen-".into());
    let a = api.create(&PostParams::default(), &obj).await.unwrap();
    let b = api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(a.name_any().starts_with("gen-") && a.name_any().len() == 9);
    assert_ne!(a.name_any(), b.name_any());

    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let d = api.create(&dry, &cm("dry", &[])).await.unwrap();
    assert_eq!(d.name_any(), "dry");
    assert_eq!(
        code(api.get("dry").await.unwrap_err()),
        404,
        "dry run stores nothing"
    );
}

#[tokio::test]
async fn list_selectors_and_pagination() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    for (n, labels) in [
        ("a", vec![("app", "web"), ("tier", "front")]),
        ("b", vec![("app", "web"), ("tier", "back")]),
        ("c", vec![("app", "db")]),
        ("d", vec![]),
    ] {
        api.create(&PostParams::default(), &cm(n, &labels))
            .await
            .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .iter()
            .map(|o| o.name_any())
            .filter(|n| n != "kube-root-ca.crt")
            .collect()
    };
    let q = |s: &str| ListParams::default().labels(s);
    assert_eq!(names(api.list(&q("app=web")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(api.list(&q("app==web")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(api.list(&q("app!=web")).await.unwrap()), ["c", "d"]);
    assert_eq!(
        names(api.list(&q("tier in (front,x)")).await.unwrap()),
        ["a"]
    );
    assert_eq!(
        names(api.list(&q("tier notin (front)")).await.unwrap()),
        ["b", "c", "d"]
    );
    assert_eq!(names(api.list(&q("tier")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(api.list(&q("!tier")).await.unwrap()), ["c", "d"]);
    assert_eq!(
        names(api.list(&q("app=web,tier=back")).await.unwrap()),
        ["b"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=c"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    assert_eq!(
        names(
            api.list(
                &ListParams::default()
                    .fields("metadata.namespace=default,metadata.name!=c")
                    .labels("app")
            )
            .await
            .unwrap()
        ),
        ["a", "b"]
    );
    let e = api
        .list(&ListParams::default().fields("spec.x=1"))
        .await
        .unwrap_err();
    let s = status(e);
    assert_eq!(
        (s.code, s.message.as_str()),
        (
            400,
            r#""spec.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
        )
    );

    // Pages of two, continued until done; all objects seen once.
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|o| o.name_any()));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(seen, ["a", "b", "c", "d", "kube-root-ca.crt"]);

    // Cluster-wide lists see every namespace.
    let all: Api<ConfigMap> = Api::all(c.client());
    let n = all.list(&ListParams::default()).await.unwrap().items.len();
    assert_eq!(
        n,
        4 + 4,
        "four objects plus kube-root-ca.crt in each of the four namespaces"
    );
}

#[tokio::test]
async fn merge_patch_and_strategic_merge_patch() {
    let c = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(c.client());
    api.create(&PostParams::default(), &cm("p", &[("a", "1")]))
        .await
        .unwrap();
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"data": {"x": "y", "k": null}, "metadata": {"labels": {"b": "2"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        p.data.clone().unwrap(),
        BTreeMap::from([("x".to_string(), "y".to_string())])
    );
    assert_eq!(p.labels().len(), 2);
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"z": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(p.data.unwrap().len(), 2);
    // A patch carrying a stale resourceVersion is a precondition and fails.
    let e = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "data": {"q": "1"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code(e), 409);
    assert_eq!(
        code(
            api.patch("nope", &PatchParams::default(), &Patch::Merge(json!({})))
                .await
                .unwrap_err()
        ),
        404
    );
}

#[tokio::test]
async fn secrets_fold_string_data() {
    let c = cluster().await;
    let api: Api<Secret> = Api::default_namespaced(c.client());
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .unwrap();
    let created = api.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert_eq!(created.data.unwrap()["password"].0, b"hunter2");
    assert!(created.string_data.is_none());
}

#[tokio::test]
async fn generation_and_status_subresource() {
    let c = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(c.client());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}},
        "status": {"replicas": 99}
    }))
    .unwrap();
    let d = api.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    assert_eq!(
        d.status.as_ref().and_then(|s| s.replicas),
        None,
        "status is ignored on create"
    );

    // Label change: no generation bump.
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    // Spec change: bump.
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2));
    // The main resource ignores status.
    let d = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(d.status.as_ref().and_then(|s| s.replicas), None);
    // /status changes only status.
    let d = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 7}, "spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(d.status.as_ref().and_then(|s| s.replicas), Some(7));
    assert_eq!(d.spec.replicas, Some(3));
    assert_eq!(d.metadata.generation, Some(2));
    // Scale subresource.
    let s = api.get_scale("web").await.unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(3));
    let s = api
        .patch_scale(
            "web",
            &PatchParams {
                field_manager: Some("scaler".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(5));
    let scaled = api.get("web").await.unwrap();
    assert_eq!(scaled.spec.replicas, Some(5));
    // The scale write is recorded like kube-apiserver records it: an Update of `scale`.
    let entry = scaled
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|m| m.manager.as_deref() == Some("scaler"))
        .expect("a managedFields entry for the scaler");
    assert_eq!(entry.operation.as_deref(), Some("Update"));
    assert_eq!(entry.subresource.as_deref(), Some("scale"));
    let fields = serde_json::to_value(&entry.fields_v1).unwrap();
    assert!(
        fields.pointer("/f:spec/f:replicas").is_some(),
        "the scaler owns spec.replicas: {fields}"
    );
}

#[tokio::test]
async fn deployments_become_available_when_switched_on() {
    let c = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(c.client());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "worker"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
                 "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let d = api.get("worker").await.unwrap();
    assert!(
        d.status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .is_none(),
        "no pods run while the switch is off"
    );
    c.set_deployments_available(true);
    let available =
        service_provider_apiserver::conditions::has_condition::<Deployment>("Available", "True");
    let d = service_provider_apiserver::wait_for(&api, "worker", TIMEOUT, available)
        .await
        .unwrap()
        .unwrap();
    let st = d.status.unwrap();
    assert_eq!(
        (
            st.available_replicas,
            st.ready_replicas,
            st.observed_generation
        ),
        (Some(2), Some(2), Some(1))
    );
}

#[tokio::test]
async fn namespaces_exist_and_cluster_scoped_objects_work() {
    let c = cluster().await;
    let api: Api<Namespace> = Api::all(c.client());
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&ns.to_string()), "{ns} exists");
    }
    let ns = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(ns.status.clone().unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(ns.labels()["kubernetes.io/metadata.name"], "team-a");
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(c.client(), "team-a");
    service_provider_apiserver::wait_for(
        &sas,
        "default",
        TIMEOUT,
        service_provider_apiserver::conditions::exists(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn events_in_both_apis_leases_and_services() {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::{Event as CoreEvent, Service};
    use k8s_openapi::api::events::v1::Event;
    let c = cluster().await;
    let client = c.client();
    // An events.k8s.io event (what kube-runtime's Recorder writes) is a core/v1 event too.
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"name": "web.1"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reason": "Scaled", "note": "scaled to 3", "type": "Normal", "action": "Scale",
        "reportingController": "example.com/operator", "reportingInstance": "op-1",
        "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default", "uid": "u1"}
    }))
    .unwrap();
    let events: Api<Event> = Api::default_namespaced(client.clone());
    events.create(&PostParams::default(), &ev).await.unwrap();
    let core: Api<CoreEvent> = Api::default_namespaced(client.clone());
    let l = core
        .list(
            &ListParams::default().fields("involvedObject.name=web,involvedObject.kind=Deployment"),
        )
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    assert_eq!(l.items[0].message.as_deref(), Some("scaled to 3"));
    assert_eq!(
        l.items[0].reporting_component.as_deref(),
        Some("example.com/operator")
    );
    assert!(
        core.list(&ListParams::default().fields("involvedObject.name=other"))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let back = events.get("web.1").await.unwrap();
    assert_eq!(back.note.as_deref(), Some("scaled to 3"));
    assert_eq!(back.regarding.unwrap().name.as_deref(), Some("web"));

    // Leases, as leader election uses them.
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).unwrap();
    let mut got = leases.create(&PostParams::default(), &lease).await.unwrap();
    got.spec.as_mut().unwrap().holder_identity = Some("b".into());
    let updated = leases
        .replace("leader", &PostParams::default(), &got)
        .await
        .unwrap();
    assert_eq!(updated.spec.unwrap().holder_identity.as_deref(), Some("b"));
    assert_eq!(
        code(
            leases
                .replace("leader", &PostParams::default(), &got)
                .await
                .unwrap_err()
        ),
        409
    );

    // Services get a cluster IP and defaults.
    let svcs: Api<Service> = Api::default_namespaced(client);
    let s: Service = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})).unwrap();
    let s = svcs.create(&PostParams::default(), &s).await.unwrap();
    let spec = s.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert!(spec.cluster_ip.unwrap().starts_with("10.96."));
    assert_eq!(spec.ports.unwrap()[0].protocol.as_deref(), Some("TCP"));
}
