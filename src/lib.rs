//! Write openMCP service providers in Rust.
//!
//! A provider author annotates one struct with [`macro@service_provider`] and implements
//! [`Reconcile`] with two async functions; the runtime serves tenants on the onboarding cluster and
//! in kcp workspaces. This crate is all an author depends on: the generated code reaches kube,
//! k8s-openapi, schemars and serde through the re-exports below.
//!
//! ```no_run
//! use service_provider::prelude::*;
//!
//! /// Velero backups for a tenant's control plane.
//! #[service_provider(
//!     group = "velero.services.open-control-plane.io",
//!     version = "v1alpha1",
//!     kind = "Velero",
//!     config = VeleroConfig,
//!     status = VeleroStatus,
//!     workload_cluster = required,
//!     kcp,
//!     shortnames = ["vel"],
//!     categories = ["openmcp"],
//!     printcolumn(name = "Version", type = "string", json_path = ".spec.version"),
//!     printcolumn(name = "Installed", type = "string", json_path = ".status.installedVersion", priority = 1),
//! )]
//! pub struct VeleroSpec {
//!     /// Velero version; must be offered in ProviderConfig `spec.versions`.
//!     pub version: String,
//! }
//!
//! /// The platform operator's settings for Velero, beside the versions on offer.
//! #[api_type]
//! pub struct VeleroConfig {
//!     /// Where the Velero images are pulled from.
//!     pub image_repository: String,
//! }
//!
//! /// Velero's own status fields.
//! #[api_type]
//! #[derive(Default, PartialEq)]
//! pub struct VeleroStatus {
//!     /// The Velero version running for this tenant.
//!     pub installed_version: Option<String>,
//! }
//!
//! impl Reconcile for Velero {
//!     async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
//!         let offered = cx.common().resolve_version(&self.spec.version)?;
//!         let _workload = cx.workload(); // `&ClusterAccess`: `workload_cluster = required`
//!         Ok(Outcome::ready().with_status(VeleroStatus {
//!             installed_version: Some(offered.version.clone()),
//!         }))
//!     }
//!     async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<VeleroStatus>, Error> {
//!         Ok(Deletion::done())
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     service_provider::run::<Velero>()
//! }
//! ```
//!

pub use service_provider_macros::{api_type, service_provider};

// The author's API, and nothing of the machinery (controllers, queues, caches, access management,
// kcp plumbing, the command line's internals): those live in `service-provider-runtime`, whose
// items may change between any two releases.
pub use service_provider_runtime::cli::init::InitContext;
pub use service_provider_runtime::error::ErrorKind;
pub use service_provider_runtime::tenant::SecretRef;
pub use service_provider_runtime::{
    App, ApplySet, ClusterAccess, Context, Deletion, DeletionGuard, Duration, Error, Identity,
    Mode, NoConfig, NoStatus, ObjectEvents, Outcome, Phase, ProviderConfigCommon, ProviderInfo,
    Reconcile, ServiceProvider, ServiceStatus, VersionSpec, WorkloadCluster, run, run_with_args,
};

/// The generated manifests ([`manifests()`]), as `<provider> manifests` writes them, and the
/// check an author's test runs to keep a checked-in manifest directory current.
pub mod manifests {
    pub use service_provider_runtime::manifests::{
        Difference, DifferenceKind, FileChange, FileReport, Manifest, ManifestsError, Place,
        api_export, api_resource_schema, check, check_dir, manifests, provider_config_crd,
        service_crd, write, write_dir,
    };
}
pub use service_provider_runtime::manifests::manifests;

