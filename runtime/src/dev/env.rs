//! The one environment builder for tests, benchmarks and `dev` mode: platform and onboarding
//! clusters, the simulated operator, optionally a provider's CRDs, ProviderConfig and
//! ServiceProvider, and any number of ControlPlanes with their MCP clusters.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::conversion::ConversionReview;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;

use service_provider_apiserver::kcp::KcpOptions;

use crate::dev::DevError;
use crate::dev::hosting::{ClusterHandle, Hosting};
use crate::dev::kcp::{KcpEnv, KcpSetup};
use crate::dev::operator::{HostedCluster, Operator, OperatorConfig};
use crate::manifests::{Manifest, Place};
use crate::openmcp::constants::{CLUSTER_LABEL, PHASE_PROGRESSING, PHASE_READY, PURPOSE_WORKLOAD};
use crate::openmcp::{ControlPlane, ControlPlaneSpec, ServiceProviderObject};
use crate::provider::{ProviderInfo, ServiceProvider};

/// Field manager of the builder's server-side applies.
const MANAGER: &str = "service-provider-dev";

/// A ControlPlane by namespace and name (on the onboarding cluster).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ControlPlaneRef {
    /// Namespace on the onboarding cluster (`project-<p>--ws-<w>` by openMCP convention).
    pub namespace: String,
    /// Name; Service API objects for this ControlPlane carry the same name.
    pub name: String,
}

impl ControlPlaneRef {
    /// `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ControlPlaneRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// What `provider::<P>()` installs, captured without the provider's type.
#[derive(Clone, Debug)]
struct ProviderSetup {
    name: String,
    info: ProviderInfo,
    manifests: Vec<Manifest>,
    config_api: ApiResource,
    config_spec: serde_json::Value,
    initialized: bool,
    /// The provider's answer to a `ConversionReview`, when a version converts in Rust: the
    /// environment serves it as the provider's conversion webhook.
    conversion: Option<fn(ConversionReview) -> ConversionReview>,
}

/// Builds a [`TestEnv`].
#[derive(Clone, Debug)]
pub struct TestEnvBuilder {
    control_planes: usize,
    named: Vec<ControlPlaneRef>,
    namespace: String,
    operator: OperatorConfig,
    pod_namespace: String,
    provider: Option<ProviderSetup>,
    kcp: Option<KcpSetup>,
    wait_ready: bool,
    /// `None`: the hosting's [`Hosting::default_timeout`].
    timeout: Option<Duration>,
    parallelism: usize,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        TestEnvBuilder {
            control_planes: 0,
            named: Vec::new(),
            namespace: "project-dev--ws-dev".into(),
            operator: OperatorConfig::default(),
            pod_namespace: "openmcp-system".into(),
            provider: None,
            kcp: None,
            wait_ready: true,
            timeout: None,
            parallelism: 64,
        }
    }
}

impl TestEnvBuilder {
    /// Creates `n` ControlPlanes `cp-0` … `cp-<n-1>` in the ControlPlane namespace.
    pub fn control_planes(mut self, n: usize) -> Self {
        self.control_planes = n;
        self
    }

    /// Creates a ControlPlane with this namespace and name (in addition to `control_planes`).
    pub fn control_plane(mut self, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        self.named.push(ControlPlaneRef::new(namespace, name));
        self
    }

    /// The onboarding namespace of the generated ControlPlanes (default `project-dev--ws-dev`).
    pub fn control_plane_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// How many tenants share a workload cluster (default 0 = all share one).
    pub fn workload_tenancy(mut self, k: usize) -> Self {
        self.operator.workload_tenancy = k;
        self
    }

    /// Where MCP and workload clusters are served (default: logical clusters of one shard).
    pub fn hosting(mut self, hosting: Hosting) -> Self {
        self.operator.hosting = hosting;
        self
    }

    /// Validity of granted tokens when an AccessRequest has no `ttl` (default 24h); they are
    /// renewed after 80% of it. Below kube-apiserver's 10 minutes only for logical-cluster
    /// hosting (dedicated clusters refuse shorter TokenRequests): for tests of credential renewal.
    pub fn token_ttl(mut self, ttl: Duration) -> Self {
        self.operator.token_ttl = ttl;
        self
    }

