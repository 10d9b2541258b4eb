//! The provider binary's command line: what `service_provider::run::<P>()` does with its
//! arguments.
//!
//! ```text
//! <provider> init      --environment E --verbosity INFO --provider-name N   (the openMCP init Job)
//! <provider> run       --environment E --verbosity INFO --provider-name N   (the openMCP Deployment)
//!                      [--kubeconfig F] [--metrics-bind-address A] [--health-probe-bind-address A]
//!                      [--leader-elect]
//!                      [--kcp-kubeconfig F [--apiexport-endpointslice N] [--provision-apiexport]
//!                       [--shard-index I --shard-count N] …]                  (kcp mode)
//! <provider> manifests --output DIR [--check]
//! <provider> dev       [--kubeconfig-dir DIR]                               (local, embedded)
//! <provider>           run, when a cluster is configured (--kubeconfig or in a pod); else dev
//! ```
//!
//! The platform cluster is `--kubeconfig` or, when it is absent, the pod's in-cluster config
//! (`KUBERNETES_SERVICE_HOST`); `POD_NAMESPACE` names the provider's namespace. Every mistake —
//! a bad flag, an unreadable kubeconfig, a missing `POD_NAMESPACE` — ends with one line on stderr
//! that says what to fix, and a non-zero exit code.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::marker::PhantomData;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::access::clients::ClientFactory;
use crate::error::Error;
use crate::init::{InitContext, InitHook, InitOptions};
use crate::manifests;
use crate::openmcp::constants::{ENV_POD_NAME, ENV_POD_NAMESPACE};
use crate::ops::shutdown_signal;
use crate::provider::Reconcile;
use crate::runner::{RunOptions, Runtime};

/// Exit code of a usage error (as clap uses).
const USAGE: u8 = 2;

/// The command line of a provider binary.
#[derive(Debug, Parser)]
#[command(
    about = "An openMCP service provider built with service-provider",
    long_about = None,
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    common: Common,
}

/// Flags every subcommand takes (the openMCP deployment contract appends them after the
/// subcommand).
#[derive(Debug, Args)]
struct Common {
    /// Name of the environment (openMCP passes it; the runtime records it).
    #[arg(long, global = true, default_value = "")]
    environment: String,
    /// Log level: DEBUG, INFO or ERROR.
    #[arg(long, global = true, default_value = "INFO", value_parser = parse_verbosity)]
    verbosity: Verbosity,
    /// Name of the ServiceProvider; also the name of the ProviderConfig the provider reads.
    /// Defaults to the Service API kind in lower case.
    #[arg(long, global = true)]
    provider_name: Option<String>,
    /// Kubeconfig of the platform cluster; the pod's in-cluster config when absent.
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// `dev` only: where to write a kubeconfig for every cluster (default:
    /// <tmp>/<provider-name>-dev).
    #[arg(long, global = true)]
    kubeconfig_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Install the CRDs and register the Service API at the ServiceProvider (the openMCP init
    /// Job); idempotent.
    Init,
    /// Serve tenants until SIGTERM.
    Run(RunArgs),
    /// Write every manifest of this provider (CRDs, kcp APIResourceSchema and APIExport, RBAC)
    /// into a directory, one object per YAML file, removing files that are no longer generated.
    Manifests {
        /// The directory to write into; created when missing.
        #[arg(long, short)]
        output: PathBuf,
        /// Change nothing; list the files that are missing, stale or extra, and fail if any are.
        #[arg(long)]
        check: bool,
    },
    /// Run against an embedded control plane with a simulated openMCP platform, one ControlPlane
    /// and one object; write kubeconfigs for kubectl and serve until Ctrl-C.
    Dev(DevArgs),
}

#[derive(Debug, Args)]
struct DevArgs {
    /// Where to serve /metrics; `0` serves nothing.
    #[arg(long, default_value = "0")]
    metrics_bind_address: String,
    /// Where to serve /healthz and /readyz; `0` serves nothing.
    #[arg(long, default_value = "0")]
    health_probe_bind_address: String,
}

impl Default for DevArgs {
    fn default() -> Self {
        DevArgs {
            metrics_bind_address: "0".into(),
            health_probe_bind_address: "0".into(),
        }
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Where to serve /metrics (`:8080`, `127.0.0.1:9090`); `0` serves nothing.
    #[arg(long, default_value = ":8080")]
    metrics_bind_address: String,
    /// Where to serve /healthz and /readyz; `0` serves nothing.
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Elect a leader among replicas with a Lease per mode; only the leader reconciles.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = parse_bool)]
    leader_elect: bool,
    /// Seconds a leader's Lease stays valid without renewal (how fast a standby takes over
    /// from a leader that died).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(2..=3600))]
    leader_elect_lease_duration: u64,
    /// How many objects are reconciled at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    concurrency: u64,
    /// kcp mode.
    #[command(flatten)]
    kcp: crate::kcp::flags::KcpArgs,
}

