//! CustomResourceDefinitions: served at once, versions, status subresource, deletion.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResource;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn crd_is_established_and_served_at_once() {
    let c = cluster().await;
    let client = c.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let conds = created.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );
    // No wait: the resource is served as soon as the create returns.
    let w = widgets(&client, "default")
        .create(&PostParams::default(), &widget("w1", 3))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    assert_eq!(w.data["spec"]["size"], 3);
}

#[tokio::test]
async fn custom_objects_crud_versions_and_status() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    api.create(&PostParams::default(), &widget("w", 2))
        .await
        .unwrap();

    // The other served version shows the same object.
    let beta: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource("v1beta1"));
    let b = beta.get("w").await.unwrap();
    assert_eq!(b.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(b.data["spec"]["size"], 2);

    // Status is ignored by the main resource and is all /status changes.
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "x"}})),
        )
        .await
        .unwrap();
    assert!(w.data.get("status").is_none());
    assert_eq!(
        w.metadata.generation,
        Some(1),
        "status-only patches do not bump generation"
    );
    let w = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(w.data["status"]["phase"], "Ready");
    assert_eq!(w.data["spec"]["size"], 2);
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    assert_eq!(
        w.data["status"]["phase"], "Ready",
        "spec updates keep status"
    );

    // PUT without resourceVersion is refused for custom resources (as kube-apiserver does).
    let mut stale = w.clone();
    stale.metadata.resource_version = None;
    let s = status(
        api.replace("w", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(
        s.message.contains(
            "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        ),
        "{}",
        s.message
    );

    // Deleting a custom object answers a Status naming it, as the generic registry does for
    // every resource that does not set ReturnDeletedObject.
    let d = api.delete("w", &DeleteParams::default()).await.unwrap();
    assert!(
        d.right()
            .is_some_and(|s| s.details.is_some_and(|d| d.name == "w"))
    );
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "typed.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus"
)]
pub(crate) struct GadgetSpec {
    pub size: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, Default)]
pub(crate) struct GadgetStatus {
    pub ready: bool,
}

#[tokio::test]
async fn typed_custom_resources_from_kube_derive() {
    use kube::CustomResourceExt;
    let c = cluster().await;
    let client = c.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Gadget::crd())
        .await
        .unwrap();
    let api: Api<Gadget> = Api::default_namespaced(client);
    let g = api
        .create(
            &PostParams::default(),
            &Gadget::new("g", GadgetSpec { size: 1 }),
        )
        .await
        .unwrap();
    assert_eq!(g.spec.size, 1);
    let g = api
        .patch_status(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert!(g.status.unwrap().ready);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn deleting_a_crd_removes_its_objects_and_resource() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");
    for i in 0..3 {
        api.create(&PostParams::default(), &widget(&format!("w{i}"), 1))
            .await
            .unwrap();
    }
    // One object holds a finalizer: the CRD waits for it.
    api.patch(
        "w0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
    )
    .await
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("objects without finalizers to go", || async {
        api.list(&ListParams::default())
            .await
            .map(|l| l.items.len() == 1)
            .unwrap_or(false)
    })
    .await;
    assert!(
        crds.get("widgets.example.com")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let s = status(
        api.create(&PostParams::default(), &widget("late", 1))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        s.code, 405,
        "no new objects while the CRD terminates: {}",
        s.message
    );
    api.patch(
        "w0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    service_provider_apiserver::wait_for(
        &crds,
        "widgets.example.com",
        TIMEOUT,
        service_provider_apiserver::conditions::gone(),
    )
    .await
    .unwrap();
    assert_eq!(
        code(api.list(&ListParams::default()).await.unwrap_err()),
        404,
        "the resource is no longer served"
    );
    // Re-creating the CRD starts empty.
    install_widgets(&client).await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn custom_objects_are_validated_defaulted_and_pruned() {
    let c = cluster().await;
    let client = c.client();
    install_widgets(&client).await;
    let api = widgets(&client, "default");

    // Defaults applied, unknown fields pruned.
    let mut w = widget("w", 2);
    w.data["spec"]["unknown"] = json!(true);
    let w = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(w.data["spec"]["color"], "red");
    assert!(w.data["spec"].get("unknown").is_none());

    // Violations are 422 Invalid with field paths.
    let mut bad = widget("bad", 20);
    bad.data["spec"]["color"] = json!("green");
    let s = status(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    let fields: Vec<String> = s
        .details
        .unwrap()
        .causes
        .iter()
        .map(|c| c.field.clone())
        .collect();
    assert!(
        fields.contains(&"spec.size".to_string()) && fields.contains(&"spec.color".to_string()),
        "{fields:?}"
    );
    assert!(
        s.message
            .starts_with("Widget.example.com \"bad\" is invalid: ["),
        "{}",
        s.message
    );
    assert!(
        s.message.contains(
            "spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"
        ),
        "{}",
        s.message
    );

    // Updates are validated too.
    let s = status(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": "big"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(s.message.contains("spec.size"), "{}", s.message);

    // fieldValidation=Strict refuses unknown fields with 400.
    let mut strict = widget("strict", 1);
    strict.data["spec"]["nope"] = json!(1);
    let req = http::Request::post(
        "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
    )
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&strict).unwrap())
    .unwrap();
    let e = client.request::<DynamicObject>(req).await.unwrap_err();
    let s = status(e);
    assert_eq!(s.code, 400);
    assert!(
        s.message
            .contains("strict decoding error: unknown field \"spec.nope\""),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn invalid_crds_and_builtins_are_refused() {
    let c = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.client());
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("wrong.example.com");
    let s = status(
        crds.create(
            &PostParams::default(),
            &serde_json::from_value(crd).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(s.message.contains("metadata.name"), "{}", s.message);

    // Built-ins are validated against their schemas as well.
    let cms: Api<DynamicObject> = Api::default_namespaced_with(
        c.client(),
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    let bad: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": 5}})).unwrap();
    let s = status(cms.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(s.code, 422, "{}", s.message);
    assert!(s.message.contains("data.k"), "{}", s.message);
}
