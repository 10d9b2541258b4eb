//! `service-provider-apiserver`: run embedded clusters (or, with `--kcp`, a kcp installation) for
//! kubectl until interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use service_provider_apiserver::{ClusterOptions, ControlPlane, KcpOptions};

/// Runs embedded Kubernetes-compatible API servers on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Write the admin kubeconfig here (with several clusters: `<path>.<name>` for each but the first).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Cluster names to start (each gets its own URL).
    #[arg(long = "cluster", default_value = "cluster")]
    clusters: Vec<String>,
    /// Serve plain HTTP instead of HTTPS.
    #[arg(long)]
    http: bool,
    /// Port of the first cluster (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Make Deployments report Available.
    #[arg(long)]
    deployments_available: bool,
    /// Serve kcp instead: workspaces, APIExports/APIBindings and virtual workspaces. The
    /// kubeconfig points at the `root` workspace.
    #[arg(long)]
    kcp: bool,
    /// kcp: the number of shards.
    #[arg(long, default_value_t = 1, requires = "kcp")]
    shards: usize,
    /// kcp: workspaces to create at start (e.g. `root:provider`), parents first.
    #[arg(long = "workspace", requires = "kcp")]
    workspaces: Vec<String>,
}

async fn run_kcp(args: &Args) -> ExitCode {
    let mut opts = KcpOptions::default().shards(args.shards).port(args.port);
    if args.http {
        opts = opts.http();
    }
    let cp = ControlPlane::new();
    let kcp = match cp.add_kcp("kcp", opts).await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: could not start kcp: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("kcp: {}", kcp.url());
    for s in kcp.shards() {
        println!("shard {}: {}", s.name(), s.url());
    }
    for ws in &args.workspaces {
        match kcp.create_workspace(ws).await {
            Ok(w) => println!(
                "workspace {}: {} (logical cluster {})",
                w.path, w.url, w.name
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(path) = &args.kubeconfig {
        if let Err(e) = kcp.write_kubeconfig("root", path) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        println!(
            "kubeconfig: {}  (kubectl --kubeconfig {} get workspaces)",
            path.display(),
            path.display()
        );
    }
    println!("serving; press Ctrl-C to stop");
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    if args.kcp {
        return run_kcp(&args).await;
    }
    let cp = ControlPlane::new();
    for (i, name) in args.clusters.iter().enumerate() {
        let mut opts = ClusterOptions::default().deployments_available(args.deployments_available);
        if args.http {
            opts = opts.http();
        }
        if i == 0 {
            opts = opts.port(args.port);
        }
        let c = match cp.add_cluster(name, opts).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: could not start cluster {name:?}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("cluster {name}: {}", c.url());
        if let Some(path) = &args.kubeconfig {
            let path = if i == 0 {
                path.clone()
            } else {
                PathBuf::from(format!("{}.{name}", path.display()))
            };
            if let Err(e) = c.write_kubeconfig(&path) {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
            println!(
                "kubeconfig {name}: {}  (kubectl --kubeconfig {} get ns)",
                path.display(),
                path.display()
            );
        }
    }
    println!("serving; press Ctrl-C to stop");
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
