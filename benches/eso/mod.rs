//! Managed resources at scale: the External Secrets Operator example (one resource set per
//! tenant) against the same objects written by hand with plain kube calls, on the same embedded
//! platform in the same run, each serving `--eso` tenants of its own: create → Ready throughput,
//! and the API requests a no-op reconcile makes per tenant (writes must stay 0 for the set).
//!
//! Both run under this runtime (access, status, finalizer are the same); only the reconcile
//! differs. The hand-written one server-side applies its eight objects on every reconcile and
//! reads the HelmRelease's Ready condition itself; it neither prunes nor orders its delete.

use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use serde_json::json;
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::Api;
use service_provider::kube::api::{
    ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams,
};
use service_provider::prelude::*;
use service_provider_runtime::cli::run::{RunOptions, Runtime};

use super::support::ReadyTimes;
use super::{CONCURRENCY, NAMESPACE, TIMEOUT, diff, print_calls, reads_and_writes, settled};

#[path = "../../examples/external-secrets/main.rs"]
#[allow(dead_code, unreachable_pub)] // a binary's `pub` items, here in a module
pub(crate) mod example;

const PROVIDER: &str = "eso-bench";
const CHART: &str = "oci://registry.test/charts/external-secrets";
const PULL_SECRETS: [&str; 2] = ["regcred", "chart-creds"];

/// The example's objects, written by hand: namespace and pull-secret copy in the tenant's
/// cluster; namespace, kubeconfig Secret, chart pull-secret copy, OCIRepository and HelmRelease
/// on the workload cluster.
pub(crate) mod by_hand {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use serde::Serialize;
    use serde_json::json;
    use service_provider::flux::{HelmRelease, OCIRepository};
    use service_provider::kube::api::{
        ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams,
    };
    use service_provider::kube::{Api, Client, Resource};
    use service_provider::prelude::*;

    pub(crate) use super::example::EsoConfig;

