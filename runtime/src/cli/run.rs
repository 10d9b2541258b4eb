//! A running provider process: the shared pieces (platform view, metrics, probes, shutdown) and
//! the modes started on them, each with its own leader election.
//!
//! `run` assembles one with [`Runtime::start`], [`Runtime::start_standard`] and, when configured,
//! [`Runtime::start_kcp`]; tests, benchmarks and `dev` do the same in-process. Each mode is a
//! [`Source`] and a [`Controller`] on the shared `Platform`, under
//! its own Lease.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::access::clients::ClientFactory;
use crate::access::onboarding::{OnboardingError, onboarding_access};
use crate::cli::storage_migration::Migration;
use crate::controller::{Controller, Options, Source};
use crate::manifests::rbac;
use crate::modes::kcp::provider_workspace::ConnectionError;
use crate::modes::kcp::provision::{ProvisionError, provision};
use crate::modes::kcp::{KcpSettings, KcpSource, ProviderWorkspace};
use crate::modes::standard::Standard;
use crate::openmcp::constants::ONBOARDING_RUN_LOCAL_NAME;
use crate::ops::leader::{LeaderElection, LeaderOptions, lease_name};
use crate::ops::{Metrics, Readiness, ServingCert, serve_health, serve_metrics, serve_webhook};
use crate::platform::Platform;
use crate::provider::ServiceProvider;
use crate::reconcile::Reconcile;
use crate::tenant::Mode;

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
    /// Serve `/metrics` over HTTPS with this certificate (`--metrics-secure`); `None`: HTTP.
    pub metrics_tls: Option<ServingCert>,
    /// Where to serve `/healthz` and `/readyz`; `None` serves nothing.
    pub health_addr: Option<SocketAddr>,
    /// Where and with which certificate to serve the conversion webhook, when the provider
    /// converts a version in Rust ([`crate::conversion::needs_webhook`]); `None` serves nothing.
    pub webhook: Option<WebhookServing>,
    /// Campaign for a Lease per mode instead of reconciling at once.
    pub leader_elect: bool,
    /// Lease settings.
    pub leader: LeaderOptions,
    /// Name of standard mode's Lease (the Go provider's `LeaderElectionID`); `None`:
    /// `<provider-name>-standard`.
    pub leader_election_id: Option<String>,
    /// The controller name of the onboarding requests; `None`: the Service API group.
    pub onboarding_controller: Option<String>,
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
            metrics_tls: None,
            health_addr: None,
            webhook: None,
            leader_elect: false,
            leader: LeaderOptions::default(),
            leader_election_id: None,
            onboarding_controller: None,
            concurrency: 16,
            onboarding_timeout: Duration::from_secs(30 * 60),
            reconcile: Options::default(),
        }
    }
}

/// What `run` asks for on the onboarding cluster: what it needs, and for a provider converting a
/// version in Rust, what the storage migration needs (see [`migrate_stored_objects`]).
pub(crate) fn onboarding_run_rules<P: ServiceProvider>() -> Vec<PolicyRule> {
    let mut rules = rbac::onboarding_run_rules(&P::INFO);
    if crate::conversion::needs_webhook::<P>() {
        rules.extend(rbac::storage_migration_rules(&P::INFO));
        rules.push(rbac::service_crd_read_rule(&P::INFO));
    }
    rules
}

/// Migrates the stored objects of the Service API CRD `crd` to its storage version, as `init`
/// does for a CRD without a conversion webhook: here, once the webhook the migration reads them
/// through serves. Retried with backoff until it succeeds or the provider stops; reconciling does
/// not wait for it.
async fn migrate_stored_objects(client: kube::Client, crd: String, shutdown: CancellationToken) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut delay = Duration::from_secs(1);
    loop {
        let attempt = async {
            let installed = crds
                .get(&crd)
                .await
                .map_err(|e| format!("reading CRD {crd}: {e}"))?;
            crate::cli::storage_migration::migrate(
                &client,
                &installed,
                crate::cli::storage_migration::PAGE_SIZE,
            )
            .await
            .map_err(|e| e.to_string())
        };
        match attempt.await {
            Ok(Migration::Current) => return,
            Ok(Migration::Migrated {
                storage,
                dropped,
                rewritten,
            }) => {
                tracing::info!(%crd, %storage, ?dropped, rewritten, "stored objects migrated to the storage version");
                return;
            }
            Err(err) => {
                tracing::warn!(%crd, error = %err, retry_in = ?delay, "migrating the stored objects to the storage version failed");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.cancelled() => return,
        }
        delay = (delay * 2).min(Duration::from_secs(300));
    }
}