    /// The provider's pod namespace on the platform cluster, also openMCP's system namespace
    /// (default `openmcp-system`).
    pub fn pod_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.pod_namespace = namespace.into();
        self.operator.system_namespace = self.pod_namespace.clone();
        self
    }

    /// Concurrent reconciles of the simulated operator (default 16).
    pub fn operator_workers(mut self, n: usize) -> Self {
        self.operator.workers = n;
        self
    }

    /// Whether `start` waits until every ControlPlane is Ready (default true).
    pub fn wait_ready(mut self, wait: bool) -> Self {
        self.wait_ready = wait;
        self
    }

    /// How long `start` and the environment's waits last (default: the hosting's
    /// [`Hosting::default_timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Installs provider `P` as its `init` would have: its CRDs on the cluster their
    /// `openmcp.cloud/cluster` label names, the ProviderConfig named like the provider (spec from
    /// [`TestEnvBuilder::provider_config`], `{}` by default), the ServiceProvider with `P`'s kind
    /// in `status.resources`, and a ServiceAccount on the platform bound to the generated
    /// platform ClusterRole (see [`ProviderEnv::platform_kubeconfig`]). The provider name is
    /// the Service API kind in lower case unless [`TestEnvBuilder::provider_name`] sets one.
    pub fn provider<P: ServiceProvider>(mut self) -> Self {
        let info = P::INFO;
        let name = self
            .provider
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_else(|| info.kind.to_lowercase());
        let spec = self
            .provider
            .as_ref()
            .map(|p| p.config_spec.clone())
            .unwrap_or_else(|| json!({}));
        self.provider = Some(ProviderSetup {
            name,
            info,
            manifests: crate::manifests::manifests::<P>(),
            config_api: ApiResource::erase::<P::ProviderConfig>(&()),
            config_spec: spec,
            initialized: true,
            conversion: crate::conversion::needs_webhook::<P>()
                .then_some(crate::conversion::review::<P> as fn(_) -> _),
        });
        self
    }

    /// The provider name (`--provider-name`); call after [`TestEnvBuilder::provider`].
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        if let Some(p) = self.provider.as_mut() {
            p.name = name.into();
        }
        self
    }

    /// `false`: the environment stops where the platform operator hands over to the provider's
    /// `init` — only the ServiceProvider (no `status.resources`) and the provider's platform
    /// identity exist, no CRDs of the provider and no ProviderConfig — so `init` itself can be
    /// tested. Default `true` (as after `init`, with the ProviderConfig created). Call after
    /// [`TestEnvBuilder::provider`].
    pub fn provider_initialized(mut self, initialized: bool) -> Self {
        if let Some(p) = self.provider.as_mut() {
            p.initialized = initialized;
        }
        self
    }

    /// The ProviderConfig's `spec`; call after [`TestEnvBuilder::provider`].
    pub fn provider_config(mut self, spec: serde_json::Value) -> Self {
        if let Some(p) = self.provider.as_mut() {
            p.config_spec = spec;
        }
        self
    }

    /// Also starts an embedded kcp with a provider workspace (`root:provider`) and
    /// `consumer_workspaces` consumer workspaces `root:consumer-<i>`. With a kcp-capable
    /// provider (`kcp` in its attribute), the provider workspace gets its APIResourceSchema and
    /// APIExport and an identity with exactly the generated ClusterRole, and every consumer an
    /// APIBinding with the claims accepted, Bound before `start` returns.
    pub fn kcp(mut self, consumer_workspaces: usize) -> Self {
        let setup = self.kcp.get_or_insert_with(|| KcpSetup {
            consumers: 0,
            provider_workspace: "root:provider".into(),
            options: KcpOptions::default(),
        });
        setup.consumers = consumer_workspaces;
        self
    }

    /// The provider workspace's path (default `root:provider`); call after
    /// [`TestEnvBuilder::kcp`].
    pub fn kcp_provider_workspace(mut self, path: impl Into<String>) -> Self {
        if let Some(k) = self.kcp.as_mut() {
            k.provider_workspace = path.into();
        }
        self
    }

    /// Options of the embedded kcp (shards, shortest token lifetime, …); call after
    /// [`TestEnvBuilder::kcp`].
    pub fn kcp_options(mut self, options: KcpOptions) -> Self {
        if let Some(k) = self.kcp.as_mut() {
            k.options = options;
        }
        self
    }

    /// Starts everything. Must be called within a tokio runtime; the clusters and the operator
    /// live on it.
    pub async fn start(self) -> Result<TestEnv, DevError> {
        let started = Instant::now();
        let hosting = self.operator.hosting;
        let timeout = self.timeout.unwrap_or_else(|| hosting.default_timeout());
        let platform = ClusterHandle::start_own("platform", hosting).await?;
        let onboarding = ClusterHandle::start_own("onboarding", hosting).await?;
        install_crds(&platform, crate::openmcp::platform_crds(), timeout).await?;
        install_crds(&onboarding, crate::openmcp::onboarding_crds(), timeout).await?;
        ensure_namespace(&platform.client(), &self.pod_namespace).await?;

        let mut cfg = self.operator.clone();
        cfg.system_namespace = self.pod_namespace.clone();
        let operator = Operator::start(platform.clone(), onboarding.clone(), cfg).await?;

        let mut provider = match &self.provider {
            Some(p) => {
                Some(setup_provider(p, &platform, &onboarding, &self.pod_namespace, timeout).await?)
            }
            None => None,
        };
        let kcp = match &self.kcp {
            Some(setup) => {
                let p = self
                    .provider
                    .as_ref()
                    .map(|p| (p.name.as_str(), p.manifests.as_slice()));
                let kcp = crate::dev::kcp::start(setup, p, self.parallelism, timeout).await?;
                if let (Some(p), Some(kubeconfig)) = (provider.as_mut(), kcp.provider_kubeconfig())
                {
                    let name = format!("{}-kcp-kubeconfig", p.name);
                    store_kubeconfig(&platform.client(), &self.pod_namespace, &name, kubeconfig)
                        .await?;
                    p.kcp_kubeconfig_secret = Some(name);
                }
                Some(kcp)
            }
            None => None,
        };

        let mut cps = self.named.clone();
        cps.extend(
            (0..self.control_planes)
                .map(|i| ControlPlaneRef::new(&self.namespace, format!("cp-{i}"))),
        );
        let env = TestEnv {
            platform,
            onboarding,
            operator,
            pod_namespace: self.pod_namespace.clone(),
            control_planes: cps.clone(),
            provider,
            kcp,
            timeout,
        };
        env.create_control_planes(&cps, self.parallelism).await?;
        if self.wait_ready {
            env.wait_control_planes_ready(&cps, timeout).await?;
        }
        tracing::debug!(
            "simulated platform with {} ControlPlanes started in {:?}",
            cps.len(),
            started.elapsed()
        );
        Ok(env)
    }
}

