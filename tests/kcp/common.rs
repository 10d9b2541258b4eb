//! What the kit does not model, for the three kcp tests that need it: a platform whose
//! consumer workspaces exist before the provider starts and whose kcp shards a test faults
//! (`faults`), the provider's kcp settings read from its ProviderConfig (`config`), and two
//! releases of a provider with different types serving one platform in turn (`schema`). Every
//! other kcp test uses the author's test kit (`service_provider::testing`).

use serde_json::{Value, json};

pub(crate) use crate::velero_config;
use service_provider::dev::TestEnv;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
use service_provider::{Reconcile, ServiceProvider};
use service_provider_apiserver::kcp::{KcpOptions, WorkspaceInfo};
use service_provider_runtime::cli::run::{RunOptions, Runtime};
use service_provider_runtime::modes::kcp::{KcpSettings, KcpSource};
use std::sync::Arc;

pub(crate) use crate::support::*;

/// A platform with provider `P` installed and kcp with `consumers` bound consumer workspaces.
pub(crate) async fn env<P: ServiceProvider>(
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
        .start()
        .await
        .expect("the simulated platform with kcp starts")
}

/// kcp settings for `P` from the environment: the provider's own identity in the provider
/// workspace.
pub(crate) fn settings<P: ServiceProvider>(env: &TestEnv) -> KcpSettings {
    let kcp = env.kcp().expect("kcp is started");
    KcpSettings::new(
        &P::INFO,
        kcp.provider_kubeconfig()
            .expect("a kcp provider")
            .as_bytes(),
    )
}

/// Starts provider `P` in this process, kcp mode only, under its generated RBAC.
pub(crate) async fn start<P: Reconcile>(
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

/// The consumer workspaces.
pub(crate) fn consumers(env: &TestEnv) -> Vec<WorkspaceInfo> {
    env.kcp().expect("kcp").consumers().to_vec()
}

/// An admin client in workspace `ws` (at the workspace URL, not through the virtual workspace).
pub(crate) fn admin(env: &TestEnv, ws: &WorkspaceInfo) -> service_provider::kube::Client {
    env.kcp().expect("kcp").client(&ws.path)
}

/// Creates a Service API object of `P` named `name` in namespace `default` of workspace `ws`.
pub(crate) async fn create<P: ServiceProvider>(
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

/// Waits until the `P` object `name` in namespace `default` is Ready in each of `workspaces`.
pub(crate) async fn wait_ready<'a, P>(
    env: &TestEnv,
    workspaces: impl IntoIterator<Item = &'a (impl std::borrow::Borrow<WorkspaceInfo> + 'a)>,
    name: &str,
) where
    P: ServiceProvider + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    for ws in workspaces {
        wait(&objects::<P>(env, ws.borrow()), name, ready::<P>).await;
    }
}

/// `P` objects in namespace `default` of workspace `ws`, as the tenant sees them.
pub(crate) fn objects<P: ServiceProvider>(env: &TestEnv, ws: &WorkspaceInfo) -> Api<P> {
    Api::namespaced(admin(env, ws), "default")
}
