//! The provider author's test kit (feature `dev`): the simulated openMCP platform with the
//! provider running in the test's process, tenants created in a line, waits that say what is
//! stuck when they time out, and a look into every cluster the provider touched.
//!
//! A test of a provider lives next to it (providers are binaries, so in a `#[cfg(test)]` module of
//! `main.rs`), with the kit turned on by the provider's `dev` feature:
//!
//! ```
//! # use service_provider::prelude::*;
//! # use service_provider::kube::{Api, api::{DeleteParams, ObjectMeta, Patch, PatchParams}};
//! # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
//! # pub struct HelloSpec { pub greeting: String }
//! # impl Reconcile for Hello {
//! #     async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
//! #         let greeting = ConfigMap {
//! #             metadata: ObjectMeta { name: Some("hello".into()), ..Default::default() },
//! #             data: Some([("greeting".to_owned(), format!("Hello, {}!", self.spec.greeting))].into()),
//! #             ..Default::default()
//! #         };
//! #         Api::<ConfigMap>::namespaced(cx.mcp().client().clone(), "default")
//! #             .patch("hello", &PatchParams::apply("hello").force(), &Patch::Apply(&greeting)).await?;
//! #         Ok(Outcome::ready())
//! #     }
//! #     async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
//! #         let _ = Api::<ConfigMap>::namespaced(cx.mcp().client().clone(), "default")
//! #             .delete("hello", &DeleteParams::default()).await;
//! #         Ok(Deletion::done())
//! #     }
//! # }
//! use service_provider::k8s_openapi::api::core::v1::ConfigMap;
//! use service_provider::testing::{TestError, TestPlatform};
//!
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), TestError> {
//! // #[tokio::test(flavor = "multi_thread")]
//! // async fn greets_the_tenant() -> Result<(), TestError> {
//! let platform = TestPlatform::<Hello>::start().await?;
//! let tenant = platform.create_tenant("tenant-a", HelloSpec { greeting: "world".into() }).await?;
//! tenant.wait_ready().await?;
//! let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
//! assert_eq!(greeting.data.unwrap()["greeting"], "Hello, world!");
//! tenant.delete().await?;
//! tenant.wait_gone().await?;
//! platform.stop().await;
//! # Ok(()) }
//! ```
//!
//! The provider runs as in production: under its generated RBAC only, with onboarding and
//! tenant access ordered from the simulated platform (see [`crate::dev`] for what is simulated
//! and how it differs from openmcp-operator). Every wait has one timeout
//! ([`TestPlatformBuilder::timeout`], by default [`Backend::default_timeout`]: 2 minutes on the
//! embedded server, 5 on kube-apiservers); when it
//! passes, the error names what was awaited and what is stuck: the object's phase, conditions
//! and finalizers, its last Events, and the access requests the platform has not granted.

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::NamespaceResourceScope;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use service_provider_runtime::access::clients::ClientFactory;
use service_provider_runtime::cli::dev::DevSamples;
use service_provider_runtime::cli::run::{RunOptions, Runtime};
use service_provider_runtime::dev::{
    ClusterHandle, DevError, Hosting, KcpOptions, TestEnv, WorkspaceInfo,
};
use service_provider_runtime::modes::kcp::{
    KcpSettings, KcpSource, Sharding, WorkspaceCredentials,
};
use service_provider_runtime::openmcp::constants::{
    MANAGED_BY_LABEL, ONBOARDING_NAME_LABEL, ONBOARDING_NAMESPACE_LABEL, PURPOSE_WORKLOAD,
};
use service_provider_runtime::openmcp::naming::label_value;
use service_provider_runtime::openmcp::{AccessRequest, ClusterRequest};

use crate::{Identity, Mode, Phase, Reconcile, ServiceProvider};

/// The onboarding namespace of tenants created without one (openMCP's `project-<p>--ws-<w>`).
pub const DEFAULT_TENANT_NAMESPACE: &str = "project-test--ws-test";
/// How many Events [`Tenant::explain`] shows.
const EXPLAIN_EVENTS: usize = 5;
/// The field manager of [`Cluster::apply`] and [`Cluster::install_crd`]: the test's hand,
/// distinct from the provider's, so a test can see who owns which field.
pub const FIELD_MANAGER: &str = "service-provider-testing";

/// The reasons the runtime writes into a Service API object's `Ready` condition (and its Events),
/// so a test matches them by name instead of spelling them: a misspelt string only shows as a
/// timeout. The standard ones are the Go runtime's, so tests written against Go providers agree.
///
/// ```
/// # use service_provider::prelude::*;
/// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
/// # pub struct HelloSpec { pub greeting: String }
/// # impl Reconcile for Hello {
/// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> {
/// #         if self.spec.greeting.is_empty() { return Err(Error::invalid_input("say whom to greet")) }
/// #         Ok(Outcome::ready())
/// #     }
/// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
/// # }
/// use service_provider::testing::{TestError, TestPlatform, ready_reason, reason};
///
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), TestError> {
/// let platform = TestPlatform::<Hello>::start().await?;
/// let tenant = platform.create_tenant("tenant-a", HelloSpec { greeting: "".into() }).await?;
/// // `Error::invalid_input` in create_or_update is reported, not retried:
/// tenant
///     .wait_until("to refuse the empty greeting", |o| {
///         ready_reason(o) == Some(reason::INVALID_USER_INPUT)
///     })
///     .await?;
/// tenant.set_spec(HelloSpec { greeting: "world".into() }).await?;
/// let ready = tenant.wait_ready().await?;
/// assert_eq!(ready_reason(&ready), Some(reason::RECONCILE_SUCCESS));
/// # platform.stop().await;
/// # Ok(()) }
/// ```
pub mod reason {
    /// The object is Ready (Go `StatusReady`).
    pub const RECONCILE_SUCCESS: &str = "ReconcileSuccess";
    /// A transient failure, retried with backoff (Go `reasonReconcileError`).
    pub const RECONCILE_ERROR: &str = "ReconcileError";
    /// `Error::invalid_input`: the object or the ProviderConfig asks for something that cannot
    /// work; reported, not retried until either changes.
    pub const INVALID_USER_INPUT: &str = "InvalidUserInput";
    /// The object cannot be read into the provider's type (e.g. an older schema).
    pub const INVALID_OBJECT: &str = "InvalidObject";
    /// The provider's code panicked.
    pub const RECONCILE_PANICKED: &str = "ReconcilePanicked";
    /// The provider's code did not finish within the reconcile timeout.
    pub const RECONCILE_TIMED_OUT: &str = "ReconcileTimedOut";
    /// The tenant's cluster access is not granted yet.
    pub const WAITING_FOR_ACCESS: &str = "WaitingForAccess";
    /// The platform refused the tenant's cluster access.
    pub const ACCESS_DENIED: &str = "AccessDenied";
    /// The object is being deleted (Go `StatusTerminating`).
    pub const TERMINATING: &str = "Terminating";
    /// The access is being given back during deletion (Go `Reconciling`, "cluster cleanup").
    pub const RECONCILING: &str = "Reconciling";
    /// kcp mode: another object in the workspace serves it (the "oldest wins" rule).
    pub const DUPLICATE_IN_WORKSPACE: &str =
        service_provider_runtime::modes::kcp::source::REASON_DUPLICATE;
    /// kcp mode: the provider tried to install workloads into a workspace, which runs none.
    pub const WORKLOADS_NOT_SERVED_IN_WORKSPACE: &str =
        service_provider_runtime::modes::kcp::guard::REASON_WORKLOADS;
    /// Type of the condition set while a `deletion_guard` holds or the provider's `delete`
    /// returns `Deletion::blocked`.
    pub const DELETION_BLOCKED: &str = "DeletionBlocked";
    /// Reason of `DeletionBlocked` while objects of a `deletion_guard`'s kind remain.
    pub const USER_RESOURCES_PRESENT: &str = service_provider_runtime::REASON_USER_RESOURCES;
}

/// Why a test step failed. Its `Debug` output is its message, so a test returning
/// `Result<(), TestError>` prints what is stuck rather than a struct dump.
///
/// ```
/// use service_provider::testing::TestError;
///
/// fn check(e: &TestError) -> bool {
///     matches!(e, TestError::Timeout { .. })
/// }
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum TestError {
    /// The simulated platform or the provider could not start.
    #[error("starting the test platform: {0}")]
    Start(String),
    /// A request to one of the clusters failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Something awaited did not happen in time.
    #[error("timed out after {timeout:?} waiting for {what}{}", stuck_suffix(.stuck))]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long the wait lasted.
        timeout: Duration,
        /// What the kit found stuck when the time was up (object state, Events, pending access).
        stuck: String,
    },
    /// The test asked for something that cannot work; the message says how to fix it.
    #[error("{0}")]
    Usage(String),
}

fn stuck_suffix(stuck: &str) -> String {
    if stuck.is_empty() {
        String::new()
    } else {
        format!("\n{stuck}")
    }
}

impl fmt::Debug for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<DevError> for TestError {
    fn from(e: DevError) -> Self {
        TestError::Start(e.to_string())
    }
}

/// A failed request through a cluster's [`client`](Cluster::client) or a `kube::Api`, so a test
/// returning `Result<(), TestError>` can use `?` on kube's calls as on the kit's.
///
/// ```
/// use service_provider::testing::TestError;
///
/// fn read(result: Result<(), service_provider::kube::Error>) -> Result<(), TestError> {
///     result?; // no `.map_err(..)`
///     Ok(())
/// }
/// assert!(read(Ok(())).is_ok());
/// ```
impl From<kube::Error> for TestError {
    fn from(source: kube::Error) -> Self {
        TestError::Kube {
            what: "a Kubernetes API request".into(),
            source,
        }
    }
}

fn kube_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> TestError {
    let what = what.into();
    move |source| TestError::Kube { what, source }
}

/// The provider the kit's own rustdoc examples run, so that each example starts a real platform
/// in a few hidden lines: `Hello` greets `greeting` in ConfigMap `default/hello` of the tenant's
/// cluster, refuses a `version` the ProviderConfig does not offer, and removes the greeting on
/// delete; `__testing_example_provider!(kcp)` brings the one declared with kcp mode too. The
/// providers are declared once, here, rather than by each example: rustdoc compiles the examples
/// as one crate, and fifty expansions of the same provider took four minutes of every CI run. Not
/// for providers' tests (hidden from the docs; may change at any time).
#[doc(hidden)]
#[macro_export]
macro_rules! __testing_example_provider {
    () => {
        $crate::__testing_example_provider!(@use standard);
    };
    (kcp) => {
        $crate::__testing_example_provider!(@use kcp);
    };
    (@use $mode:ident) => {
        use $crate::k8s_openapi::api::core::v1::ConfigMap;
        use $crate::kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
        use $crate::prelude::*;
        use $crate::testing::__example::$mode::*;
    };
}

macro_rules! example_provider {
    ($($kcp:ident)?) => {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
        use crate::prelude::*;

        /// Greets a tenant.
        #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello",
            crate = "crate" $(, $kcp)?)]
        pub struct HelloSpec {
            /// Whom to greet.
            #[serde(default)]
            pub greeting: String,
            /// A version the ProviderConfig must offer, when set.
            #[serde(default)]
            pub version: String,
        }

        impl Reconcile for Hello {
            async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
                if !self.spec.version.is_empty() {
                    cx.common().resolve_version(&self.spec.version)?;
                }
                let greeting = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some("hello".into()),
                        ..Default::default()
                    },
                    data: Some(
                        [(
                            "greeting".to_owned(),
                            format!("Hello, {}!", self.spec.greeting),
                        )]
                        .into(),
                    ),
                    ..Default::default()
                };
                kube::Api::<ConfigMap>::namespaced(cx.mcp().client().clone(), "default")
                    .patch(
                        "hello",
                        &PatchParams::apply("hello").force(),
                        &Patch::Apply(&greeting),
                    )
                    .await?;
                Ok(Outcome::ready())
            }
            async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {
                match kube::Api::<ConfigMap>::namespaced(
                    cx.mcp().client().clone(),
                    "default",
                )
                .delete("hello", &DeleteParams::default())
                .await
                {
                    Ok(_) => Ok(Deletion::done()),
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(Deletion::done()),
                    Err(e) => Err(e.into()),
                }
            }
        }
    };
}

#[doc(hidden)]
pub mod __example {
    /// `Hello` in standard mode only.
    pub mod standard {
        example_provider!();
    }
    /// `Hello` in standard and kcp mode.
    pub mod kcp {
        example_provider!(kcp);
    }
}

/// What serves the simulated platform's clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded API server: starts in milliseconds, no binaries needed.
    Embedded,
    /// A real kube-apiserver per cluster, on one etcd, with RBAC enforced: the binaries are
    /// found as controller-runtime's envtest finds them (`KUBEBUILDER_ASSETS`), else in the
    /// cache `cargo xtask realstack` builds. No controller manager or kubelet runs: stand-ins
    /// report workloads available and finalize deleted namespaces.
    KubeApiserver,
}

