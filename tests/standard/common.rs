//! Shared set-up: a simulated platform with a provider installed, the provider running in this
//! process under its generated RBAC, and conditions to wait for.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
use service_provider::kube::{Api, Resource};
use service_provider::runner::{RunOptions, Runtime};
use service_provider::{Phase, Reconcile, ServiceProvider};

/// Generous: the whole suite shares two cores.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// Installs `tracing` output once when `RUST_LOG` is set (for debugging a failing test).
pub fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The ProviderConfig spec every Velero test starts from.
pub fn velero_config() -> Value {
    json!({
        "imageRepository": "registry.test/velero",
        "versions": [{ "version": "1.15.0" }, { "version": "1.16.1", "chartVersion": "v1.16.1" }],
        "pollInterval": "1m",
    })
}

/// A platform with provider `P` installed as `init` would, and the given ControlPlanes.
pub async fn env<P: ServiceProvider>(config: Value, control_planes: &[(&str, &str)]) -> TestEnv {
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

/// The provider's platform client: its ServiceAccount, bound to the generated ClusterRole only.
pub async fn provider_platform_client(env: &TestEnv) -> service_provider::kube::Client {
    let kubeconfig = env
        .provider()
        .expect("a provider is installed")
        .platform_kubeconfig();
    service_provider::access::clients::ClientFactory::new()
        .client(kubeconfig.as_bytes())
        .await
        .expect("the provider's kubeconfig works")
}

/// Starts provider `P` in this process against `env`, under its generated RBAC.
pub async fn start<P: Reconcile>(env: &TestEnv, tweak: impl FnOnce(&mut RunOptions)) -> Runtime<P> {
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

/// Stops a runtime and waits until its reconciles finished.
pub async fn stop<P: Reconcile>(runtime: Runtime<P>) {
    runtime.shutdown();
    tokio::time::timeout(TIMEOUT, runtime.wait())
        .await
        .expect("the runtime stops");
}

/// Creates a Service API object of `P` with `spec` for the ControlPlane `cp`.
pub async fn create<P: ServiceProvider>(env: &TestEnv, cp: &ControlPlaneRef, spec: Value) {
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
pub fn objects<P: ServiceProvider>(env: &TestEnv, cp: &ControlPlaneRef) -> Api<P> {
    Api::namespaced(env.onboarding().client(), &cp.namespace)
}

/// Ready, for the object's current generation.
pub fn ready<P: ServiceProvider>(object: Option<&P>) -> bool {
    object.is_some_and(|o| {
        o.status().is_some_and(|s| {
            s.phase == Some(Phase::Ready) && s.observed_generation == o.meta().generation
        })
    })
}

/// Waits until `object` satisfies `condition`, watching it; returns it.
pub async fn wait<K>(
    api: &Api<K>,
    name: &str,
    condition: impl Fn(Option<&K>) -> bool + Send + 'static,
) -> Option<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default,
{
    service_provider_apiserver::wait_for(api, name, TIMEOUT, move |o: Option<&K>| condition(o))
        .await
        .unwrap_or_else(|e| panic!("waiting for {name}: {e}"))
}

/// Waits until `check` returns `Some`, checking again whenever `interval` passed; for conditions
/// over many objects or several clusters, where no single watch says it.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    let mut interval = Duration::from_millis(20);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_millis(500));
    }
}

/// Every request a cluster answered with 403, by verb and resource: the provider must never be
/// refused what it needs.
pub fn forbidden(counters: &service_provider_apiserver::Counters) -> Vec<String> {
    counters
        .snapshot()
        .into_iter()
        .filter(|(k, _)| k.code == 403)
        .map(|(k, n)| format!("{} {} {} x{n}", k.cluster, k.verb, k.resource))
        .collect()
}
