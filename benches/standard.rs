//! Standard mode: this runtime against a hand-written kube-runtime `Controller` doing the same
//! work (finalizer, MCP AccessRequest, wait for the grant, tenant client from the kubeconfig
//! Secret, a trivial reconcile, status) on the same embedded server in the same run.
//!
//! ```sh
//! cargo bench --bench standard                       # 1,000 / 200 / 10,000 objects
//! cargo bench --bench standard -- --objects 300 --latency 50 --memory 1000
//! cargo bench --bench standard -- --baseline-first   # the hand-written controller runs first
//! cargo bench --bench standard -- --objects 0 --latency 0 --memory 0 --eso 1000  # managed only
//! ```
//!
//! Measured, for both implementations:
//! - **throughput**: `--objects` objects created at once (32 creates in flight) → Ready/s;
//! - **writes per object** from create to Ready, besides the author's own (the trivial reconcile
//!   writes nothing): what the API servers counted for the provider's kinds;
//! - **latency**: `--latency` objects created one after the other, create → Ready, p50/p99;
//! - **no-op reconcile**: every object reconciled once more with nothing to do; API calls per
//!   reconcile (reads and writes);
//! - **memory**: the provider as its own process serving `--memory` objects, resident set size
//!   once all are Ready (`VmRSS`) and its peak (`VmHWM`), and the anonymous part of the former
//!   (`RssAnon`: heap and stacks). The rest is mapped code: the child runs this benchmark's binary,
//!   embedded API servers included, which a provider's own binary does not carry; the kernel maps
//!   neighbouring pages of it that the parent already loaded (fault-around), so that part says
//!   little about a provider.
//! - **managed resources** (`--eso`, [`eso`]): the External Secrets Operator example against the
//!   same objects written by hand with plain kube calls, `--eso` tenants each: tenants to Ready
//!   per second, writes per tenant from create to Ready, and reads and writes per tenant of a
//!   no-op reconcile.
//!
//! Both use 16 concurrent reconciles.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use service_provider::dev::{ControlPlaneRef, TestEnv};
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use service_provider_apiserver::Counters;
use service_provider_runtime::cli::run::{RunOptions, Runtime};
// Each benchmark uses part of it.
#[path = "eso/mod.rs"]
mod eso;
#[allow(dead_code)]
#[path = "support/mod.rs"]
mod support;
use support::{Bench, Memory, ReadyTimes, arg, memory_of};

const PROVIDER: &str = "bench";
const BASELINE_PROVIDER: &str = "bench-baseline";
const NAMESPACE: &str = "project-bench--ws-a";
const CONCURRENCY: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(300);

/// The hand-written controller: what an author writes with kube-runtime alone.
mod baseline {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use futures::Stream;
    use k8s_openapi::api::core::v1::Secret;
    use serde_json::json;
    use service_provider::kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
    use service_provider::kube::config::{KubeConfigOptions, Kubeconfig};
    use service_provider::kube::runtime::controller::{Action, Config, Controller};
    use service_provider::kube::runtime::finalizer::{Event, finalizer};
    use service_provider::kube::runtime::reflector::ObjectRef;
    use service_provider::kube::runtime::watcher;
    use service_provider::kube::{Api, Client, ResourceExt};
    use service_provider::openmcp::naming::{stable_mcp_namespace, stable_request_name};
    use service_provider::openmcp::{
        AccessRequest, AccessRequestSpec, ObjectReference, RoleRef, TokenConfig,
    };
    use service_provider_runtime::openmcp::naming::request_labels;

    use super::Bench;

    pub(crate) const FINALIZER: &str = "bench.services.open-control-plane.io/baseline";

    pub(crate) struct Ctx {
        pub onboarding: Client,
        pub platform: Client,
        pub reconciles: AtomicU64,
    }