impl Backend {
    /// [`Backend::KubeApiserver`] when `SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver` (as
    /// `cargo xtask test-real` sets it), else [`Backend::Embedded`].
    pub fn from_env() -> Self {
        if service_provider_runtime::dev::realstack::real_backend_requested() {
            Backend::KubeApiserver
        } else {
            Backend::Embedded
        }
    }

    /// How long every wait of the kit lasts unless [`TestPlatformBuilder::timeout`] says
    /// otherwise: 2 minutes on the embedded server, generous for shared CI machines; 5 on
    /// kube-apiservers, where deleting a CRD can take minutes by itself (kube's CRD finalizer
    /// retries, with a growing backoff, a listing refused while the instances' watch cache
    /// initialises).
    pub fn default_timeout(self) -> Duration {
        self.hosting().default_timeout()
    }

    fn hosting(self) -> Hosting {
        match self {
            Backend::Embedded => Hosting::LogicalClusters,
            Backend::KubeApiserver => Hosting::KubeApiservers,
        }
    }
}

/// Configures a [`TestPlatform`] before it starts.
///
/// ```
/// # use service_provider::prelude::*;
/// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
/// # pub struct HelloSpec { pub greeting: String }
/// # impl Reconcile for Hello {
/// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
/// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
/// # }
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// use std::time::Duration;
/// use service_provider::testing::TestPlatform;
///
/// let platform = TestPlatform::<Hello>::builder()
///     .provider_config(serde_json::json!({ "pollInterval": "1m" }))
///     .timeout(Duration::from_secs(30))
///     .start()
///     .await?;
/// # platform.stop().await; Ok(()) }
/// ```
pub struct TestPlatformBuilder<P> {
    config: Option<Value>,
    modes: Option<Vec<Mode>>,
    /// `None`: the backend's [`Backend::default_timeout`].
    timeout: Option<Duration>,
    provider_name: Option<String>,
    backend: Option<Backend>,
    run: RunSettings,
    _provider: PhantomData<fn() -> P>,
}

impl<P> fmt::Debug for TestPlatformBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestPlatformBuilder")
            .field("config", &self.config)
            .field("modes", &self.modes)
            .field("timeout", &self.timeout)
            .field("provider_name", &self.provider_name)
            .field("backend", &self.backend)
            .field("run", &self.run)
            .finish()
    }
}

impl<P: Reconcile> TestPlatformBuilder<P> {
    /// The ProviderConfig's `spec` (any value that serializes to it: `serde_json::json!` or the
    /// generated `…ProviderConfigSpec`). Default: the sample `<provider> dev` uses, generated from
    /// the CRD (required fields filled in, the sample object's `version` offered).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }] }))
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn provider_config(mut self, spec: impl Serialize) -> Self {
        // A spec that does not serialize is reported by `start`, where errors can be returned.
        self.config = Some(serde_json::to_value(spec).unwrap_or(Value::Null));
        self
    }

    /// The modes the provider serves. Default: standard mode, plus kcp mode when the provider is
    /// declared with `kcp`. Asking for kcp mode starts an embedded kcp with a provider workspace
    /// exporting the provider's API; [`TestPlatform::create_kcp_tenant`] binds tenant
    /// workspaces to it.
    ///
    /// ```no_run
    /// # async fn f<P: service_provider::Reconcile>() -> Result<(), service_provider::testing::TestError> {
    /// use service_provider::Mode;
    /// // Only kcp mode: no onboarding access is ordered, no ControlPlanes are watched.
    /// let platform = service_provider::testing::TestPlatform::<P>::builder()
    ///     .modes([Mode::Kcp])
    ///     .start()
    ///     .await?;
    /// # let _ = platform; Ok(()) }
    /// ```
    pub fn modes(mut self, modes: impl IntoIterator<Item = Mode>) -> Self {
        self.modes = Some(modes.into_iter().collect());
        self
    }

    /// How long each wait lasts, and start-up (default [`Backend::default_timeout`]).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .timeout(std::time::Duration::from_secs(20))
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// `--provider-name` (names the ProviderConfig and the access requests); default: the kind
    /// in lower case.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .provider_name("velero")
    ///     .start()
    ///     .await?;
    /// assert_eq!(platform.provider_name(), "velero");
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = Some(name.into());
        self
    }

    /// What serves the platform's clusters (default: [`Backend::from_env`]). kcp stays the
    /// embedded one on either backend.
    ///
    /// With the binaries of controller-runtime's envtest (`KUBEBUILDER_ASSETS`, or
    /// `cargo xtask realstack`'s cache), real kube-apiservers:
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # // Run by `cargo xtask test-real`; skipped, saying so, where the binaries are not built.
    /// # if service_provider::dev::realstack::Binaries::for_test().is_none() { return Ok(()) }
    /// use service_provider::testing::{Backend, TestPlatform};
    ///
    /// let platform = TestPlatform::<Hello>::builder()
    ///     .backend(Backend::KubeApiserver)
    ///     .start()
    ///     .await?;
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// `--concurrency`: how many objects of a mode are reconciled at once (default: the
    /// binary's, 16). One makes reconciles of different tenants run one after the other.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .concurrency(1)
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn concurrency(mut self, reconciles: usize) -> Self {
        self.run.concurrency = Some(reconciles);
        self
    }

    /// `--reconcile-timeout`: how long one `create_or_update` or `delete` may run before it
    /// fails with a `ReconcileTimedOut` condition and is retried with backoff (default: none,
    /// as the binary's when the provider's `App` sets none).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .reconcile_timeout(std::time::Duration::from_secs(30))
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.run.reconcile_timeout = Some(timeout);
        self
    }

    /// `--leader-elect`: the provider campaigns for its Lease before it reconciles, as its
    /// replicas do in production, with Lease timings short enough for a test (a 4 s Lease,
    /// renewed every second): once the leader stops, a [replica](TestPlatform::start_replica)
    /// takes over within seconds. The provider the platform starts holds the Lease as
    /// `replica-0`, replicas as `replica-1`, `replica-2`, ….
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .leader_election()
    ///     .start()
    ///     .await?;
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn leader_election(mut self) -> Self {
        self.run.leader_election.get_or_insert(None);
        self
    }

    /// `--leader-election-id`: the name of standard mode's Lease, e.g. a Go provider's
    /// `LeaderElectionID` when taking over from it, so the two never reconcile at once. Turns
    /// on [leader election](Self::leader_election).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .leader_election_id("hello.services.open-control-plane.io")
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn leader_election_id(mut self, id: impl Into<String>) -> Self {
        self.run.leader_election = Some(Some(id.into()));
        self
    }

    /// `--metrics-bind-address` and `--health-probe-bind-address`: the provider serves
    /// `/metrics`, `/healthz` and `/readyz` over HTTP as in its pod, on free ports of 127.0.0.1
    /// that [`TestPlatform::endpoints`] names.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .serve_endpoints()
    ///     .start()
    ///     .await?;
    /// let endpoints = platform.endpoints().expect("served");
    /// println!("scrape http://{}/metrics", endpoints.metrics);
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn serve_endpoints(mut self) -> Self {
        self.run.serve_endpoints = true;
        self
    }

    /// The embedded kcp's options: its shards, the shortest token lifetime it grants, ….
    ///
    /// ```
    /// # service_provider::__testing_example_provider!(kcp);
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// use service_provider::dev::KcpOptions;
    ///
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .modes([service_provider::Mode::Kcp])
    ///     .kcp_options(KcpOptions::default().shards(2))
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn kcp_options(mut self, options: KcpOptions) -> Self {
        self.run.kcp.options = Some(options);
        self
    }

    /// How kcp mode obtains the credential it hands to `create_or_update` for each workspace:
    /// `--kcp-token-lifetime` (`Mint { lifetime }`) or `--kcp-credentials-secret-namespace`
    /// (`Secret { namespace }`); default: minted tokens valid for an hour.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!(kcp);
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// use service_provider::dev::WorkspaceCredentials;
    ///
    /// let lifetime = std::time::Duration::from_secs(600);
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .modes([service_provider::Mode::Kcp])
    ///     .kcp_workspace_credentials(WorkspaceCredentials::Mint { lifetime })
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn kcp_workspace_credentials(mut self, credentials: WorkspaceCredentials) -> Self {
        self.run.kcp.credentials = Some(credentials);
        self
    }

    /// `--provision-apiexport`: kcp mode creates its APIResourceSchema and creates or updates
    /// its APIExport when it starts, instead of finding them as `init` left them: to test a
    /// schema change rolled out by the provider itself.
    pub fn kcp_provision(mut self) -> Self {
        self.run.kcp.provision = true;
        self
    }

    /// kcp mode configured as a platform operator configures it: the ProviderConfig's `kcp`
    /// block names the provider workspace and the Secret holding its kubeconfig, and the
    /// provider reads it when it starts, instead of being given `--kcp-kubeconfig`.
    /// [`TestPlatform::set_provider_config`] keeps the block in every spec it writes.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!(kcp);
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .modes([service_provider::Mode::Kcp])
    ///     .kcp_from_provider_config()
    ///     .start()
    ///     .await?;
    /// let tenant = platform.create_kcp_tenant("team-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn kcp_from_provider_config(mut self) -> Self {
        self.run.kcp.from_provider_config = true;
        self
    }

    /// `--shard-count`: splits the workspaces into `shares`; the provider the platform starts
    /// serves share 0 (`--shard-index 0`), [replica](TestPlatform::start_replica) `n` share
    /// `n % shares`; each workspace is served by the one replica whose share it hashes to.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!(kcp);
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .modes([service_provider::Mode::Kcp])
    ///     .kcp_shares(2)
    ///     .start()
    ///     .await?;
    /// let second_share = platform.start_replica().await?;
    /// # second_share.stop().await; platform.stop().await; Ok(()) }
    /// ```
    pub fn kcp_shares(mut self, shares: u32) -> Self {
        self.run.kcp.shares = Some(shares);
        self
    }

    /// Starts the simulated platform with the provider installed as `init` leaves it (CRDs,
    /// ProviderConfig, ServiceProvider, its platform identity), and the provider running in
    /// this process in the chosen modes. Needs a multi-threaded tokio runtime
    /// (`#[tokio::test(flavor = "multi_thread")]`): the clusters and the provider run on it.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder().start().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn start(self) -> Result<TestPlatform<P>, TestError> {
        let mut platform = self.start_without_provider().await?;
        platform.start_provider().await?;
        Ok(platform)
    }

    /// Starts the simulated platform with the provider installed as `init` leaves it, but not
    /// running: what a test puts in place before the provider starts (objects an older
    /// release, a Go provider or an end user left) is there when it does, with
    /// [`TestPlatform::start_provider`].
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let mut platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .start_without_provider()
    ///     .await?;
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// platform.start_provider().await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn start_without_provider(self) -> Result<TestPlatform<P>, TestError> {
        let info = P::INFO;
        let modes = self.modes.clone().unwrap_or_else(|| {
            let mut m = vec![Mode::Standard];
            if info.kcp {
                m.push(Mode::Kcp);
            }
            m
        });
        if modes.is_empty() {
            return Err(TestError::Usage(
                "TestPlatformBuilder::modes got no mode; give Mode::Standard, Mode::Kcp or both"
                    .into(),
            ));
        }
        if self.run.concurrency == Some(0) {
            return Err(TestError::Usage(
                "TestPlatformBuilder::concurrency(0) would reconcile nothing; give at least 1"
                    .into(),
            ));
        }
        if self.run.kcp.shares == Some(0) {
            return Err(TestError::Usage(
                "TestPlatformBuilder::kcp_shares(0) would serve no workspace; give at least 1"
                    .into(),
            ));
        }
        let kcp = modes.contains(&Mode::Kcp);
        if let Some(option) = self.run.kcp.first_set().filter(|_| !kcp) {
            return Err(TestError::Usage(format!(
                "TestPlatformBuilder::{option} configures kcp mode, which this platform does not run (modes {modes:?}); keep Mode::Kcp in TestPlatformBuilder::modes, or drop {option}"
            )));
        }
        if kcp && !info.kcp {
            return Err(TestError::Usage(format!(
                "{} is declared without `kcp` in #[service_provider(...)], so it has no kcp mode to test; add `kcp` to the attribute or test Mode::Standard only",
                info.kind
            )));
        }
        let config = match self.config {
            Some(Value::Null) => {
                return Err(TestError::Usage(
                    "the ProviderConfig spec given to TestPlatformBuilder::provider_config does not serialize to JSON".into(),
                ));
            }
            Some(spec) => spec,
            None => DevSamples::default().resolve::<P>().0,
        };
        let backend = self.backend.unwrap_or_else(Backend::from_env);
        let timeout = self.timeout.unwrap_or_else(|| backend.default_timeout());
        let mut builder = TestEnv::builder()
            .hosting(backend.hosting())
            .provider::<P>()
            .provider_config(config)
            .timeout(timeout);
        if let Some(name) = &self.provider_name {
            builder = builder.provider_name(name);
        }
        if kcp {
            builder = builder.kcp(0);
            if let Some(options) = &self.run.kcp.options {
                builder = builder.kcp_options(options.clone());
            }
        }
        let env = builder.start().await?;
        let provider = env.provider().ok_or_else(|| {
            TestError::Start("the simulated platform installed no provider".into())
        })?;
        let kcp_block = if self.run.kcp.from_provider_config {
            Some(write_kcp_block::<P>(&env).await?)
        } else {
            None
        };
        let shared = Arc::new(Shared {
            provider_name: provider.name().to_owned(),
            env,
            timeout,
            kcp_block,
        });
        Ok(TestPlatform::stopped(shared, self.run, modes))
    }
}

