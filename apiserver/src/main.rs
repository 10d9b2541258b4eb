//! `service-provider-apiserver`: run an embedded cluster for kubectl until interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use service_provider_apiserver::{ClusterOptions, ControlPlane};

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
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
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
