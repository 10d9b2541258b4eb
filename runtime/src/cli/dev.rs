//! `dev`: the provider against an embedded control plane with a simulated openMCP platform, one
//! ControlPlane and one Service API object, with kubeconfigs for every cluster written for
//! kubectl. A provider declared with `kcp` also gets an embedded kcp: a provider workspace
//! exporting its API and two consumer workspaces bound to the export, each with a sample
//! object, served by kcp mode in the same process. What `cargo run --example velero` does on a
//! machine with no cluster configured.
//!
//! The platform comes from [`crate::dev::TestEnv`] (the same one the tests and benchmarks use);
//! the provider runs in this process with the platform identity `init` would have given it (its
//! generated ClusterRole only), so what works here works under the same RBAC in a real platform.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, CustomResourceExt};
use serde_json::{Value, json};

use crate::access::clients::ClientFactory;
use crate::cli::run::{RunOptions, Runtime};
use crate::dev::TestEnv;
use crate::dev::kcp::workspace_kubeconfig_stem;
use crate::manifests::spec_sample;
use crate::modes::kcp::KcpSettings;
use crate::ops::shutdown_signal;
use crate::provider::ServiceProvider;
use crate::reconcile::Reconcile;
use crate::status::ServiceStatus;

/// The namespace of the sample ControlPlane (openMCP's `project-<p>--ws-<w>` convention).
pub const DEV_NAMESPACE: &str = "project-dev--ws-dev";
/// The name of the sample ControlPlane and Service API object.
pub const DEV_NAME: &str = "dev";
/// How many consumer workspaces `dev` binds to the export of a provider declared with `kcp`.
pub const DEV_KCP_CONSUMERS: usize = 2;
/// The namespace of the sample object in each consumer workspace.
pub const DEV_KCP_NAMESPACE: &str = "default";

/// What the sample objects look like; generated from the CRDs when the author gives none.
#[derive(Clone, Debug, Default)]
pub struct DevSamples {
    /// `spec` of the ProviderConfig.
    pub provider_config: Option<Value>,
    /// `spec` of the sample Service API object.
    pub object: Option<Value>,
}

impl DevSamples {
    /// The ProviderConfig spec and the object spec to use: the author's samples, else generated
    /// from the CRDs (required fields filled, the sample object's `version` offered in the
    /// ProviderConfig's `versions`). The test kit starts from the same samples.
    pub fn resolve<P: ServiceProvider>(&self) -> (Value, Value) {
        let object = self
            .object
            .clone()
            .unwrap_or_else(|| spec_sample(&<P as CustomResourceExt>::crd().spec.versions));
        let config = self.provider_config.clone().unwrap_or_else(|| {
            let mut spec = spec_sample(
                &<P::ProviderConfig as CustomResourceExt>::crd()
                    .spec
                    .versions,
            );
            if let (Some(version), Some(map)) = (object.get("version"), spec.as_object_mut()) {
                map.insert("versions".into(), json!([{ "version": version }]));
            }
            spec
        });
        (config, object)
    }
}

/// How `dev` runs.
#[derive(Clone, Debug)]
pub struct DevOptions {
    /// `--provider-name`.
    pub provider_name: String,
    /// Where to write the kubeconfigs; `<tmp>/<provider>-dev` when absent.
    pub kubeconfig_dir: Option<PathBuf>,
    /// `/metrics` address.
    pub metrics_addr: Option<SocketAddr>,
    /// `/healthz`, `/readyz` address.
    pub health_addr: Option<SocketAddr>,
    /// The sample objects.
    pub samples: DevSamples,
    /// The provider's reconcile timeout (`App::reconcile_timeout`), as `run` applies it.
    pub reconcile_timeout: Option<std::time::Duration>,
}

