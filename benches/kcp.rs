//! kcp mode at scale: one provider with a trivial reconcile serving N consumer workspaces of an
//! embedded kcp, one object each.
//!
//! ```sh
//! cargo bench --bench kcp                                 # 1,000 and 10,000 workspaces, 2 shards
//! cargo bench --bench kcp -- --workspaces 200 --shards 1
//! cargo bench --bench kcp -- --workspaces 1000,10000 --concurrency 16
//! ```
//!
//! The provider runs as its own process (this binary, re-executed), started in kcp mode only
//! with its generated identities (the platform ServiceAccount, the provider-workspace
//! ServiceAccount), so that its memory is measured alone, without the embedded servers. For
//! every workspace count, measured:
//! - **time to Ready**: from the first of the N objects created (one per workspace, 64 creates
//!   in flight, after the provider engaged every workspace) until the last is Ready, as seen
//!   by one wildcard watch per shard; also how long the creates took;
//! - **resident memory** of the provider process once all are Ready (`VmRSS`) and its peak
//!   (`VmHWM`);
//! - **watch connections on the virtual workspace**: watch requests the shards answered on the
//!   virtual-workspace surface (their request counters) while the provider ran, and the
//!   provider's open watches on the shards' stores (open watchers with the provider running
//!   minus before it started: the virtual-workspace watches plus its endpoint-slice watch in
//!   the provider workspace);
//! - **tokens minted per workspace**: TokenRequests (`create serviceaccounts/token`) the
//!   shards answered while the provider ran, divided by N.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use service_provider::dev::TestEnv;
use service_provider::kube::Api;
use service_provider::kube::api::{ApiResource, DynamicObject, PostParams};
use service_provider::prelude::*;
use service_provider_apiserver::kcp::{KcpOptions, VIRTUAL_WORKSPACE_SURFACE};
use service_provider_runtime::cli::run::{RunOptions, Runtime};
use service_provider_runtime::modes::kcp::KcpSettings;

// Each benchmark uses part of it.
#[allow(dead_code)]
#[path = "support/mod.rs"]
mod support;
use support::{Bench, Memory, ReadyTimes, arg, memory_of};

const PROVIDER: &str = "bench";
const NAMESPACE: &str = "default";
const TIMEOUT: Duration = Duration::from_secs(900);

/// Requests the kcp shards answered, by (surface, verb, resource), codes below 400 only.
fn counters(env: &TestEnv) -> HashMap<(String, String, String), u64> {
    let mut out = HashMap::new();
    for shard in env.kcp().expect("kcp").kcp().shards() {
        for (key, n) in shard.counters().snapshot() {
            if key.code < 400 {
                *out.entry((key.cluster, key.verb, key.resource))
                    .or_insert(0) += n;
            }
        }
    }
    out
}

fn count(
    before: &HashMap<(String, String, String), u64>,
    after: &HashMap<(String, String, String), u64>,
    matches: impl Fn(&str, &str, &str) -> bool,
) -> u64 {
    after
        .iter()
        .filter(|((s, v, r), _)| matches(s, v, r))
        .map(|(k, n)| n - before.get(k).copied().unwrap_or(0))
        .sum()
}

/// Open watchers over every shard's store (all surfaces and logical clusters).
fn open_watchers(env: &TestEnv) -> usize {
    env.kcp()
        .expect("kcp")
        .kcp()
        .shards()
        .iter()
        .map(|s| s.open_watches())
        .sum()
}

#[derive(Debug)]
struct Results {
    workspaces: usize,
    endpoints: usize,
    env_start: Duration,
    engaged_after: Duration,
    creates: Duration,
    to_ready: Duration,
    memory: Option<Memory>,
    vw_watch_requests: u64,
    open_watches: isize,
    tokens_per_workspace: f64,
}

