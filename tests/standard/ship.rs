//! `<provider> manifests --image`: the ServiceProvider and the sample ProviderConfig a platform
//! operator applies, accepted by the platform's CRDs as written.

use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use service_provider::kube::core::GroupVersionKind;
use service_provider::openmcp::ServiceProviderObject;

use crate::support;
use crate::velero::{self, Velero};

fn read_yaml(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_norway::from_str(&text).unwrap()
}

/// Applies `object` as the platform operator would (`kubectl apply --server-side`) and returns
/// what the platform cluster stored.
async fn apply(
    client: &service_provider::kube::Client,
    object: &serde_json::Value,
) -> Result<serde_json::Value, service_provider::kube::Error> {
    let gvk: GroupVersionKind = serde_json::from_value(serde_json::json!({
        "group": object["apiVersion"].as_str().unwrap().split_once('/').map_or("", |(g, _)| g),
        "version": object["apiVersion"].as_str().unwrap().rsplit('/').next().unwrap(),
        "kind": object["kind"],
    }))
    .unwrap();
    let plural = match gvk.kind.as_str() {
        "ServiceProvider" => "serviceproviders",
        _ => "providerconfigs",
    };
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    );
    let name = object["metadata"]["name"].as_str().unwrap();
    let stored = api
        .patch(
            name,
            &PatchParams::apply("platform-operator"),
            &Patch::Apply(object),
        )
        .await?;
    Ok(serde_json::to_value(stored).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_provider_manifest_is_accepted_by_the_platform() {
    let platform = support::platform::<Velero>(crate::velero_config())
        .start_without_provider()
        .await
        .expect("the simulated platform starts");
    let dir = std::env::temp_dir().join(format!("ship-manifests-{}", std::process::id()));
    let code = velero::app().run_with_args([
        "velero",
        "manifests",
        "--output",
        dir.to_str().unwrap(),
        "--image",
        "registry.example/velero-provider:0.1.0",
        "--provider-name",
        "velero-shipped",
    ]);
    assert_eq!(code, std::process::ExitCode::SUCCESS);

    let service_provider = read_yaml(&dir.join("deploy/serviceprovider.yaml"));
    let provider_config = read_yaml(&dir.join("deploy/providerconfig.yaml"));
    // The CRDs and RBAC are still there beside them.
    assert!(dir.join("onboarding/crd.yaml").exists());
    std::fs::remove_dir_all(&dir).unwrap();

    let platform = platform.platform().client();
    let stored = apply(&platform, &service_provider)
        .await
        .expect("the platform's ServiceProvider CRD accepts the generated object");
    // Nothing was pruned as unknown, and the fields the operator reads are as written.
    assert_eq!(stored["spec"], service_provider["spec"]);
    let typed: ServiceProviderObject = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(typed.spec.image, "registry.example/velero-provider:0.1.0");
    assert_eq!(typed.spec.run_replicas, Some(1));
    assert_eq!(typed.spec.verbosity.as_deref(), Some("INFO"));
    let metrics = typed.spec.metrics.expect("metrics");
    assert_eq!((metrics.disabled, metrics.port), (false, Some(8080)));
    assert_eq!(
        stored["metadata"]["labels"]["openmcp.cloud/cluster"],
        "platform"
    );

    // The CRD does validate: the same object without an image is refused.
    let mut broken = service_provider.clone();
    broken["metadata"]["name"] = "broken".into();
    broken["spec"]["image"] = "".into();
    let refused = apply(&platform, &broken).await;
    assert!(
        matches!(&refused, Err(service_provider::kube::Error::Api(s)) if s.code == 422),
        "{refused:?}"
    );

    // The ProviderConfig is the example's sample, named like the provider, valid for its CRD.
    assert_eq!(provider_config["metadata"]["name"], "velero-shipped");
    assert_eq!(
        provider_config["spec"]["imageRepository"],
        "docker.io/velero"
    );
    let stored = apply(&platform, &provider_config)
        .await
        .expect("the ProviderConfig CRD accepts the sample");
    assert_eq!(
        stored["spec"]["versions"],
        provider_config["spec"]["versions"]
    );
}