/// The `--verbosity` levels of the openMCP contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// Everything, including each reconcile.
    Debug,
    /// What changed.
    Info,
    /// Errors only.
    Error,
}

fn parse_verbosity(value: &str) -> Result<Verbosity, String> {
    match value.to_ascii_uppercase().as_str() {
        "DEBUG" => Ok(Verbosity::Debug),
        "INFO" => Ok(Verbosity::Info),
        "ERROR" => Ok(Verbosity::Error),
        _ => Err("use DEBUG, INFO or ERROR".to_owned()),
    }
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err("use true or false".to_owned()),
    }
}

/// Parses a bind address the way controller-runtime takes it: `:8080` binds every interface,
/// `0` (or empty) turns the endpoint off.
pub fn parse_bind_address(flag: &str, value: &str) -> Result<Option<SocketAddr>, String> {
    if value.is_empty() || value == "0" {
        return Ok(None);
    }
    let candidate = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_owned(),
    };
    candidate
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(Some)
        .ok_or_else(|| {
            format!("--{flag} {value:?} is not an address; write it like :8080 or 127.0.0.1:8080, or 0 to turn it off")
        })
}

/// A provider binary, with optional extras; [`run`] is `App::new().run()`.
pub struct App<P> {
    init_hook: Option<InitHook>,
    #[cfg_attr(not(feature = "dev"), allow(dead_code))]
    dev_samples: (Option<serde_json::Value>, Option<serde_json::Value>),
    _provider: PhantomData<fn() -> P>,
}

impl<P: Reconcile> Default for App<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Reconcile> App<P> {
    /// A provider binary with nothing extra.
    pub fn new() -> Self {
        App {
            init_hook: None,
            dev_samples: (None, None),
            _provider: PhantomData,
        }
    }

    /// What `dev` creates: the ProviderConfig's `spec` and the sample object's `spec`. Without
    /// them `dev` fills every required field from the CRDs' schemas (defaults, first enum
    /// values, placeholders) and offers the sample's `version`.
    pub fn dev_samples(
        mut self,
        provider_config: serde_json::Value,
        object: serde_json::Value,
    ) -> Self {
        self.dev_samples = (Some(provider_config), Some(object));
        self
    }

    /// Runs `hook` at the end of `init`, after the CRDs are installed: an extra pre-flight step
    /// (e.g. check that a registry is reachable). An error fails the init Job.
    pub fn on_init<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(InitContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        self.init_hook = Some(Arc::new(move |cx| Box::pin(hook(cx))));
        self
    }

    /// Runs with the process's arguments.
    pub fn run(self) -> ExitCode {
        self.run_with_args(std::env::args_os())
    }

    /// Runs with explicit arguments (the first is the program name).
    pub fn run_with_args<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(err) => return usage_error(err),
        };
        let command = cli.command;
        let common = cli.common;
        if let Some(Command::Manifests { output, check }) = &command {
            return manifests_command::<P>(output, *check);
        }
        crate::logging::init(common.verbosity);
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(err) => return fail(format!("cannot start the async runtime: {err}")),
        };
        let result = runtime.block_on(async move {
            match command {
                Some(Command::Init) => self.init_command(&common).await,
                Some(Command::Run(args)) => run_command::<P>(&common, &args).await,
                Some(Command::Dev(args)) => self.dev_command(&common, &args).await,
                Some(Command::Manifests { .. }) => Ok(()),
                None if common.kubeconfig.is_some() || in_cluster() => {
                    run_command::<P>(&common, &RunArgs::parse_defaults()).await
                }
                // No cluster configured: a local one, as `cargo run --example <provider>` expects.
                None => self.dev_command(&common, &DevArgs::default()).await,
            }
        });
        // Reconciles that ignore shutdown must not keep the process alive.
        runtime.shutdown_timeout(Duration::from_secs(5));
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => fail(message),
        }
    }

    async fn init_command(&self, common: &Common) -> Result<(), String> {
        let platform = platform_client(common).await?;
        let options = InitOptions {
            provider_name: provider_name::<P>(common),
            environment: common.environment.clone(),
            pod_namespace: pod_namespace()?,
            access_timeout: Duration::from_secs(30 * 60),
            crd_timeout: Duration::from_secs(60),
        };
        crate::init::init::<P>(platform, &options, self.init_hook.clone())
            .await
            .map_err(|e| e.to_string())
    }

    #[cfg(feature = "dev")]
    async fn dev_command(&self, common: &Common, args: &DevArgs) -> Result<(), String> {
        let metrics_addr = parse_bind_address("metrics-bind-address", &args.metrics_bind_address)?;
        let health_addr =
            parse_bind_address("health-probe-bind-address", &args.health_probe_bind_address)?;
        crate::dev_mode::run::<P>(crate::dev_mode::DevOptions {
            provider_name: provider_name::<P>(common),
            kubeconfig_dir: common.kubeconfig_dir.clone(),
            metrics_addr,
            health_addr,
            samples: crate::dev_mode::DevSamples {
                provider_config: self.dev_samples.0.clone(),
                object: self.dev_samples.1.clone(),
            },
        })
        .await
    }

    #[cfg(not(feature = "dev"))]
    async fn dev_command(&self, _common: &Common, _args: &DevArgs) -> Result<(), String> {
        Err("no platform cluster configured: pass --kubeconfig, or run in a pod (this provider was built without the `dev` feature, so it cannot start a local one)".to_owned())
    }
}