    #[derive(Debug, thiserror::Error)]
    pub(crate) enum Error {
        #[error(transparent)]
        Kube(#[from] service_provider::kube::Error),
        #[error(transparent)]
        Kubeconfig(#[from] service_provider::kube::config::KubeconfigError),
        #[error(transparent)]
        Naming(#[from] service_provider::openmcp::naming::NamingError),
        #[error("{0}")]
        Other(String),
    }

    pub(crate) fn run(
        ctx: Arc<Ctx>,
        reconcile_all: impl Stream<Item = ()> + Send + Sync + 'static,
    ) -> impl Stream<Item = ()> {
        use futures::StreamExt;
        let objects = Api::<Bench>::all(ctx.onboarding.clone());
        let requests = Api::<AccessRequest>::all(ctx.platform.clone());
        Controller::new(objects, watcher::Config::default().labels("bench=base"))
            .watches(
                requests,
                watcher::Config::default().labels(&format!(
                    "openmcp.cloud/managed-by={}",
                    super::BASELINE_PROVIDER
                )),
                |ar: AccessRequest| {
                    let labels = ar.labels();
                    let owner = labels
                        .get("openmcp.cloud/onboarding-name")
                        .zip(labels.get("openmcp.cloud/onboarding-namespace"))
                        .map(|(name, ns)| ObjectRef::new(name).within(ns));
                    owner.into_iter()
                },
            )
            .with_config(Config::default().concurrency(super::CONCURRENCY as u16))
            .reconcile_all_on(reconcile_all)
            .run(
                reconcile,
                |_, _, _| Action::requeue(Duration::from_millis(100)),
                ctx,
            )
            .map(|result| {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "baseline reconcile failed");
                }
            })
    }

    async fn reconcile(object: Arc<Bench>, ctx: Arc<Ctx>) -> Result<Action, Error> {
        ctx.reconciles.fetch_add(1, Ordering::Relaxed);
        let api = Api::<Bench>::namespaced(
            ctx.onboarding.clone(),
            &object.namespace().unwrap_or_default(),
        );
        finalizer(&api, FINALIZER, object, |event| async {
            match event {
                Event::Apply(object) => apply(&object, &ctx).await,
                Event::Cleanup(_) => Ok(Action::await_change()),
            }
        })
        .await
        .map_err(|e| Error::Other(e.to_string()))
    }

    async fn apply(object: &Bench, ctx: &Ctx) -> Result<Action, Error> {
        let (name, namespace) = (object.name_any(), object.namespace().unwrap_or_default());
        let platform_ns = stable_mcp_namespace(&name, &namespace)?;
        let request = stable_request_name(super::BASELINE_PROVIDER, &name, "mcp")?;
        let requests = Api::<AccessRequest>::namespaced(ctx.platform.clone(), &platform_ns);
        let Some(ar) = requests.get_opt(&request).await? else {
            let ar = AccessRequest {
                metadata: ObjectMeta {
                    name: Some(request.clone()),
                    labels: Some(request_labels(
                        super::BASELINE_PROVIDER,
                        &namespace,
                        &name,
                        "mcp",
                    )),
                    ..Default::default()
                },
                spec: AccessRequestSpec {
                    request_ref: Some(ObjectReference {
                        name: name.clone(),
                        namespace: platform_ns.clone(),
                    }),
                    token: Some(TokenConfig {
                        permissions: vec![],
                        role_refs: vec![RoleRef::cluster_role("cluster-admin")],
                    }),
                    ..Default::default()
                },
                status: None,
            };
            requests.create(&PostParams::default(), &ar).await?;
            // The AccessRequest watch brings the object back when it is granted.
            return Ok(Action::await_change());
        };
        if !ar.is_ready() {
            return Ok(Action::await_change());
        }
        let secret_name = ar
            .status
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|s| s.name.clone())
            .ok_or_else(|| Error::Other("granted without a Secret".into()))?;
        let secret = Api::<Secret>::namespaced(ctx.platform.clone(), &platform_ns)
            .get(&secret_name)
            .await?;
        let kubeconfig = secret
            .data
            .and_then(|mut d| d.remove("kubeconfig"))
            .ok_or_else(|| Error::Other("no kubeconfig".into()))?;
        let text = String::from_utf8(kubeconfig.0).map_err(|e| Error::Other(e.to_string()))?;
        let config = service_provider::kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&text)?,
            &KubeConfigOptions::default(),
        )
        .await?;
        // The tenant client the provider's trivial reconcile would use.
        let _tenant = Client::try_from(config)?;

        let generation = object.metadata.generation;
        let ready = object.status.as_ref().is_some_and(|s| {
            s.observed_generation == generation && s.phase == Some(service_provider::Phase::Ready)
        });
        if !ready {
            let status = json!({ "status": {
                "observedGeneration": generation,
                "phase": "Ready",
                "conditions": [{
                    "type": "Ready", "status": "True", "reason": "ReconcileSuccess",
                    "message": "Domain Service is ready", "observedGeneration": generation,
                    "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
                }],
            }});
            let api = Api::<Bench>::namespaced(ctx.onboarding.clone(), &namespace);
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
        }
        Ok(Action::requeue(Duration::from_secs(3600)))
    }
}

