//! A Service API with a version converted in Rust, as the openMCP operator deploys it: `init`
//! makes the webhook's certificate and wires the CRD's conversion webhook to it, `run` serves
//! `/convert` with that certificate, and the API server converts every object through it, so an
//! object written at one version reads at every other.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;
use service_provider::dev::TestEnv;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, ListParams, PostParams};
use service_provider::kube::core::GroupVersionKind;
use service_provider::testing::{TestError, TestPlatform, eventually};

use crate::common::{self, TIMEOUT};
use crate::process::Operated;
use crate::widget::{Size, Widget, WidgetSpec};

const CRD: &str = "widgets.widgets.versions.test";

fn widget_resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("widgets.versions.test", version, "Widget"),
        "widgets",
    )
}

fn widgets(env: &TestEnv, version: &str, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.onboarding().client(),
        namespace,
        &widget_resource(version),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_convert_through_the_providers_webhook_as_init_wires_it() {
    common::logs();
    let env = TestEnv::builder()
        .provider::<Widget>()
        .provider_name("widget")
        .provider_initialized(false)
        .control_plane("project-w--ws-a", "alpha")
        .timeout(TIMEOUT)
        .start()
        .await
        .expect("the simulated platform starts");
    let operated = Operated::new("widget", &env);

    // The previous release served v1 only, stored there, and a tenant has a Widget.
    let crds = Api::<CustomResourceDefinition>::all(env.onboarding().client());
    let mut previous = service_provider::manifests::service_crd::<Widget>();
    previous.spec.versions.retain(|v| v.name == "v1");
    previous.spec.versions[0].storage = true;
    previous.spec.conversion = None;
    crds.create(&PostParams::default(), &previous)
        .await
        .unwrap();
    let namespace = "project-w--ws-a";
    let mut old = DynamicObject::new("old", &widget_resource("v1"));
    old.data = json!({ "spec": { "size": { "millimetres": 7 }, "colour": "red" } });
    eventually("the previous CRD to serve", TIMEOUT, || async {
        widgets(&env, "v1", namespace)
            .create(&PostParams::default(), &old)
            .await
            .ok()
    })
    .await
    .unwrap();

    // Without an address for the webhook, init stops and says what to pass.
    let (status, stderr) = operated.init().await;
    assert_eq!(status.code(), Some(1), "init must fail:\n{stderr}");
    assert!(stderr.contains("--webhooks-base-url"), "{stderr}");
    assert!(stderr.contains("WEBHOOK_SERVICE_NAME"), "{stderr}");

    let port = common::free_port();
    let base_url = format!("--webhooks-base-url=https://localhost:{port}");
    for attempt in 0..2 {
        let (status, stderr) = operated.init_with(&["init", &base_url]).await;
        assert_eq!(status.code(), Some(0), "init #{attempt} failed:\n{stderr}");
    }
    // The certificate Secret, made once, is what the CRD trusts.
    let secret = Api::<Secret>::namespaced(env.platform().client(), env.pod_namespace())
        .get("widget-webhook-tls")
        .await
        .expect("init made the certificate Secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.unwrap();
    let crd = Api::<CustomResourceDefinition>::all(env.onboarding().client())
        .get(CRD)
        .await
        .unwrap();
    let webhook = crd.spec.conversion.unwrap().webhook.unwrap();
    let client_config = webhook.client_config.unwrap();
    assert_eq!(
        client_config.url.as_deref(),
        Some(format!("https://localhost:{port}/convert").as_str())
    );
    assert_eq!(client_config.ca_bundle, Some(data["tls.crt"].clone()));
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    // init leaves the migration to run: nothing serves the webhook yet.
    let stored_versions =
        |crd: CustomResourceDefinition| crd.status.unwrap().stored_versions.unwrap();
    assert_eq!(
        stored_versions(crds.get(CRD).await.unwrap()),
        ["v1", "v1alpha1"]
    );

    // The Deployment, with the Secret mounted where --webhook-cert-path points.
    let certs = std::env::temp_dir().join(format!("sp-widget-webhook-{}", std::process::id()));
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("tls.crt"), &data["tls.crt"].0).unwrap();
    std::fs::write(certs.join("tls.key"), &data["tls.key"].0).unwrap();
    let cert_path = format!("--webhook-cert-path={}", certs.display());
    let bind = format!("--webhooks-bind-address=127.0.0.1:{port}");
    let configs = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("widgets.versions.test", "v1", "ProviderConfig"),
        "providerconfigs",
    );
    let mut config = DynamicObject::new("widget", &configs);
    config.data = json!({ "spec": {} });
    Api::<DynamicObject>::all_with(env.platform().client(), &configs)
        .create(&PostParams::default(), &config)
        .await
        .expect("the ProviderConfig");
    let deployed = operated.run_with("sp-widget-0", 1, &[&cert_path, &bind]);

    // run migrates the Widget stored at v1 through its webhook, and trims the stored versions.
    eventually("the stored versions to be trimmed", TIMEOUT, || async {
        let crd = crds.get(CRD).await.ok()?;
        (stored_versions(crd) == ["v1alpha1"]).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; provider:\n{}", deployed.process.stderr()));
    let migrated = widgets(&env, "v1alpha1", namespace)
        .get("old")
        .await
        .unwrap();
    assert_eq!(
        migrated.data["spec"],
        json!({ "sizeMm": 7, "color": "red" })
    );

    // Written at v1alpha1 (stored as it is), read at v1 through the webhook, reconciled there.
    let mut alpha = DynamicObject::new("alpha", &widget_resource("v1alpha1"));
    alpha.data = json!({ "spec": { "sizeMm": 40, "color": "green" } });
    widgets(&env, "v1alpha1", namespace)
        .create(&PostParams::default(), &alpha)
        .await
        .expect("a Widget at v1alpha1");
    let at_v1 = widgets(&env, "v1", namespace);
    let ready: DynamicObject = eventually("the Widget to be Ready at v1", TIMEOUT, || async {
        let object = at_v1.get("alpha").await.ok()?;
        (object.data["status"]["phase"] == "Ready").then_some(object)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; provider:\n{}", deployed.process.stderr()));
    assert_eq!(
        ready.data["spec"],
        json!({ "size": { "millimetres": 40 }, "colour": "green" })
    );
    // And at the version with the hub's schema, and listed at each.
    let beta = widgets(&env, "v1beta1", namespace)
        .get("alpha")
        .await
        .unwrap();
    assert_eq!(beta.data["spec"], ready.data["spec"]);
    for version in ["v1", "v1beta1", "v1alpha1"] {
        let listed = widgets(&env, version, namespace)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 2, "{version}");
        for item in &listed.items {
            assert_eq!(
                item.types.as_ref().unwrap().api_version,
                format!("widgets.versions.test/{version}")
            );
        }
    }
    // The status the provider wrote at v1 reads the same at v1alpha1, where it is stored.
    let stored = widgets(&env, "v1alpha1", namespace)
        .get("alpha")
        .await
        .unwrap();
    assert_eq!(stored.data["status"], ready.data["status"]);
    assert_eq!(
        stored.data["spec"],
        json!({ "sizeMm": 40, "color": "green" })
    );

    let _ = std::fs::remove_dir_all(&certs);
}

/// The test kit serves a provider's conversion webhook as `run` would and wires the CRD to it, so
/// a provider converting in Rust is tested as any other: its objects read at every version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_kit_serves_the_conversion_webhook() -> Result<(), TestError> {
    let platform = TestPlatform::<Widget>::start().await?;
    let spec = WidgetSpec {
        size: Size { millimetres: 25 },
        colour: "blue".into(),
    };
    let tenant = platform.create_tenant("tenant-a", spec).await?;
    tenant.wait_ready().await?;
    let stored = Api::<DynamicObject>::namespaced_with(
        platform.onboarding().client(),
        tenant.namespace(),
        &widget_resource("v1alpha1"),
    )
    .get("tenant-a")
    .await
    .expect("the Widget at v1alpha1");
    assert_eq!(
        stored.data["spec"],
        json!({ "sizeMm": 25, "color": "blue" })
    );
    assert_eq!(stored.data["status"]["phase"], "Ready");
    platform.stop().await;
    Ok(())
}
