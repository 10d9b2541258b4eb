//! A new spec field: the next version of the provider provisions a new content-addressed
//! APIResourceSchema beside the old one, upserts the APIExport to point at it, and the existing
//! bindings serve the new field while the objects keep reconciling. A new API version beside the
//! old one: an additive version, which kcp converts without a webhook, serves both in every
//! workspace.

use serde_json::json;
use service_provider::Mode;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use service_provider::manifests::api_resource_schema;
use service_provider::testing::{TestError, eventually, is_ready, wait_for_object};
use service_provider_runtime::kcp_api::{APIResourceSchema, v1alpha2};

use crate::support::{TIMEOUT, ready};

/// The provider as first released.
mod v1 {
    use service_provider::prelude::*;

    /// A widget.
    #[service_provider(
        group = "widgets.services.open-control-plane.io",
        version = "v1alpha1",
        kind = "Widget",
        kcp
    )]
    pub(super) struct WidgetSpec {
        /// How big.
        pub size: i32,
    }

    impl Reconcile for Widget {
        async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
            Ok(Outcome::ready())
        }
        async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
            Ok(Deletion::done())
        }
    }
}

/// The next release: one more spec field.
mod v2 {
    use service_provider::prelude::*;

    /// A widget, now in colour.
    #[service_provider(
        group = "widgets.services.open-control-plane.io",
        version = "v1alpha1",
        kind = "Widget",
        kcp
    )]
    pub(super) struct WidgetSpec {
        /// How big.
        pub size: i32,
        /// Its colour.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }

    impl Reconcile for Widget {
        async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
            Ok(Outcome::ready())
        }
        async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
            Ok(Deletion::done())
        }
    }
}

/// A release that adds `v1alpha2` (one more field) and still serves `v1alpha1` as `v2` had it.
mod v3 {
    use service_provider::prelude::*;

