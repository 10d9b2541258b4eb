//! The provider binary's command line: what `service_provider::run::<P>()` does with its
//! arguments.
//!
//! ```text
//! <provider> init      --environment E --verbosity INFO --provider-name N   (the openMCP init Job)
//! <provider> run       --environment E --verbosity INFO --provider-name N   (the openMCP Deployment)
//!                      [--leader-elect=true] [--metrics-bind-address=:8080 --metrics-secure=false]
//!                      [--kubeconfig F] [--health-probe-bind-address A] [--enable-http2]
//!                      [--metrics-cert-path DIR] [--leader-election-id ID]
//!                      [--reconcile-timeout D] …
//!                      [--kcp-kubeconfig F [--apiexport-endpointslice N] [--provision-apiexport]
//!                       [--shard-index I --shard-count N] …]                  (kcp mode)
//! <provider> manifests --output DIR [--check]
//! <provider> dev       [--kubeconfig-dir DIR]                               (local, embedded)
//! <provider>           run, when a cluster is configured (--kubeconfig or in a pod); else dev
//! ```
//!
//! Every command takes `--log-format json|text` (json by default, text for `dev`; see
//! `ops::logging`).
//!
//! `init` and `run` take every flag a Go provider built from the service-provider-template takes,
//! with the same defaults and meaning (`--metrics-bind-address` `0`, `--metrics-secure` `true`,
//! `--health-probe-bind-address` `:8081`, `--leader-elect` `false`, `--enable-http2` `false`, the
//! metrics and webhook certificate flags), parsed as Go parses them: a boolean is `--x`,
//! `--x=true` or `--x=false` (any of Go's `strconv.ParseBool` spellings), a flag may start with
//! one dash or two, and a flag given twice takes its last value. So the openMCP operator's
//! Deployment and init Job start a provider written with this framework exactly as they start a Go
//! one.
//!
//! The platform cluster is found as controller-runtime's `GetConfig` finds it: `--kubeconfig`,
//! else `KUBECONFIG` (a list of files, merged, missing ones skipped — client-go's rules), else the
//! pod's in-cluster config, else `$HOME/.kube/config`. `POD_NAMESPACE` names the provider's
//! namespace. Every mistake — a bad flag, an unreadable kubeconfig, a missing `POD_NAMESPACE` —
//! ends with one line on stderr that says what to fix, and a non-zero exit code.

pub mod conversion_webhook;
#[cfg(feature = "dev")]
pub mod dev;
pub mod init;
pub mod run;
pub mod storage_migration;

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::marker::PhantomData;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::access::clients::ClientFactory;
use crate::cli::conversion_webhook::WebhookClientOptions;
use crate::cli::init::{InitContext, InitHook, InitOptions};
use crate::cli::run::{RunOptions, Runtime};
use crate::error::Error;
use crate::manifests;
use crate::openmcp::constants::{ENV_POD_NAME, ENV_POD_NAMESPACE};
use crate::ops::logging::LogFormat;
use crate::ops::logging::Verbosity;
use crate::ops::shutdown_signal;
use crate::reconcile::Reconcile;

/// Exit code of a usage error (as clap uses).
const USAGE: u8 = 2;