async fn create(env: &TestEnv, name: &str, label: &str) {
    let resource = ApiResource::erase::<Bench>(&());
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.onboarding().client(), NAMESPACE, &resource);
    let mut object = DynamicObject::new(name, &resource).within(NAMESPACE);
    object.metadata.labels = Some([("bench".to_owned(), label.to_owned())].into());
    object.data = json!({ "spec": { "value": name } });
    api.create(&PostParams::default(), &object)
        .await
        .expect("create");
}

/// Which cluster a counted request went to: `platform`, `onboarding` or `tenant` (an MCP).
fn cluster_class(env: &TestEnv, label: &str) -> &'static str {
    if label == env.platform().name() {
        "platform"
    } else if label == env.onboarding().name() {
        "onboarding"
    } else {
        "tenant"
    }
}

/// Requests the servers counted, by (verb, cluster class/resource), over the platform,
/// onboarding and tenant clusters.
fn snapshot(env: &TestEnv) -> HashMap<(String, String), u64> {
    let mut out = HashMap::new();
    // Logical clusters of one host share its counters: each set is read once.
    let mut seen: Vec<*const Counters> = Vec::new();
    let handles = [env.platform().clone(), env.onboarding().clone()]
        .into_iter()
        .chain(env.clusters().into_iter().map(|c| c.handle));
    for handle in handles {
        let counters = std::ptr::from_ref(handle.counters());
        if seen.contains(&counters) {
            continue;
        }
        seen.push(counters);
        for (key, n) in handle.counters().snapshot() {
            let resource = format!("{}/{}", cluster_class(env, &key.cluster), key.resource);
            *out.entry((key.verb, resource)).or_insert(0) += n;
        }
    }
    out
}

/// The counters once they stopped moving (nothing counted for 500 ms, at most 10 s): writes that
/// follow a Ready (late Events, echoes of the runtime's own writes) belong to the measurement too.
async fn settled(env: &TestEnv) -> HashMap<(String, String), u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = snapshot(env);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = snapshot(env);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// What the servers counted, per object, by verb and resource (watches and the benchmark's own
/// creates included), for the record.
fn print_calls(what: &str, calls: &HashMap<(String, String), u64>, per: usize) {
    let mut rows: Vec<_> = calls.iter().collect();
    rows.sort();
    let rows: Vec<String> = rows
        .into_iter()
        .map(|((verb, resource), n)| format!("{verb} {resource}: {:.2}", *n as f64 / per as f64))
        .collect();
    eprintln!("{what}, requests per object: {}", rows.join(", "));
}

fn diff(
    before: &HashMap<(String, String), u64>,
    after: &HashMap<(String, String), u64>,
) -> HashMap<(String, String), u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// Writes a provider makes from create to Ready: on its Service API objects on the onboarding
/// cluster (finalizer, status, Events), and the access objects and namespaces it creates on the
/// platform cluster. Not counted: what the simulated platform writes to grant access (the
/// AccessRequest's finalizer and status, the ServiceAccount, its RBAC, token and namespace in the
/// MCP, the kubeconfig Secret); the counters cannot tell users apart, so this goes by cluster,
/// verb and resource.
fn provider_writes(calls: &HashMap<(String, String), u64>) -> u64 {
    calls
        .iter()
        .filter(|((verb, resource), _)| match verb.as_str() {
            "patch" | "update" => {
                ["onboarding/benches", "onboarding/benches/status"].contains(&resource.as_str())
            }
            "create" => [
                "onboarding/events",
                "platform/events",
                "platform/accessrequests",
                "platform/clusterrequests",
                "platform/namespaces",
            ]
            .contains(&resource.as_str()),
            _ => false,
        })
        .map(|(_, n)| n)
        .sum()
}

