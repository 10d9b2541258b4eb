//! A running provider process: the shared pieces (platform view, metrics, probes, shutdown) and
//! the modes started on them, each with its own leader election.
//!
//! `run` assembles one with [`Runtime::start`] and [`Runtime::start_standard`]; tests, benchmarks
//! and `dev` do the same in-process. kcp mode adds itself the same way as standard mode: a
//! [`Source`](crate::controller::Source) and a [`Controller`] on the shared [`Platform`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::access::clients::ClientFactory;
use crate::access::onboarding::{OnboardingError, onboarding_access};
use crate::context::Mode;
use crate::controller::{Controller, Options, Source};
use crate::openmcp::constants::ONBOARDING_RUN_LOCAL_NAME;
use crate::ops::leader::{LeaderElection, LeaderOptions, lease_name};
use crate::ops::{Metrics, Readiness, serve_health, serve_metrics};
use crate::platform::Platform;
use crate::provider::Reconcile;
use crate::rbac;
use crate::standard::Standard;

/// How a provider process runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `--provider-name`: names the ProviderConfig, the access requests and the Leases.
    pub provider_name: String,
    /// `--environment` (recorded; openMCP defines no behaviour for it).
    pub environment: String,
    /// The namespace the provider runs in (`POD_NAMESPACE`).
    pub pod_namespace: String,
    /// The pod's name (`POD_NAME`), reported in Events.
    pub pod_name: Option<String>,
    /// Where to serve `/metrics`; `None` serves nothing.
    pub metrics_addr: Option<SocketAddr>,
    /// Where to serve `/healthz` and `/readyz`; `None` serves nothing.
    pub health_addr: Option<SocketAddr>,
    /// Campaign for a Lease per mode instead of reconciling at once.
    pub leader_elect: bool,
    /// Lease settings.
    pub leader: LeaderOptions,
    /// How many objects of a mode are reconciled at once.
    pub concurrency: usize,
    /// How long to wait for onboarding access at start-up.
    pub onboarding_timeout: Duration,
    /// Tunables of the reconcile algorithm.
    pub reconcile: Options,
}

impl RunOptions {
    /// Defaults for provider `provider_name` in `pod_namespace`: no endpoints, no election.
    pub fn new(provider_name: impl Into<String>, pod_namespace: impl Into<String>) -> Self {
        RunOptions {
            provider_name: provider_name.into(),
            environment: String::new(),
            pod_namespace: pod_namespace.into(),
            pod_name: std::env::var(crate::openmcp::constants::ENV_POD_NAME).ok(),
            metrics_addr: None,
            health_addr: None,
            leader_elect: false,
            leader: LeaderOptions::default(),
            concurrency: 16,
            onboarding_timeout: Duration::from_secs(30 * 60),
            reconcile: Options::default(),
        }
    }
}