/// The command line of a provider binary.
#[derive(Debug, Parser)]
#[command(
    about = "An openMCP service provider built with service-provider",
    long_about = None,
    args_override_self = true,
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
    /// Log level: DEBUG, INFO or ERROR (any case).
    #[arg(long, short = 'v', global = true, default_value = "INFO", value_parser = parse_verbosity)]
    verbosity: Verbosity,
    /// Log format: json or text (any case). Default: json, one object per line as the Go
    /// providers of the platform write them (controller-utils' production default), for the
    /// platform's log pipeline; text for `dev`, which a person reads in a terminal. Also
    /// `--format`/`-f`, controller-utils' names for it.
    #[arg(long, global = true, alias = "format", short_alias = 'f')]
    log_format: Option<LogFormat>,
    /// Name of the ServiceProvider; also the name of the ProviderConfig the provider reads.
    /// Defaults to the Service API kind in lower case.
    #[arg(long, global = true)]
    provider_name: Option<String>,
    /// Kubeconfig of the platform cluster; else `KUBECONFIG`, the pod's in-cluster config, or
    /// `~/.kube/config`.
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// `dev` only: where to write a kubeconfig for every cluster (default:
    /// <tmp>/<provider-name>-dev).
    #[arg(long, global = true)]
    kubeconfig_dir: Option<PathBuf>,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Install the CRDs and register the Service API at the ServiceProvider (the openMCP init
    /// Job); idempotent.
    #[command(args_override_self = true)]
    Init(InitArgs),
    /// Serve tenants until SIGTERM.
    #[command(args_override_self = true)]
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
        /// The provider's image (`registry/name:tag`): also write `deploy/serviceprovider.yaml`,
        /// the openMCP ServiceProvider that runs it, and `deploy/providerconfig.yaml`, a
        /// ProviderConfig to fill in (named by --provider-name).
        #[arg(long, value_parser = parse_image)]
        image: Option<String>,
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

/// The flags of a Go provider's `main.go` (the service-provider-template's, which Go providers
/// copy), with Go's defaults. `init` accepts them too, as the Go binary does, and ignores them.
#[derive(Clone, Debug, Args)]
struct GoFlags {
    /// Where to serve /metrics (`:8080`, `127.0.0.1:9090`); `0` serves nothing.
    #[arg(long, default_value = "0")]
    metrics_bind_address: String,
    /// Serve /metrics over HTTPS (a self-signed certificate unless --metrics-cert-path is
    /// given); `--metrics-secure=false` serves plain HTTP, as the openMCP operator asks.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "true",
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    metrics_secure: bool,
    /// Directory of the metrics server's certificate (PEM); read once at start-up.
    #[arg(long)]
    metrics_cert_path: Option<PathBuf>,
    /// File name of the certificate in --metrics-cert-path.
    #[arg(long, default_value = "tls.crt")]
    metrics_cert_name: String,
    /// File name of the private key in --metrics-cert-path.
    #[arg(long, default_value = "tls.key")]
    metrics_cert_key: String,
    /// Where to serve /healthz and /readyz; `0` serves nothing.
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Elect a leader among replicas; only the leader reconciles (the operator passes
    /// `--leader-elect=true` when the ServiceProvider has more than one replica).
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    leader_elect: bool,
    /// Accepted as Go providers accept it; the endpoints speak HTTP/1.1 either way.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    enable_http2: bool,
    /// Directory of the conversion webhook's certificate (PEM), served by a provider that
    /// converts a version of its Service API in Rust; default: controller-runtime's
    /// <temp dir>/k8s-webhook-server/serving-certs.
    #[arg(long)]
    webhook_cert_path: Option<PathBuf>,
    /// File name of the certificate in --webhook-cert-path.
    #[arg(long, default_value = "tls.crt")]
    webhook_cert_name: String,
    /// File name of the private key in --webhook-cert-path.
    #[arg(long, default_value = "tls.key")]
    webhook_cert_key: String,
    /// Where the conversion webhook listens (controller-runtime's port 9443).
    #[arg(long, default_value = ":9443")]
    webhooks_bind_address: String,
    /// init: the URL (without path) at which the onboarding cluster's API server reaches the
    /// conversion webhook, e.g. https://velero-webhook.example.com; without it, the Service
    /// WEBHOOK_SERVICE_NAME in WEBHOOK_SERVICE_NAMESPACE.
    #[arg(long)]
    webhooks_base_url: Option<String>,
    /// init: the port of the Service WEBHOOK_SERVICE_NAME.
    #[arg(long, default_value_t = 443)]
    webhooks_service_port: i32,
    /// init: leave the CRD's caBundle out (the certificate is from a well-known CA).
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    webhooks_without_ca: bool,
    /// init: more names (comma-separated) the self-signed webhook certificate is valid for.
    #[arg(long, value_delimiter = ',')]
    webhooks_additional_sans: Vec<String>,
}

impl Default for GoFlags {
    fn default() -> Self {
        GoFlags {
            metrics_bind_address: "0".into(),
            metrics_secure: true,
            metrics_cert_path: None,
            metrics_cert_name: "tls.crt".into(),
            metrics_cert_key: "tls.key".into(),
            health_probe_bind_address: ":8081".into(),
            leader_elect: false,
            enable_http2: false,
            webhook_cert_path: None,
            webhook_cert_name: "tls.crt".into(),
            webhook_cert_key: "tls.key".into(),
            webhooks_bind_address: ":9443".into(),
            webhooks_base_url: None,
            webhooks_service_port: 443,
            webhooks_without_ca: false,
            webhooks_additional_sans: Vec::new(),
        }
    }
}

impl GoFlags {
    /// Where `init` says the conversion webhook is, with controller-utils' environment.
    fn webhook_client(&self, provider_name: &str, pod_namespace: &str) -> WebhookClientOptions {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let service = match (
            env("WEBHOOK_SERVICE_NAME"),
            env("WEBHOOK_SERVICE_NAMESPACE"),
        ) {
            (Some(name), namespace) => {
                Some((name, namespace.unwrap_or_else(|| pod_namespace.to_owned())))
            }
            (None, _) => None,
        };
        WebhookClientOptions {
            base_url: self.webhooks_base_url.clone().filter(|u| !u.is_empty()),
            service,
            service_port: self.webhooks_service_port,
            secret: (
                env("WEBHOOK_SECRET_NAME")
                    .unwrap_or_else(|| crate::manifests::webhook_certificate_secret(provider_name)),
                env("WEBHOOK_SECRET_NAMESPACE").unwrap_or_else(|| pod_namespace.to_owned()),
            ),
            without_ca: self.webhooks_without_ca,
            additional_sans: self.webhooks_additional_sans.clone(),
        }
    }

    /// Where and with which certificate the conversion webhook is served.
    fn webhook(&self) -> Result<Option<crate::cli::run::WebhookServing>, String> {
        let Some(addr) = parse_bind_address("webhooks-bind-address", &self.webhooks_bind_address)?
        else {
            return Ok(None);
        };
        let dir = match &self.webhook_cert_path {
            Some(dir) if !dir.as_os_str().is_empty() => dir.clone(),
            _ => std::env::temp_dir().join(crate::manifests::WEBHOOK_CERT_DIR_IN_TMP),
        };
        Ok(Some(crate::cli::run::WebhookServing {
            addr,
            cert: crate::ops::ServingCert::Files {
                cert: dir.join(&self.webhook_cert_name),
                key: dir.join(&self.webhook_cert_key),
            },
        }))
    }

    /// The metrics certificate `--metrics-secure` asks for; `None` for plain HTTP.
    fn metrics_tls(&self) -> Option<crate::ops::ServingCert> {
        if !self.metrics_secure {
            return None;
        }
        Some(match &self.metrics_cert_path {
            Some(dir) if !dir.as_os_str().is_empty() => crate::ops::ServingCert::Files {
                cert: dir.join(&self.metrics_cert_name),
                key: dir.join(&self.metrics_cert_key),
            },
            _ => crate::ops::ServingCert::SelfSigned,
        })
    }
}

#[derive(Debug, Default, Args)]
struct InitArgs {
    #[command(flatten)]
    go: GoFlags,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    go: GoFlags,
    /// Seconds a leader's Lease stays valid without renewal (how fast a standby takes over
    /// from a leader that died); controller-runtime's LeaseDuration.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(2..=3600))]
    leader_elect_lease_duration: u64,
    /// Seconds the leader keeps trying to renew its Lease before it stops leading;
    /// controller-runtime's RenewDeadline.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    leader_elect_renew_deadline: u64,
    /// Seconds between tries to acquire or renew the Lease; controller-runtime's RetryPeriod.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=3600))]
    leader_elect_retry_period: u64,
    /// Name of standard mode's Lease on the onboarding cluster: the Go provider's
    /// LeaderElectionID when taking over from one (default: <provider-name>-standard).
    #[arg(long)]
    leader_election_id: Option<String>,
    /// How many objects are reconciled at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    concurrency: u64,
    /// How long the provider's create_or_update or delete may run (a Go duration: 30s, 5m)
    /// before it is cancelled and the reconcile fails with reason ReconcileTimedOut, retried
    /// with backoff; 0 turns it off. Default: what the provider set (App::reconcile_timeout),
    /// else off, as controller-runtime's ReconciliationTimeout.
    #[arg(long)]
    reconcile_timeout: Option<crate::duration::Duration>,
    /// kcp mode.
    #[command(flatten)]
    kcp: crate::modes::kcp::flags::KcpArgs,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            go: GoFlags::default(),
            leader_elect_lease_duration: 15,
            leader_elect_renew_deadline: 10,
            leader_elect_retry_period: 2,
            leader_election_id: None,
            concurrency: 16,
            reconcile_timeout: None,
            kcp: Default::default(),
        }
    }
}