/// How the provider runs: the binary's flags a test may set.
#[derive(Debug, Clone, Default)]
struct RunSettings {
    concurrency: Option<usize>,
    reconcile_timeout: Option<Duration>,
    /// `--leader-elect`, with standard mode's Lease name when given.
    leader_election: Option<Option<String>>,
    /// `--metrics-bind-address` and `--health-probe-bind-address` on free local ports.
    serve_endpoints: bool,
    kcp: KcpRun,
}

/// How kcp mode runs: the binary's kcp flags a test may set, and the embedded kcp's options.
#[derive(Debug, Clone, Default)]
struct KcpRun {
    /// The embedded kcp's options (shards, shortest token lifetime).
    options: Option<KcpOptions>,
    credentials: Option<WorkspaceCredentials>,
    provision: bool,
    /// How many shares the workspaces are split into; replica `n` serves share `n % shares`.
    shares: Option<u32>,
    /// The provider finds its kcp settings in the ProviderConfig's `kcp` block.
    from_provider_config: bool,
}

impl KcpRun {
    /// The builder method of the first kcp setting given, if any.
    fn first_set(&self) -> Option<&'static str> {
        [
            (self.options.is_some(), "kcp_options"),
            (self.credentials.is_some(), "kcp_workspace_credentials"),
            (self.provision, "kcp_provision"),
            (self.shares.is_some(), "kcp_shares"),
            (self.from_provider_config, "kcp_from_provider_config"),
        ]
        .into_iter()
        .find_map(|(set, option)| set.then_some(option))
    }
}

/// Writes the ProviderConfig's `kcp` block naming the provider workspace and the Secret with
/// the provider's kubeconfig there, as a platform operator configures kcp mode; returns it.
async fn write_kcp_block<P: Reconcile>(env: &TestEnv) -> Result<Value, TestError> {
    let (Some(provider), Some(kcp)) = (env.provider(), env.kcp()) else {
        return Err(TestError::Start(
            "the simulated platform has no kcp provider to configure".into(),
        ));
    };
    let secret = provider.kcp_kubeconfig_secret().ok_or_else(|| {
        TestError::Start("the simulated platform stored no kcp kubeconfig for the provider".into())
    })?;
    let block = kcp.provider_config_block(env.pod_namespace(), secret);
    let configs: Api<DynamicObject> = Api::all_with(
        env.platform().client(),
        &ApiResource::erase::<P::ProviderConfig>(&()),
    );
    let name = provider.name();
    configs
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "kcp": &block } })),
        )
        .await
        .map_err(kube_err(format!(
            "writing the kcp block of ProviderConfig {name}"
        )))?;
    Ok(block)
}

/// What tenants and clusters share with their platform.
#[derive(Debug)]
struct Shared {
    env: TestEnv,
    provider_name: String,
    timeout: Duration,
    /// The ProviderConfig's `kcp` block, with [`TestPlatformBuilder::kcp_from_provider_config`].
    kcp_block: Option<Value>,
}

/// The simulated openMCP platform with provider `P` running: create tenants, change the
/// ProviderConfig, look into the platform's clusters. Dropping it stops the provider (without
/// waiting for running reconciles; [`stop`](Self::stop) waits).
///
/// ```
/// # service_provider::__testing_example_provider!();
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// use service_provider::testing::TestPlatform;
///
/// let platform = TestPlatform::<Hello>::start().await?;
/// // ... create tenants, wait for them, inspect their clusters ...
/// platform.stop().await;
/// # Ok(()) }
/// ```
pub struct TestPlatform<P: Reconcile> {
    shared: Arc<Shared>,
    runtime: Option<Runtime<P>>,
    /// The running provider's kcp mode, for the in-repo tests' look at its machinery.
    kcp_source: Option<Arc<KcpSource<P>>>,
    run: RunSettings,
    modes: Vec<Mode>,
    /// Replicas started so far, which names the next one.
    replicas: std::sync::atomic::AtomicUsize,
    /// The platform went on under the next release ([`TestPlatform::upgrade`]): dropping this
    /// handle must not stop it.
    handed_over: bool,
}

impl<P: Reconcile> fmt::Debug for TestPlatform<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestPlatform")
            .field("provider", &P::INFO.kind)
            .field("provider_name", &self.shared.provider_name)
            .field("modes", &self.modes)
            .field("running", &self.runtime.is_some())
            .finish()
    }
}

impl<P: Reconcile> TestPlatform<P> {
    /// The platform `shared`, with the provider not running yet.
    fn stopped(shared: Arc<Shared>, run: RunSettings, modes: Vec<Mode>) -> Self {
        TestPlatform {
            shared,
            runtime: None,
            kcp_source: None,
            run,
            modes,
            replicas: std::sync::atomic::AtomicUsize::new(0),
            handed_over: false,
        }
    }