impl RunArgs {
    fn parse_defaults() -> Self {
        RunArgs {
            metrics_bind_address: ":8080".into(),
            health_probe_bind_address: ":8081".into(),
            leader_elect: false,
            leader_elect_lease_duration: 15,
            concurrency: 16,
            kcp: Default::default(),
        }
    }
}

/// Runs the provider binary for `P` with the process's arguments; the whole `main` of a provider.
///
/// ```text
/// fn main() -> std::process::ExitCode { service_provider::run::<Velero>() }
/// ```
pub fn run<P: Reconcile>() -> ExitCode {
    App::<P>::new().run()
}

/// [`run`] with explicit arguments (the first is the program name), for tests.
pub fn run_with_args<P, I, T>(args: I) -> ExitCode
where
    P: Reconcile,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    App::<P>::new().run_with_args(args)
}

fn fail(message: String) -> ExitCode {
    // One line: multi-line causes are joined.
    let line = message.replace('\n', " ");
    eprintln!("error: {line}");
    ExitCode::FAILURE
}

/// Prints help and version as clap does; turns every other parse error into one line.
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = err.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_owned();
            eprintln!("error: {first}; see --help");
            ExitCode::from(USAGE)
        }
    }
}

fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        && std::env::var_os("KUBERNETES_SERVICE_PORT").is_some()
}

fn provider_name<P: Reconcile>(common: &Common) -> String {
    common
        .provider_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| P::INFO.kind.to_lowercase())
}

fn pod_namespace() -> Result<String, String> {
    if let Some(ns) = std::env::var(ENV_POD_NAMESPACE)
        .ok()
        .filter(|n| !n.is_empty())
    {
        return Ok(ns);
    }
    // In a pod without the variable, the ServiceAccount's namespace is the pod's.
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
        .ok_or_else(|| {
            format!("{ENV_POD_NAMESPACE} is not set; set it to the namespace the provider runs in (its access requests are created there)")
        })
}

/// The platform cluster's client: `--kubeconfig`, or the in-cluster config.
async fn platform_client(common: &Common) -> Result<kube::Client, String> {
    match &common.kubeconfig {
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| format!("cannot read --kubeconfig {}: {e}", path.display()))?;
            let factory = ClientFactory::new();
            ClientFactory::config(&bytes)
                .await
                .and_then(|config| factory.client_for(config))
                .map_err(|e| {
                    format!(
                        "--kubeconfig {}: {e}; pass a valid kubeconfig for the platform cluster",
                        path.display()
                    )
                })
        }
        None if in_cluster() => {
            let config = kube::Config::incluster().map_err(|e| {
                format!("cannot use the in-cluster config: {e}; pass --kubeconfig for the platform cluster")
            })?;
            kube::Client::try_from(config)
                .map_err(|e| format!("cannot build a client from the in-cluster config: {e}"))
        }
        None => {
            Err("no platform cluster configured: pass --kubeconfig, or run in a pod".to_owned())
        }
    }
}

async fn run_command<P: Reconcile>(common: &Common, args: &RunArgs) -> Result<(), String> {
    let kcp = args.kcp.settings(&P::INFO)?;
    let metrics_addr = parse_bind_address("metrics-bind-address", &args.metrics_bind_address)?;
    let health_addr =
        parse_bind_address("health-probe-bind-address", &args.health_probe_bind_address)?;
    let platform = platform_client(common).await?;
    let mut options = RunOptions::new(provider_name::<P>(common), pod_namespace()?);
    options.environment = common.environment.clone();
    options.pod_name = std::env::var(ENV_POD_NAME).ok().filter(|n| !n.is_empty());
    options.metrics_addr = metrics_addr;
    options.health_addr = health_addr;
    options.leader_elect = args.leader_elect;
    options.leader.lease_duration = Duration::from_secs(args.leader_elect_lease_duration);
    options.leader.renew_grace = Duration::from_secs((args.leader_elect_lease_duration / 3).max(1));
    options.concurrency = usize::try_from(args.concurrency).unwrap_or(16);
    serve::<P>(platform, options, kcp, &args.kcp).await
}