/// The openMCP API types a provider or its tests read: `ControlPlane`, `ClusterRequest`,
/// `AccessRequest`, `Cluster`, the `ServiceProvider` object that deploys a provider
/// ([`openmcp::ServiceProviderObject`]), and the grants an AccessRequest asks for
/// ([`openmcp::TokenConfig`]). The labels, annotations and finalizers the runtime puts on them are
/// its own business and not exported.
pub mod openmcp {
    pub use service_provider_runtime::openmcp::clusters::K8sConfiguration;
    pub use service_provider_runtime::openmcp::controlplane::{
        DefaultOidcProvider, ExtraOidcProvider, Iam, IamOidc, IamToken,
    };
    pub use service_provider_runtime::openmcp::{
        AccessRequest, AccessRequestSpec, AccessRequestStatus, Cluster, ClusterRequest,
        ClusterRequestSpec, ClusterRequestStatus, ClusterSpec, ClusterStatus, CommonStatus,
        ControlPlane, ControlPlaneSpec, ControlPlaneStatus, DeploymentSpec, EnvVar,
        GroupVersionKind, LocalObjectReference, MetricsConfig, ObjectReference, OidcConfig,
        OidcProviderConfig, PermissionsRequest, RoleBindings, RoleKind, RoleRef,
        ServiceProviderObject, ServiceProviderStatus, Tenancy, TokenConfig,
    };

    /// The names openMCP derives, to find what the platform created for a tenant: the MCP's
    /// namespace on the platform cluster and the name of a provider's Cluster- or AccessRequest.
    pub mod naming {
        pub use service_provider_runtime::openmcp::naming::{
            NamingError, stable_mcp_namespace, stable_request_name,
        };
    }
}

/// The schema of a free-form JSON field (e.g. Helm values in a ProviderConfig):
/// `#[schemars(schema_with = "service_provider::free_form_schema")]`.
pub use service_provider_runtime::provider_config::free_form_schema;
/// Installing a set of objects into a cluster with server-side apply, pruning what a previous
/// apply installed and this one omits ([`Context::apply_set`]): what its methods take and return.
pub mod apply {
    pub use service_provider_runtime::resources::apply::{
        ApplyError, ApplyReport, ApplySet, DeleteReport, DeletionPolicy, Entry, Member, MemberRef,
        Readiness, ReadyCheck, readiness,
    };
}
/// The Flux API types (`OCIRepository`, `HelmRepository`, `HelmRelease`) a provider declares to
/// install a Helm chart ([`Context::helm_release`]).
pub use service_provider_runtime::resources::flux;
/// Managed resources: where an object lives, its deletion policy, its readiness, and its entry in
/// `status.resources` ([`Context::resource_set`]); Helm charts and where their parts go, pull-secret
/// and CA-bundle copies, worker credentials.
pub use service_provider_runtime::{
    CaBundle, ChartKind, ChartPart, ChartSplit, DeletionPolicy, HelmChart, HelmInstall,
    HelmMembers, Location, ManagedResource, MemberRef, PullSecrets, Readiness, ResourcePhase,
    WorkerAccess, WorkerCredentials,
};

/// The simulated openMCP platform on the embedded control plane (or on real kube-apiservers)
/// that the test kit ([`testing`]) and `<provider> dev` run on (feature `dev`): what a test names
/// to look at the platform behind a [`testing::TestPlatform`].
#[cfg(feature = "dev")]
pub mod dev {
    pub use service_provider_runtime::dev::{
        ClusterHandle, ControlPlaneRef, DevError, HostedCluster, Hosting, KcpOptions, TestEnv,
    };
    pub use service_provider_runtime::modes::kcp::WorkspaceCredentials;

    /// The real kube-apiserver and etcd a test runs on when asked to
    /// (`SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver`).
    pub mod realstack {
        pub use service_provider_runtime::dev::realstack::{
            BACKEND_VAR, Binaries, ETCD_VERSION, KEEP_DIRECTORIES_VAR, KUBERNETES_VERSION,
            RealStackError,
        };
    }
}

#[cfg(feature = "dev")]
pub mod testing;

pub use k8s_openapi;
pub use kube;
pub use schemars;
pub use serde;
pub use serde_json;

/// Everything a provider's `main.rs` usually needs.
pub mod prelude {
    pub use crate::{api_type, service_provider};
    pub use service_provider_runtime::{
        ClusterAccess, Context, Deletion, Error, Identity, Mode, Outcome, Reconcile,
        ServiceProvider,
    };
}

/// Paths the code generated by `#[service_provider]` uses; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use k8s_openapi;
    pub use kube;
    pub use kube::core as kube_core;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use service_provider_runtime as runtime;
    pub use std;
}