/// The installed provider: its name and its identity on the platform cluster.
#[derive(Clone, Debug)]
pub struct ProviderEnv {
    name: String,
    info: ProviderInfo,
    platform_kubeconfig: String,
    pod_namespace: String,
    kcp_kubeconfig_secret: Option<String>,
    /// The conversion webhook the environment serves for the provider, if any.
    _conversion_webhook: Option<LocalConversionWebhook>,
}

impl ProviderEnv {
    /// The provider name (`--provider-name`; also the ProviderConfig's and ServiceProvider's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The provider's static facts.
    pub fn info(&self) -> &ProviderInfo {
        &self.info
    }

    /// A platform-cluster kubeconfig for the provider's ServiceAccount (`<name>` in the pod
    /// namespace), which holds exactly the generated platform ClusterRole: run the provider with
    /// it to prove it needs no more.
    pub fn platform_kubeconfig(&self) -> &str {
        &self.platform_kubeconfig
    }

    /// The provider's pod namespace (`POD_NAMESPACE`).
    pub fn pod_namespace(&self) -> &str {
        &self.pod_namespace
    }

    /// With kcp and a kcp provider: the Secret in the pod namespace whose `kubeconfig` holds
    /// the provider's provider-workspace identity, for the ProviderConfig `kcp` block (see
    /// [`KcpEnv::provider_config_block`]).
    pub fn kcp_kubeconfig_secret(&self) -> Option<&str> {
        self.kcp_kubeconfig_secret.as_deref()
    }
}

/// A running simulated platform.
#[derive(Debug)]
pub struct TestEnv {
    platform: ClusterHandle,
    onboarding: ClusterHandle,
    operator: Operator,
    pod_namespace: String,
    control_planes: Vec<ControlPlaneRef>,
    provider: Option<ProviderEnv>,
    kcp: Option<KcpEnv>,
    timeout: Duration,
}

impl TestEnv {
    /// A builder with nothing but the platform and onboarding clusters and the operator.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// The platform cluster (ProviderConfig, ClusterRequests, AccessRequests, Secrets).
    pub fn platform(&self) -> &ClusterHandle {
        &self.platform
    }

    /// The onboarding cluster (ControlPlanes, Service API objects).
    pub fn onboarding(&self) -> &ClusterHandle {
        &self.onboarding
    }