    /// A builder, for a ProviderConfig, modes or a timeout other than the defaults.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .provider_config(serde_json::json!({}))
    ///     .start()
    ///     .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn builder() -> TestPlatformBuilder<P> {
        TestPlatformBuilder {
            config: None,
            modes: None,
            timeout: None,
            provider_name: None,
            backend: None,
            run: RunSettings::default(),
            _provider: PhantomData,
        }
    }

    /// Starts with the defaults: the sample ProviderConfig, standard mode (and kcp mode for a
    /// provider declared with `kcp`), [`Backend::default_timeout`].
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::start().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn start() -> Result<Self, TestError> {
        Self::builder().start().await
    }

    /// The modes the provider serves.
    ///
    /// ```no_run
    /// # fn f<P: service_provider::Reconcile>(platform: &service_provider::testing::TestPlatform<P>) {
    /// if platform.modes().contains(&service_provider::Mode::Kcp) { /* also test a workspace */ }
    /// # }
    /// ```
    pub fn modes(&self) -> &[Mode] {
        &self.modes
    }

    /// The provider name (`--provider-name`; also the ProviderConfig's name).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// println!("ProviderConfig {}", platform.provider_name());
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn provider_name(&self) -> &str {
        &self.shared.provider_name
    }

    /// A tenant in standard mode: creates the ControlPlane `name` (in
    /// [`DEFAULT_TENANT_NAMESPACE`], or the namespace given as `namespace/name`), waits until the
    /// platform made its MCP cluster, and creates the Service API object of the same name and
    /// namespace with `spec` on the onboarding cluster, as an end user would.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// let a = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0" })).await?;
    /// let b = platform.create_tenant("project-x--ws-y/tenant-b", serde_json::json!({ "version": "1.0.0" })).await?;
    /// assert_eq!(b.namespace(), "project-x--ws-y");
    /// # let _ = a; platform.stop().await; Ok(()) }
    /// ```
    pub async fn create_tenant(
        &self,
        name: &str,
        spec: impl Serialize,
    ) -> Result<Tenant<P>, TestError> {
        if !self.modes.contains(&Mode::Standard) {
            return Err(TestError::Usage(format!(
                "create_tenant makes a standard-mode tenant, but the provider serves {:?} only; add Mode::Standard to TestPlatformBuilder::modes or use create_kcp_tenant",
                self.modes
            )));
        }
        let (namespace, name) = object_key(name, DEFAULT_TENANT_NAMESPACE);
        let spec = spec_value(spec)?;
        let env = &self.shared.env;
        let mcp = env.create_control_plane(namespace, name).await?;
        let tenant = Tenant {
            shared: self.shared.clone(),
            identity: Identity::standard(namespace, name),
            api: Api::namespaced(env.onboarding().client(), namespace),
            cluster: Cluster::from_handle("mcp", &mcp, self.shared.timeout),
            timeout: self.shared.timeout,
        };
        tenant.create(spec).await?;
        Ok(tenant)
    }

    /// A tenant in kcp mode: creates the workspace `root:<workspace>` (or the full path given,
    /// `root:org:ws`), binds it to the provider's APIExport with every permission claim
    /// accepted, and creates the Service API object named like the workspace's last segment in
    /// namespace `default` with `spec`, as an end user would. Shorthand for
    /// [`create_kcp_workspace`](Self::create_kcp_workspace) and
    /// [`KcpWorkspace::create_tenant`].
    ///
    /// ```no_run
    /// # async fn f<P: service_provider::Reconcile>(platform: &service_provider::testing::TestPlatform<P>) -> Result<(), service_provider::testing::TestError> {
    /// let tenant = platform.create_kcp_tenant("team-a", serde_json::json!({ "version": "1.0.0" })).await?;
    /// assert_eq!(tenant.name(), "team-a");
    /// # Ok(()) }
    /// ```
    pub async fn create_kcp_tenant(
        &self,
        workspace: &str,
        spec: impl Serialize,
    ) -> Result<Tenant<P>, TestError> {
        let workspace = self.create_kcp_workspace(workspace).await?;
        let name = workspace
            .path()
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        workspace.create_tenant(&name, spec).await
    }

    /// A kcp workspace bound to the provider: creates the workspace `root:<workspace>` (or the
    /// full path given, `root:org:ws`) and binds it to the provider's APIExport with every
    /// permission claim accepted, with no Service API object in it yet. Workspaces are placed
    /// on kcp's [shards](crate::dev::KcpOptions::shards) in turn.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!(kcp);
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .modes([service_provider::Mode::Kcp])
    ///     .start()
    ///     .await?;
    /// let workspace = platform.create_kcp_workspace("team-a").await?;
    /// let tenant = workspace.create_tenant("greeter", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn create_kcp_workspace(
        &self,
        workspace: &str,
    ) -> Result<KcpWorkspace<P>, TestError> {
        let Some(kcp) = self
            .shared
            .env
            .kcp()
            .filter(|_| self.modes.contains(&Mode::Kcp))
        else {
            return Err(TestError::Usage(format!(
                "a kcp workspace needs kcp mode, but the provider serves {:?}; declare the provider with `kcp` and keep Mode::Kcp in TestPlatformBuilder::modes",
                self.modes
            )));
        };
        let path = if workspace.starts_with("root:") {
            workspace.to_owned()
        } else {
            format!("root:{workspace}")
        };
        let info = kcp.bind_workspace(&path).await?;
        Ok(KcpWorkspace {
            shared: self.shared.clone(),
            cluster: Cluster {
                name: format!("workspace {}", info.path),
                client: kcp.client(&info.path),
                kubeconfig: kcp.admin_kubeconfig(&info.path),
                timeout: self.shared.timeout,
                handle: None,
            },
            info,
            _provider: PhantomData,
        })
    }

    /// Replaces the ProviderConfig's `spec`, as a platform operator would; the provider
    /// reconciles every tenant again.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// platform.set_provider_config(serde_json::json!({ "versions": [{ "version": "2.0.0" }] })).await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn set_provider_config(&self, spec: impl Serialize) -> Result<(), TestError> {
        let mut spec = spec_value(spec)?;
        if let (Some(block), Some(fields)) = (&self.shared.kcp_block, spec.as_object_mut()) {
            fields.entry("kcp").or_insert_with(|| block.clone());
        }
        let resource = ApiResource::erase::<P::ProviderConfig>(&());
        let api: Api<DynamicObject> = Api::all_with(self.shared.env.platform().client(), &resource);
        let name = self.provider_name();
        api.patch(name, &PatchParams::default(), &replace_spec(spec)?)
            .await
            .map_err(kube_err(format!(
                "replacing the spec of ProviderConfig {name}"
            )))?;
        Ok(())
    }

    /// Puts a registry credential on the platform where a ProviderConfig's `imagePullSecrets`
    /// (or a field like `chartPullSecret`) names it: Secret `name` of type
    /// `kubernetes.io/dockerconfigjson` in the provider's namespace on the platform cluster, with
    /// `username` and `password` for `registry` (see [`registry_secret`]). Applied, so calling it
    /// again changes the credential, and the provider reconciles every tenant as it does when a
    /// Secret its ProviderConfig names changes. Returns the Secret.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub greeting: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// let platform = TestPlatform::<Hello>::builder()
    ///     .provider_config(serde_json::json!({ "imagePullSecrets": [{ "name": "regcred" }] }))
    ///     .start()
    ///     .await?;
    /// let secret = platform.pull_secret("regcred", "registry.test", "robot", "s3cret").await?;
    /// assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/dockerconfigjson"));
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn pull_secret(
        &self,
        name: &str,
        registry: &str,
        username: &str,
        password: &str,
    ) -> Result<Secret, TestError> {
        let mut secret = registry_secret(name, registry, username, password);
        secret.metadata.namespace = Some(self.shared.env.pod_namespace().to_owned());
        self.platform().apply(&secret).await
    }

    /// The platform cluster, as its admin (ProviderConfig, ClusterRequests, AccessRequests,
    /// kubeconfig Secrets).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// use service_provider::openmcp::AccessRequest;
    /// let requests = platform.platform().list::<AccessRequest>(None).await?;
    /// # let _ = requests; platform.stop().await; Ok(()) }
    /// ```
    pub fn platform(&self) -> Cluster {
        Cluster::from_handle("platform", self.shared.env.platform(), self.shared.timeout)
    }

    /// The onboarding cluster, as its admin (ControlPlanes, standard-mode Service API objects,
    /// their Events).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// use service_provider::openmcp::ControlPlane;
    /// let cps = platform.onboarding().list::<ControlPlane>(Some("project-test--ws-test")).await?;
    /// # let _ = cps; platform.stop().await; Ok(()) }
    /// ```
    pub fn onboarding(&self) -> Cluster {
        Cluster::from_handle(
            "onboarding",
            self.shared.env.onboarding(),
            self.shared.timeout,
        )
    }

    /// Every workload cluster the platform made, oldest first.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// assert!(platform.workload_clusters().len() <= 1, "tenants share one workload cluster");
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn workload_clusters(&self) -> Vec<Cluster> {
        self.shared
            .env
            .clusters()
            .into_iter()
            .filter(|c| c.purpose == PURPOSE_WORKLOAD)
            .map(|c| Cluster::from_handle(&c.name, &c.handle, self.shared.timeout))
            .collect()
    }

    /// The simulated platform underneath, for what the kit does not cover (fault injection,
    /// request counters, more ControlPlanes, kcp shards); see [`crate::dev`].
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// let lists = platform.env().platform().requests("list", "accessrequests");
    /// # let _ = lists; platform.stop().await; Ok(()) }
    /// ```
    pub fn env(&self) -> &TestEnv {
        &self.shared.env
    }

    /// The running provider's kcp mode, for the in-repo tests' look at its machinery (the
    /// workspaces it engaged, the tokens it minted); not part of the kit's API.
    #[doc(hidden)]
    pub fn kcp_source(&self) -> Option<&KcpSource<P>> {
        self.kcp_source.as_deref()
    }

    /// Starts the provider of a platform started
    /// [without it](TestPlatformBuilder::start_without_provider), in this process, in the
    /// platform's modes and under its generated RBAC.
    pub async fn start_provider(&mut self) -> Result<(), TestError> {
        if self.runtime.is_some() {
            return Err(TestError::Usage(
                "the provider is already running: TestPlatform::start_provider is for a platform started with TestPlatformBuilder::start_without_provider, or after TestPlatform::stop_provider".into(),
            ));
        }
        let (runtime, kcp_source) = self.start_runtime(0).await?;
        self.runtime = Some(runtime);
        self.kcp_source = kcp_source;
        Ok(())
    }

    /// Stops the provider [started](Self::start_provider) with the platform, as a pod's
    /// SIGTERM would (running reconciles finish, its Lease is released); the platform, its
    /// tenants and any [replica](Self::start_replica) go on. `start_provider` starts it again.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let mut platform = service_provider::testing::TestPlatform::<Hello>::start().await?;
    /// platform.stop_provider().await?;
    /// // A tenant created while no provider runs is served once one starts.
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// platform.start_provider().await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn stop_provider(&mut self) -> Result<(), TestError> {
        self.kcp_source = None;
        let runtime = self.runtime.take().ok_or_else(|| {
            TestError::Usage(
                "the provider is not running: TestPlatform::stop_provider stops the provider TestPlatformBuilder::start or TestPlatform::start_provider started".into(),
            )
        })?;
        stop_runtime(runtime, self.shared.timeout).await;
        Ok(())
    }

    /// Rolls out the provider's next release `Q` in place of `P`, as a Deployment update does:
    /// `P` stops (running reconciles finish, its Lease is released), `Q`'s manifests are
    /// applied as its `init` applies them (its CRDs and platform ClusterRole; in kcp mode its
    /// APIResourceSchema and the APIExport pointing at it, unless the provider
    /// [provisions them itself](TestPlatformBuilder::kcp_provision)), and `Q` starts with the
    /// same flags. `Q` serves the same Service API (group, kind, plural) in a new shape — a new
    /// field, a new version, a new mode; the tenants so far are `Q`'s with
    /// [`Tenant::as_release`].
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # use service_provider::testing::__example::kcp::Hello as NextHello;
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let platform = service_provider::testing::TestPlatform::<Hello>::start().await?;
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// let platform = platform.upgrade::<NextHello>().await?;
    /// let tenant = tenant.as_release::<NextHello>()?;
    /// tenant.set_spec(serde_json::json!({ "greeting": "the next release" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn upgrade<Q: Reconcile>(mut self) -> Result<TestPlatform<Q>, TestError> {
        same_service_api::<P, Q>("TestPlatform::upgrade")?;
        if self.modes.contains(&Mode::Kcp) && !Q::INFO.kcp {
            return Err(TestError::Usage(format!(
                "the platform runs kcp mode, but the release given to TestPlatform::upgrade declares {} without `kcp`; add `kcp` to its #[service_provider(...)] or test Mode::Standard only",
                Q::INFO.kind
            )));
        }
        self.kcp_source = None;
        if let Some(runtime) = self.runtime.take() {
            stop_runtime(runtime, self.shared.timeout).await;
        }
        let env = &self.shared.env;
        env.roll_out::<Q>().await?;
        // A provider that provisions its export does so when it starts.
        let kcp_mode = self.modes.contains(&Mode::Kcp) && !self.run.kcp.provision;
        if let Some(kcp) = env.kcp().filter(|_| kcp_mode) {
            kcp.roll_out(&service_provider_runtime::manifests::manifests::<Q>())
                .await?;
        }
        self.handed_over = true;
        let mut next =
            TestPlatform::<Q>::stopped(self.shared.clone(), self.run.clone(), self.modes.clone());
        next.start_provider().await?;
        Ok(next)
    }

    /// Starts another replica of the provider in this process, as a second pod of its
    /// Deployment: the same flags, its own identity. With
    /// [leader election](TestPlatformBuilder::leader_election) only the Lease holder reconciles
    /// and a replica takes over when the leader stops; without it, both reconcile.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// let mut platform = service_provider::testing::TestPlatform::<Hello>::builder()
    ///     .leader_election()
    ///     .start()
    ///     .await?;
    /// let standby = platform.start_replica().await?;
    /// platform.stop_provider().await?;
    /// // The standby takes the Lease and serves what comes next.
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// standby.stop().await;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn start_replica(&self) -> Result<Replica<P>, TestError> {
        let n = self
            .replicas
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let (runtime, kcp_source) = self.start_runtime(n).await?;
        Ok(Replica {
            runtime: Some(runtime),
            kcp_source,
            timeout: self.shared.timeout,
        })
    }

    /// Starts the provider once more in this process, in the platform's modes, under its
    /// generated RBAC, as replica `replica` (`replica-<n>`, and share `n` of kcp's shares).
    async fn start_runtime(
        &self,
        replica: usize,
    ) -> Result<(Runtime<P>, Option<Arc<KcpSource<P>>>), TestError> {
        let identity = format!("replica-{replica}");
        let env = &self.shared.env;
        let provider = env.provider().ok_or_else(|| {
            TestError::Start("the simulated platform installed no provider".into())
        })?;
        let platform_client = ClientFactory::new()
            .client(provider.platform_kubeconfig().as_bytes())
            .await
            .map_err(|e| TestError::Start(format!("the provider's platform kubeconfig: {e}")))?;
        let mut options = RunOptions::new(provider.name(), env.pod_namespace());
        options.onboarding_timeout = self.shared.timeout;
        if let Some(reconciles) = self.run.concurrency {
            options.concurrency = reconciles;
        }
        options.reconcile.timeout = self.run.reconcile_timeout;
        if self.run.serve_endpoints {
            let any_port = Some(std::net::SocketAddr::from((
                std::net::Ipv4Addr::LOCALHOST,
                0,
            )));
            options.metrics_addr = any_port;
            options.health_addr = any_port;
        }
        if let Some(lease) = &self.run.leader_election {
            options.leader_elect = true;
            options.leader_election_id.clone_from(lease);
            options.leader.identity = identity;
            options.leader.lease_duration = Duration::from_secs(4);
            options.leader.renew_deadline = Duration::from_secs(3);
            options.leader.retry_period = Duration::from_secs(1);
        }
        let mut runtime = Runtime::<P>::start(platform_client, options)
            .await
            .map_err(|e| TestError::Start(format!("the provider: {e}")))?;
        if self.modes.contains(&Mode::Standard) {
            runtime
                .start_standard()
                .await
                .map_err(|e| TestError::Start(format!("standard mode: {e}")))?;
        }
        let mut kcp_source = None;
        if self.modes.contains(&Mode::Kcp) {
            let kcp = &self.run.kcp;
            let mut settings = if kcp.from_provider_config {
                runtime
                    .kcp_settings_from_provider_config()
                    .await
                    .map_err(|e| TestError::Start(format!("kcp mode: {e}")))?
                    .ok_or_else(|| {
                        TestError::Start(
                            "the provider found no kcp block in its ProviderConfig".into(),
                        )
                    })?
            } else {
                let kubeconfig =
                    env.kcp()
                        .and_then(|k| k.provider_kubeconfig())
                        .ok_or_else(|| {
                            TestError::Start("kcp has no identity for the provider".into())
                        })?;
                KcpSettings::new(&P::INFO, kubeconfig.as_bytes())
            };
            if let Some(credentials) = &kcp.credentials {
                settings.credentials = credentials.clone();
            }
            settings.provision = kcp.provision;
            if let Some(shares) = kcp.shares {
                // `start_without_provider` refused 0 shares.
                let index = u32::try_from(replica % shares as usize).unwrap_or_default();
                settings.sharding = Sharding::new(index, shares).map_err(|e| {
                    TestError::Usage(format!("TestPlatformBuilder::kcp_shares: {e}"))
                })?;
            }
            kcp_source = Some(
                runtime
                    .start_kcp(settings)
                    .await
                    .map_err(|e| TestError::Start(format!("kcp mode: {e}")))?,
            );
        }
        Ok((runtime, kcp_source))
    }

    /// The provider's metrics in the Prometheus text format, as its `/metrics` serves them:
    /// reconciles, their errors and timeouts, queue depth, managed resources.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::start().await?;
    /// use service_provider::testing::eventually;
    ///
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// // A reconcile is counted when it returns, a moment after its status write.
    /// let series = r#"service_provider_reconciles_total{mode="standard",result="ready"}"#;
    /// let timeout = std::time::Duration::from_secs(30);
    /// eventually("the Ready reconcile to be counted", timeout, || async {
    ///     platform.metrics().ok().filter(|metrics| metrics.contains(series))
    /// })
    /// .await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn metrics(&self) -> Result<String, TestError> {
        match &self.runtime {
            Some(runtime) => Ok(runtime.metrics().encode()),
            None => Err(TestError::Usage(
                "the provider is not running: read its metrics after TestPlatform::start_provider and before TestPlatform::stop".into(),
            )),
        }
    }

    /// The value of one series of the provider's [metrics](Self::metrics), named as the text
    /// format writes it (`name{labels}`); `None` until it has a sample, or while the provider
    /// is not running. A reconcile is counted when it returns, after its status write: wait
    /// for a count with [`eventually`], not right after `wait_ready`.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::start().await?;
    /// use service_provider::testing::eventually;
    ///
    /// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "greeting": "world" })).await?;
    /// tenant.wait_ready().await?;
    /// // A reconcile is counted when it returns, a moment after its status write.
    /// let series = r#"service_provider_reconciles_total{mode="standard",result="ready"}"#;
    /// let timeout = std::time::Duration::from_secs(30);
    /// let ready = eventually("the Ready reconcile to be counted", timeout, || async {
    ///     platform.metric(series).filter(|reconciles| *reconciles >= 1.0)
    /// })
    /// .await?;
    /// assert!(ready >= 1.0);
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn metric(&self, series: &str) -> Option<f64> {
        series_value(&self.metrics().ok()?, series)
    }

    /// Where the running provider serves its metrics and probes, with
    /// [`serve_endpoints`](TestPlatformBuilder::serve_endpoints); `None` otherwise.
    pub fn endpoints(&self) -> Option<Endpoints> {
        let runtime = self.runtime.as_ref()?;
        Some(Endpoints {
            metrics: runtime.metrics_addr()?,
            health: runtime.health_addr()?,
        })
    }

    /// Reconciles every tenant once more, as the poll interval would, and returns once that
    /// many reconciles ended: to see what a reconcile with nothing to do costs (with
    /// [`TestEnv::provider_requests`] before and after) or that a provider is settled.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// let spec = HelloSpec { greeting: "world".into(), version: "1.0.0".into() };
    /// let tenant = platform.create_tenant("tenant-a", spec).await?;
    /// tenant.wait_ready().await?;
    /// platform.resync().await?;
    /// let before = platform.env().provider_requests();
    /// platform.resync().await?;
    /// // Requests are counted where they are answered: this resync's are in `after`.
    /// let after = platform.env().provider_requests();
    /// # let _ = (before, after); platform.stop().await; Ok(()) }
    /// ```
    pub async fn resync(&self) -> Result<(), TestError> {
        let Some(runtime) = &self.runtime else {
            return Err(TestError::Usage(
                "the provider is not running: resync after TestPlatform::start_provider and before TestPlatform::stop".into(),
            ));
        };
        let reconciles = || -> u64 {
            use service_provider_runtime::ops::metrics::ReconcileResult as R;
            self.modes
                .iter()
                .flat_map(|&mode| {
                    [R::ready, R::waiting, R::progressing, R::error, R::skipped]
                        .map(|result| runtime.metrics().reconcile_count(mode, result))
                })
                .sum()
        };
        let before = reconciles();
        let triggered = runtime.platform().triggers().trigger_all() as u64;
        eventually(
            &format!("{triggered} reconciles after a resync"),
            self.shared.timeout,
            || async { (reconciles() >= before + triggered).then_some(()) },
        )
        .await
    }

    /// Stops the provider and waits until its running reconciles finished; the clusters keep
    /// serving until the platform is dropped.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// platform.stop().await;
    /// # Ok(()) }
    /// ```
    pub async fn stop(mut self) {
        if let Some(runtime) = self.runtime.take() {
            stop_runtime(runtime, self.shared.timeout).await;
        }
        self.shared.env.stop();
    }
}