async fn run(workspaces: usize, shards: usize, concurrency: usize) -> Results {
    let started = Instant::now();
    let env = TestEnv::builder()
        .provider::<Bench>()
        .provider_name(PROVIDER)
        .provider_config(json!({ "pollInterval": "1h" }))
        .kcp(workspaces)
        .kcp_options(KcpOptions::default().shards(shards))
        .timeout(TIMEOUT)
        .start()
        .await
        .expect("the simulated platform with kcp starts");
    let env_start = started.elapsed();
    eprintln!(
        "{workspaces} workspaces: kcp with {workspaces} bound consumer workspaces on {shards} shard(s) in {env_start:.1?}"
    );
    let kcp = env.kcp().expect("kcp").clone();
    let consumers = kcp.consumers().to_vec();
    let clusters: Vec<String> = consumers.iter().map(|c| c.name.clone()).collect();

    // The observer: one wildcard watch per shard through the export's virtual workspace (a
    // shard's own wildcard does not serve bound resources), as admin, open before the
    // provider's are counted.
    let ready = ReadyTimes::new(|m| m.annotations.as_ref()?.get("kcp.io/cluster").cloned());
    let export = kcp.export_name().expect("the export").to_owned();
    let _watches: Vec<_> = kcp
        .kcp()
        .shards()
        .iter()
        .map(|s| {
            let url = s.apiexport_url(&kcp.provider_workspace().name, &export);
            let client = kcp
                .kcp()
                .client_for_url(&format!("{url}/clusters/*"), kcp.kcp().admin_token());
            ready.watch::<Bench>(client)
        })
        .collect();
    let deadline = Instant::now() + TIMEOUT;
    let observing = |c: &HashMap<(String, String, String), u64>| {
        count(&HashMap::new(), c, |s, v, r| {
            s == VIRTUAL_WORKSPACE_SURFACE && v == "watch" && r == "benches"
        })
    };
    while observing(&counters(&env)) < shards as u64 {
        assert!(
            Instant::now() < deadline,
            "the observer's watches did not open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watchers_before = open_watchers(&env);
    let before = counters(&env);

    let dir = std::env::temp_dir().join(format!("sp-kcp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let platform = dir.join("platform.kubeconfig");
    std::fs::write(&platform, env.provider().unwrap().platform_kubeconfig()).unwrap();
    let provider_ws = dir.join("kcp.kubeconfig");
    std::fs::write(
        &provider_ws,
        kcp.provider_kubeconfig().expect("a kcp provider"),
    )
    .unwrap();

    let spawned = Instant::now();
    let mut child = ProviderProcess(
        std::process::Command::new(std::env::current_exe().unwrap())
            .env("SP_BENCH_CHILD", "provider")
            .env("SP_BENCH_PLATFORM", &platform)
            .env("SP_BENCH_KCP", &provider_ws)
            .env("SP_BENCH_WORKSPACES", workspaces.to_string())
            .env("SP_BENCH_CONCURRENCY", concurrency.to_string())
            .env("POD_NAMESPACE", env.pod_namespace())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the provider process starts"),
    );
    // The provider says when it engaged every workspace.
    let stdout = child.0.stdout.take().expect("piped stdout");
    let engaged = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("endpoints ")
                    .and_then(|n| n.parse::<usize>().ok())
            })
    });
    let endpoints = tokio::time::timeout(TIMEOUT, engaged)
        .await
        .expect("the provider engaged every workspace in time")
        .unwrap()
        .expect("the provider reports its endpoints");
    let engaged_after = spawned.elapsed();
    eprintln!(
        "{workspaces} workspaces: the provider engaged all of them through {endpoints} endpoint(s) in {engaged_after:.1?}"
    );

    let resource = &ApiResource::erase::<Bench>(&());
    let started = Instant::now();
    futures::stream::iter(consumers.iter())
        .for_each_concurrent(64, |ws| {
            let api: Api<DynamicObject> =
                Api::namespaced_with(env.kcp().unwrap().client(&ws.path), NAMESPACE, resource);
            async move {
                let mut object = DynamicObject::new("bench", resource).within(NAMESPACE);
                object.data = json!({ "spec": { "value": ws.name } });
                api.create(&PostParams::default(), &object)
                    .await
                    .expect("create");
            }
        })
        .await;
    let creates = started.elapsed();
    eprintln!("{workspaces} workspaces: {workspaces} objects created in {creates:.1?}");
    let done = ready.wait(&clusters, TIMEOUT).await;
    let to_ready = done.duration_since(started);
    eprintln!("{workspaces} workspaces: all Ready {to_ready:.1?} after the first create");

    let memory = memory_of(child.0.id());
    let after = counters(&env);
    let open_watches = open_watchers(&env) as isize - watchers_before as isize;
    let vw_watch_requests = count(&before, &after, |s, v, r| {
        s == VIRTUAL_WORKSPACE_SURFACE && v == "watch" && (r == "benches" || r == "apibindings")
    });
    if std::env::var_os("SP_BENCH_DEBUG").is_some() {
        for ((s, v, r), n) in &after {
            let d = n - before
                .get(&(s.clone(), v.clone(), r.clone()))
                .copied()
                .unwrap_or(0);
            if d > 0 && v == "watch" {
                eprintln!("{s} {v} {r}: {d}");
            }
        }
    }
    let tokens = count(&before, &after, |_, v, r| {
        v == "create" && r == "serviceaccounts/token"
    });
    drop(child);
    env.stop();
    let _ = std::fs::remove_dir_all(&dir);
    Results {
        workspaces,
        endpoints,
        env_start,
        engaged_after,
        creates,
        to_ready,
        memory,
        vw_watch_requests,
        open_watches,
        tokens_per_workspace: tokens as f64 / workspaces as f64,
    }
}