/// Why a provider could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// An endpoint could not be bound.
    #[error("cannot serve {what} on {addr}: {source}; pick another address")]
    Bind {
        /// metrics or health probes.
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// What failed.
        source: std::io::Error,
    },
    /// Onboarding access failed.
    #[error("onboarding access: {0}")]
    Onboarding(#[from] OnboardingError),
    /// Leader election could not start.
    #[error("leader election: {0}")]
    Leader(#[from] kube_lease_manager::LeaseManagerError),
    /// Shut down before start-up finished.
    #[error("shut down while starting")]
    Cancelled,
}

/// A provider process. Dropping it does not stop it: call [`shutdown`](Self::shutdown) and
/// [`wait`](Self::wait).
pub struct Runtime<P: Reconcile> {
    platform: Arc<Platform<P>>,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: CancellationToken,
    tasks: JoinSet<()>,
    options: RunOptions,
    metrics_addr: Option<SocketAddr>,
    health_addr: Option<SocketAddr>,
    modes: Vec<Mode>,
}

impl<P: Reconcile> Runtime<P> {
    /// Starts the shared pieces against the platform cluster: endpoints and platform watches.
    pub async fn start(platform: kube::Client, options: RunOptions) -> Result<Self, StartError> {
        let shutdown = CancellationToken::new();
        let metrics = Metrics::new();
        let readiness = Readiness::new();
        let metrics_addr = match options.metrics_addr {
            Some(addr) => Some(
                serve_metrics(addr, metrics.clone(), shutdown.clone())
                    .await
                    .map_err(|source| StartError::Bind {
                        what: "metrics",
                        addr,
                        source,
                    })?,
            ),
            None => None,
        };
        let health_addr = match options.health_addr {
            Some(addr) => Some(
                serve_health(addr, readiness.clone(), shutdown.clone())
                    .await
                    .map_err(|source| StartError::Bind {
                        what: "health probes",
                        addr,
                        source,
                    })?,
            ),
            None => None,
        };
        let platform = Platform::<P>::new(
            platform,
            &options.provider_name,
            &options.pod_namespace,
            options.pod_name.clone(),
            Default::default(),
            ClientFactory::new(),
        );
        let mut tasks = JoinSet::new();
        tasks.spawn(platform.clone().run(shutdown.clone()));
        tracing::info!(
            provider = %options.provider_name,
            namespace = %options.pod_namespace,
            metrics = ?metrics_addr,
            probes = ?health_addr,
            "starting"
        );
        Ok(Runtime {
            platform,
            metrics,
            readiness,
            shutdown,
            tasks,
            options,
            metrics_addr,
            health_addr,
            modes: Vec::new(),
        })
    }

    /// The shared platform view.
    pub fn platform(&self) -> &Arc<Platform<P>> {
        &self.platform
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The readiness flag behind `/readyz`.
    pub fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// The bound metrics address, if serving.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The bound probe address, if serving.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_addr
    }

    /// The token that stops everything.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// The options.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// Standard mode: onboarding access `<group>--onboarding-run`, a watch of the Service API
    /// on the onboarding cluster, and its controller (leader-elected when asked).
    pub async fn start_standard(&mut self) -> Result<Arc<Standard<P>>, StartError> {
        let info = P::INFO;
        let onboarding = tokio::select! {
            access = onboarding_access(
                self.platform.client(),
                self.platform.client_factory(),
                info.group,
                &self.options.pod_namespace,
                ONBOARDING_RUN_LOCAL_NAME,
                rbac::onboarding_run_rules(&info),
                self.options.onboarding_timeout,
            ) => access?,
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        };
        tracing::info!("onboarding access granted");
        let source = Standard::<P>::new(onboarding.client().clone(), self.platform.clone());
        let controller = Controller::new(
            source.clone(),
            self.platform.clone(),
            self.metrics.clone(),
            self.options.reconcile.clone(),
            self.options.concurrency,
        );
        let triggers = self.platform.triggers().clone();
        let watch = source.clone().run(triggers);
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = watch => {}
                _ = shutdown.cancelled() => {}
            }
        });
        let synced = source.objects().clone();
        self.start_mode(Mode::Standard, controller, async move {
            synced.wait_synced().await
        })
        .await?;
        Ok(source)
    }

    /// Runs `controller` once its caches (and the platform's) are synced, under a Lease when
    /// leader election is on. Marks the process ready once every started mode is synced.
    pub async fn start_mode<S: Source<P>>(
        &mut self,
        mode: Mode,
        controller: Controller<P, S>,
        synced: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        tokio::select! {
            _ = async { self.platform.wait_synced().await; synced.await } => {}
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        }
        tracing::info!(mode = mode.as_str(), "caches synced");
        let election = if self.options.leader_elect {
            LeaderElection::campaign(
                self.platform.client().clone(),
                &self.options.pod_namespace,
                &lease_name(&self.options.provider_name, mode),
                &self.options.leader,
            )
            .await?
        } else {
            LeaderElection::always()
        };
        let leading = election.leading.clone();
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            controller.run(leading, shutdown).await;
            election.release().await;
        });
        self.modes.push(mode);
        self.readiness.set(true);
        Ok(())
    }

    /// Stops taking new work; running reconciles finish (see [`wait`](Self::wait)).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Waits until everything stopped (after [`shutdown`](Self::shutdown)).
    pub async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
        tracing::info!("stopped");
    }

    /// Runs until `signal` resolves, then shuts down gracefully.
    pub async fn run_until(self, signal: impl std::future::Future<Output = ()>) {
        let shutdown = self.shutdown.clone();
        tokio::select! {
            _ = signal => {}
            _ = shutdown.cancelled() => {}
        }
        self.shutdown();
        self.readiness.set(false);
        self.wait().await;
    }
}