fn parse_verbosity(value: &str) -> Result<Verbosity, String> {
    match value.to_ascii_uppercase().as_str() {
        "DEBUG" => Ok(Verbosity::Debug),
        "INFO" => Ok(Verbosity::Info),
        "ERROR" => Ok(Verbosity::Error),
        _ => Err("use DEBUG, INFO or ERROR".to_owned()),
    }
}

/// A boolean flag's value as Go's `strconv.ParseBool` reads it.
fn parse_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err("use true or false".to_owned()),
    }
}

/// Go's `flag` package also takes long flags with one dash (`-leader-elect`); clap takes them
/// with two. Rewrites `-name[=value]` to `--name[=value]` for every long flag of the command
/// line, up to a `--`.
fn go_style_args<T: Into<OsString>>(args: impl IntoIterator<Item = T>) -> Vec<OsString> {
    use clap::CommandFactory;
    fn long_names(command: &clap::Command, names: &mut std::collections::HashSet<String>) {
        for arg in command.get_arguments() {
            names.extend(arg.get_long().map(str::to_owned));
        }
        for sub in command.get_subcommands() {
            long_names(sub, names);
        }
    }
    let mut names = std::collections::HashSet::new();
    long_names(&Cli::command(), &mut names);
    let mut out = Vec::new();
    let mut flags_end = false;
    for (i, arg) in args.into_iter().map(Into::into).enumerate() {
        flags_end |= arg == "--";
        let rewritten = arg.to_str().and_then(|text| {
            let rest = text.strip_prefix('-').filter(|r| !r.starts_with('-'))?;
            let name = rest.split('=').next()?;
            (i > 0 && !flags_end && name.len() > 1 && names.contains(name))
                .then(|| OsString::from(format!("-{text}")))
        });
        out.push(rewritten.unwrap_or(arg));
    }
    out
}