/// Runs standard mode, and kcp mode when `--kcp-kubeconfig` or the ProviderConfig's `kcp` block
/// asks for it, until SIGTERM.
async fn serve<P: Reconcile>(
    platform: kube::Client,
    options: RunOptions,
    kcp: Option<crate::kcp::KcpSettings>,
    kcp_args: &crate::kcp::flags::KcpArgs,
) -> Result<(), String> {
    let mut runtime = Runtime::<P>::start(platform, options)
        .await
        .map_err(|e| e.to_string())?;
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let start_kcp = async {
        let settings = match kcp {
            Some(settings) => Some(settings),
            // The ProviderConfig's block is read once: a change needs a restart (the mode is
            // chosen at start-up).
            None if P::INFO.kcp => match runtime.kcp_settings_from_provider_config().await {
                Ok(Some(mut settings)) => {
                    kcp_args.apply(&P::INFO, &mut settings)?;
                    Some(settings)
                }
                Ok(None) => None,
                Err(err) => return Err(err.to_string()),
            },
            None => None,
        };
        match settings {
            Some(settings) => runtime
                .start_kcp(settings)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            None => Ok(()),
        }
    };
    tokio::select! {
        started = start_kcp => started?,
        _ = &mut signal => {
            runtime.shutdown();
            runtime.wait().await;
            return Ok(());
        }
    }
    tokio::select! {
        started = runtime.start_standard() => {
            started.map_err(|e| e.to_string())?;
        }
        _ = &mut signal => {
            runtime.shutdown();
            runtime.wait().await;
            return Ok(());
        }
    }
    runtime.run_until(signal).await;
    Ok(())
}

fn manifests_command<P: Reconcile>(output: &std::path::Path, check: bool) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    if check {
        match manifests::check::<P>(output) {
            Ok(differences) if differences.is_empty() => {
                let _ = writeln!(stdout, "{}: up to date", output.display());
                ExitCode::SUCCESS
            }
            Ok(differences) => {
                for difference in &differences {
                    eprintln!("{difference}");
                }
                eprintln!(
                    "{}: {} file(s) differ from what {} generates; regenerate them with `manifests --output {}`",
                    output.display(),
                    differences.len(),
                    P::INFO.kind,
                    output.display()
                );
                ExitCode::FAILURE
            }
            Err(err) => fail(err.to_string()),
        }
    } else {
        match manifests::write::<P>(output) {
            Ok(reports) => {
                for report in reports {
                    let _ = writeln!(stdout, "{report}");
                }
                ExitCode::SUCCESS
            }
            Err(err) => fail(err.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_follow_controller_runtime() {
        assert_eq!(parse_bind_address("x", "0"), Ok(None));
        assert_eq!(parse_bind_address("x", ""), Ok(None));
        assert_eq!(
            parse_bind_address("x", ":8080"),
            Ok(Some("0.0.0.0:8080".parse().unwrap()))
        );
        assert_eq!(
            parse_bind_address("x", "127.0.0.1:9"),
            Ok(Some("127.0.0.1:9".parse().unwrap()))
        );
        let err = parse_bind_address("metrics-bind-address", "nope").unwrap_err();
        assert!(
            err.contains("--metrics-bind-address") && !err.contains('\n'),
            "{err}"
        );
    }

    #[test]
    fn flags_parse_anywhere_and_verbosity_is_checked() {
        let cli = Cli::try_parse_from([
            "p",
            "run",
            "--environment",
            "dev",
            "--verbosity",
            "debug",
            "--provider-name",
            "velero",
            "--leader-elect=true",
        ])
        .unwrap();
        assert_eq!(cli.common.verbosity, Verbosity::Debug);
        assert_eq!(cli.common.provider_name.as_deref(), Some("velero"));
        let Some(Command::Run(run)) = cli.command else {
            panic!("run")
        };
        assert!(run.leader_elect);
        let cli = Cli::try_parse_from(["p", "run", "--leader-elect"]).unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("run")
        };
        assert!(run.leader_elect);
        assert!(Cli::try_parse_from(["p", "run", "--verbosity", "LOUD"]).is_err());
        let cli = Cli::try_parse_from(["p", "--kubeconfig", "/k"]).unwrap();
        assert!(cli.command.is_none());
    }
}