    /// The simulated operator.
    pub fn operator(&self) -> &Operator {
        &self.operator
    }

    /// The provider's pod namespace on the platform cluster (`POD_NAMESPACE`).
    pub fn pod_namespace(&self) -> &str {
        &self.pod_namespace
    }

    /// The ControlPlanes created at start.
    pub fn control_planes(&self) -> &[ControlPlaneRef] {
        &self.control_planes
    }

    /// The installed provider, if `provider::<P>()` was called.
    pub fn provider(&self) -> Option<&ProviderEnv> {
        self.provider.as_ref()
    }

    /// The kcp side, if `kcp(n)` was called.
    pub fn kcp(&self) -> Option<&KcpEnv> {
        self.kcp.as_ref()
    }

    /// The MCP cluster of a ControlPlane, once its ClusterRequest is granted.
    pub fn mcp(&self, cp: &ControlPlaneRef) -> Option<ClusterHandle> {
        self.operator.mcp_cluster(&cp.namespace, &cp.name)
    }

    /// Every workload cluster, oldest first.
    pub fn workload_clusters(&self) -> Vec<ClusterHandle> {
        self.operator
            .clusters()
            .into_iter()
            .filter(|c| c.purpose == PURPOSE_WORKLOAD)
            .map(|c| c.handle)
            .collect()
    }

    /// Every cluster the platform serves besides the platform cluster itself, with its Cluster
    /// object and purpose.
    pub fn clusters(&self) -> Vec<HostedCluster> {
        self.operator.clusters()
    }

    /// Every request a cluster of this platform (platform, onboarding, MCP and workload
    /// clusters, kcp shards) answered with 403 Forbidden so far, as `cluster verb resource xN`.
    /// Empty when the provider, running under its generated RBAC, was never refused anything
    /// it asked for: what a test asserts to know that the grants the provider declares are
    /// enough for what it does.
    ///
    /// ```no_run
    /// # fn f(env: &service_provider_runtime::dev::TestEnv) {
    /// assert_eq!(env.forbidden_requests(), Vec::<String>::new());
    /// # }
    /// ```
    pub fn forbidden_requests(&self) -> Vec<String> {
        let mut forbidden: Vec<String> = self
            .counted()
            .into_iter()
            .filter(|(k, _)| k.code == 403)
            .map(|(k, n)| format!("{} {} {} x{n}", k.cluster, k.verb, k.resource))
            .collect();
        forbidden.sort();
        forbidden
    }

    /// How many requests every cluster of this platform answered so far, by `cluster verb
    /// resource`, whatever the code; compare two of them to see what happened in between.
    ///
    /// ```no_run
    /// # fn f(env: &service_provider_runtime::dev::TestEnv) {
    /// let before = env.requests();
    /// // ... something the provider should do without calls ...
    /// let after = env.requests();
    /// assert_eq!(before, after);
    /// # }
    /// ```
    pub fn requests(&self) -> BTreeMap<String, u64> {
        self.tally(|_| true)
    }

    /// Like [`requests`](Self::requests), but only what the provider asked: the requests made
    /// with a cluster's admin credentials — the test's own and those of the simulated
    /// platform's controllers, whose watches a real kube-apiserver may end and have relisted
    /// at any time — are left out. What a test compares to see what the provider did while
    /// the platform goes on around it.
    ///
    /// ```no_run
    /// # fn f(env: &service_provider_runtime::dev::TestEnv) {
    /// let before = env.provider_requests();
    /// // ... a reconcile that should find nothing to do ...
    /// assert_eq!(before, env.provider_requests());
    /// # }
    /// ```
    pub fn provider_requests(&self) -> BTreeMap<String, u64> {
        self.tally(|user| !crate::dev::hosting::is_admin(user))
    }

    /// The requests of every cluster asked by a user `asked_by` accepts, by `cluster verb
    /// resource`.
    fn tally(&self, asked_by: impl Fn(&str) -> bool) -> BTreeMap<String, u64> {
        let mut requests = BTreeMap::new();
        for (k, n) in self.counted() {
            if asked_by(&k.user) {
                *requests
                    .entry(format!("{} {} {}", k.cluster, k.verb, k.resource))
                    .or_insert(0) += n;
            }
        }
        requests
    }