/// Parses a bind address the way controller-runtime takes it: `:8080` binds every interface,
/// `0` (or empty) turns the endpoint off.
pub(crate) fn parse_bind_address(flag: &str, value: &str) -> Result<Option<SocketAddr>, String> {
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

/// A provider binary, with optional extras; [`run()`] is `App::new().run()`.
pub struct App<P> {
    init_hook: Option<InitHook>,
    dev_samples: (Option<serde_json::Value>, Option<serde_json::Value>),
    names: Names,
    reconcile_timeout: Option<Duration>,
    _provider: PhantomData<fn() -> P>,
}

/// Names a Go provider chose in code, for a provider that takes over from it.
#[derive(Clone, Debug, Default)]
struct Names {
    onboarding_controller: Option<String>,
    leader_election_id: Option<String>,
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
            names: Names::default(),
            reconcile_timeout: None,
            _provider: PhantomData,
        }
    }

    /// What `dev` creates: the ProviderConfig's `spec` and the sample object's `spec`; the
    /// ProviderConfig's is also the one `manifests --image` writes for the platform operator. Without
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

    /// The controller name of the onboarding requests `<name>--onboarding-init` and
    /// `<name>--onboarding-run` (their `openmcp.cloud/managed-by` label and the first part of
    /// their names). Default: the Service API group, as the service-provider-template passes it
    /// to `clusteraccess.NewClusterAccessManager`. A Go provider that passed another name there
    /// (service-provider-velero: `velero.velero.services.openmcp.cloud`) is taken over with that
    /// name, so `init` and `run` reuse its requests instead of ordering new ones.
    pub fn onboarding_controller(mut self, name: impl Into<String>) -> Self {
        self.names.onboarding_controller = Some(name.into());
        self
    }

    /// The name of standard mode's Lease: the `LeaderElectionID` of the Go provider this one
    /// replaces (service-provider-velero: `services.open-control-plane.io.velero`), so that
    /// during a rolling update a Go replica and a Rust replica never lead at once. Default:
    /// `<provider-name>-standard`. `run --leader-election-id` overrides it.
    pub fn leader_election_id(mut self, id: impl Into<String>) -> Self {
        self.names.leader_election_id = Some(id.into());
        self
    }

    /// Cancels a `create_or_update` or `delete` that runs longer than `timeout`: the reconcile
    /// fails with reason `ReconcileTimedOut` in the object's `Ready` condition (the message says
    /// after how long), its worker is free for other objects, and it is retried with backoff.
    /// Default: no limit, as controller-runtime's `ReconciliationTimeout`. `run
    /// --reconcile-timeout` overrides it (`0` turns it off). Code that blocks its thread instead
    /// of awaiting cannot be cancelled.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = (!timeout.is_zero()).then_some(timeout);
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
        let cli = match Cli::try_parse_from(go_style_args(args)) {
            Ok(cli) => cli,
            Err(err) => return usage_error(err),
        };
        let command = cli.command;
        let common = cli.common;
        if let Some(Command::Manifests {
            output,
            check,
            image,
        }) = &command
        {
            let mut list = manifests::manifests::<P>();
            if let Some(image) = image {
                list.extend(manifests::deployment::<P>(
                    &provider_name::<P>(&common),
                    image,
                    self.dev_samples.0.as_ref(),
                ));
            }
            return manifests_command::<P>(&list, output, *check);
        }
        // `dev` (asked for, or chosen because no cluster is configured) is read by a person.
        let dev = match &command {
            Some(Command::Dev(_)) => true,
            None => common.kubeconfig.is_none() && !in_cluster(),
            Some(_) => false,
        };
        let format = common.log_format.unwrap_or(if dev {
            LogFormat::Text
        } else {
            LogFormat::Json
        });
        crate::ops::logging::init(
            common.verbosity,
            format,
            crate::ops::logging::crate_of::<P>(),
        );
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(err) => return fail(format!("cannot start the async runtime: {err}")),
        };
        let result = runtime.block_on(async move {
            match command {
                Some(Command::Init(args)) => self.init_command(&common, &args).await,
                Some(Command::Run(args)) => {
                    run_command::<P>(&common, &args, &self.names, self.reconcile_timeout).await
                }
                Some(Command::Dev(args)) => self.dev_command(&common, &args).await,
                Some(Command::Manifests { .. }) => Ok(()),
                None if common.kubeconfig.is_some() || in_cluster() => {
                    let args = RunArgs::default();
                    run_command::<P>(&common, &args, &self.names, self.reconcile_timeout).await
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

    async fn init_command(&self, common: &Common, args: &InitArgs) -> Result<(), String> {
        let platform = platform_client(common).await?;
        let provider_name = provider_name::<P>(common);
        let pod_namespace = pod_namespace()?;
        let options = InitOptions {
            webhook: args.go.webhook_client(&provider_name, &pod_namespace),
            provider_name,
            environment: common.environment.clone(),
            pod_namespace,
            access_timeout: Duration::from_secs(30 * 60),
            crd_timeout: Duration::from_secs(60),
            onboarding_controller: self.names.onboarding_controller.clone(),
        };
        crate::cli::init::init::<P>(platform, &options, self.init_hook.clone())
            .await
            .map_err(|e| e.to_string())
    }

    #[cfg(feature = "dev")]
    async fn dev_command(&self, common: &Common, args: &DevArgs) -> Result<(), String> {
        let metrics_addr = parse_bind_address("metrics-bind-address", &args.metrics_bind_address)?;
        let health_addr =
            parse_bind_address("health-probe-bind-address", &args.health_probe_bind_address)?;
        crate::cli::dev::run::<P>(crate::cli::dev::DevOptions {
            provider_name: provider_name::<P>(common),
            kubeconfig_dir: common.kubeconfig_dir.clone(),
            metrics_addr,
            health_addr,
            samples: crate::cli::dev::DevSamples {
                provider_config: self.dev_samples.0.clone(),
                object: self.dev_samples.1.clone(),
            },
            reconcile_timeout: self.reconcile_timeout,
        })
        .await
    }

    #[cfg(not(feature = "dev"))]
    async fn dev_command(&self, _common: &Common, _args: &DevArgs) -> Result<(), String> {
        Err("no platform cluster configured: pass --kubeconfig, or run in a pod (this provider was built without the `dev` feature, so it cannot start a local one)".to_owned())
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

/// [`run()`] with explicit arguments (the first is the program name), for tests.
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

/// The platform cluster's client, found as controller-runtime's `GetConfig` finds it:
/// `--kubeconfig`; else `KUBECONFIG`; else the pod's in-cluster config; else
/// `$HOME/.kube/config`.
async fn platform_client(common: &Common) -> Result<kube::Client, String> {
    let (config, source) = platform_config(common.kubeconfig.as_deref()).await?;
    ClientFactory::new()
        .client_for(config)
        .map_err(|e| format!("{source}: {e}; pass a valid kubeconfig for the platform cluster"))
}

/// The platform cluster's config and where it came from (for messages).
async fn platform_config(flag: Option<&std::path::Path>) -> Result<(kube::Config, String), String> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let from = |kubeconfig: Kubeconfig, source: String| async move {
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map(|config| (config, source.clone()))
            .map_err(|e| format!("{source}: {e}; pass a valid kubeconfig for the platform cluster"))
    };
    if let Some(path) = flag {
        let source = format!("--kubeconfig {}", path.display());
        if let Err(e) = std::fs::metadata(path) {
            return Err(format!("cannot read {source}: {e}"));
        }
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
            format!("{source}: {e}; pass a valid kubeconfig for the platform cluster")
        })?;
        return from(kubeconfig, source).await;
    }
    if let Some(list) = std::env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty()) {
        let kubeconfig = merged_kubeconfigs(&list)?;
        let source = format!("KUBECONFIG={}", list.to_string_lossy());
        return from(kubeconfig, source).await;
    }
    if in_cluster() {
        let config = kube::Config::incluster().map_err(|e| {
            format!(
                "cannot use the in-cluster config: {e}; pass --kubeconfig for the platform cluster"
            )
        })?;
        return Ok((config, "the in-cluster config".to_owned()));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let path = PathBuf::from(home).join(".kube").join("config");
        if path.exists() {
            let source = path.display().to_string();
            let kubeconfig = Kubeconfig::read_from(&path).map_err(|e| {
                format!("{source}: {e}; pass a valid kubeconfig for the platform cluster")
            })?;
            return from(kubeconfig, source).await;
        }
    }
    Err(
        "no platform cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a pod"
            .to_owned(),
    )
}

const KUBECONFIG_ENV: &str = "KUBECONFIG";

/// The files of a `KUBECONFIG` list merged as client-go merges them: empty entries and
/// missing files skipped, a file named twice read once, the first file to set a value (a
/// cluster, user or context name, `current-context`) wins.
fn merged_kubeconfigs(list: &std::ffi::OsStr) -> Result<kube::config::Kubeconfig, String> {
    use kube::config::Kubeconfig;
    let mut seen = std::collections::HashSet::new();
    let mut merged: Option<Kubeconfig> = None;
    for path in std::env::split_paths(list) {
        if path.as_os_str().is_empty() || !seen.insert(path.clone()) || !path.exists() {
            continue;
        }
        let next = Kubeconfig::read_from(&path).map_err(|e| {
            format!(
                "KUBECONFIG file {}: {e}; pass a valid kubeconfig for the platform cluster",
                path.display()
            )
        })?;
        merged = Some(match merged {
            None => next,
            Some(merged) => merged
                .merge(next)
                .map_err(|e| format!("KUBECONFIG file {}: {e}", path.display()))?,
        });
    }
    merged.ok_or_else(|| {
        format!(
            "KUBECONFIG={} names no existing file; point it at the platform cluster's kubeconfig",
            list.to_string_lossy()
        )
    })
}

async fn run_command<P: Reconcile>(
    common: &Common,
    args: &RunArgs,
    names: &Names,
    reconcile_timeout: Option<Duration>,
) -> Result<(), String> {
    let kcp = args.kcp.settings(&P::INFO)?;
    let metrics_addr = parse_bind_address("metrics-bind-address", &args.go.metrics_bind_address)?;
    let health_addr = parse_bind_address(
        "health-probe-bind-address",
        &args.go.health_probe_bind_address,
    )?;
    let platform = platform_client(common).await?;
    let mut options = RunOptions::new(provider_name::<P>(common), pod_namespace()?);
    options.environment = common.environment.clone();
    options.pod_name = std::env::var(ENV_POD_NAME).ok().filter(|n| !n.is_empty());
    options.metrics_addr = metrics_addr;
    options.metrics_tls = args.go.metrics_tls();
    options.health_addr = health_addr;
    if crate::conversion::needs_webhook::<P>() {
        options.webhook = args.go.webhook()?;
    }
    options.leader_elect = args.go.leader_elect;
    options.onboarding_controller = names.onboarding_controller.clone();
    options.leader_election_id = args
        .leader_election_id
        .clone()
        .or_else(|| names.leader_election_id.clone())
        .filter(|id| !id.is_empty());
    options.leader.lease_duration = Duration::from_secs(args.leader_elect_lease_duration);
    options.leader.renew_deadline = Duration::from_secs(args.leader_elect_renew_deadline);
    options.leader.retry_period = Duration::from_secs(args.leader_elect_retry_period);
    // client-go's checks (NewLeaderElector).
    if args.leader_elect_renew_deadline >= args.leader_elect_lease_duration {
        return Err(
            "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
                .to_owned(),
        );
    }
    if args.leader_elect_retry_period as f64 * 1.2 >= args.leader_elect_renew_deadline as f64 {
        return Err(
            "--leader-elect-retry-period must be shorter than --leader-elect-renew-deadline / 1.2"
                .to_owned(),
        );
    }
    options.concurrency = usize::try_from(args.concurrency).unwrap_or(16);
    options.reconcile.timeout = match args.reconcile_timeout {
        Some(flag) => Some(flag.0).filter(|t| !t.is_zero()),
        None => reconcile_timeout,
    };
    serve::<P>(platform, options, kcp, &args.kcp).await
}

/// Runs standard mode, and kcp mode when `--kcp-kubeconfig` or the ProviderConfig's `kcp` block
/// asks for it, until SIGTERM.
async fn serve<P: Reconcile>(
    platform: kube::Client,
    options: RunOptions,
    kcp: Option<crate::modes::kcp::KcpSettings>,
    kcp_args: &crate::modes::kcp::flags::KcpArgs,
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

/// `--image`: a container image reference, which the ServiceProvider CRD requires non-empty.
fn parse_image(value: &str) -> Result<String, String> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err("write the image like registry.example/velero-provider:0.1.0".to_owned());
    }
    Ok(value.to_owned())
}