/// The provider process: kcp mode only; prints `endpoints <n>` once every workspace is engaged.
/// The provider's process, killed when the benchmark is done with it — also when the benchmark
/// panics half-way, so no provider is left running.
struct ProviderProcess(std::process::Child);

impl Drop for ProviderProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn child() {
    let read = |var: &str| std::fs::read(std::env::var(var).expect(var)).expect(var);
    let number = |var: &str| -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .expect(var)
    };
    let factory = service_provider_runtime::access::clients::ClientFactory::new();
    let platform = factory
        .client(&read("SP_BENCH_PLATFORM"))
        .await
        .expect("platform");
    let mut options = RunOptions::new(PROVIDER, std::env::var("POD_NAMESPACE").unwrap());
    options.concurrency = number("SP_BENCH_CONCURRENCY");
    let mut runtime = Runtime::<Bench>::start(platform, options).await.unwrap();
    let source = runtime
        .start_kcp(KcpSettings::new(&Bench::INFO, read("SP_BENCH_KCP")))
        .await
        .unwrap();
    let workspaces = number("SP_BENCH_WORKSPACES");
    while source.engaged() < workspaces {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("endpoints {}", source.endpoint_urls().len());
    runtime.run_until(futures::future::pending()).await;
}

fn main() {
    support::logs();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os("SP_BENCH_CHILD").is_some() {
        runtime.block_on(child());
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; anything else is ours.
    let counts: Vec<usize> = arg(&args, "--workspaces")
        .unwrap_or("1000,10000")
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("--workspaces takes counts separated by commas, e.g. 1000,10000")
        })
        .collect();
    let shards: usize =
        arg(&args, "--shards").map_or(2, |n| n.parse().expect("--shards takes a number"));
    let concurrency: usize = arg(&args, "--concurrency")
        .map_or(16, |n| n.parse().expect("--concurrency takes a number"));
    let results: Vec<Results> = runtime.block_on(async {
        let mut out = Vec::new();
        for n in counts {
            out.push(run(n, shards, concurrency).await);
        }
        out
    });

    println!(
        "\nkcp mode, a trivial reconcile, {shards} shard(s), {concurrency} concurrent reconciles"
    );
    print!("{:<52}", "consumer workspaces (1 object each)");
    for r in &results {
        print!(" {:>14}", r.workspaces);
    }
    println!();
    let row = |what: &str, cell: &dyn Fn(&Results) -> String| {
        print!("{what:<52}");
        for r in &results {
            print!(" {:>14}", cell(r));
        }
        println!();
    };
    row("kcp + workspaces + bindings set up (not measured)", &|r| {
        format!("{:.1?}", r.env_start)
    });
    row("provider start until all workspaces engaged", &|r| {
        format!("{:.1?}", r.engaged_after)
    });
    row("creating the objects (64 in flight)", &|r| {
        format!("{:.1?}", r.creates)
    });
    row("first create until all Ready", &|r| {
        format!("{:.1?}", r.to_ready)
    });
    row("Ready per second", &|r| {
        format!("{:.0}", r.workspaces as f64 / r.to_ready.as_secs_f64())
    });
    row("provider resident memory, all Ready", &|r| {
        r.memory
            .map_or("-".into(), |m| format!("{:.1} MiB", m.resident))
    });
    row("provider peak resident memory", &|r| {
        r.memory
            .map_or("-".into(), |m| format!("{:.1} MiB", m.peak))
    });
    row("virtual-workspace endpoints", &|r| r.endpoints.to_string());
    row(
        "virtual-workspace watch requests (objects, bindings)",
        &|r| r.vw_watch_requests.to_string(),
    );
    row("open watches of the provider on the shards", &|r| {
        r.open_watches.to_string()
    });
    row("TokenRequests per workspace", &|r| {
        format!("{:.2}", r.tokens_per_workspace)
    });
}