/// Stops a provider as SIGTERM does and waits for it, at most `timeout`: a reconcile stuck in
/// the author's code must not hang the test forever.
async fn stop_runtime<P: Reconcile>(runtime: Runtime<P>, timeout: Duration) {
    runtime.shutdown();
    let _ = tokio::time::timeout(timeout, runtime.wait()).await;
}

/// The value of `series` (`name{labels}`) in metrics in the Prometheus text format.
fn series_value(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        line.strip_prefix(series)?
            .strip_prefix(' ')?
            .split(' ')
            .next()?
            .parse()
            .ok()
    })
}

/// Where a provider started with [`TestPlatformBuilder::serve_endpoints`] serves HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    /// `/metrics`, in the Prometheus text format.
    pub metrics: std::net::SocketAddr,
    /// `/healthz` and `/readyz`.
    pub health: std::net::SocketAddr,
}

/// Another replica of the provider, from [`TestPlatform::start_replica`]. Dropping it stops
/// it (without waiting for running reconciles; [`stop`](Self::stop) waits).
pub struct Replica<P: Reconcile> {
    runtime: Option<Runtime<P>>,
    kcp_source: Option<Arc<KcpSource<P>>>,
    timeout: Duration,
}

impl<P: Reconcile> fmt::Debug for Replica<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replica")
            .field("provider", &P::INFO.kind)
            .finish_non_exhaustive()
    }
}

impl<P: Reconcile> Replica<P> {
    /// This replica's metrics in the Prometheus text format (see [`TestPlatform::metrics`]).
    pub fn metrics(&self) -> String {
        self.runtime
            .as_ref()
            .map(|runtime| runtime.metrics().encode())
            .unwrap_or_default()
    }

    /// The value of one series of this replica's metrics (see [`TestPlatform::metric`]): with
    /// leader election, a standby counts no reconcile until it leads.
    pub fn metric(&self, series: &str) -> Option<f64> {
        series_value(&self.metrics(), series)
    }

    /// This replica's kcp mode, for the in-repo tests' look at its machinery (the workspaces it
    /// engaged, the tokens it minted); not part of the kit's API.
    #[doc(hidden)]
    pub fn kcp_source(&self) -> Option<&KcpSource<P>> {
        self.kcp_source.as_deref()
    }

    /// Stops this replica as a pod's SIGTERM would: running reconciles finish and its Lease is
    /// released.
    pub async fn stop(mut self) {
        if let Some(runtime) = self.runtime.take() {
            stop_runtime(runtime, self.timeout).await;
        }
    }
}

impl<P: Reconcile> Drop for Replica<P> {
    fn drop(&mut self) {
        if let Some(runtime) = &self.runtime {
            runtime.shutdown();
        }
    }
}

impl<P: Reconcile> Drop for TestPlatform<P> {
    fn drop(&mut self) {
        if let Some(runtime) = &self.runtime {
            runtime.shutdown();
        }
        if !self.handed_over {
            self.shared.env.stop();
        }
    }
}

/// A JSON patch replacing the whole `spec` (a merge patch would keep fields the new spec omits).
fn replace_spec(spec: Value) -> Result<Patch<()>, TestError> {
    let path = json_patch::jsonptr::PointerBuf::parse("/spec")
        .map_err(|e| TestError::Usage(format!("the JSON pointer /spec: {e}")))?;
    Ok(Patch::Json(json_patch::Patch(vec![
        json_patch::PatchOperation::Add(json_patch::AddOperation { path, value: spec }),
    ])))
}

/// Refuses a `Q` that is not a release of `P`'s Service API.
fn same_service_api<P: ServiceProvider, Q: ServiceProvider>(caller: &str) -> Result<(), TestError> {
    let (now, next) = (P::INFO, Q::INFO);
    if (now.group, now.kind, now.plural) == (next.group, next.kind, next.plural) {
        return Ok(());
    }
    Err(TestError::Usage(format!(
        "{caller} takes a release of the same Service API, but {} is {}.{} ({}) and {} is {}.{} ({}); give the next release of {}",
        std::any::type_name::<P>(),
        now.kind,
        now.group,
        now.plural,
        std::any::type_name::<Q>(),
        next.kind,
        next.group,
        next.plural,
        now.kind,
    )))
}

/// The namespace and name of a tenant's object given as `namespace/name` or `name`.
fn object_key<'a>(key: &'a str, default_namespace: &'a str) -> (&'a str, &'a str) {
    key.split_once('/').unwrap_or((default_namespace, key))
}

fn spec_value(spec: impl Serialize) -> Result<Value, TestError> {
    serde_json::to_value(spec)
        .map_err(|e| TestError::Usage(format!("the spec does not serialize to JSON: {e}")))
}

/// A kcp workspace bound to the provider's APIExport, from
/// [`TestPlatform::create_kcp_workspace`]: where end users create Service API objects.
pub struct KcpWorkspace<P> {
    shared: Arc<Shared>,
    info: WorkspaceInfo,
    cluster: Cluster,
    _provider: PhantomData<fn() -> P>,
}

impl<P> fmt::Debug for KcpWorkspace<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KcpWorkspace")
            .field("path", &self.info.path)
            .field("shard", &self.info.shard)
            .finish()
    }
}

impl<P: ServiceProvider> KcpWorkspace<P> {
    /// The workspace's path (`root:team-a`).
    pub fn path(&self) -> &str {
        &self.info.path
    }

    /// The kcp shard the workspace lives on (`0` is the root shard).
    pub fn shard(&self) -> usize {
        self.info.shard
    }

    /// The workspace, with an admin's access, at its workspace URL.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Creates a Service API object named `name` (or `namespace/name`; namespace `default`
    /// when none is given) in the workspace with `spec`, as an end user would.
    pub async fn create_tenant(
        &self,
        name: &str,
        spec: impl Serialize,
    ) -> Result<Tenant<P>, TestError> {
        let (namespace, name) = object_key(name, "default");
        let spec = spec_value(spec)?;
        let tenant = Tenant {
            shared: self.shared.clone(),
            identity: Identity {
                cluster: Some(self.info.name.clone()),
                namespace: namespace.into(),
                name: name.into(),
            },
            api: Api::namespaced(self.cluster.client.clone(), namespace),
            cluster: self.cluster.clone(),
            timeout: self.shared.timeout,
        };
        tenant.create(spec).await?;
        Ok(tenant)
    }
}

/// One tenant: its Service API object (on the onboarding cluster, or in its kcp workspace) and
/// the clusters the provider serves it in. Cheap to clone.
///
/// ```
/// # service_provider::__testing_example_provider!();
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
/// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
/// #     .start()
/// #     .await?;
/// let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0" })).await?;
/// let object = tenant.wait_ready().await?;
/// tenant.delete().await?;
/// tenant.wait_gone().await?;
/// # let _ = object; platform.stop().await; Ok(()) }
/// ```
pub struct Tenant<P> {
    shared: Arc<Shared>,
    identity: Identity,
    api: Api<P>,
    cluster: Cluster,
    timeout: Duration,
}

impl<P: Clone> Clone for Tenant<P> {
    fn clone(&self) -> Self {
        Tenant {
            shared: self.shared.clone(),
            identity: self.identity.clone(),
            api: self.api.clone(),
            cluster: self.cluster.clone(),
            timeout: self.timeout,
        }
    }
}

impl<P> fmt::Debug for Tenant<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tenant")
            .field("identity", &self.identity)
            .field("cluster", &self.cluster.name)
            .finish()
    }
}

impl<P: ServiceProvider> Tenant<P> {
    /// This tenant as the provider's next release `Q` reads it, after
    /// [`TestPlatform::upgrade`]: the same object, through `Q`'s type.
    pub fn as_release<Q: ServiceProvider>(&self) -> Result<Tenant<Q>, TestError> {
        same_service_api::<P, Q>("Tenant::as_release")?;
        Ok(Tenant {
            shared: self.shared.clone(),
            identity: self.identity.clone(),
            api: Api::namespaced(self.api.clone().into_client(), self.namespace()),
            cluster: self.cluster.clone(),
            timeout: self.timeout,
        })
    }

    /// The Service API object's name.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// println!("{}", tenant.name());
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// The Service API object's namespace.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// println!("{}", tenant.namespace());
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn namespace(&self) -> &str {
        &self.identity.namespace
    }

    /// Who the tenant is to the provider: what `cx.identity()` says in `create_or_update`.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// // The tenant's namespace on a shared workload cluster, as a provider might name it.
    /// let namespace = format!("velero-{}", tenant.identity().stable_id());
    /// # let _ = namespace; platform.stop().await; Ok(()) }
    /// ```
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Standard or kcp.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// assert_eq!(tenant.mode(), service_provider::Mode::Standard);
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub fn mode(&self) -> Mode {
        self.identity.mode()
    }

