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

use crate::hello::Hello;
use crate::process::{Deployed, Operated, tempdir};
use crate::support::{self, TIMEOUT};
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

/// The Service API CRD of `P` as a release serving only `version` installed it.
fn previous_release<P: service_provider::ServiceProvider>(
    version: &str,
) -> CustomResourceDefinition {
    let mut crd = service_provider::manifests::service_crd::<P>();
    crd.spec.versions.retain(|v| v.name == version);
    crd.spec.versions[0].storage = true;
    crd.spec.conversion = None;
    crd
}

/// The init Job, twice, with the ServiceProvider's initCommand saying where the onboarding
/// cluster reaches the webhook: `port` on this machine.
async fn init(operated: &Operated<'_>, port: u16) {
    let base_url = format!("--webhooks-base-url=https://localhost:{port}");
    for attempt in 0..2 {
        let (status, stderr) = operated.init_with(&["init", &base_url]).await;
        assert_eq!(status.code(), Some(0), "init #{attempt} failed:\n{stderr}");
    }
}

/// The platform operator's (empty) ProviderConfig of `api_version`, and the Deployment, with the
/// certificate Secret `init` made mounted where `--webhook-cert-path` points and the webhook on
/// `port`.
async fn deploy(operated: &Operated<'_>, env: &TestEnv, port: u16, api_version: &str) -> Deployed {
    let provider = env.provider().unwrap().name();
    let secret = Api::<Secret>::namespaced(env.platform().client(), env.pod_namespace())
        .get(&format!("{provider}-webhook-tls"))
        .await
        .expect("init made the certificate Secret");
    let data = secret.data.unwrap();
    let certs = tempdir(&format!("{provider}-webhook-certificate"));
    std::fs::write(certs.join("tls.crt"), &data["tls.crt"].0).unwrap();
    std::fs::write(certs.join("tls.key"), &data["tls.key"].0).unwrap();
    let (group, version) = api_version.split_once('/').unwrap();
    let configs = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, "ProviderConfig"),
        "providerconfigs",
    );
    let mut config = DynamicObject::new(provider, &configs);
    config.data = json!({ "spec": {} });
    Api::<DynamicObject>::all_with(env.platform().client(), &configs)
        .create(&PostParams::default(), &config)
        .await
        .expect("the ProviderConfig");
    let cert_path = format!("--webhook-cert-path={}", certs.display());
    let bind = format!("--webhooks-bind-address=127.0.0.1:{port}");
    operated.run_with(&format!("sp-{provider}-0"), 1, &[&cert_path, &bind])
}

fn stored_versions(crd: CustomResourceDefinition) -> Vec<String> {
    crd.status.unwrap().stored_versions.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_convert_through_the_providers_webhook_as_init_wires_it() {
    support::logs();
    let env = TestEnv::builder()
        .provider::<Widget>()
        .provider_name("widget")
        .provider_initialized(false)
        .control_plane("project-w--ws-a", "alpha")
        .start()
        .await
        .expect("the simulated platform starts");
    let operated = Operated::new("widget", &env);

    // The previous release served v1 only, stored there, and a tenant has a Widget.
    let crds = Api::<CustomResourceDefinition>::all(env.onboarding().client());
    crds.create(&PostParams::default(), &previous_release::<Widget>("v1"))
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

    let port = support::free_port();
    init(&operated, port).await;
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
    assert_eq!(
        stored_versions(crds.get(CRD).await.unwrap()),
        ["v1", "v1alpha1"]
    );

    // Without the certificate where run reads it, run stops and says where to put it.
    let mut uncertified = operated.run_with(
        "sp-widget-x",
        1,
        &[
            "--webhook-cert-path=/nonexistent/webhook-certificate",
            &format!("--webhooks-bind-address=127.0.0.1:{port}"),
        ],
    );
    let status = uncertified.process.wait(TIMEOUT).await;
    let stderr = uncertified.process.stderr();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/webhook-certificate/tls.crt")
            && stderr.contains("point --webhook-cert-path at its directory"),
        "{stderr}"
    );

    let deployed = deploy(&operated, &env, port, "widgets.versions.test/v1").await;

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

/// examples/hello's upgrade from the release that served `v1alpha1` only: after `init` and `run`
/// the Hellos stored at `v1alpha1` are stored at `v1alpha2`, only `v1alpha2` is in the CRD's
/// stored versions, and no field was lost, read at either version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hellos_stored_at_v1alpha1_are_migrated_to_v1alpha2_losing_nothing() {
    support::logs();
    let env = TestEnv::builder()
        .provider::<Hello>()
        .provider_name("hello")
        .provider_initialized(false)
        .control_plane("project-h--ws-a", "alpha")
        .start()
        .await
        .expect("the simulated platform starts");
    let crds = Api::<CustomResourceDefinition>::all(env.onboarding().client());
    crds.create(
        &PostParams::default(),
        &previous_release::<Hello>("v1alpha1"),
    )
    .await
    .unwrap();
    let at = |version: &str| {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("hello.services.open-control-plane.io", version, "Hello"),
            "hellos",
        );
        (
            Api::<DynamicObject>::namespaced_with(
                env.onboarding().client(),
                "project-h--ws-a",
                &resource,
            ),
            resource,
        )
    };
    let (v1alpha1, old) = at("v1alpha1");
    let mut hello = DynamicObject::new("alpha", &old);
    hello.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
    hello.metadata.annotations = Some([("note".to_owned(), "kept".to_owned())].into());
    hello.data = json!({ "spec": { "greeting": "old friend", "targetNamespace": "greetings" } });
    let written = eventually("the previous CRD to serve", TIMEOUT, || async {
        v1alpha1.create(&PostParams::default(), &hello).await.ok()
    })
    .await
    .unwrap();

    let operated = Operated::new("hello", &env);
    let port = support::free_port();
    init(&operated, port).await;
    assert_eq!(
        stored_versions(
            crds.get("hellos.hello.services.open-control-plane.io")
                .await
                .unwrap()
        ),
        ["v1alpha1", "v1alpha2"]
    );
    let deployed = deploy(
        &operated,
        &env,
        port,
        "hello.services.open-control-plane.io/v1alpha2",
    )
    .await;
    eventually("the stored versions to be [v1alpha2]", TIMEOUT, || async {
        let crd = crds
            .get("hellos.hello.services.open-control-plane.io")
            .await
            .ok()?;
        (stored_versions(crd) == ["v1alpha2"]).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; provider:\n{}", deployed.process.stderr()));

    let (v1alpha2, _) = at("v1alpha2");
    let migrated = v1alpha2.get("alpha").await.unwrap();
    assert_ne!(
        migrated.metadata.resource_version,
        written.metadata.resource_version
    );
    assert_eq!(
        migrated.data["spec"],
        json!({ "greeting": "old friend", "target": { "namespace": "greetings" } })
    );
    let read_back = v1alpha1.get("alpha").await.unwrap();
    assert_eq!(read_back.data["spec"], written.data["spec"]);
    assert_eq!(read_back.metadata.labels, written.metadata.labels);
    assert_eq!(read_back.metadata.annotations, written.metadata.annotations);
    assert_eq!(read_back.metadata.uid, written.metadata.uid);
}
