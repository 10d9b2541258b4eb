//! Shared set-up: a simulated platform with a provider installed, the provider running in this
//! process under its generated RBAC, and conditions to wait for.

use serde_json::{Value, json};
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
use service_provider::{Reconcile, ServiceProvider};
use service_provider_runtime::cli::run::{RunOptions, Runtime};

pub(crate) use crate::support::*;

/// The ProviderConfig spec every Velero test starts from.
pub(crate) fn velero_config() -> Value {
    json!({
        "imageRepository": "registry.test/velero",
        "versions": [{ "version": "1.15.0" }, { "version": "1.16.1", "chartVersion": "v1.16.1" }],
        "pollInterval": "1m",
    })
}

/// A platform with provider `P` installed as `init` would, and the given ControlPlanes.
pub(crate) async fn env<P: ServiceProvider>(
    config: Value,
    control_planes: &[(&str, &str)],
) -> TestEnv {
    logs();
    let mut builder = TestEnv::builder()
        .provider::<P>()
        .provider_config(config)
        .timeout(TIMEOUT);
    for (namespace, name) in control_planes {
        builder = builder.control_plane(*namespace, *name);
    }
    builder
        .start()
        .await
        .expect("the simulated platform starts")
}

/// Starts provider `P` in this process against `env`, under its generated RBAC.
pub(crate) async fn start<P: Reconcile>(
    env: &TestEnv,
    tweak: impl FnOnce(&mut RunOptions),
) -> Runtime<P> {
    let provider = env.provider().expect("a provider is installed");
    let mut options = RunOptions::new(provider.name(), env.pod_namespace());
    options.onboarding_timeout = TIMEOUT;
    tweak(&mut options);
    let mut runtime = Runtime::<P>::start(provider_platform_client(env).await, options)
        .await
        .expect("the runtime starts");
    runtime
        .start_standard()
        .await
        .expect("standard mode starts");
    runtime
}

/// Creates a Service API object of `P` with `spec` for the ControlPlane `cp`.
pub(crate) async fn create<P: ServiceProvider>(env: &TestEnv, cp: &ControlPlaneRef, spec: Value) {
    let resource = ApiResource::erase::<P>(&());
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.onboarding().client(), &cp.namespace, &resource);
    let mut object = DynamicObject::new(&cp.name, &resource).within(&cp.namespace);
    object.data = json!({ "spec": spec });
    api.create(&PostParams::default(), &object)
        .await
        .expect("the object is created");
}

/// The onboarding API of `P` in `cp`'s namespace.
pub(crate) fn objects<P: ServiceProvider>(env: &TestEnv, cp: &ControlPlaneRef) -> Api<P> {
    Api::namespaced(env.onboarding().client(), &cp.namespace)
}
