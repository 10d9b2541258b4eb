//! A simulated openMCP platform on the embedded control plane, for tests, benchmarks and the `dev`
//! subcommand: [`TestEnv`] starts it, [`Operator`] is the in-process stand-in for
//! openmcp-operator and its cluster provider. `realstack` starts real kube-apiservers on one etcd
//! instead, for tests that compare against the real control plane.
//!
//! ```no_run
//! # async fn demo() -> Result<(), service_provider_runtime::dev::DevError> {
//! use service_provider_runtime::dev::TestEnv;
//!
//! let env = TestEnv::builder().control_planes(2).workload_tenancy(10).start().await?;
//! let cp = &env.control_planes()[0];
//! let mcp = env.mcp(cp).expect("granted at start");   // the tenant's MCP cluster
//! let kubeconfigs = env.write_kubeconfigs("/tmp/dev-kubeconfigs")?;
//! # let _ = (mcp, kubeconfigs); Ok(()) }
//! ```
//!
//! # What is simulated
//! - **ControlPlane controller** (openmcp-operator `internal/controllers/controlplane`): a
//!   `core.open-control-plane.io/v2alpha1` ControlPlane on the onboarding cluster gets the
//!   finalizers `core.open-control-plane.io/mcp` and `request.clusters.openmcp.cloud/<name>`, the
//!   namespace `StableMCPNamespace(name, namespace)` on the platform cluster (labels
//!   `core.open-control-plane.io/mcp-name|mcp-namespace`, `openmcp.cloud/managed-by:
//!   ManagedControlPlane`), and a ClusterRequest named like it (purpose `mcp`,
//!   `waitForClusterDeletion: true`); phase `Ready` with condition `ClusterRequestReady` once
//!   granted. Deletion: the Service API objects named like the ControlPlane, of every kind in
//!   any `ServiceProvider.status.resources`, are deleted and waited for (condition
//!   `AllServicesDeleted`), then the ClusterRequests, then the namespace; then the finalizers go.
//! - **Scheduler** (`internal/controllers/scheduler`): ClusterRequests are granted by purpose:
//!   `onboarding` and `platform` → the fixed Clusters of those names in the system namespace;
//!   `mcp` → a new exclusive Cluster `mcp-<hash>` in the request's namespace; `workload` → the
//!   emptiest shared Cluster `workload-<hash>` in the system namespace with room left (tenancy
//!   count configurable, 0 = unlimited), a new one when all are full. Each request puts
//!   `request.clusters.openmcp.cloud/<uid>` on its Cluster; the last one to go deletes a Cluster
//!   labelled `clusters.openmcp.cloud/delete-without-requests: "true"`, and with
//!   `waitForClusterDeletion` waits for it. Unknown purposes are `Denied`.
//! - **Cluster provider**: every Cluster is a real embedded cluster ([`Hosting`]: a logical
//!   cluster of one shared shard, or a dedicated listener) with `status.apiServer`; deleting the
//!   Cluster stops serving it.
//! - **AccessRequests** (operator controller + cluster provider): labels
//!   `clusters.openmcp.cloud/provider|profile` and `spec.clusterRef` (from `requestRef`) filled
//!   in; finalizer `clusters.openmcp.cloud/clusteraccess`; in the target cluster a
//!   ServiceAccount (named `K8sNameUUID(env, provider, namespace, name)`, in namespace
//!   `accessrequests`) bound to a (Cluster)Role per `token.permissions` entry (namespaces created
//!   unless `disableAutomaticNamespaceCreation`) and to every `token.roleRefs` role; a
//!   TokenRequest token; on the platform the Secret `<name>.kubeconfig` (owned by the request)
//!   with `kubeconfig`, `host`, `ca.crt`, `token`, `expirationTimestamp` and
//!   `creationTimestamp`; then `status.phase: Granted`, `observedGeneration`, `secretRef`. The
//!   token is renewed after 80% of its validity. A changed spec is granted anew (objects of the
//!   old spec are removed). Deletion deletes the ServiceAccount (its tokens stop working at
//!   once), the RBAC objects and the Secret, then removes the finalizer.
//!
//! - **Flux** ([`flux`]): every workload cluster is created with the Flux CRDs
//!   (`source.toolkit.fluxcd.io/v1` OCIRepository and HelmRepository, `helm.toolkit.fluxcd.io/v2`
//!   HelmRelease, with the runtime's [`crate::resources::flux`] schemas) and a stand-in for the source- and
//!   helm-controller: an object not Ready for its generation is looked at after
//!   [`flux::READY_AFTER`] and again every half second until it is. A source is Ready
//!   (`Succeeded`) when its URL is well-formed (`oci://<host>/<path>`, `http(s)://…`) and its
//!   `secretRef` Secret exists (`URLInvalid`, `AuthenticationFailed` otherwise). A HelmRelease
//!   waits (`Ready=Unknown`, `Reconciling=True`) until its source is Ready, then reads the
//!   kubeconfig Secret of `kubeConfig.secretRef`, connects with it to the target cluster, and
//!   creates the target namespace there when `install.createNamespace` is set (`InstallFailed`
//!   with Helm's message when any of that fails); then `InstallSucceeded`. The annotation
//!   [`flux::FAIL_INSTALL_ANNOTATION`] on a HelmRelease makes its install fail with the
//!   annotation's value, for tests.
//!
//!   Not simulated: pulling artifacts (no registry is contacted; any tag exists), chart
//!   rendering, values validation and the objects a chart would install (nothing of the chart
//!   appears in the target cluster, so deleting a HelmRelease uninstalls nothing and needs no
//!   finalizer), Helm release storage Secrets, drift detection, remediation and retries counts,
//!   `dependsOn`, `valuesFrom`, suspend, intervals (a Ready object is not looked at again, so a
//!   source that breaks later is not noticed), Kustomizations and every other Flux kind.
//! - **kcp** ([`TestEnvBuilder::kcp`]): an embedded kcp with a provider workspace and N consumer
//!   workspaces; for a kcp-capable provider its APIResourceSchema and APIExport in the provider
//!   workspace, an APIBinding with every permission claim accepted in each consumer, and a
//!   provider identity with exactly the generated provider-workspace ClusterRole (also stored in
//!   a platform Secret for the ProviderConfig's `kcp` block). This is setup, not simulation: kcp
//!   itself is the embedded server's.
//!
//! # What differs from the real openmcp-operator
//! - One process plays openmcp-operator *and* the cluster provider; there are no ClusterProfiles
//!   (the profile is always [`operator::PROFILE`], the provider [`operator::PROVIDER`]) and no
//!   scheduler configuration beyond the workload tenancy count.
//! - Requests that cannot be satisfied are `Denied` with a condition `Granted=False` (reason,
//!   message): unknown purpose, missing ClusterRequest or Cluster, a denied ClusterRequest,
//!   invalid permissions, OIDC access. The real operator leaves such requests `Pending` and
//!   retries. A denied request is looked at again when its spec or its ClusterRequest changes.
//! - `Pending` is never written: a request without a phase is pending.
//! - The Cluster's finalizer is the request's `clusters.openmcp.cloud/clusteraccess` rather than
//!   the scheduler's `clusters.openmcp.cloud/request`.
//! - OIDC access, ControlPlane `iam` tokens and OIDC providers, purpose overrides, the metadata
//!   labels of ClusterRequests, and cluster conditions are not simulated.
//! - Events come from watches, not from periodic resyncs: a grant takes milliseconds.

pub mod env;
pub mod flux;
pub mod hosting;
pub mod kcp;
pub mod operator;
mod queue;
#[cfg(unix)]
pub mod realstack;
mod stand_ins;

pub use env::{ControlPlaneRef, LocalConversionWebhook, ProviderEnv, TestEnv, TestEnvBuilder};
pub use hosting::{ClusterHandle, Hosting};
pub use kcp::KcpEnv;
pub use operator::{HostedCluster, Operator, OperatorConfig};
/// The embedded kcp's options (its shards, the shortest token lifetime it grants), as
/// [`TestEnvBuilder::kcp_options`] takes them, and what it says of a workspace it created.
pub use service_provider_apiserver::kcp::{KcpOptions, WorkspaceInfo};

/// Why the simulated platform could not start or do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// Starting a cluster, the operator or the environment failed.
    #[error("starting the simulated platform failed: {0}")]
    Start(String),
    /// A request to an embedded cluster failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A condition did not hold in time.
    #[error(transparent)]
    Wait(#[from] service_provider_apiserver::WaitError),
    /// Something did not become ready in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        timeout: std::time::Duration,
    },
}

impl DevError {
    pub(crate) fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> DevError {
        let what = what.into();
        move |source| DevError::Kube { what, source }
    }
}