fn manifests_command<P: Reconcile>(
    list: &[manifests::Manifest],
    output: &std::path::Path,
    check: bool,
) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    if check {
        match manifests::check_dir(list, output) {
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
        match manifests::write_dir(list, output) {
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

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(go_style_args(args.iter().copied()))
    }

    fn run_args(args: &[&str]) -> RunArgs {
        match parse(args).unwrap().command {
            Some(Command::Run(run)) => run,
            other => panic!("run expected: {other:?}"),
        }
    }

    #[test]
    fn flags_parse_anywhere_and_verbosity_is_checked() {
        let cli = parse(&[
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
        assert!(run.go.leader_elect);
        assert!(run_args(&["p", "run", "--leader-elect"]).go.leader_elect);
        assert!(parse(&["p", "run", "--verbosity", "LOUD"]).is_err());
        let cli = parse(&["p", "--kubeconfig", "/k"]).unwrap();
        assert!(cli.command.is_none());
    }

    #[test]
    fn reconcile_timeout_is_a_go_duration() {
        assert_eq!(run_args(&["p", "run"]).reconcile_timeout, None);
        let timeout = run_args(&["p", "run", "--reconcile-timeout=1m30s"]).reconcile_timeout;
        assert_eq!(timeout.map(|t| t.0), Some(Duration::from_secs(90)));
        let timeout = run_args(&["p", "run", "--reconcile-timeout", "0"]).reconcile_timeout;
        assert_eq!(timeout.map(|t| t.0), Some(Duration::ZERO));
        let err = parse(&["p", "run", "--reconcile-timeout", "soon"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("write it like 30s"), "{err}");
    }

    #[test]
    fn log_format_takes_json_or_text_under_either_name() {
        assert_eq!(parse(&["p", "run"]).unwrap().common.log_format, None);
        for args in [
            &["p", "run", "--log-format", "json"][..],
            &["p", "run", "--format=JSON"],
            &["p", "-f", "json", "run"],
            &["p", "run", "-log-format=json"],
        ] {
            let cli = parse(args).unwrap();
            assert_eq!(cli.common.log_format, Some(LogFormat::Json), "{args:?}");
        }
        assert_eq!(
            parse(&["p", "dev", "--log-format", "text"])
                .unwrap()
                .common
                .log_format,
            Some(LogFormat::Text)
        );
        let err = parse(&["p", "run", "--log-format", "yaml"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("yaml") && err.contains("use json or text"),
            "{err}"
        );
    }

    /// What the openMCP operator's Deployment and init Job pass (openmcp-operator
    /// `internal/controllers/provider/install/{deployment,job}.go`).
    #[test]
    fn the_operators_command_lines_parse() {
        let run = run_args(&[
            "p",
            "run",
            "--environment=prod",
            "--verbosity=INFO",
            "--provider-name=velero",
            "--leader-elect=true",
            "--metrics-bind-address=:8080",
            "--metrics-secure=false",
        ]);
        assert!(run.go.leader_elect);
        assert_eq!(run.go.metrics_bind_address, ":8080");
        assert_eq!(run.go.metrics_tls(), None);
        let init = parse(&[
            "p",
            "init",
            "--environment=prod",
            "--verbosity=debug",
            "--provider-name=velero",
        ])
        .unwrap();
        assert!(matches!(init.command, Some(Command::Init(_))));
        assert_eq!(init.common.verbosity, Verbosity::Debug);
        assert_eq!(init.common.environment, "prod");
    }

    /// The defaults of the service-provider-template's `main.go`.
    #[test]
    fn go_defaults() {
        let run = run_args(&["p", "run"]);
        assert_eq!(run.go.metrics_bind_address, "0");
        assert!(run.go.metrics_secure);
        assert_eq!(
            run.go.metrics_tls(),
            Some(crate::ops::ServingCert::SelfSigned)
        );
        assert_eq!(run.go.health_probe_bind_address, ":8081");
        assert!(!run.go.leader_elect);
        assert!(!run.go.enable_http2);
        let defaults = RunArgs::default();
        assert_eq!(
            (
                defaults.go.metrics_bind_address.as_str(),
                defaults.go.metrics_secure,
                defaults.go.health_probe_bind_address.as_str(),
                defaults.go.leader_elect
            ),
            ("0", true, ":8081", false)
        );
        assert_eq!(
            (
                run.leader_elect_lease_duration,
                run.leader_elect_renew_deadline,
                run.leader_elect_retry_period,
                run.leader_election_id.as_deref()
            ),
            (15, 10, 2, None),
            "controller-runtime's LeaseDuration, RenewDeadline and RetryPeriod"
        );
        let id = run_args(&[
            "p",
            "run",
            "--leader-election-id=services.open-control-plane.io.velero",
        ]);
        assert_eq!(
            id.leader_election_id.as_deref(),
            Some("services.open-control-plane.io.velero")
        );
        let run = run_args(&[
            "p",
            "run",
            "--metrics-cert-path=/certs",
            "--metrics-cert-name=c.pem",
        ]);
        assert_eq!(
            run.go.metrics_tls(),
            Some(crate::ops::ServingCert::Files {
                cert: "/certs/c.pem".into(),
                key: "/certs/tls.key".into()
            })
        );
    }

    /// Booleans as Go's flag packages parse them: `--x`, `--x=<ParseBool>`, one dash or two;
    /// a separate value is not consumed (Go would read `--x false` as `--x` and an argument).
    #[test]
    fn booleans_parse_as_in_go() {
        for (arg, expected) in [
            ("--metrics-secure", true),
            ("--metrics-secure=true", true),
            ("--metrics-secure=false", false),
            ("--metrics-secure=0", false),
            ("--metrics-secure=F", false),
            ("--metrics-secure=FALSE", false),
            ("--metrics-secure=False", false),
            ("--metrics-secure=1", true),
            ("--metrics-secure=t", true),
            ("--metrics-secure=True", true),
            ("-metrics-secure=false", false),
            ("-metrics-secure", true),
        ] {
            assert_eq!(
                run_args(&["p", "run", arg]).go.metrics_secure,
                expected,
                "{arg}"
            );
        }
        for bad in [
            "--metrics-secure=yes",
            "--metrics-secure=off",
            "--leader-elect=2",
        ] {
            assert!(parse(&["p", "run", bad]).is_err(), "{bad}");
        }
        assert!(parse(&["p", "run", "--leader-elect", "false"]).is_err());
        for (arg, expected) in [("--enable-http2", true), ("-enable-http2=false", false)] {
            assert_eq!(run_args(&["p", "run", arg]).go.enable_http2, expected);
        }
        // One dash for flags with values too, and `-v` for --verbosity (controller-utils').
        let cli = parse(&["p", "run", "-metrics-bind-address=:9090", "-v", "error"]).unwrap();
        assert_eq!(cli.common.verbosity, Verbosity::Error);
        let Some(Command::Run(run)) = cli.command else {
            panic!("run")
        };
        assert_eq!(run.go.metrics_bind_address, ":9090");
    }

    /// A flag given twice takes its last value, as in Go (a runCommand that already has
    /// `--leader-elect=true` still starts when the operator appends it again).
    #[test]
    fn the_last_value_wins() {
        let run = run_args(&[
            "p",
            "run",
            "--leader-elect=true",
            "--metrics-bind-address=:1",
            "--leader-elect=true",
            "--metrics-bind-address=:2",
            "--metrics-secure=false",
            "--metrics-secure",
        ]);
        assert!(run.go.leader_elect);
        assert_eq!(run.go.metrics_bind_address, ":2");
        assert!(run.go.metrics_secure);
        let cli = parse(&[
            "p",
            "init",
            "--provider-name=a",
            "--provider-name=b",
            "--verbosity=INFO",
            "--verbosity=ERROR",
        ])
        .unwrap();
        assert_eq!(cli.common.provider_name.as_deref(), Some("b"));
        assert_eq!(cli.common.verbosity, Verbosity::Error);
    }

    /// `init` takes the Go binary's flags too and ignores them.
    #[test]
    fn init_accepts_the_go_flags() {
        let cli = parse(&[
            "p",
            "init",
            "--leader-elect=true",
            "--metrics-bind-address=:8080",
            "--metrics-secure=false",
            "--health-probe-bind-address=:8081",
            "--enable-http2=false",
            "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
        ])
        .unwrap();
        assert!(matches!(cli.command, Some(Command::Init(_))));
    }

    #[test]
    fn one_dash_is_only_rewritten_for_long_flags() {
        let args = go_style_args([
            "-leader-elect",
            "-leader-elect",
            "-v",
            "-x",
            "--",
            "-concurrency",
        ]);
        assert_eq!(
            args,
            [
                "-leader-elect",
                "--leader-elect",
                "-v",
                "-x",
                "--",
                "-concurrency"
            ]
            .map(OsString::from)
        );
    }

    #[tokio::test]
    async fn kubeconfig_follows_client_go() {
        let dir = std::env::temp_dir().join(format!("sp-cli-kubeconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = |server: &str, context: &str| {
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: {context}\n  cluster:\n    server: {server}\nusers:\n- name: {context}\n  user:\n    token: t\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: {context}\n"
            )
        };
        let a = dir.join("a");
        let b = dir.join("b");
        std::fs::write(&a, kubeconfig("https://a.example:6443", "a")).unwrap();
        std::fs::write(&b, kubeconfig("https://b.example:6443", "b")).unwrap();
        let list = std::env::join_paths([dir.join("missing"), a.clone(), b.clone()]).unwrap();
        // The first file that sets current-context wins; missing files are skipped.
        let merged = merged_kubeconfigs(&list).unwrap();
        assert_eq!(merged.current_context.as_deref(), Some("a"));
        assert_eq!(merged.clusters.len(), 2);
        let reversed = std::env::join_paths([b.clone(), a.clone()]).unwrap();
        assert_eq!(
            merged_kubeconfigs(&reversed)
                .unwrap()
                .current_context
                .as_deref(),
            Some("b")
        );
        let none = std::env::join_paths([dir.join("missing")]).unwrap();
        assert!(
            merged_kubeconfigs(&none)
                .unwrap_err()
                .contains("names no existing file")
        );
        // --kubeconfig wins over everything.
        let (config, source) = platform_config(Some(&b)).await.unwrap();
        assert_eq!(config.cluster_url.host(), Some("b.example"));
        assert!(source.contains("--kubeconfig"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