    /// Every counter of every server of this platform, once each.
    fn counted(&self) -> Vec<(service_provider_apiserver::CounterKey, u64)> {
        let clusters = self.clusters().into_iter().map(|c| c.handle);
        let mut counters: Vec<Vec<_>> = [&self.platform, &self.onboarding]
            .into_iter()
            .cloned()
            .chain(clusters)
            .map(|c| c.counters().snapshot())
            .collect();
        if let Some(kcp) = &self.kcp {
            counters.extend(kcp.kcp().shards().iter().map(|s| s.counters().snapshot()));
        }
        // Clusters hosted on one server share its counters (each request keyed by its
        // cluster): each key once.
        let mut counted: Vec<_> = counters.into_iter().flatten().collect();
        counted.sort();
        counted.dedup_by(|a, b| a.0 == b.0);
        counted
    }

    /// Creates a ControlPlane (and its onboarding namespace), waits until it is Ready and
    /// returns its MCP cluster.
    pub async fn create_control_plane(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<ClusterHandle, DevError> {
        let cp = ControlPlaneRef::new(namespace, name);
        self.create_control_planes(std::slice::from_ref(&cp), 1)
            .await?;
        self.wait_control_planes_ready(std::slice::from_ref(&cp), self.timeout)
            .await?;
        self.mcp(&cp).ok_or_else(|| DevError::Timeout {
            what: format!("the MCP cluster of ControlPlane {namespace}/{name}"),
            timeout: self.timeout,
        })
    }

    /// Creates ControlPlanes (and their namespaces), `parallelism` requests at a time, without
    /// waiting for them.
    pub async fn create_control_planes(
        &self,
        cps: &[ControlPlaneRef],
        parallelism: usize,
    ) -> Result<(), DevError> {
        let client = self.onboarding.client();
        let mut namespaces: Vec<&str> = cps.iter().map(|c| c.namespace.as_str()).collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        for ns in namespaces {
            ensure_namespace(&client, ns).await?;
        }
        futures::stream::iter(cps.iter().cloned().map(|cp| {
            let api = Api::<ControlPlane>::namespaced(client.clone(), &cp.namespace);
            async move {
                let obj = ControlPlane::new(&cp.name, ControlPlaneSpec::default());
                match api.create(&PostParams::default(), &obj).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                    Err(e) => Err(DevError::kube(format!(
                        "creating ControlPlane {}/{}",
                        cp.namespace, cp.name
                    ))(e)),
                }
            }
        }))
        .buffer_unordered(parallelism.max(1))
        .try_collect::<Vec<()>>()
        .await?;
        Ok(())
    }