    /// A widget, now with a shape.
    #[service_provider(
        group = "widgets.services.open-control-plane.io",
        version = "v1alpha2",
        kind = "Widget",
        kcp,
        served_version(name = "v1alpha1", spec = WidgetSpecV1alpha1, additive)
    )]
    pub(super) struct WidgetSpec {
        /// How big.
        pub size: i32,
        /// Its colour.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
        /// Its shape.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub shape: Option<String>,
    }

    /// A widget as `v1alpha1` has it.
    #[api_type]
    pub(super) struct WidgetSpecV1alpha1 {
        /// How big.
        pub size: i32,
        /// Its colour.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }

    impl Reconcile for Widget {
        async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
            Ok(Outcome::ready())
        }
        async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
            Ok(Deletion::done())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_additive_version_serves_beside_the_old_one_in_every_workspace() -> Result<(), TestError>
{
    let platform = crate::support::platform::<v3::Widget>(json!({ "pollInterval": "1m" }))
        .modes([Mode::Kcp])
        .kcp_provision()
        .start()
        .await?;
    let ws = platform
        .create_kcp_tenant("widget", json!({ "size": 1 }))
        .await?;
    ws.wait_ready().await?;
    // One object per workspace is served: the kit's goes, so that one written at v1alpha1
    // is the workspace's.
    ws.delete().await?;
    ws.wait_gone().await?;
    let at = |version: &str| {
        let resource = ApiResource::from_gvk_with_plural(
            &service_provider::kube::core::GroupVersionKind::gvk(
                "widgets.services.open-control-plane.io",
                version,
                "Widget",
            ),
            "widgets",
        );
        (
            Api::<DynamicObject>::namespaced_with(ws.mcp().client(), "default", &resource),
            resource,
        )
    };
    let (v1alpha1, old) = at("v1alpha1");
    let (v1alpha2, new) = at("v1alpha2");

    // Written at v1alpha1, reconciled at v1alpha2.
    let mut widget = DynamicObject::new("old", &old);
    widget.data = json!({ "spec": { "size": 3, "color": "red" } });
    eventually("v1alpha1 to be served", TIMEOUT, || async {
        v1alpha1.create(&PostParams::default(), &widget).await.ok()
    })
    .await?;
    let ready = wait_for_object(ws.api(), "old", TIMEOUT, ready)
        .await?
        .expect("it exists");
    assert_eq!(
        (ready.spec.size, ready.spec.color.as_deref()),
        (3, Some("red"))
    );

    // Written at v1alpha2, read at v1alpha1 without the field v1alpha1 does not have.
    let mut widget = DynamicObject::new("new", &new);
    widget.data = json!({ "spec": { "size": 4, "shape": "round" } });
    v1alpha2
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    assert_eq!(
        v1alpha1.get("new").await.unwrap().data["spec"],
        json!({ "size": 4 })
    );
    assert_eq!(
        v1alpha2.get("new").await.unwrap().data["spec"],
        json!({ "size": 4, "shape": "round" })
    );
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_field_gets_a_new_schema_and_existing_bindings_serve_it() -> Result<(), TestError> {
    let platform = crate::support::platform::<v1::Widget>(json!({ "pollInterval": "1m" }))
        .modes([Mode::Kcp])
        .kcp_provision()
        .start()
        .await?;
    let mut tenants = Vec::new();
    for workspace in ["consumer-0", "consumer-1"] {
        let tenant = platform
            .create_kcp_tenant(workspace, json!({ "size": 1 }))
            .await?;
        tenant.wait_ready().await?;
        tenants.push(tenant);
    }

    // The next release starts and provisions its schema.
    let old_schema = api_resource_schema::<v1::Widget>().metadata.name.unwrap();
    let new_schema = api_resource_schema::<v2::Widget>().metadata.name.unwrap();
    assert_ne!(old_schema, new_schema, "the schema is content-addressed");
    let platform = platform.upgrade::<v2::Widget>().await?;
    let kcp = platform.env().kcp().expect("kcp runs");
    let provider = kcp.client(&kcp.provider_workspace().path);
    let schemas: Api<APIResourceSchema> = Api::all(provider.clone());
    assert!(
        schemas.get_opt(&old_schema).await?.is_some(),
        "the old schema stays"
    );
    assert!(
        schemas.get_opt(&new_schema).await?.is_some(),
        "the new schema is created"
    );
    let export: v1alpha2::APIExport = Api::all(provider)
        .get(kcp.export_name().expect("an export"))
        .await?;
    assert_eq!(export.spec.resources.len(), 1);
    assert_eq!(
        export.spec.resources[0].schema, new_schema,
        "the export points at the new schema"
    );

    // The existing bindings serve the new field (once kcp has followed the export).
    let resource = ApiResource::erase::<v2::Widget>(&());
    for (i, tenant) in tenants.iter().enumerate() {
        let tenant = tenant.as_release::<v2::Widget>()?;
        let raw: Api<DynamicObject> =
            Api::namespaced_with(tenant.mcp().client(), tenant.namespace(), &resource);
        let color = format!("colour-{i}");
        eventually("the new field to be served", TIMEOUT, || {
            let raw = raw.clone();
            let color = color.clone();
            let name = tenant.name().to_owned();
            async move {
                let patch = json!({ "spec": { "color": color, "size": 2 } });
                raw.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .ok()?;
                let stored = raw.get(&name).await.ok()?;
                (stored.data["spec"]["color"] == json!(color)).then_some(())
            }
        })
        .await?;
        // And the objects keep reconciling, under the new release.
        let ready = tenant
            .wait_until("the new field to be reconciled", |o| {
                is_ready(o) && o.spec.color.is_some() && o.metadata.generation >= Some(2)
            })
            .await?;
        assert_eq!(ready.spec.color.as_deref(), Some(color.as_str()));
    }
    platform.stop().await;
    Ok(())
}