    /// External Secrets Operator, written by hand.
    #[service_provider(
        group = "external-secrets.services.openmcp.cloud",
        version = "v1alpha1",
        kind = "ExternalSecretsOperator",
        config = EsoConfig,
        workload_cluster = required,
    )]
    pub(crate) struct ExternalSecretsOperatorSpec {
        /// The external-secrets Helm chart version.
        pub version: String,
    }

    const ESO_NAMESPACE: &str = "external-secrets";
    const RELEASE: &str = "external-secrets";
    const KUBECONFIG: &str = "external-secrets-kubeconfig";

    fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            ..Default::default()
        }
    }

    /// Server-side applies `object` with plain kube calls.
    async fn apply<K>(client: &Client, manager: &str, object: &K) -> Result<(), Error>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        let resource = ApiResource::erase::<K>(&());
        let meta = object.meta();
        let name = meta.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &meta.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let mut value = serde_json::to_value(object)?;
        value["apiVersion"] = json!(K::api_version(&()));
        value["kind"] = json!(K::kind(&()));
        api.patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&value),
        )
        .await?;
        Ok(())
    }

    /// Already gone is as good as deleted.
    fn gone<T>(r: Result<T, service_provider::kube::Error>) -> Result<(), Error> {
        match r {
            Err(service_provider::kube::Error::Api(s)) if s.code == 404 => Ok(()),
            r => r.map(|_| ()).map_err(Error::from),
        }
    }

    fn copy(source: &Secret, name: &str, namespace: &str) -> Secret {
        Secret {
            metadata: meta(name, Some(namespace)),
            type_: source.type_.clone(),
            data: source.data.clone(),
            ..Default::default()
        }
    }

    impl ExternalSecretsOperator {
        fn flux_namespace(cx: &Context<Self>) -> String {
            format!("eso-{}", cx.identity().stable_id())
        }
    }

    impl Reconcile for ExternalSecretsOperator {
        async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
            let manager = cx.field_manager().to_owned();
            let (mcp, workload) = (cx.mcp().client(), cx.workload().client());
            let sources: Api<Secret> =
                Api::namespaced(cx.platform().clone(), cx.provider_namespace());
            let config = cx.config();

            // The tenant's cluster: ESO's namespace and the image pull-secret copies.
            apply(
                mcp,
                &manager,
                &Namespace {
                    metadata: meta(ESO_NAMESPACE, None),
                    ..Default::default()
                },
            )
            .await?;
            let mut pulls = Vec::new();
            for source in &cx.common().image_pull_secrets {
                let secret = sources.get(&source.name).await?;
                let name = format!("{manager}-{}", source.name);
                apply(mcp, &manager, &copy(&secret, &name, ESO_NAMESPACE)).await?;
                pulls.push(json!({ "name": name }));
            }

            // The workload cluster: the tenant's namespace, its kubeconfig, the chart pull
            // secret, the source and the release.
            let ns = Self::flux_namespace(cx);
            apply(
                workload,
                &manager,
                &Namespace {
                    metadata: meta(&ns, None),
                    ..Default::default()
                },
            )
            .await?;
            apply(
                workload,
                &manager,
                &Secret {
                    metadata: meta(KUBECONFIG, Some(&ns)),
                    data: Some(BTreeMap::from([(
                        "kubeconfig".to_owned(),
                        ByteString(cx.mcp().kubeconfig().to_vec()),
                    )])),
                    ..Default::default()
                },
            )
            .await?;
            let chart_secret = match &config.chart_pull_secret {
                Some(source) => {
                    let secret = sources.get(source).await?;
                    let name = format!("{manager}-{source}");
                    apply(workload, &manager, &copy(&secret, &name, &ns)).await?;
                    Some(name)
                }
                None => None,
            };
            let interval = "1h";
            let repository: OCIRepository = serde_json::from_value(json!({
                "metadata": { "name": RELEASE, "namespace": ns },
                "spec": {
                    "url": config.chart_url.clone().unwrap_or_default(),
                    "ref": { "tag": self.spec.version },
                    "layerSelector": {
                        "mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                        "operation": "extract",
                    },
                    "secretRef": chart_secret.map(|name| json!({ "name": name })),
                    "interval": interval,
                },
            }))?;
            apply(workload, &manager, &repository).await?;
            let mut values = config.helm_values.clone().unwrap_or_else(|| json!({}));
            if !pulls.is_empty() {
                values["global"]["imagePullSecrets"] = json!(pulls);
            }
            let release: HelmRelease = serde_json::from_value(json!({
                "metadata": { "name": RELEASE, "namespace": ns },
                "spec": {
                    "chartRef": { "kind": "OCIRepository", "name": RELEASE, "namespace": ns },
                    "interval": interval,
                    "kubeConfig": { "secretRef": { "name": KUBECONFIG, "key": "kubeconfig" } },
                    "targetNamespace": ESO_NAMESPACE,
                    "storageNamespace": ESO_NAMESPACE,
                    "install": { "createNamespace": true, "remediation": { "retries": 3 } },
                    "upgrade": { "remediation": { "retries": 3 } },
                    "values": values,
                },
            }))?;
            apply(workload, &manager, &release).await?;

            // Ready once Flux says so.
            let live = Api::<HelmRelease>::namespaced(workload.clone(), &ns)
                .get(RELEASE)
                .await?;
            let ready = live.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Ready"
                        && c.status == "True"
                        && c.observed_generation == live.metadata.generation
                })
            });
            Ok(if ready {
                Outcome::ready()
            } else {
                Outcome::progressing("WaitingForHelmRelease", "the HelmRelease is not Ready yet")
                    .requeue_after(Duration::from_secs(2))
            })
        }

        async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
            let manager = cx.field_manager().to_owned();
            let (mcp, workload) = (cx.mcp().client(), cx.workload().client());
            let ns = Self::flux_namespace(cx);
            let dp = DeleteParams::default();
            gone(
                Api::<HelmRelease>::namespaced(workload.clone(), &ns)
                    .delete(RELEASE, &dp)
                    .await,
            )?;
            gone(
                Api::<OCIRepository>::namespaced(workload.clone(), &ns)
                    .delete(RELEASE, &dp)
                    .await,
            )?;
            gone(
                Api::<Namespace>::all(workload.clone())
                    .delete(&ns, &dp)
                    .await,
            )?;
            let copies: Api<Secret> = Api::namespaced(mcp.clone(), ESO_NAMESPACE);
            for source in &cx.common().image_pull_secrets {
                gone(
                    copies
                        .delete(&format!("{manager}-{}", source.name), &dp)
                        .await,
                )?;
            }
            Ok(Deletion::done())
        }
    }
}

/// What one implementation achieved.
#[derive(Default, Debug)]
pub(crate) struct Results {
    /// Tenants to Ready per second, all created at once.
    pub throughput: f64,
    /// Writes per tenant, create to Ready, across every cluster (the platform's own included).
    pub writes_per_tenant: f64,
    /// Reads per tenant of a no-op reconcile.
    pub noop_reads: f64,
    /// Writes per tenant of a no-op reconcile.
    pub noop_writes: f64,
}

fn config() -> serde_json::Value {
    json!({
        "chartURL": CHART,
        "chartPullSecret": "chart-creds",
        "imagePullSecrets": [{ "name": "regcred" }],
        "helmValues": { "installCRDs": true },
        "pollInterval": "1h",
    })
}

fn tenants(label: &str, n: usize) -> Vec<ControlPlaneRef> {
    (0..n)
        .map(|i| ControlPlaneRef::new(NAMESPACE, format!("{label}-eso-{i}")))
        .collect()
}

async fn create(env: &TestEnv, name: &str) {
    let resource = ApiResource::erase::<example::ExternalSecretsOperator>(&());
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.onboarding().client(), NAMESPACE, &resource);
    let mut object = DynamicObject::new(name, &resource).within(NAMESPACE);
    object.data = json!({ "spec": { "version": "0.10.0" } });
    api.create(&PostParams::default(), &object)
        .await
        .expect("create");
}