    /// Waits until every one of `cps` has phase Ready, with one watch for all of them.
    pub async fn wait_control_planes_ready(
        &self,
        cps: &[ControlPlaneRef],
        timeout: Duration,
    ) -> Result<(), DevError> {
        let mut waiting: std::collections::HashSet<(String, String)> = cps
            .iter()
            .map(|c| (c.namespace.clone(), c.name.clone()))
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        let api = Api::<ControlPlane>::all(self.onboarding.client());
        let stream = watcher(api, watcher::Config::default())
            .applied_objects()
            .default_backoff();
        let wait = async {
            futures::pin_mut!(stream);
            while let Some(cp) = stream
                .try_next()
                .await
                .map_err(|e| DevError::Start(format!("watching ControlPlanes: {e}")))?
            {
                let ready = cp
                    .status
                    .as_ref()
                    .is_some_and(|s| s.common.phase == PHASE_READY);
                if ready {
                    waiting.remove(&(cp.namespace().unwrap_or_default(), cp.name_any()));
                    if waiting.is_empty() {
                        return Ok(());
                    }
                }
            }
            Err(DevError::Start("the ControlPlane watch ended".into()))
        };
        let total = cps.len();
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| DevError::Timeout {
                what: format!("{total} ControlPlanes to become Ready"),
                timeout,
            })?
    }

    /// Deletes a ControlPlane and waits until it is gone (the deletion cascade ran).
    pub async fn delete_control_plane(&self, namespace: &str, name: &str) -> Result<(), DevError> {
        let api = Api::<ControlPlane>::namespaced(self.onboarding.client(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => {
                return Err(DevError::kube(format!(
                    "deleting ControlPlane {namespace}/{name}"
                ))(e));
            }
        }
        service_provider_apiserver::wait_for(
            &api,
            name,
            self.timeout,
            service_provider_apiserver::conditions::gone(),
        )
        .await?;
        Ok(())
    }

    /// Rolls out the next release `Q` of the installed provider as its `init` does: `Q`'s CRDs
    /// applied on the platform and onboarding clusters (and Established), its platform
    /// ClusterRole applied (still bound to the provider's ServiceAccount). What it puts into a
    /// kcp provider workspace is [`KcpEnv::roll_out`]. A release whose versions convert
    /// through a webhook is refused: the environment serves the first release's webhook only.
    pub async fn roll_out<Q: ServiceProvider>(&self) -> Result<(), DevError> {
        if self.provider.is_none() {
            return Err(DevError::Start(
                "no provider is installed, so there is no release to roll out after it".into(),
            ));
        }
        if crate::conversion::needs_webhook::<Q>() {
            return Err(DevError::Start(format!(
                "{} converts between its versions through a webhook, which rolling out a release does not serve; test it as the first release instead",
                Q::INFO.kind
            )));
        }
        let manifests = crate::manifests::manifests::<Q>();
        let (platform_crds, onboarding_crds) = crds_by_cluster(&manifests)?;
        install_crds(&self.platform, platform_crds, self.timeout).await?;
        install_crds(&self.onboarding, onboarding_crds, self.timeout).await?;
        apply_platform_role(&manifests, &self.platform).await?;
        Ok(())
    }

    /// Writes an admin kubeconfig for every cluster into `dir` (created if missing):
    /// `platform.kubeconfig`, `onboarding.kubeconfig`, `mcp-<namespace>-<name>.kubeconfig` per
    /// ControlPlane with a granted MCP, `<cluster>.kubeconfig` per workload cluster, and
    /// `provider-platform.kubeconfig` with the provider's own identity when a provider is
    /// installed; with kcp, `kcp-provider.kubeconfig` (admin), `kcp-provider-identity.kubeconfig`
    /// (the provider's identity) and `kcp-root-consumer-<i>.kubeconfig` (admin). Returns the
    /// paths written.
    pub fn write_kubeconfigs(&self, dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, DevError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| DevError::Io {
            what: format!("creating {}", dir.display()),
            source: e,
        })?;
        let mut files: Vec<(String, String)> = vec![
            ("platform".into(), self.platform.kubeconfig()),
            ("onboarding".into(), self.onboarding.kubeconfig()),
        ];
        let cps = self
            .operator
            .control_planes()
            .into_iter()
            .chain(self.control_planes.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        for cp in cps {
            if seen.insert(cp.clone())
                && let Some(mcp) = self.mcp(&cp)
            {
                files.push((
                    format!("mcp-{}-{}", cp.namespace, cp.name),
                    mcp.kubeconfig(),
                ));
            }
        }
        for c in self.operator.clusters() {
            if c.purpose == PURPOSE_WORKLOAD {
                files.push((c.name.clone(), c.handle.kubeconfig()));
            }
        }
        if let Some(p) = &self.provider {
            files.push(("provider-platform".into(), p.platform_kubeconfig.clone()));
        }
        if let Some(k) = &self.kcp {
            files.extend(k.kubeconfigs());
        }
        let mut written = Vec::new();
        for (name, content) in files {
            let path = dir.join(format!("{name}.kubeconfig"));
            std::fs::write(&path, content).map_err(|e| DevError::Io {
                what: format!("writing {}", path.display()),
                source: e,
            })?;
            written.push(path);
        }
        Ok(written)
    }

    /// Stops the simulated operator (the clusters keep serving until the runtime ends).
    pub fn stop(&self) {
        self.operator.stop();
    }
}

/// Stores a kubeconfig in Secret `namespace/name` under `kubeconfig`.
async fn store_kubeconfig(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kubeconfig: &str,
) -> Result<(), DevError> {
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": {"kubeconfig": kubeconfig},
    });
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
        .patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(DevError::kube(format!("storing Secret {namespace}/{name}")))?;
    Ok(())
}

async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), DevError> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(DevError::kube(format!("creating namespace {name}"))(e)),
    }
}

/// Applies CRDs and waits until each is Established.
async fn install_crds(
    cluster: &ClusterHandle,
    crds: Vec<CustomResourceDefinition>,
    timeout: Duration,
) -> Result<(), DevError> {
    let api = Api::<CustomResourceDefinition>::all(cluster.client());
    for crd in &crds {
        let name = crd.name_any();
        api.patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await
        .map_err(DevError::kube(format!(
            "installing CRD {name} on {}",
            cluster.name()
        )))?;
    }
    for crd in &crds {
        service_provider_apiserver::wait_for(
            &api,
            &crd.name_any(),
            timeout,
            kube::runtime::wait::conditions::is_crd_established(),
        )
        .await?;
    }
    Ok(())
}