    /// This tenant with another timeout for its waits (the platform's by default): shorter to
    /// check that something does *not* happen, longer for a slow install.
    ///
    /// ```no_run
    /// # async fn f<P: service_provider::ServiceProvider>(tenant: &service_provider::testing::Tenant<P>) -> Result<(), service_provider::testing::TestError> {
    /// let err = tenant.with_timeout(std::time::Duration::from_secs(2)).wait_ready().await.unwrap_err();
    /// println!("{err}");  // what is stuck
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: Duration) -> Tenant<P> {
        Tenant {
            timeout,
            cluster: Cluster {
                timeout,
                ..self.cluster.clone()
            },
            ..self.clone()
        }
    }

    /// The Service API object as the end user sees it now.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// let object = tenant.get().await?;
    /// # let _ = object; platform.stop().await; Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<P, TestError> {
        self.api
            .get(self.name())
            .await
            .map_err(kube_err(format!("reading {}", self.describe())))
    }

    /// The end user's API of this tenant's Service API objects (onboarding namespace or
    /// workspace namespace), for what the kit does not cover.
    ///
    /// ```no_run
    /// # async fn f<P: service_provider::ServiceProvider>(tenant: &service_provider::testing::Tenant<P>) -> Result<(), service_provider::kube::Error> {
    /// let all = tenant.api().list(&Default::default()).await?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub fn api(&self) -> &Api<P> {
        &self.api
    }

    /// Waits until the object is Ready for its current generation (phase `Ready`,
    /// `observedGeneration == generation`); returns it. On timeout the error says what is stuck
    /// (see [`explain`](Self::explain)).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// let ready = tenant.wait_ready().await?;
    /// assert!(service_provider::testing::is_ready(&ready));
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn wait_ready(&self) -> Result<P, TestError> {
        self.wait_until("to be Ready", is_ready::<P>).await
    }

    /// Waits until `condition` holds for the object; returns it. For states other than Ready:
    /// a reason the provider reports, an extra status field, a deletion that is blocked.
    ///
    /// The runtime's reasons are constants in [`reason`]; [`ready_reason`] reads the `Ready`
    /// condition's.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub version: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {
    /// #         cx.common().resolve_version(&self.spec.version)?;
    /// #         Ok(Outcome::ready())
    /// #     }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// # let platform = TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "9.9.9" })).await?;
    /// use service_provider::testing::{ready_reason, reason};
    ///
    /// // A version the ProviderConfig does not offer is the end user's mistake:
    /// let refused = tenant
    ///     .wait_until("to refuse the unknown version", |o| {
    ///         ready_reason(o) == Some(reason::INVALID_USER_INPUT)
    ///     })
    ///     .await?;
    /// # let _ = refused; platform.stop().await; Ok(()) }
    /// ```
    pub async fn wait_until(
        &self,
        what: &str,
        condition: impl Fn(&P) -> bool,
    ) -> Result<P, TestError> {
        let found = watch_until(
            self.api.clone(),
            self.name(),
            self.timeout,
            |o: Option<&P>| o.is_some_and(&condition),
        )
        .await;
        match found {
            Ok(Some(object)) => Ok(object),
            Ok(None) | Err(_) => Err(self.timeout(what).await),
        }
    }

    /// Replaces the object's `spec`, as the end user would edit it; [`wait_ready`](Self::wait_ready)
    /// then waits for the new generation.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// tenant.set_spec(serde_json::json!({ "version": "2.0.0" })).await?;
    /// tenant.wait_ready().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn set_spec(&self, spec: impl Serialize) -> Result<P, TestError> {
        self.api
            .patch(
                self.name(),
                &PatchParams::default(),
                &replace_spec(spec_value(spec)?)?,
            )
            .await
            .map_err(kube_err(format!("editing {}", self.describe())))
    }

    /// Deletes the Service API object, as the end user would; the provider's `delete` runs.
    /// Returns at once: [`wait_gone`](Self::wait_gone) waits until the provider let it go.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// tenant.delete().await?;
    /// tenant.wait_gone().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<(), TestError> {
        match self.api.delete(self.name(), &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(kube_err(format!("deleting {}", self.describe()))(e)),
        }
    }

    /// Waits until the object is gone: the provider's `delete` finished, its access was given
    /// back and the finalizer removed. On timeout the error says what is stuck.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// tenant.delete().await?;
    /// tenant.wait_gone().await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn wait_gone(&self) -> Result<(), TestError> {
        let found = watch_until(
            self.api.clone(),
            self.name(),
            self.timeout,
            |o: Option<&P>| o.is_none(),
        )
        .await;
        match found {
            Ok(_) => Ok(()),
            Err(_) => Err(self.timeout("to be gone").await),
        }
    }

    /// The tenant cluster the provider installs into: the MCP cluster in standard mode, the
    /// workspace in kcp mode; as its admin.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// tenant.wait_ready().await?;
    /// let greeting: ConfigMap = tenant.mcp().get("default/hello").await?;
    /// # let _ = greeting; platform.stop().await; Ok(()) }
    /// ```
    pub fn mcp(&self) -> &Cluster {
        &self.cluster
    }

    /// The workload cluster the platform granted this tenant (for providers declared with
    /// `workload_cluster`), as its admin. Waits until the grant exists.
    ///
    /// ```no_run
    /// # async fn f<P: service_provider::ServiceProvider>(tenant: &service_provider::testing::Tenant<P>) -> Result<(), service_provider::testing::TestError> {
    /// use service_provider::k8s_openapi::api::apps::v1::Deployment;
    /// let worker: Deployment = tenant.workload().await?.get("velero-ns/velero").await?;
    /// # let _ = worker; Ok(()) }
    /// ```
    pub async fn workload(&self) -> Result<Cluster, TestError> {
        let granted = eventually("a workload cluster", self.timeout, || async {
            let requests = self.requests::<ClusterRequest>().await.ok()?;
            requests.iter().find_map(|r| {
                let cluster = r.status.as_ref()?.cluster.as_ref()?;
                (r.spec.purpose == PURPOSE_WORKLOAD).then_some(())?;
                self.shared
                    .env
                    .operator()
                    .cluster(&cluster.namespace, &cluster.name)
            })
        })
        .await;
        match granted {
            Ok(handle) => Ok(Cluster::from_handle(
                &format!("workload cluster {}", handle.name()),
                &handle,
                self.timeout,
            )),
            Err(_) => Err(self.timeout("to get a workload cluster").await),
        }
    }

    /// The Events about the object, oldest first: the runtime's on status transitions and the
    /// provider's own (`cx.events()`).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// let reasons: Vec<String> = tenant.events().await?.into_iter().filter_map(|e| e.reason).collect();
    /// # let _ = reasons; platform.stop().await; Ok(()) }
    /// ```
    pub async fn events(&self) -> Result<Vec<Event>, TestError> {
        let api: Api<Event> = Api::namespaced(self.api.clone().into_client(), self.namespace());
        let mut events: Vec<Event> = api
            .list(&ListParams::default())
            .await
            .map_err(kube_err(format!(
                "listing the Events of {}",
                self.describe()
            )))?
            .items
            .into_iter()
            .filter(|e| {
                e.regarding.as_ref().is_some_and(|r| {
                    r.name.as_deref() == Some(self.name())
                        && r.kind.as_deref() == Some(P::INFO.kind)
                })
            })
            .collect();
        events.sort_by_key(|e| {
            e.series
                .as_ref()
                .map(|s| s.last_observed_time.0)
                .or(e.event_time.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        Ok(events)
    }

    /// What the provider and the platform say about this tenant now: the object's phase,
    /// generation, conditions and finalizers, its last Events, and the access requests the
    /// platform has not granted. What a timeout reports; handy in an `assert!` message too.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// println!("{}", tenant.explain().await);
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn explain(&self) -> String {
        let mut lines = Vec::new();
        match self.api.get_opt(self.name()).await {
            Ok(Some(object)) => lines.push(describe_object(&object)),
            Ok(None) => lines.push(format!("{} does not exist", self.describe())),
            Err(e) => lines.push(format!("{} cannot be read: {e}", self.describe())),
        }
        match self.events().await {
            Ok(events) if events.is_empty() => lines.push("  no Events".into()),
            Ok(events) => {
                lines.push("  last Events:".into());
                let skip = events.len().saturating_sub(EXPLAIN_EVENTS);
                for e in events.iter().skip(skip) {
                    lines.push(format!(
                        "    {} {}: {}",
                        e.type_.as_deref().unwrap_or("-"),
                        e.reason.as_deref().unwrap_or("-"),
                        e.note.as_deref().unwrap_or("")
                    ));
                }
            }
            Err(e) => lines.push(format!("  Events cannot be read: {e}")),
        }
        let pending = self.pending_access().await;
        if pending.is_empty() {
            lines.push("  no access request is pending".into());
        } else {
            lines.push("  access not granted yet:".into());
            lines.extend(pending.into_iter().map(|p| format!("    {p}")));
        }
        lines.join("\n")
    }

    async fn create(&self, spec: Value) -> Result<(), TestError> {
        let resource = ApiResource::erase::<P>(&());
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.api.clone().into_client(), self.namespace(), &resource);
        let mut object = DynamicObject::new(self.name(), &resource).within(self.namespace());
        object.data = json!({ "spec": spec });
        api.create(&PostParams::default(), &object)
            .await
            .map_err(kube_err(format!("creating {}", self.describe())))?;
        Ok(())
    }

    /// The access requests of `K` (ClusterRequests or AccessRequests) the provider made for
    /// this tenant, found by the labels the runtime puts on them.
    async fn requests<K>(&self) -> Result<Vec<K>, TestError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug,
    {
        let selector = format!(
            "{MANAGED_BY_LABEL}={},{ONBOARDING_NAME_LABEL}={},{ONBOARDING_NAMESPACE_LABEL}={}",
            label_value(&self.shared.provider_name),
            label_value(self.name()),
            label_value(&self.identity.access_namespace()),
        );
        Api::<K>::all(self.shared.env.platform().client())
            .list(&ListParams::default().labels(&selector))
            .await
            .map(|l| l.items)
            .map_err(kube_err(format!(
                "listing the {} of {}",
                K::plural(&()),
                self.describe()
            )))
    }

    async fn pending_access(&self) -> Vec<String> {
        let mut pending = Vec::new();
        match self.requests::<ClusterRequest>().await {
            Ok(crs) => pending.extend(crs.iter().filter_map(|r| {
                let status = r.status.as_ref().map(|s| &s.common);
                not_granted("ClusterRequest", r, status)
            })),
            Err(e) => pending.push(e.to_string()),
        }
        match self.requests::<AccessRequest>().await {
            Ok(ars) => pending.extend(ars.iter().filter_map(|r| {
                let status = r.status.as_ref().map(|s| &s.common);
                not_granted("AccessRequest", r, status)
            })),
            Err(e) => pending.push(e.to_string()),
        }
        pending
    }

    fn describe(&self) -> String {
        format!("{} {}", P::INFO.kind, self.identity)
    }

    async fn timeout(&self, what: &str) -> TestError {
        TestError::Timeout {
            what: format!("{} {what}", self.describe()),
            timeout: self.timeout,
            stuck: self.explain().await,
        }
    }
}

/// A registry credential as the platform keeps it: Secret `name` (no namespace: set
/// `metadata.namespace`) of type `kubernetes.io/dockerconfigjson` whose `.dockerconfigjson` holds
/// `username`, `password` and their `auth` for `registry`, as `kubectl create secret
/// docker-registry` writes it. [`TestPlatform::pull_secret`] puts one where the provider reads
/// it; this is for other places (a [`TestEnv`], a tenant's cluster).
///
/// ```
/// let secret = service_provider::testing::registry_secret("regcred", "registry.test", "robot", "s3cret");
/// let config = &secret.data.unwrap()[".dockerconfigjson"].0;
/// let config: serde_json::Value = serde_json::from_slice(config).unwrap();
/// assert_eq!(config["auths"]["registry.test"]["username"], "robot");
/// assert_eq!(config["auths"]["registry.test"]["auth"], "cm9ib3Q6czNjcmV0"); // base64("robot:s3cret")
/// ```
pub fn registry_secret(name: &str, registry: &str, username: &str, password: &str) -> Secret {
    // k8s-openapi writes a ByteString as base64, which is the `auth` field's encoding; no
    // base64 crate needed for one field.
    let auth = serde_json::to_value(k8s_openapi::ByteString(
        format!("{username}:{password}").into_bytes(),
    ))
    .unwrap_or_default();
    let config = json!({ "auths": { registry: {
        "username": username,
        "password": password,
        "auth": auth,
    } } });
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(
            [(
                ".dockerconfigjson".to_owned(),
                k8s_openapi::ByteString(config.to_string().into_bytes()),
            )]
            .into(),
        ),
        ..Default::default()
    }
}

/// Whether a Service API object is Ready for its current generation: phase `Ready` and
/// `observedGeneration == generation`, what [`Tenant::wait_ready`] waits for.
///
/// ```
/// # service_provider::__testing_example_provider!();
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
/// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
/// #     .start()
/// #     .await?;
/// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
/// # tenant.wait_ready().await?;
/// assert!(service_provider::testing::is_ready(&tenant.get().await?));
/// # platform.stop().await; Ok(()) }
/// ```
pub fn is_ready<P: ServiceProvider>(object: &P) -> bool {
    object.status().is_some_and(|s| {
        s.phase == Some(Phase::Ready) && s.observed_generation == object.meta().generation
    })
}

/// The reason of the object's `Ready` condition, if it has one: compare it with a [`reason`]
/// constant (or the provider's own reason from `Outcome::progressing`).
///
/// ```
/// # service_provider::__testing_example_provider!();
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
/// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
/// #     .start()
/// #     .await?;
/// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
/// use service_provider::testing::{ready_reason, reason};
/// tenant.set_spec(serde_json::json!({ "version": "9.9.9" })).await?;
/// tenant
///     .wait_until("to refuse 9.9.9", |o| ready_reason(o) == Some(reason::INVALID_USER_INPUT))
///     .await?;
/// # platform.stop().await; Ok(()) }
/// ```
pub fn ready_reason<P: ServiceProvider>(object: &P) -> Option<&str> {
    object
        .status()?
        .condition("Ready")
        .map(|c| c.reason.as_str())
}