fn reads_and_writes(calls: &HashMap<(String, String), u64>) -> (u64, u64) {
    let reads = calls
        .iter()
        .filter(|((v, _), _)| v == "get" || v == "list")
        .map(|(_, n)| n)
        .sum();
    let writes = calls
        .iter()
        .filter(|((v, _), _)| ["create", "update", "patch", "delete"].contains(&v.as_str()))
        .map(|(_, n)| n)
        .sum();
    (reads, writes)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[derive(Default, Debug)]
struct Results {
    throughput: f64,
    writes_per_object: f64,
    p50: Duration,
    p99: Duration,
    noop_reads: f64,
    noop_writes: f64,
    memory: Option<Memory>,
}

/// What differs between the two implementations: how to start them and how to reconcile all.
enum Implementation {
    Runtime(Box<Runtime<Bench>>),
    Baseline {
        ctx: Arc<baseline::Ctx>,
        trigger: tokio::sync::mpsc::UnboundedSender<()>,
        task: tokio::task::JoinHandle<()>,
    },
}

impl Implementation {
    fn reconciles(&self) -> u64 {
        match self {
            Implementation::Runtime(rt) => {
                use service_provider_runtime::ops::metrics::ReconcileResult as R;
                [R::ready, R::waiting, R::progressing, R::error, R::skipped]
                    .into_iter()
                    .map(|r| {
                        rt.metrics()
                            .reconcile_count(service_provider::Mode::Standard, r)
                    })
                    .sum()
            }
            Implementation::Baseline { ctx, .. } => ctx.reconciles.load(Ordering::Relaxed),
        }
    }

    fn reconcile_all(&self) {
        match self {
            Implementation::Runtime(rt) => {
                rt.platform().triggers().trigger_all();
            }
            Implementation::Baseline { trigger, .. } => {
                let _ = trigger.send(());
            }
        }
    }

    async fn stop(self) {
        match self {
            Implementation::Runtime(rt) => {
                rt.shutdown();
                rt.wait().await;
            }
            Implementation::Baseline { task, .. } => task.abort(),
        }
    }
}

async fn start_runtime(env: &TestEnv) -> Implementation {
    let provider = env.provider().unwrap();
    let platform = service_provider_runtime::access::clients::ClientFactory::new()
        .client(provider.platform_kubeconfig().as_bytes())
        .await
        .unwrap();
    let mut options = RunOptions::new(PROVIDER, env.pod_namespace());
    options.concurrency = CONCURRENCY;
    let mut runtime = Runtime::<Bench>::start(platform, options).await.unwrap();
    runtime.start_standard().await.unwrap();
    Implementation::Runtime(Box::new(runtime))
}

fn start_baseline(env: &TestEnv) -> Implementation {
    let ctx = Arc::new(baseline::Ctx {
        onboarding: env.onboarding().client(),
        platform: env.platform().client(),
        reconciles: AtomicU64::new(0),
    });
    let (trigger, rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = tokio_stream_from(rx);
    let task = tokio::spawn(baseline::run(ctx.clone(), stream).for_each(|_| async {}));
    Implementation::Baseline { ctx, trigger, task }
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<()>,
) -> impl futures::Stream<Item = ()> + Send + Sync {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn measure(
    env: &TestEnv,
    ready: &ReadyTimes,
    implementation: &Implementation,
    label: &str,
    latency: usize,
    objects: usize,
) -> Results {
    let mut results = Results::default();

    // Latency: one object at a time.
    let mut latencies = Vec::with_capacity(latency);
    for i in 0..latency {
        let name = format!("{label}-lat-{i}");
        let started = Instant::now();
        create(env, &name, label).await;
        let done = ready.wait(std::slice::from_ref(&name), TIMEOUT).await;
        latencies.push(done.saturating_duration_since(started));
    }
    latencies.sort();
    results.p50 = percentile(&latencies, 50.0);
    results.p99 = percentile(&latencies, 99.0);

    // Throughput and writes: many objects at once.
    let names: Vec<String> = (0..objects).map(|i| format!("{label}-burst-{i}")).collect();
    let before = snapshot(env);
    let started = Instant::now();
    futures::stream::iter(names.iter())
        .for_each_concurrent(32, |name| create(env, name, label))
        .await;
    let done = ready.wait(&names, TIMEOUT).await;
    results.throughput = objects as f64 / done.duration_since(started).as_secs_f64();
    let calls = diff(&before, &settled(env).await);
    print_calls(&format!("{label}: create to Ready"), &calls, objects);
    results.writes_per_object = provider_writes(&calls) as f64 / objects as f64;

    // No-op: reconcile every object once more.
    let total = (latency + objects) as u64;
    let before_calls = snapshot(env);
    let before = implementation.reconciles();
    implementation.reconcile_all();
    let deadline = Instant::now() + TIMEOUT;
    while implementation.reconciles() < before + total {
        assert!(
            Instant::now() < deadline,
            "the no-op reconciles did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let calls = diff(&before_calls, &settled(env).await);
    let reconciled = implementation.reconciles() - before;
    print_calls(
        &format!("{label}: no-op reconcile ({reconciled} reconciles)"),
        &calls,
        reconciled as usize,
    );
    let (reads, writes) = reads_and_writes(&calls);
    results.noop_reads = reads as f64 / reconciled as f64;
    results.noop_writes = writes as f64 / reconciled as f64;
    results
}

fn control_planes(label: &str, latency: usize, objects: usize) -> Vec<ControlPlaneRef> {
    (0..latency)
        .map(|i| format!("{label}-lat-{i}"))
        .chain((0..objects).map(|i| format!("{label}-burst-{i}")))
        .map(|n| ControlPlaneRef::new(NAMESPACE, n))
        .collect()
}

async fn env_with(cps: &[ControlPlaneRef]) -> TestEnv {
    let env = TestEnv::builder()
        .provider::<Bench>()
        .provider_name(PROVIDER)
        .provider_config(json!({ "pollInterval": "1h" }))
        .timeout(TIMEOUT)
        .start()
        .await
        .expect("the simulated platform starts");
    env.create_control_planes(cps, 64)
        .await
        .expect("ControlPlanes");
    env.wait_control_planes_ready(cps, TIMEOUT)
        .await
        .expect("ControlPlanes Ready");
    env
}

/// The provider as its own process, to measure its memory alone.
async fn memory(objects: usize) -> (Option<Memory>, Option<Memory>) {
    let cps: Vec<ControlPlaneRef> = (0..objects)
        .map(|i| ControlPlaneRef::new(NAMESPACE, format!("mem-{i}")))
        .collect();
    let started = Instant::now();
    let env = env_with(&cps).await;
    eprintln!(
        "memory: {objects} ControlPlanes ready in {:.1?}",
        started.elapsed()
    );
    let dir = std::env::temp_dir().join(format!("sp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let platform = dir.join("provider.kubeconfig");
    std::fs::write(&platform, env.provider().unwrap().platform_kubeconfig()).unwrap();
    let admin_platform = dir.join("platform.kubeconfig");
    std::fs::write(&admin_platform, env.platform().kubeconfig()).unwrap();
    let onboarding = dir.join("onboarding.kubeconfig");
    std::fs::write(&onboarding, env.onboarding().kubeconfig()).unwrap();
    let ready = ReadyTimes::new(|m| m.name.clone());
    let _watch = ready.watch::<Bench>(env.onboarding().client());
    let names: Vec<String> = cps.iter().map(|c| c.name.clone()).collect();

    // `SP_BENCH_WRAP="heaptrack -o /tmp/hp-{role}"` (or `perf record -g -o /tmp/{role}.data`)
    // runs each child under a profiler; the memory figures then belong to the wrapper.
    let wrap: Vec<String> = std::env::var("SP_BENCH_WRAP")
        .map(|w| w.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let spawn = |role: &str| {
        let exe = std::env::current_exe().unwrap();
        let mut command = match wrap.split_first() {
            Some((program, args)) => {
                let mut command = std::process::Command::new(program);
                command
                    .args(args.iter().map(|a| a.replace("{role}", role)))
                    .arg(&exe);
                command
            }
            None => std::process::Command::new(&exe),
        };
        command
            .env("SP_BENCH_CHILD", role)
            .env(
                "SP_BENCH_PLATFORM",
                if role == "ours" {
                    &platform
                } else {
                    &admin_platform
                },
            )
            .env("SP_BENCH_ONBOARDING", &onboarding)
            .env("POD_NAMESPACE", env.pod_namespace())
            .stdout(std::process::Stdio::null())
            // Its own process group, so that a profiler wrapper goes with the child.
            .process_group(0)
            .spawn()
            .expect("child")
    };
    let stop = |mut child: std::process::Child| {
        let group = format!("-{}", child.id());
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &group])
            .status();
        let _ = child.wait();
    };

    let before = snapshot(&env);
    let ours = spawn("ours");
    let started = Instant::now();
    futures::stream::iter(names.iter())
        .for_each_concurrent(64, |n| create(&env, n, "ours"))
        .await;
    ready.wait(&names, TIMEOUT).await;
    eprintln!(
        "memory: {objects} objects Ready with this runtime in {:.1?}",
        started.elapsed()
    );
    let ours_memory = memory_of(ours.id());
    stop(ours);
    print_calls("memory: ours", &diff(&before, &snapshot(&env)), objects);

    // The same objects, handed to the hand-written controller.
    let api: Api<Bench> = Api::namespaced(env.onboarding().client(), NAMESPACE);
    ready.forget();
    let before = snapshot(&env);
    let baseline = spawn("baseline");
    let started = Instant::now();
    futures::stream::iter(names.iter())
        .for_each_concurrent(64, |n| {
            let api = api.clone();
            async move {
                let patch = json!({ "metadata": { "labels": { "bench": "base" } }, "spec": { "value": "baseline" } });
                api.patch(n, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("relabel");
            }
        })
        .await;
    ready.wait(&names, TIMEOUT).await;
    eprintln!(
        "memory: {objects} objects Ready with the hand-written controller in {:.1?}",
        started.elapsed()
    );
    let baseline_memory = memory_of(baseline.id());
    stop(baseline);
    print_calls("memory: base", &diff(&before, &snapshot(&env)), objects);
    env.stop();
    (ours_memory, baseline_memory)
}

async fn child(role: String) {
    let read = |var: &str| std::fs::read(std::env::var(var).expect(var)).expect(var);
    let factory = service_provider_runtime::access::clients::ClientFactory::new();
    let platform = factory
        .client(&read("SP_BENCH_PLATFORM"))
        .await
        .expect("platform");
    if role == "ours" {
        let mut options = RunOptions::new(PROVIDER, std::env::var("POD_NAMESPACE").unwrap());
        options.concurrency = CONCURRENCY;
        let mut runtime = Runtime::<Bench>::start(platform, options).await.unwrap();
        runtime.start_standard().await.unwrap();
        runtime.run_until(futures::future::pending()).await;
    } else {
        let onboarding = factory
            .client(&read("SP_BENCH_ONBOARDING"))
            .await
            .expect("onboarding");
        let ctx = Arc::new(baseline::Ctx {
            onboarding,
            platform,
            reconciles: AtomicU64::new(0),
        });
        baseline::run(ctx, futures::stream::pending())
            .for_each(|_| async {})
            .await;
    }
}

fn number(args: &[String], name: &str, default: usize) -> usize {
    arg(args, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    support::logs();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Ok(role) = std::env::var("SP_BENCH_CHILD") {
        runtime.block_on(child(role));
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; anything else is ours.
    let objects = number(&args, "--objects", 1000);
    let latency = number(&args, "--latency", 200);
    let memory_objects = number(&args, "--memory", 10_000);
    let eso_tenants = number(&args, "--eso", 1000);
    let baseline_first = args.iter().any(|a| a == "--baseline-first");
    runtime.block_on(async move {
        let mut cps = control_planes("ours", latency, objects);
        cps.extend(control_planes("base", latency, objects));
        let started = Instant::now();
        let env = env_with(&cps).await;
        eprintln!("{} ControlPlanes ready in {:.1?}", cps.len(), started.elapsed());
        let ready = ReadyTimes::new(|m| m.name.clone());
        let _watch = ready.watch::<Bench>(env.onboarding().client());

        // The second one runs against a server holding the first one's objects too:
        // `--baseline-first` swaps the order to see what that costs.
        let run_ours = async {
            let ours = start_runtime(&env).await;
            let results = measure(&env, &ready, &ours, "ours", latency, objects).await;
            ours.stop().await;
            results
        };
        let run_base = async {
            let baseline = start_baseline(&env);
            let results = measure(&env, &ready, &baseline, "base", latency, objects).await;
            baseline.stop().await;
            results
        };
        let (mut ours_results, mut base_results) = if baseline_first {
            let base = run_base.await;
            // The runtime serves every Bench object; the hand-written controller's are left
            // alone (`openmcp.cloud/operation: ignore`, a reconcile without API calls), so
            // that it measures its own objects only.
            let api: Api<Bench> = Api::namespaced(env.onboarding().client(), NAMESPACE);
            let ignore = json!({ "metadata": { "annotations": { "openmcp.cloud/operation": "ignore" } } });
            let names = control_planes("base", latency, objects);
            futures::stream::iter(names.iter())
                .for_each_concurrent(32, |cp| {
                    let (api, ignore) = (api.clone(), &ignore);
                    async move {
                        api.patch(&cp.name, &PatchParams::default(), &Patch::Merge(ignore))
                            .await
                            .expect("ignore annotation");
                    }
                })
                .await;
            (run_ours.await, base)
        } else {
            let ours = run_ours.await;
            (ours, run_base.await)
        };
        env.stop();
        drop(env);

        if eso_tenants > 0 {
            let (ours, base) = eso::run(eso_tenants).await;
            println!("\nmanaged resources: the External Secrets Operator example, {eso_tenants} tenants each");
            println!("{:<44} {:>16} {:>16}", "", "resource set", "by hand");
            let row = |what: &str, a: String, b: String| println!("{what:<44} {a:>16} {b:>16}");
            row("tenants to Ready per second", format!("{:.1}", ours.throughput), format!("{:.1}", base.throughput));
            row("API writes per tenant, create to Ready", format!("{:.2}", ours.writes_per_tenant), format!("{:.2}", base.writes_per_tenant));
            row("no-op reconcile: reads per tenant", format!("{:.2}", ours.noop_reads), format!("{:.2}", base.noop_reads));
            row("no-op reconcile: writes per tenant", format!("{:.2}", ours.noop_writes), format!("{:.2}", base.noop_writes));
        }

        if memory_objects > 0 {
            let (ours_memory, base_memory) = memory(memory_objects).await;
            ours_results.memory = ours_memory;
            base_results.memory = base_memory;
        }

        println!("\nstandard mode, {objects} objects (throughput, writes), {latency} objects (latency), {memory_objects} objects (memory)");
        println!("{:<44} {:>16} {:>16}", "", "service-provider", "kube-runtime");
        let row = |what: &str, a: String, b: String| println!("{what:<44} {a:>16} {b:>16}");
        row("objects to Ready per second", format!("{:.0}", ours_results.throughput), format!("{:.0}", base_results.throughput));
        row("API writes per object, create to Ready", format!("{:.2}", ours_results.writes_per_object), format!("{:.2}", base_results.writes_per_object));
        row("create to Ready p50", format!("{:.1?}", ours_results.p50), format!("{:.1?}", base_results.p50));
        row("create to Ready p99", format!("{:.1?}", ours_results.p99), format!("{:.1?}", base_results.p99));
        row("no-op reconcile: reads per reconcile", format!("{:.2}", ours_results.noop_reads), format!("{:.2}", base_results.noop_reads));
        row("no-op reconcile: writes per reconcile", format!("{:.2}", ours_results.noop_writes), format!("{:.2}", base_results.noop_writes));
        let mem = |r: &Results| r.memory.map_or("-".to_owned(), |m| format!("{:.1} MiB", m.resident));
        let anon = |r: &Results| r.memory.map_or("-".to_owned(), |m| format!("{:.1} MiB", m.anonymous));
        let peak = |r: &Results| r.memory.map_or("-".to_owned(), |m| format!("{:.1} MiB", m.peak));
        row("resident memory, all Ready", mem(&ours_results), mem(&base_results));
        row("peak resident memory", peak(&ours_results), peak(&base_results));
        row("  of which heap and stacks", anon(&ours_results), anon(&base_results));
    });
}