/// Every object of kind ExternalSecretsOperator not in `names` is left alone by the next
/// implementation (`openmcp.cloud/operation: ignore`, a reconcile without API calls).
async fn ignore(env: &TestEnv, names: &[String]) {
    let api: Api<example::ExternalSecretsOperator> =
        Api::namespaced(env.onboarding().client(), NAMESPACE);
    let patch = json!({ "metadata": { "annotations": { "openmcp.cloud/operation": "ignore" } } });
    futures::StreamExt::for_each_concurrent(futures::stream::iter(names), 32, |name| {
        let (api, patch) = (api.clone(), &patch);
        async move {
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .expect("ignore annotation");
        }
    })
    .await;
}

/// Runs `P` over `names` (besides `others` objects it leaves alone), then measures a no-op.
async fn measure<P: Reconcile>(
    env: &TestEnv,
    ready: &ReadyTimes,
    label: &str,
    names: &[String],
    others: usize,
) -> Results {
    let provider = env.provider().expect("a provider");
    let platform = service_provider_runtime::access::clients::ClientFactory::new()
        .client(provider.platform_kubeconfig().as_bytes())
        .await
        .expect("the platform client");
    let mut options = RunOptions::new(PROVIDER, env.pod_namespace());
    options.concurrency = CONCURRENCY;
    let mut runtime = Runtime::<P>::start(platform, options).await.expect("start");
    runtime.start_standard().await.expect("standard mode");
    let reconciles = |rt: &Runtime<P>| -> u64 {
        use service_provider_runtime::ops::metrics::ReconcileResult as R;
        [R::ready, R::waiting, R::progressing, R::error, R::skipped]
            .into_iter()
            .map(|r| {
                rt.metrics()
                    .reconcile_count(service_provider::Mode::Standard, r)
            })
            .sum()
    };
    let mut results = Results::default();
    let tenants = names.len();

    let before = super::snapshot(env);
    let started = Instant::now();
    futures::StreamExt::for_each_concurrent(futures::stream::iter(names), 32, |name| {
        create(env, name)
    })
    .await;
    let done = ready.wait(names, 3 * TIMEOUT).await;
    results.throughput = tenants as f64 / done.duration_since(started).as_secs_f64();
    let calls = diff(&before, &settled(env).await);
    print_calls(&format!("eso {label}: create to Ready"), &calls, tenants);
    results.writes_per_tenant = reads_and_writes(&calls).1 as f64 / tenants as f64;

    // No-op: every object reconciled once more; objects of the other implementation are
    // ignored and make no call.
    let before_calls = super::snapshot(env);
    let before = reconciles(&runtime);
    runtime.platform().triggers().trigger_all();
    let deadline = Instant::now() + TIMEOUT;
    while reconciles(&runtime) < before + (tenants + others) as u64 {
        assert!(
            Instant::now() < deadline,
            "the no-op reconciles did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let calls = diff(&before_calls, &settled(env).await);
    print_calls(
        &format!(
            "eso {label}: no-op reconcile ({} reconciles)",
            reconciles(&runtime) - before
        ),
        &calls,
        tenants,
    );
    let (reads, writes) = reads_and_writes(&calls);
    results.noop_reads = reads as f64 / tenants as f64;
    results.noop_writes = writes as f64 / tenants as f64;
    runtime.shutdown();
    runtime.wait().await;
    results
}

/// `tenants` tenants with the example, then as many with the hand-written twin.
pub(crate) async fn run(tenants: usize) -> (Results, Results) {
    let ours = self::tenants("ours", tenants);
    let base = self::tenants("base", tenants);
    let env = TestEnv::builder()
        .provider::<example::ExternalSecretsOperator>()
        .provider_name(PROVIDER)
        .provider_config(config())
        .timeout(TIMEOUT)
        .start()
        .await
        .expect("the simulated platform starts");
    let secrets: Api<Secret> = Api::namespaced(env.platform().client(), env.pod_namespace());
    for name in PULL_SECRETS {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(
                [(
                    ".dockerconfigjson".to_owned(),
                    ByteString(b"{\"auths\":{}}".to_vec()),
                )]
                .into(),
            ),
            ..Default::default()
        };
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("a pull secret");
    }
    let all: Vec<ControlPlaneRef> = ours.iter().chain(&base).cloned().collect();
    let started = Instant::now();
    env.create_control_planes(&all, 64)
        .await
        .expect("ControlPlanes");
    env.wait_control_planes_ready(&all, TIMEOUT)
        .await
        .expect("ControlPlanes Ready");
    eprintln!(
        "eso: {} ControlPlanes ready in {:.1?}",
        all.len(),
        started.elapsed()
    );
    let ready = ReadyTimes::new(|m| m.name.clone());
    let _watch = ready.watch::<example::ExternalSecretsOperator>(env.onboarding().client());

    let names = |cps: &[ControlPlaneRef]| cps.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    let ours_results =
        measure::<example::ExternalSecretsOperator>(&env, &ready, "resource set", &names(&ours), 0)
            .await;
    ignore(&env, &names(&ours)).await;
    let base_results = measure::<by_hand::ExternalSecretsOperator>(
        &env,
        &ready,
        "by hand",
        &names(&base),
        tenants,
    )
    .await;
    env.stop();
    (ours_results, base_results)
}