/// A provider's conversion webhook as `run` serves it, on a local port with a self-signed
/// certificate, for `dev`, the test kit and tests that install the Service API CRD themselves;
/// it serves until the last clone is dropped.
#[derive(Clone, Debug)]
pub struct LocalConversionWebhook {
    client_config: WebhookClientConfig,
    _serving: std::sync::Arc<tokio_util::sync::DropGuard>,
}

impl LocalConversionWebhook {
    /// Serves provider `P`'s conversion webhook; `None` when no version of `P` converts in Rust.
    pub async fn start<P: ServiceProvider>() -> Result<Option<Self>, DevError> {
        if !crate::conversion::needs_webhook::<P>() {
            return Ok(None);
        }
        Self::serve(crate::conversion::review::<P>).await.map(Some)
    }

    async fn serve(review: fn(ConversionReview) -> ConversionReview) -> Result<Self, DevError> {
        let certificate_error = |e: crate::ops::tls::TlsError| {
            DevError::Start(format!("the conversion webhook's certificate: {e}"))
        };
        let (cert, key) =
            crate::ops::tls::self_signed_pem(&["localhost"]).map_err(certificate_error)?;
        let tls = crate::ops::tls::acceptor(&crate::ops::ServingCert::Pem {
            cert: cert.clone(),
            key,
        })
        .map_err(certificate_error)?;
        let shutdown = tokio_util::sync::CancellationToken::new();
        let addr =
            crate::ops::serve_webhook(([127, 0, 0, 1], 0).into(), tls, review, shutdown.clone())
                .await
                .map_err(|e| DevError::Start(format!("serving the conversion webhook: {e}")))?;
        Ok(LocalConversionWebhook {
            client_config: WebhookClientConfig {
                url: Some(format!(
                    "https://localhost:{}{}",
                    addr.port(),
                    crate::ops::CONVERT_PATH
                )),
                ca_bundle: Some(k8s_openapi::ByteString(cert.into_bytes())),
                ..Default::default()
            },
            _serving: std::sync::Arc::new(shutdown.drop_guard()),
        })
    }

    /// Points `crd`'s conversion webhook, if it has one, here, as `init` points it at `run`.
    pub fn wire(&self, crd: &mut CustomResourceDefinition) {
        if let Some(webhook) = crd
            .spec
            .conversion
            .as_mut()
            .and_then(|c| c.webhook.as_mut())
        {
            webhook.client_config = Some(self.client_config.clone());
        }
    }
}

/// A provider's CRDs by their `openmcp.cloud/cluster` label, as `init` routes them: those of
/// the platform cluster, then those of the onboarding cluster.
fn crds_by_cluster(
    manifests: &[Manifest],
) -> Result<(Vec<CustomResourceDefinition>, Vec<CustomResourceDefinition>), DevError> {
    let mut platform = Vec::new();
    let mut onboarding = Vec::new();
    for m in manifests {
        if m.kind() != "CustomResourceDefinition" {
            continue;
        }
        let crd: CustomResourceDefinition =
            serde_json::from_value(m.object.clone()).map_err(|e| {
                DevError::Start(format!(
                    "the provider's CRD {} does not parse: {e}",
                    m.name()
                ))
            })?;
        match crd.labels().get(CLUSTER_LABEL).map(String::as_str) {
            Some("platform") => platform.push(crd),
            Some("onboarding") => onboarding.push(crd),
            other => {
                return Err(DevError::Start(format!(
                    "the provider's CRD {} has {CLUSTER_LABEL}={other:?}; expected platform or onboarding",
                    m.name()
                )));
            }
        }
    }
    Ok((platform, onboarding))
}

/// Applies the provider's generated platform ClusterRole, as `init` does.
async fn apply_platform_role(
    manifests: &[Manifest],
    platform: &ClusterHandle,
) -> Result<ClusterRole, DevError> {
    let role_manifest = manifests
        .iter()
        .find(|m| m.place == Place::Platform && m.kind() == "ClusterRole")
        .ok_or_else(|| {
            DevError::Start("the provider's manifests have no platform ClusterRole".into())
        })?;
    let role: ClusterRole = serde_json::from_value(role_manifest.object.clone()).map_err(|e| {
        DevError::Start(format!(
            "the provider's platform ClusterRole does not parse: {e}"
        ))
    })?;
    Api::<ClusterRole>::all(platform.client())
        .patch(
            &role.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&role),
        )
        .await
        .map_err(DevError::kube(format!(
            "applying ClusterRole {}",
            role.name_any()
        )))?;
    Ok(role)
}