/// `Kind ns/name: phase, conditions` for a request that is not granted.
fn not_granted<K: Resource>(
    kind: &str,
    request: &K,
    status: Option<&service_provider_runtime::openmcp::common::CommonStatus>,
) -> Option<String> {
    let key = format!(
        "{kind} {}/{}",
        request.meta().namespace.as_deref().unwrap_or_default(),
        request.meta().name.as_deref().unwrap_or_default()
    );
    let deleting = request.meta().deletion_timestamp.is_some();
    match status {
        Some(s) if s.phase == "Granted" && !deleting => None,
        Some(s) => {
            let conditions: Vec<String> = s
                .conditions
                .iter()
                .filter(|c| c.status != "True")
                .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
                .collect();
            let phase = if s.phase.is_empty() {
                "Pending"
            } else {
                &s.phase
            };
            Some(format!(
                "{key}: {phase}{}{}",
                if deleting { " (being deleted)" } else { "" },
                if conditions.is_empty() {
                    String::new()
                } else {
                    format!(", {}", conditions.join("; "))
                }
            ))
        }
        None => Some(format!(
            "{key}: Pending (no answer from the platform){}",
            if deleting { " (being deleted)" } else { "" }
        )),
    }
}

/// Phase, generations, conditions and finalizers of a Service API object.
fn describe_object<P: ServiceProvider>(object: &P) -> String {
    let meta = object.meta();
    let mut lines = vec![format!(
        "{} {}/{}: phase {}, generation {}, observedGeneration {}{}",
        P::INFO.kind,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        object
            .status()
            .and_then(|s| s.phase)
            .map(|p| p.as_str())
            .unwrap_or("(none)"),
        meta.generation.map_or("-".into(), |g| g.to_string()),
        object
            .status()
            .and_then(|s| s.observed_generation)
            .map_or("-".into(), |g| g.to_string()),
        if meta.deletion_timestamp.is_some() {
            ", being deleted"
        } else {
            ""
        },
    )];
    for c in object
        .status()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
    {
        lines.push(format!(
            "  condition {}={} {}: {}",
            c.type_, c.status, c.reason, c.message
        ));
    }
    let finalizers = object.finalizers();
    if !finalizers.is_empty() {
        lines.push(format!("  finalizers: {}", finalizers.join(", ")));
    }
    lines.join("\n")
}

/// Waits until object `name` of `api` satisfies `condition` (given `None` while it does not
/// exist), watching it; returns it (`None`: absent, when that is what was awaited). For objects
/// the kit has no typed helper for, through any client: a provider's view, a workspace, a
/// restarted cluster (a failed watch is resumed). On timeout the error shows the object's last
/// state (deletion, finalizers, status).
///
/// ```no_run
/// # async fn f(client: service_provider::kube::Client) -> Result<(), service_provider::testing::TestError> {
/// use service_provider::k8s_openapi::api::coordination::v1::Lease;
/// use service_provider::kube::Api;
/// let leases: Api<Lease> = Api::namespaced(client, "openmcp-system");
/// let held = service_provider::testing::wait_for_object(
///     &leases,
///     "velero-standard",
///     std::time::Duration::from_secs(30),
///     |l: Option<&Lease>| l.is_some_and(|l| l.spec.as_ref().is_some_and(|s| s.holder_identity.is_some())),
/// )
/// .await?;
/// # let _ = held; Ok(()) }
/// ```
pub async fn wait_for_object<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl Fn(Option<&K>) -> bool,
) -> Result<Option<K>, TestError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + 'static,
{
    watch_until(api.clone(), name, timeout, condition)
        .await
        .map_err(|seen| TestError::Timeout {
            what: format!(
                "{} {name}{}",
                api.resource_url().rsplit('/').next().unwrap_or_default(),
                api.namespace()
                    .map(|ns| format!(" in namespace {ns}"))
                    .unwrap_or_default()
            ),
            timeout,
            stuck: seen.describe(),
        })
}

/// Runs `check` until it returns `Some`, again and again with a growing pause (20 ms up to
/// 500 ms); returns its value. For conditions over many objects or several clusters, where no
/// single watch says it. On timeout the error names `what`.
///
/// ```no_run
/// # async fn f(cluster: &service_provider::testing::Cluster) -> Result<(), service_provider::testing::TestError> {
/// use service_provider::k8s_openapi::api::core::v1::Namespace;
/// let count = service_provider::testing::eventually(
///     "three tenant namespaces",
///     std::time::Duration::from_secs(30),
///     || async {
///         let n = cluster.list::<Namespace>(None).await.ok()?.len();
///         (n >= 3).then_some(n)
///     },
/// )
/// .await?;
/// # let _ = count; Ok(()) }
/// ```
pub async fn eventually<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<T, TestError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut interval = Duration::from_millis(20);
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(TestError::Timeout {
                what: what.to_owned(),
                timeout,
                stuck: String::new(),
            });
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(Duration::from_millis(500));
    }
}

/// Watches object `name` until `condition` holds for it (`None`: absent); `Ok` with the object,
/// or, when `timeout` passes, `Err` with the last state seen. Watch errors (a restarted server)
/// are retried with the watcher's backoff until then; the last one is logged.
async fn watch_until<K>(
    api: Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl Fn(Option<&K>) -> bool,
) -> Result<Option<K>, Seen<K>>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + 'static,
{
    // No backoff stream: a failed watch (a restarted server) is retried after a short pause, so a
    // wait resumes within 100 ms of the server's return rather than after a growing backoff.
    let stream = kube::runtime::watcher::watch_object(api, name);
    let mut seen = Seen::Nothing;
    let wait = async {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let object = match event {
                Ok(object) => object,
                // The collection itself is gone (the platform deleted the cluster, or the CRD
                // was removed): no such object exists.
                Err(kube::runtime::watcher::Error::InitialListFailed(kube::Error::Api(s)))
                    if s.code == 404 =>
                {
                    None
                }
                Err(e) => {
                    seen = Seen::Error(e.to_string());
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if condition(object.as_ref()) {
                return Some(object);
            }
            seen = match object {
                Some(object) => Seen::Object(object),
                None => Seen::Absent,
            };
        }
        None
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) | Err(_) => Err(seen),
    }
}

/// What a watch saw last before its wait timed out.
enum Seen<K> {
    /// No event at all.
    Nothing,
    /// The object did not exist.
    Absent,
    /// The object, not matching.
    Object(K),
    /// The watch failed (and was being retried).
    Error(String),
}

/// One cluster, as its admin: the tenant's MCP cluster or workspace, a workload cluster, the
/// platform or onboarding cluster. Typed reads by key (`namespace/name`, or `name` for
/// cluster-scoped kinds) and waits, or the [`client`](Self::client) for anything else. Cheap to
/// clone.
///
/// ```
/// # service_provider::__testing_example_provider!();
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() -> Result<(), service_provider::testing::TestError> {
/// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
/// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
/// #     .start()
/// #     .await?;
/// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
/// # let cluster = tenant.mcp();
/// # tenant.wait_ready().await?;
/// use service_provider::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// let greeting: ConfigMap = cluster.get("default/hello").await?;
/// let namespace: Option<Namespace> = cluster.get_opt("velero-system").await?;
/// # let _ = (greeting, namespace); platform.stop().await; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Cluster {
    name: String,
    client: kube::Client,
    kubeconfig: String,
    timeout: Duration,
    /// The simulated platform's cluster (none for a kcp workspace): when the platform shuts it
    /// down, what a test waits to be gone is gone with it.
    handle: Option<ClusterHandle>,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster").field("name", &self.name).finish()
    }
}

impl Cluster {
    fn from_handle(name: &str, handle: &ClusterHandle, timeout: Duration) -> Self {
        Cluster {
            name: name.to_owned(),
            client: handle.client(),
            kubeconfig: handle.kubeconfig(),
            timeout,
            handle: Some(handle.clone()),
        }
    }

    /// What the kit calls this cluster in messages (`mcp`, `workspace root:a`, …).
    ///
    /// ```no_run
    /// # fn f(cluster: &service_provider::testing::Cluster) {
    /// println!("looking into {}", cluster.name());
    /// # }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An admin `kube::Client` for this cluster.
    ///
    /// ```no_run
    /// # async fn f(cluster: &service_provider::testing::Cluster) -> Result<(), service_provider::kube::Error> {
    /// use service_provider::k8s_openapi::api::core::v1::Pod;
    /// use service_provider::kube::Api;
    /// let pods = Api::<Pod>::all(cluster.client()).list(&Default::default()).await?;
    /// # let _ = pods; Ok(()) }
    /// ```
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// An admin kubeconfig for this cluster (for `kubectl --kubeconfig`, or a tool the provider
    /// hands it to).
    ///
    /// ```no_run
    /// # fn f(cluster: &service_provider::testing::Cluster) -> std::io::Result<()> {
    /// std::fs::write("/tmp/mcp.kubeconfig", cluster.kubeconfig())?;
    /// # Ok(()) }
    /// ```
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// The object `key` (`namespace/name`, or `name` for a cluster-scoped kind); an error when
    /// it does not exist.
    ///
    /// ```no_run
    /// # async fn f(cluster: &service_provider::testing::Cluster) -> Result<(), service_provider::testing::TestError> {
    /// use service_provider::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    /// let crd: CustomResourceDefinition = cluster.get("backups.velero.io").await?;
    /// # let _ = crd; Ok(()) }
    /// ```
    pub async fn get<K>(&self, key: &str) -> Result<K, TestError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + 'static,
    {
        self.get_opt(key).await?.ok_or_else(|| {
            TestError::Usage(format!(
                "{} {key} does not exist in {}",
                K::kind(&()),
                self.name
            ))
        })
    }

    /// The object `key` (`namespace/name`, or `name` for a cluster-scoped kind), if it exists.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// # let cluster = tenant.mcp();
    /// # tenant.delete().await?;
    /// # tenant.wait_gone().await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// assert!(cluster.get_opt::<ConfigMap>("default/hello").await?.is_none(), "uninstalled");
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn get_opt<K>(&self, key: &str) -> Result<Option<K>, TestError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + 'static,
    {
        let (api, name) = self.dynamic::<K>(key)?;
        let Some(object) = api.get_opt(name).await.map_err(kube_err(format!(
            "reading {} {key} in {}",
            K::kind(&()),
            self.name
        )))?
        else {
            return Ok(None);
        };
        convert(object).map(Some)
    }

    /// Every object of kind `K` in `namespace` (`None`: in every namespace, or a cluster-scoped
    /// kind).
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// # let cluster = tenant.mcp();
    /// use service_provider::k8s_openapi::api::apps::v1::Deployment;
    /// let deployments: Vec<Deployment> = cluster.list(Some("velero-ns")).await?;
    /// # let _ = deployments; platform.stop().await; Ok(()) }
    /// ```
    pub async fn list<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, TestError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + 'static,
    {
        let resource = ApiResource::erase::<K>(&());
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        api.list(&ListParams::default())
            .await
            .map_err(kube_err(format!(
                "listing {} in {}",
                K::plural(&()),
                self.name
            )))?
            .items
            .into_iter()
            .map(convert)
            .collect()
    }

    /// Waits until object `key` exists and `condition` holds for it; returns it. On timeout
    /// the error shows the object's last state.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// # let cluster = tenant.mcp();
    /// # tenant.set_spec(serde_json::json!({ "greeting": "again" })).await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// let updated: ConfigMap = cluster
    ///     .wait_for("default/hello", |c: &ConfigMap| {
    ///         c.data.as_ref().is_some_and(|d| d["greeting"] == "Hello, again!")
    ///     })
    ///     .await?;
    /// # let _ = updated; platform.stop().await; Ok(()) }
    /// ```
    pub async fn wait_for<K>(
        &self,
        key: &str,
        condition: impl Fn(&K) -> bool,
    ) -> Result<K, TestError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
    {
        let (api, name) = self.dynamic::<K>(key)?;
        let converted =
            |o: Option<&DynamicObject>| -> Option<K> { o.and_then(|o| convert(o.clone()).ok()) };
        let found = watch_until(api, name, self.timeout, |o| {
            converted(o).is_some_and(|k| condition(&k))
        })
        .await;
        match found {
            Ok(Some(object)) => convert(object),
            Ok(None) => Err(self.timeout_error::<K>(key, "to match", "it does not exist".into())),
            Err(seen) => Err(self.timeout_error::<K>(key, "to match", seen.describe())),
        }
    }

