//! Shared set-up: a simulated platform with kcp (a provider workspace exporting the provider's
//! API and consumer workspaces bound to it), the provider running in this process under its
//! generated RBAC on the platform and its generated ClusterRole in the provider workspace, and
//! conditions to wait for.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use service_provider::dev::TestEnv;
use service_provider::kcp::{KcpSettings, KcpSource};
use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
use service_provider::kube::{Api, Resource};
use service_provider::runner::{RunOptions, Runtime};
use service_provider::{Phase, Reconcile, ServiceProvider};
use service_provider_apiserver::kcp::{KcpOptions, WorkspaceInfo};
use std::sync::Arc;

/// Generous: the whole suite shares two cores.
pub const TIMEOUT: Duration = Duration::from_secs(120);

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
        "versions": [{ "version": "1.15.0" }, { "version": "1.16.1" }],
        "pollInterval": "1m",
    })
}

/// A platform with provider `P` installed and kcp with `consumers` bound consumer workspaces.
pub async fn env<P: ServiceProvider>(
    config: Value,
    consumers: usize,
    options: KcpOptions,
) -> TestEnv {
    logs();
    TestEnv::builder()
        .provider::<P>()
        .provider_config(config)
        .kcp(consumers)
        .kcp_options(options)
        .timeout(TIMEOUT)
        .start()
        .await
        .expect("the simulated platform with kcp starts")
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

/// kcp settings for `P` from the environment: the provider's own identity in the provider
/// workspace.
pub fn settings<P: ServiceProvider>(env: &TestEnv) -> KcpSettings {
    let kcp = env.kcp().expect("kcp is started");
    KcpSettings::new(
        &P::INFO,
        kcp.provider_kubeconfig()
            .expect("a kcp provider")
            .as_bytes(),
    )
}

/// Starts provider `P` in this process, kcp mode only, under its generated RBAC.
pub async fn start<P: Reconcile>(
    env: &TestEnv,
    settings: KcpSettings,
    tweak: impl FnOnce(&mut RunOptions),
) -> (Runtime<P>, Arc<KcpSource<P>>) {
    let provider = env.provider().expect("a provider is installed");
    let mut options = RunOptions::new(provider.name(), env.pod_namespace());
    tweak(&mut options);
    let mut runtime = Runtime::<P>::start(provider_platform_client(env).await, options)
        .await
        .expect("the runtime starts");
    let source = runtime.start_kcp(settings).await.expect("kcp mode starts");
    (runtime, source)
}

/// Stops a runtime and waits until its reconciles finished.
pub async fn stop<P: Reconcile>(runtime: Runtime<P>) {
    runtime.shutdown();
    tokio::time::timeout(TIMEOUT, runtime.wait())
        .await
        .expect("the runtime stops");
}

/// The consumer workspaces.
pub fn consumers(env: &TestEnv) -> Vec<WorkspaceInfo> {
    env.kcp().expect("kcp").consumers().to_vec()
}

/// An admin client in workspace `ws` (at the workspace URL, not through the virtual workspace).
pub fn admin(env: &TestEnv, ws: &WorkspaceInfo) -> service_provider::kube::Client {
    env.kcp().expect("kcp").client(&ws.path)
}

/// Creates a Service API object of `P` named `name` in namespace `default` of workspace `ws`.
pub async fn create<P: ServiceProvider>(
    env: &TestEnv,
    ws: &WorkspaceInfo,
    name: &str,
    spec: Value,
) {
    let resource = ApiResource::erase::<P>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(admin(env, ws), "default", &resource);
    let mut object = DynamicObject::new(name, &resource).within("default");
    object.data = json!({ "spec": spec });
    api.create(&PostParams::default(), &object)
        .await
        .expect("the object is created");
}

/// `P` objects in namespace `default` of workspace `ws`, as the tenant sees them.
pub fn objects<P: ServiceProvider>(env: &TestEnv, ws: &WorkspaceInfo) -> Api<P> {
    Api::namespaced(admin(env, ws), "default")
}

/// Ready, for the object's current generation.
pub fn ready<P: ServiceProvider>(object: Option<&P>) -> bool {
    object.is_some_and(|o| {
        o.status().is_some_and(|s| {
            s.phase == Some(Phase::Ready) && s.observed_generation == o.meta().generation
        })
    })
}

/// The `Ready` condition's (status, reason, message).
pub fn ready_condition<P: ServiceProvider>(object: &P) -> Option<(String, String, String)> {
    let c = object.status()?.condition("Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
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
    let condition = std::sync::Arc::new(condition);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let check = condition.clone();
        let left = deadline.saturating_duration_since(Instant::now());
        match service_provider_apiserver::wait_for(api, name, left, move |o: Option<&K>| check(o))
            .await
        {
            Ok(found) => return found,
            // A connection the test's own client lost (a restarted shard): watch again.
            Err(service_provider_apiserver::WaitError::Watch { .. })
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("waiting for {name}: {e}"),
        }
    }
}

/// Waits until `check` returns `Some`, checking again with a growing interval; for conditions
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

/// Every request a kcp shard answered with 403, by surface, verb and resource: the provider must
/// never be refused what it needs.
pub fn forbidden(counters: &service_provider_apiserver::Counters) -> Vec<String> {
    counters
        .snapshot()
        .into_iter()
        .filter(|(k, _)| k.code == 403)
        .map(|(k, n)| format!("{} {} {} x{n}", k.cluster, k.verb, k.resource))
        .collect()
}