/// The conversion webhook's address and certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookServing {
    /// `--webhooks-bind-address` (`:9443`, controller-runtime's webhook port).
    pub addr: SocketAddr,
    /// `--webhook-cert-path` with `--webhook-cert-name` and `--webhook-cert-key`.
    pub cert: ServingCert,
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
    /// The metrics certificate is unusable.
    #[error("--metrics-secure: {0}; fix the certificate files or pass --metrics-secure=false")]
    MetricsTls(#[from] crate::ops::tls::TlsError),
    /// The conversion webhook's certificate is unusable.
    #[error(
        "the conversion webhook's certificate: {0}; this provider converts a version of its Service API in Rust and serves POST /convert over HTTPS: mount the certificate the CRD's caBundle trusts and point --webhook-cert-path at its directory (--webhook-cert-name, --webhook-cert-key name the files)"
    )]
    WebhookTls(#[source] crate::ops::tls::TlsError),
    /// Onboarding access failed.
    #[error("onboarding access: {0}")]
    Onboarding(#[from] OnboardingError),
    /// Shut down before start-up finished.
    #[error("shut down while starting")]
    Cancelled,
    /// kcp mode was asked of a provider declared without `kcp`.
    #[error(
        "{0} is declared without `kcp` in #[service_provider(...)], so it cannot serve kcp workspaces; remove the kcp settings (--kcp-kubeconfig, the ProviderConfig kcp block) or add `kcp` to the attribute"
    )]
    KcpNotDeclared(&'static str),
    /// The provider workspace could not be reached.
    #[error("kcp: {0}")]
    KcpConnection(#[from] ConnectionError),
    /// The export could not be provisioned.
    #[error("kcp: provisioning the APIExport: {0}")]
    KcpProvision(#[from] ProvisionError),
    /// The ProviderConfig's kcp block cannot be used.
    #[error("kcp: {0}")]
    KcpConfig(String),
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
    webhook_addr: Option<SocketAddr>,
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
                serve_metrics(
                    addr,
                    metrics.clone(),
                    options
                        .metrics_tls
                        .as_ref()
                        .map(crate::ops::tls::acceptor)
                        .transpose()?,
                    shutdown.clone(),
                )
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
        let webhook_addr = match &options.webhook {
            Some(webhook) if crate::conversion::needs_webhook::<P>() => {
                let tls =
                    crate::ops::tls::acceptor(&webhook.cert).map_err(StartError::WebhookTls)?;
                Some(
                    serve_webhook(
                        webhook.addr,
                        tls,
                        crate::conversion::review::<P>,
                        shutdown.clone(),
                    )
                    .await
                    .map_err(|source| StartError::Bind {
                        what: "the conversion webhook",
                        addr: webhook.addr,
                        source,
                    })?,
                )
            }
            _ => None,
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
            metrics_secure = options.metrics_tls.is_some(),
            probes = ?health_addr,
            conversion_webhook = ?webhook_addr,
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
            webhook_addr,
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

    /// The bound conversion webhook address, if serving.
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.webhook_addr
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
                self.options.onboarding_controller.as_deref().unwrap_or(info.group),
                &self.options.pod_namespace,
                ONBOARDING_RUN_LOCAL_NAME,
                onboarding_run_rules::<P>(),
                self.options.onboarding_timeout,
            ) => access?,
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        };
        tracing::info!("onboarding access granted");
        if crate::conversion::needs_webhook::<P>() {
            self.tasks.spawn(migrate_stored_objects(
                onboarding.client().clone(),
                P::crd_name().to_owned(),
                self.shutdown.clone(),
            ));
        }
        let source = Standard::<P>::new(onboarding.client().clone(), self.platform.clone());
        let controller = self.controller(source.clone());
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
        // Where a Go provider's manager holds its Lease: on the onboarding cluster (the manager
        // is built on the onboarding config), in the provider's namespace, named by its
        // LeaderElectionID.
        let lease = self
            .options
            .leader_election_id
            .clone()
            .unwrap_or_else(|| lease_name(&self.options.provider_name, Mode::Standard));
        self.start_mode_with_lease(
            Mode::Standard,
            onboarding.client().clone(),
            &lease,
            controller,
            async move { synced.wait_synced().await },
        )
        .await?;
        Ok(source)
    }

    /// kcp mode: connects to the provider workspace as the provider, provisions the export when
    /// asked, follows the endpoint slice and through it every bound workspace, and runs the
    /// mode's controller — leader-elected on its own Lease `<provider>-kcp` (per share when
    /// sharded) when leader election is on.
    pub async fn start_kcp(
        &mut self,
        settings: KcpSettings,
    ) -> Result<Arc<KcpSource<P>>, StartError> {
        if !P::INFO.kcp {
            return Err(StartError::KcpNotDeclared(P::INFO.kind));
        }
        let provider = tokio::select! {
            connected = ProviderWorkspace::connect(
                self.platform.client_factory(),
                &settings.kubeconfig,
                settings.provider_workspace.as_deref(),
            ) => connected?,
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        };
        if settings.provision {
            let done = provision::<P>(provider.client(), &settings.export_name).await?;
            tracing::info!(export = %settings.export_name, schema = %done.schema, schema_created = done.schema_created, export_written = done.export_written, "APIExport provisioned");
        }
        let lease = format!(
            "{}{}",
            lease_name(&self.options.provider_name, Mode::Kcp),
            settings.sharding.lease_suffix()
        );
        let source = KcpSource::new(
            self.platform.clone(),
            provider,
            settings,
            self.shutdown.child_token(),
        );
        let controller = self.controller(source.clone());
        self.tasks.spawn(source.clone().run());
        let synced = source.clone();
        let platform = self.platform.client().clone();
        self.start_mode_with_lease(Mode::Kcp, platform, &lease, controller, async move {
            synced.wait_synced().await
        })
        .await?;
        Ok(source)
    }

    /// The kcp settings the ProviderConfig's `kcp` block asks for (its kubeconfig Secret read
    /// from the platform cluster), once the ProviderConfig is known; `None` when it has none.
    pub async fn kcp_settings_from_provider_config(
        &self,
    ) -> Result<Option<KcpSettings>, StartError> {
        use crate::provider_config::ProviderConfigResource;
        tokio::select! {
            _ = self.platform.wait_synced() => {}
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        }
        let crate::platform::ConfigState::Ready(config) = self.platform.config() else {
            return Ok(None);
        };
        let Some(block) = config.common().kcp.clone() else {
            return Ok(None);
        };
        let secret_ref = &block.kubeconfig_secret_ref;
        let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(self.platform.client().clone(), &secret_ref.namespace);
        let secret = secrets.get_opt(&secret_ref.name).await.map_err(|e| {
            StartError::KcpConfig(format!(
                "reading the kubeconfig Secret {}/{} of the ProviderConfig kcp block: {e}",
                secret_ref.namespace, secret_ref.name
            ))
        })?;
        let kubeconfig = secret
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove(crate::openmcp::constants::SECRET_KEY_KUBECONFIG))
            .ok_or_else(|| {
                StartError::KcpConfig(format!(
                    "Secret {}/{} named in the ProviderConfig kcp block has no `kubeconfig` key; put the provider workspace kubeconfig there",
                    secret_ref.namespace, secret_ref.name
                ))
            })?;
        let mut settings = KcpSettings::new(&P::INFO, kubeconfig.0);
        settings.provider_workspace = Some(block.provider_workspace.clone());
        if let Some(export) = block.api_export_name.filter(|n| !n.is_empty()) {
            settings.endpoint_slice = export.clone();
            settings.export_name = export;
        }
        Ok(Some(settings))
    }

    /// The controller of a mode over `source`, with this runtime's platform view, metrics and
    /// reconcile options.
    fn controller<S: Source<P>>(&self, source: Arc<S>) -> Controller<P, S> {
        Controller::new(
            source,
            self.platform.clone(),
            self.metrics.clone(),
            self.options.reconcile.clone(),
            self.options.concurrency,
        )
    }

    /// Runs `controller` once its caches (and the platform's) are synced, under a Lease when
    /// leader election is on. Marks the process ready once every started mode is synced.
    pub async fn start_mode<S: Source<P>>(
        &mut self,
        mode: Mode,
        controller: Controller<P, S>,
        synced: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let lease = lease_name(&self.options.provider_name, mode);
        let platform = self.platform.client().clone();
        self.start_mode_with_lease(mode, platform, &lease, controller, synced)
            .await
    }

    /// [`start_mode`](Self::start_mode) with the Lease named `lease` on the cluster of
    /// `lease_client`, in the provider's namespace.
    pub async fn start_mode_with_lease<S: Source<P>>(
        &mut self,
        mode: Mode,
        lease_client: kube::Client,
        lease: &str,
        mut controller: Controller<P, S>,
        synced: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        if self.options.leader_elect {
            controller.set_lease(lease);
        }
        tokio::select! {
            _ = async { self.platform.wait_synced().await; synced.await } => {}
            _ = self.shutdown.cancelled() => return Err(StartError::Cancelled),
        }
        tracing::info!(mode = mode.as_str(), "caches synced");
        let election = if self.options.leader_elect {
            LeaderElection::campaign(
                lease_client,
                &self.options.pod_namespace,
                lease,
                &self.options.leader,
            )
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