    /// Waits until object `key` is gone. On timeout the error shows what holds it (its
    /// finalizers, whether it is being deleted). An object whose cluster the platform deleted
    /// (a workload cluster whose last tenant left) or whose CRD was removed is gone too.
    ///
    /// ```
    /// # service_provider::__testing_example_provider!();
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), service_provider::testing::TestError> {
    /// # let platform = service_provider::testing::TestPlatform::<Hello>::builder()
    /// #     .provider_config(serde_json::json!({ "versions": [{ "version": "1.0.0" }, { "version": "2.0.0" }] }))
    /// #     .start()
    /// #     .await?;
    /// # let tenant = platform.create_tenant("tenant-a", serde_json::json!({ "version": "1.0.0", "greeting": "world" })).await?;
    /// # let cluster = tenant.mcp();
    /// # tenant.delete().await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// cluster.wait_gone::<ConfigMap>("default/hello").await?;
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn wait_gone<K>(&self, key: &str) -> Result<(), TestError>
    where
        K: Resource<DynamicType = ()> + 'static,
    {
        let (api, name) = self.dynamic::<K>(key)?;
        let cluster_gone = async {
            match &self.handle {
                Some(handle) => handle.gone().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            found = watch_until(api, name, self.timeout, |o| o.is_none()) => match found {
                Ok(_) => Ok(()),
                Err(seen) => Err(self.timeout_error::<K>(key, "to be gone", seen.describe())),
            },
            () = cluster_gone => Ok(()),
        }
    }

    /// Creates `object` (its namespace from `metadata.namespace` for a namespaced kind), as an
    /// end user's `kubectl create` would; returns it as stored. An object that exists already is
    /// an error (409): use [`apply`](Self::apply) to create or update.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub greeting: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// # let platform = TestPlatform::<Hello>::start().await?;
    /// # let tenant = platform.create_tenant("tenant-a", HelloSpec { greeting: "world".into() }).await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// use service_provider::kube::api::ObjectMeta;
    ///
    /// // An end user's object in the tenant's cluster, which the provider must leave alone.
    /// let mine = ConfigMap {
    ///     metadata: ObjectMeta {
    ///         name: Some("mine".into()),
    ///         namespace: Some("default".into()),
    ///         ..Default::default()
    ///     },
    ///     data: Some([("owner".to_owned(), "end user".to_owned())].into()),
    ///     ..Default::default()
    /// };
    /// let created = tenant.mcp().create(&mine).await?;
    /// assert!(created.metadata.uid.is_some());
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn create<K>(&self, object: &K) -> Result<K, TestError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        let (api, object, key) = self.untyped(object)?;
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .map_err(kube_err(format!(
                "creating {} {key} in {}",
                K::kind(&()),
                self.name
            )))?;
        convert(created)
    }

    /// Creates or updates `object` with server-side apply under the field manager
    /// [`FIELD_MANAGER`], as `kubectl apply --server-side --force-conflicts` would: the fields
    /// the object sets become the test's, taken over from any other manager (the provider's
    /// included, since a test that sets a field means it), and fields it omits stay as they
    /// are unless the test owned them before. Returns the object as stored.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub greeting: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// # let platform = TestPlatform::<Hello>::start().await?;
    /// use service_provider::k8s_openapi::api::core::v1::Namespace;
    /// use service_provider::kube::api::ObjectMeta;
    ///
    /// let labelled = |team: &str| Namespace {
    ///     metadata: ObjectMeta {
    ///         name: Some("team-space".into()),
    ///         labels: Some([("team".to_owned(), team.to_owned())].into()),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// let onboarding = platform.onboarding();
    /// onboarding.apply(&labelled("a")).await?; // created
    /// let updated = onboarding.apply(&labelled("b")).await?; // updated in place
    /// assert_eq!(updated.metadata.labels.unwrap()["team"], "b");
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn apply<K>(&self, object: &K) -> Result<K, TestError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        let (api, mut object, key) = self.untyped(object)?;
        let Some(name) = object.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(TestError::Usage(format!(
                "apply needs the {}'s metadata.name (server-side apply addresses an object by name); set it, or use create with metadata.generateName",
                K::kind(&())
            )));
        };
        // An object read back from a cluster carries managedFields, which an apply must not
        // send; which manager owns what is the server's to record.
        object.metadata.managed_fields = None;
        let applied = api
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&object),
            )
            .await
            .map_err(kube_err(format!(
                "applying {} {key} in {}",
                K::kind(&()),
                self.name
            )))?;
        convert(applied)
    }

    /// Deletes object `key` (`namespace/name`, or `name` for a cluster-scoped kind) and waits
    /// until it is gone, as `kubectl delete` does: whatever holds it (a finalizer, a provider
    /// cleaning up) has run when this returns, so the next line can check the consequences. An
    /// object that does not exist is fine (`--ignore-not-found`); an object of the same name
    /// created again meanwhile counts as the old one gone. For a delete that does not wait (to
    /// watch a deletion being blocked), use [`Api::delete`] through [`client`](Self::client).
    /// On timeout the error shows what holds the object.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub greeting: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// # let platform = TestPlatform::<Hello>::start().await?;
    /// use service_provider::k8s_openapi::api::core::v1::ConfigMap;
    /// use service_provider::kube::api::ObjectMeta;
    ///
    /// let onboarding = platform.onboarding();
    /// onboarding
    ///     .create(&ConfigMap {
    ///         metadata: ObjectMeta {
    ///             name: Some("scratch".into()),
    ///             namespace: Some("default".into()),
    ///             ..Default::default()
    ///         },
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// onboarding.delete::<ConfigMap>("default/scratch").await?;
    /// assert!(onboarding.get_opt::<ConfigMap>("default/scratch").await?.is_none());
    /// onboarding.delete::<ConfigMap>("default/scratch").await?; // already gone: fine
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn delete<K>(&self, key: &str) -> Result<(), TestError>
    where
        K: Resource<DynamicType = ()> + 'static,
    {
        let (api, name) = self.dynamic::<K>(key)?;
        let deleted = match api.delete(name, &DeleteParams::default()).await {
            Ok(deleted) => deleted,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => {
                return Err(kube_err(format!(
                    "deleting {} {key} in {}",
                    K::kind(&()),
                    self.name
                ))(e));
            }
        };
        // Still there (finalizers, or a background deletion): wait for this object, by uid,
        // so that one created again under the same name does not hold the wait.
        let uid = deleted.left().and_then(|o| o.metadata.uid);
        let gone = |o: Option<&DynamicObject>| match o {
            None => true,
            Some(o) => uid.is_some() && o.metadata.uid != uid,
        };
        match watch_until(api, name, self.timeout, gone).await {
            Ok(_) => Ok(()),
            Err(seen) => Err(self.timeout_error::<K>(key, "to be gone", seen.describe())),
        }
    }

    /// Installs the CRD of `K` (its `CustomResourceExt::crd()`: a type derived with kube's
    /// `CustomResource`, the generated Service API and ProviderConfig types, the
    /// [`flux`](crate::flux) types) with [`apply`](Self::apply), and waits until it is
    /// Established, so objects of `K` can be created on the next line. For an end user's kind a
    /// provider looks for, or a dependency the platform would have installed. Returns the CRD.
    ///
    /// ```
    /// # use service_provider::prelude::*;
    /// # #[service_provider(group = "hello.example.io", version = "v1alpha1", kind = "Hello")]
    /// # pub struct HelloSpec { pub greeting: String }
    /// # impl Reconcile for Hello {
    /// #     async fn create_or_update(&self, _: &Context<Self>) -> Result<Outcome, Error> { Ok(Outcome::ready()) }
    /// #     async fn delete(&self, _: &Context<Self>) -> Result<Deletion, Error> { Ok(Deletion::done()) }
    /// # }
    /// # use service_provider::testing::{TestError, TestPlatform};
    /// # #[tokio::main(flavor = "multi_thread")]
    /// # async fn main() -> Result<(), TestError> {
    /// # let platform = TestPlatform::<Hello>::start().await?;
    /// # let tenant = platform.create_tenant("tenant-a", HelloSpec { greeting: "world".into() }).await?;
    /// use service_provider::flux::OCIRepository;
    ///
    /// let crd = tenant.mcp().install_crd::<OCIRepository>().await?;
    /// assert_eq!(crd.metadata.name.as_deref(), Some("ocirepositories.source.toolkit.fluxcd.io"));
    /// assert!(tenant.mcp().list::<OCIRepository>(None).await?.is_empty());
    /// # platform.stop().await; Ok(()) }
    /// ```
    pub async fn install_crd<K>(&self) -> Result<CustomResourceDefinition, TestError>
    where
        K: kube::CustomResourceExt,
    {
        let crd = self.apply(&K::crd()).await?;
        let name = crd.name_any();
        self.wait_for(&name, |crd: &CustomResourceDefinition| {
            crd.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
        })
        .await
    }

    /// `object` as an untyped object of `K`'s kind, the API its namespace addresses (checked
    /// against `K`'s scope) and its key for messages.
    fn untyped<K>(
        &self,
        object: &K,
    ) -> Result<(Api<DynamicObject>, DynamicObject, String), TestError>
    where
        K: Resource<DynamicType = ()> + Serialize + 'static,
    {
        let kind = K::kind(&());
        let resource = ApiResource::erase::<K>(&());
        let mut value = serde_json::to_value(object)
            .map_err(|e| TestError::Usage(format!("the {kind} does not serialize to JSON: {e}")))?;
        let Some(fields) = value.as_object_mut() else {
            return Err(TestError::Usage(format!(
                "the {kind} does not serialize to a JSON object"
            )));
        };
        // Typed objects may leave out their type meta; the request needs it.
        fields.insert("apiVersion".into(), resource.api_version.clone().into());
        fields.insert("kind".into(), resource.kind.clone().into());
        let object: DynamicObject = serde_json::from_value(value)
            .map_err(|e| TestError::Usage(format!("the {kind} is not a Kubernetes object: {e}")))?;
        let name = object
            .metadata
            .name
            .clone()
            .or_else(|| object.metadata.generate_name.clone())
            .unwrap_or_default();
        let namespace = object
            .metadata
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty());
        match (namespaced::<K>(), namespace) {
            (true, Some(ns)) => Ok((
                Api::namespaced_with(self.client.clone(), &ns, &resource),
                object,
                format!("{ns}/{name}"),
            )),
            (true, None) => Err(TestError::Usage(format!(
                "{kind} is namespaced: set metadata.namespace of {kind} {name}"
            ))),
            (false, None) => Ok((Api::all_with(self.client.clone(), &resource), object, name)),
            (false, Some(ns)) => Err(TestError::Usage(format!(
                "{kind} is cluster-scoped: remove metadata.namespace ({ns}) of {kind} {name}"
            ))),
        }
    }

    /// An untyped API and the name for `key`, checked against `K`'s scope.
    fn dynamic<'k, K>(&self, key: &'k str) -> Result<(Api<DynamicObject>, &'k str), TestError>
    where
        K: Resource<DynamicType = ()> + 'static,
    {
        let resource = ApiResource::erase::<K>(&());
        match (key.split_once('/'), namespaced::<K>()) {
            (Some((ns, name)), true) if !ns.is_empty() && !name.is_empty() => Ok((
                Api::namespaced_with(self.client.clone(), ns, &resource),
                name,
            )),
            (None, false) if !key.is_empty() => {
                Ok((Api::all_with(self.client.clone(), &resource), key))
            }
            (_, true) => Err(TestError::Usage(format!(
                "{} is namespaced: give the key as `namespace/name`, not `{key}`",
                K::kind(&())
            ))),
            (_, false) => Err(TestError::Usage(format!(
                "{} is cluster-scoped: give the key as `name`, not `{key}`",
                K::kind(&())
            ))),
        }
    }

    fn timeout_error<K: Resource<DynamicType = ()>>(
        &self,
        key: &str,
        what: &str,
        stuck: String,
    ) -> TestError {
        TestError::Timeout {
            what: format!("{} {key} in {} {what}", K::kind(&()), self.name),
            timeout: self.timeout,
            stuck,
        }
    }
}

/// Whether `K` lives in namespaces (`K::Scope`), which decides the shape of its keys.
fn namespaced<K: Resource + 'static>() -> bool {
    TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>()
}

fn convert<K: DeserializeOwned + Resource<DynamicType = ()>>(
    object: DynamicObject,
) -> Result<K, TestError> {
    let name = object.name_any();
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            TestError::Usage(format!(
                "{} {name} does not deserialize into the type asked for: {e}",
                K::kind(&())
            ))
        })
}

impl<K: Serialize> Seen<K> {
    fn describe(&self) -> String {
        match self {
            Seen::Nothing => "the watch saw nothing".into(),
            Seen::Absent => "last seen: it does not exist".into(),
            Seen::Object(o) => match serde_json::to_value(o).and_then(serde_json::from_value) {
                Ok(object) => format!("last seen: {}", summarize(&object)),
                Err(_) => "last seen: it exists".into(),
            },
            Seen::Error(e) => format!("the watch failed: {e}"),
        }
    }
}

/// Deletion state, finalizers and status of an object, for a timeout message.
fn summarize(object: &DynamicObject) -> String {
    let mut parts = Vec::new();
    if object.metadata.deletion_timestamp.is_some() {
        parts.push("being deleted".to_owned());
    }
    let finalizers = object.finalizers();
    if !finalizers.is_empty() {
        parts.push(format!("finalizers [{}]", finalizers.join(", ")));
    }
    if let Some(status) = object.data.get("status") {
        let mut text = status.to_string();
        if text.chars().count() > 600 {
            text = text.chars().take(600).chain(['…']).collect();
        }
        parts.push(format!("status {text}"));
    }
    if parts.is_empty() {
        "exists, no status".into()
    } else {
        parts.join(", ")
    }
}