/// What `init` would have done for the provider, plus its platform identity.
async fn setup_provider(
    p: &ProviderSetup,
    platform: &ClusterHandle,
    onboarding: &ClusterHandle,
    pod_namespace: &str,
    timeout: Duration,
) -> Result<ProviderEnv, DevError> {
    let (platform_crds, mut onboarding_crds) = crds_by_cluster(&p.manifests)?;
    let pc = platform.client();
    let mut conversion_webhook = None;
    if p.initialized {
        if let Some(review) = p.conversion {
            let webhook = LocalConversionWebhook::serve(review).await?;
            for crd in &mut onboarding_crds {
                webhook.wire(crd);
            }
            conversion_webhook = Some(webhook);
        }
        install_crds(platform, platform_crds, timeout).await?;
        install_crds(onboarding, onboarding_crds, timeout).await?;
        // The ProviderConfig named like the provider.
        let configs = Api::<DynamicObject>::all_with(pc.clone(), &p.config_api);
        let mut config = DynamicObject::new(&p.name, &p.config_api);
        config.data = json!({"spec": p.config_spec});
        match configs.create(&PostParams::default(), &config).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => {
                return Err(DevError::kube(format!(
                    "creating the ProviderConfig {} (set a valid spec with provider_config)",
                    p.name
                ))(e));
            }
        }
    }

    // The ServiceProvider, with the Service API registered as `init` registers it.
    let sps = Api::<ServiceProviderObject>::all(pc.clone());
    let sp = ServiceProviderObject::new(
        &p.name,
        crate::openmcp::DeploymentSpec {
            image: format!("dev.local/{}:dev", p.name),
            ..Default::default()
        },
    );
    match sps.create(&PostParams::default(), &sp).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => {
            return Err(DevError::kube(format!(
                "creating ServiceProvider {}",
                p.name
            ))(e));
        }
    }
    // As the platform operator's provider controller writes it before `init` runs; `init`
    // registers the Service API in `resources`.
    let status = if p.initialized {
        json!({"status": {
            "observedGeneration": 1,
            "phase": PHASE_READY,
            "resources": [{"group": p.info.group, "version": p.info.version, "kind": p.info.kind}],
        }})
    } else {
        json!({"status": {"observedGeneration": 1, "phase": PHASE_PROGRESSING}})
    };
    sps.patch_status(&p.name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(DevError::kube(format!(
            "writing the status of ServiceProvider {}",
            p.name
        )))?;

    // The provider's ServiceAccount with exactly the generated platform ClusterRole.
    let role = apply_platform_role(&p.manifests, platform).await?;
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(p.name.clone()),
            namespace: Some(pod_namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let sa_api = Api::<ServiceAccount>::namespaced(pc.clone(), pod_namespace);
    sa_api
        .patch(
            &p.name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&sa),
        )
        .await
        .map_err(DevError::kube(format!(
            "applying ServiceAccount {pod_namespace}/{}",
            p.name
        )))?;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role.name_any()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.name_any()},
        "subjects": [{"kind": "ServiceAccount", "name": p.name, "namespace": pod_namespace}],
    });
    Api::<ClusterRoleBinding>::all(pc.clone())
        .patch(
            &role.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&binding),
        )
        .await
        .map_err(DevError::kube(format!(
            "applying ClusterRoleBinding {}",
            role.name_any()
        )))?;
    let request: TokenRequest = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 7 * 24 * 3600},
    }))
    .map_err(|e| DevError::Start(format!("building a TokenRequest: {e}")))?;
    let answer = sa_api
        .create_token_request(&p.name, &PostParams::default(), &request)
        .await
        .map_err(DevError::kube(format!(
            "minting a token for {pod_namespace}/{}",
            p.name
        )))?;
    let token = serde_json::to_value(&answer)
        .ok()
        .and_then(|v| {
            v.pointer("/status/token")
                .and_then(|t| t.as_str())
                .map(String::from)
        })
        .ok_or_else(|| {
            DevError::Start("the provider's TokenRequest came back without a token".into())
        })?;
    Ok(ProviderEnv {
        name: p.name.clone(),
        info: p.info,
        kcp_kubeconfig_secret: None,
        platform_kubeconfig: platform.kubeconfig_for(
            &format!("system:serviceaccount:{pod_namespace}:{}", p.name),
            &token,
        ),
        pod_namespace: pod_namespace.to_string(),
        _conversion_webhook: conversion_webhook,
    })
}