/// Runs `dev` until Ctrl-C or SIGTERM.
pub async fn run<P: Reconcile>(options: DevOptions) -> Result<(), String> {
    let info = P::INFO;
    let (config_spec, object_spec) = options.samples.resolve::<P>();

    println!(
        "dev: starting an embedded control plane with a simulated openMCP platform for {}",
        info.kind
    );
    let mut builder = TestEnv::builder()
        .provider::<P>()
        .provider_name(&options.provider_name)
        .provider_config(config_spec)
        .control_plane(DEV_NAMESPACE, DEV_NAME);
    if info.kcp {
        println!(
            "dev: {} is declared with kcp: also starting kcp with a provider workspace and {DEV_KCP_CONSUMERS} consumer workspaces bound to its export",
            info.kind
        );
        builder = builder.kcp(DEV_KCP_CONSUMERS);
    }
    let env = builder.start().await.map_err(|e| format!("dev: {e}"))?;
    let provider = env
        .provider()
        .ok_or_else(|| "dev: the simulated platform did not install the provider".to_owned())?;
    let platform = ClientFactory::new()
        .client(provider.platform_kubeconfig().as_bytes())
        .await
        .map_err(|e| format!("dev: the provider's platform kubeconfig: {e}"))?;

    let mut run_options = RunOptions::new(&options.provider_name, env.pod_namespace());
    run_options.metrics_addr = options.metrics_addr;
    run_options.health_addr = options.health_addr;
    run_options.reconcile.timeout = options.reconcile_timeout;
    let mut runtime = Runtime::<P>::start(platform, run_options)
        .await
        .map_err(|e| format!("dev: {e}"))?;
    runtime
        .start_standard()
        .await
        .map_err(|e| format!("dev: {e}"))?;
    println!(
        "dev: provider {} is running (platform identity: its generated ClusterRole only)",
        options.provider_name
    );

    let resource = ApiResource::erase::<P>(&());
    create_sample(
        env.onboarding().client(),
        &resource,
        DEV_NAMESPACE,
        &object_spec,
    )
    .await
    .map_err(|e| format!("dev: creating the sample {}: {e}", info.kind))?;
    println!(
        "dev: created {} {DEV_NAMESPACE}/{DEV_NAME} for ControlPlane {DEV_NAMESPACE}/{DEV_NAME}",
        info.kind
    );
    let mut followed = vec![
        follow(
            Api::<P>::namespaced(env.onboarding().client(), DEV_NAMESPACE),
            format!("{} {DEV_NAME}", info.kind),
            FOLLOW_TIMEOUT,
        )
        .boxed(),
    ];
    if let Some(kcp) = env.kcp() {
        let settings = KcpSettings::new(
            &info,
            kcp.provider_kubeconfig()
                .ok_or_else(|| "dev: kcp has no identity for the provider".to_owned())?
                .as_bytes(),
        );
        runtime
            .start_kcp(settings)
            .await
            .map_err(|e| format!("dev: kcp mode: {e}"))?;
        println!(
            "dev: kcp mode is running for export {} in workspace {}",
            kcp.export_name().unwrap_or_default(),
            kcp.provider_workspace().path
        );
        for ws in kcp.consumers() {
            create_sample(
                kcp.client(&ws.path),
                &resource,
                DEV_KCP_NAMESPACE,
                &object_spec,
            )
            .await
            .map_err(|e| {
                format!(
                    "dev: creating the sample {} in workspace {}: {e}",
                    info.kind, ws.path
                )
            })?;
            println!(
                "dev: created {} {DEV_KCP_NAMESPACE}/{DEV_NAME} in workspace {}",
                info.kind, ws.path
            );
            followed.push(
                follow(
                    Api::<P>::namespaced(kcp.client(&ws.path), DEV_KCP_NAMESPACE),
                    format!("{} {DEV_NAME} in {}", info.kind, ws.path),
                    FOLLOW_TIMEOUT,
                )
                .boxed(),
            );
        }
    }
    futures::future::join_all(followed).await;

    let dir = options
        .kubeconfig_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("{}-dev", options.provider_name)));
    let written = env
        .write_kubeconfigs(&dir)
        .map_err(|e| format!("dev: {e}"))?;
    println!("dev: kubeconfigs written to {}", dir.display());
    for path in &written {
        println!("  {}", path.display());
    }
    println!(
        "\ntry:\n  kubectl --kubeconfig {} get {} -A\n  kubectl --kubeconfig {} get accessrequests -A",
        dir.join("onboarding.kubeconfig").display(),
        info.plural,
        dir.join("platform.kubeconfig").display(),
    );
    if let Some(kcp) = env.kcp() {
        for ws in kcp.consumers() {
            println!(
                "  kubectl --kubeconfig {} get {} -A      # consumer workspace {}",
                dir.join(format!(
                    "{}.kubeconfig",
                    workspace_kubeconfig_stem(&ws.path)
                ))
                .display(),
                info.plural,
                ws.path,
            );
        }
    }
    println!("\nserving until Ctrl-C");
    runtime.run_until(shutdown_signal()).await;
    env.stop();
    println!("dev: stopped");
    Ok(())
}

/// How long `dev` follows a sample object before it prints the kubeconfigs anyway.
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(120);

/// Prints the phase and `Ready` condition of the sample object `DEV_NAME` in `api` (`what`
/// names it) as they change, until it is Ready or `timeout` passes.
async fn follow<P: ServiceProvider>(api: Api<P>, what: String, timeout: Duration) {
    let config = watcher::Config::default().fields(&format!("metadata.name={DEV_NAME}"));
    let stream = watcher(api, config).applied_objects().default_backoff();
    let follow = async {
        let mut stream = std::pin::pin!(stream);
        let mut last = String::new();
        while let Some(Ok(object)) = stream.next().await {
            let Some(status) = object.status() else {
                continue;
            };
            let line = describe(status);
            if line != last {
                println!("dev: {what}: {line}");
                last = line;
            }
            if status.phase == Some(crate::status::Phase::Ready) {
                return;
            }
        }
    };
    if tokio::time::timeout(timeout, follow).await.is_err() {
        println!(
            "dev: {what} not Ready after {timeout:?}; it keeps reconciling, look at its status with kubectl"
        );
    }
}

fn describe<X>(status: &ServiceStatus<X>) -> String {
    let phase = status.phase.map(|p| p.as_str()).unwrap_or("-");
    match status.condition("Ready") {
        Some(c) => format!("{phase} (Ready={} {}: {})", c.status, c.reason, c.message),
        None => phase.to_owned(),
    }
}

/// Creates the sample object `DEV_NAME` with `spec` in `namespace`; one left from an earlier
/// run (409) is fine.
async fn create_sample(
    client: kube::Client,
    resource: &ApiResource,
    namespace: &str,
    spec: &serde_json::Value,
) -> Result<(), kube::Error> {
    let objects: Api<DynamicObject> = Api::namespaced_with(client, namespace, resource);
    let mut object = DynamicObject::new(DEV_NAME, resource).within(namespace);
    object.data = json!({ "spec": spec });
    match objects.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
