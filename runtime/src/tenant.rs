//! Who a tenant is and how the runtime reaches its clusters: the queue key [`Identity`], the
//! [`Mode`] it belongs to, and [`ClusterAccess`] to one of its clusters.

use std::fmt;
use std::sync::Arc;

/// Where the object being reconciled lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// On the shared onboarding cluster; the tenant cluster is the MCP cluster.
    Standard,
    /// In a kcp workspace that bound the provider's APIExport; the tenant cluster is the workspace.
    Kcp,
}

impl Mode {
    /// `standard` or `kcp`, as used in logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Standard => "standard",
            Mode::Kcp => "kcp",
        }
    }
}

/// Who the tenant is: the Service API object's key, qualified by its logical cluster in kcp mode.
///
/// Two objects with the same namespace and name in different workspaces are different tenants;
/// nothing in the runtime keys objects by namespace and name alone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The kcp logical cluster name; `None` in standard mode.
    pub cluster: Option<String>,
    /// Namespace of the Service API object.
    pub namespace: String,
    /// Name of the Service API object.
    pub name: String,
}

impl Identity {
    /// The namespace part of the identity used for access objects on the platform cluster:
    /// the namespace in standard mode, `"<cluster>_<namespace>"` in kcp mode (as the Go
    /// multicluster runtime does; `_` never occurs in a namespace, so the two cannot collide).
    pub fn access_namespace(&self) -> String {
        match &self.cluster {
            Some(cluster) => {
                crate::openmcp::naming::kcp_identity_namespace(cluster, &self.namespace)
            }
            None => self.namespace.clone(),
        }
    }

    /// The identity whose [`access_namespace`](Self::access_namespace) is `access_namespace`:
    /// `<cluster>_<namespace>` is a kcp identity, anything else a standard one.
    pub fn from_access_namespace(access_namespace: &str, name: &str) -> Self {
        match access_namespace.split_once('_') {
            Some((cluster, namespace)) => Identity {
                cluster: Some(cluster.to_owned()),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            None => Identity {
                cluster: None,
                namespace: access_namespace.to_owned(),
                name: name.to_owned(),
            },
        }
    }

    /// A standard-mode identity.
    pub fn standard(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Identity {
            cluster: None,
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A stable id for naming this tenant's objects in clusters that several tenants share (a
    /// namespace on a workload cluster): `K8sNameUUID(access_namespace, name)`, a lower-case UUID.
    /// In standard mode it is the ControlPlane's `StableMCPIdentifier`, the `<uuid>` of its
    /// `mcp--<uuid>` namespace.
    pub fn stable_id(&self) -> String {
        let namespace = self.access_namespace();
        crate::openmcp::naming::k8s_name_uuid(&[&namespace, &self.name])
            // Only fails when every part is empty, which an object's name never is.
            .unwrap_or_else(|_| "00000000-0000-8000-8000-000000000000".to_owned())
    }

    /// The mode this identity belongs to.
    pub fn mode(&self) -> Mode {
        if self.cluster.is_some() {
            Mode::Kcp
        } else {
            Mode::Standard
        }
    }
}

impl fmt::Display for Identity {
    /// `namespace/name`, or `cluster|namespace/name` in kcp mode (kcp's cluster-aware key form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(cluster) = &self.cluster {
            write!(f, "{cluster}|")?;
        }
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A Secret by namespace and name, e.g. the one holding a cluster's kubeconfig.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SecretRef {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret.
    pub name: String,
}

/// Access to one cluster: a ready client, the kubeconfig it was built from (to hand to a worker),
/// and the Secret that holds that kubeconfig on the platform cluster, where there is one.
#[derive(Clone)]
pub struct ClusterAccess {
    client: kube::Client,
    kubeconfig: Arc<[u8]>,
    secret_ref: Option<SecretRef>,
}

impl ClusterAccess {
    /// Bundles a client with the kubeconfig it was built from.
    pub fn new(
        client: kube::Client,
        kubeconfig: impl Into<Arc<[u8]>>,
        secret_ref: Option<SecretRef>,
    ) -> Self {
        ClusterAccess {
            client,
            kubeconfig: kubeconfig.into(),
            secret_ref,
        }
    }

    /// A client for this cluster.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The kubeconfig for this cluster, e.g. to put into a Secret for a worker. It holds a
    /// credential: never log it.
    pub fn kubeconfig(&self) -> &[u8] {
        &self.kubeconfig
    }

    /// The platform-cluster Secret holding the kubeconfig (`None` for kcp workspace access,
    /// whose token the runtime mints and refreshes itself).
    pub fn secret_ref(&self) -> Option<&SecretRef> {
        self.secret_ref.as_ref()
    }
}

impl fmt::Debug for ClusterAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The kubeconfig carries a credential; it must never reach a log line.
        f.debug_struct("ClusterAccess")
            .field("secret_ref", &self.secret_ref)
            .field(
                "kubeconfig",
                &format_args!("<{} bytes redacted>", self.kubeconfig.len()),
            )
            .finish()
    }
}

/// Whether a provider needs a workload cluster besides the tenant's control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadCluster {
    /// The provider works in the tenant cluster only.
    None,
    /// The platform operator decides: a workload cluster is ordered when the ProviderConfig has a
    /// `workloadCluster` block.
    Optional,
    /// Every tenant gets a workload cluster (the workerless pattern).
    Required,
}

/// Type-level form of [`WorkloadCluster`]: decides what `Context::workload` returns.
pub trait WorkloadAccess: Send + Sync + 'static {
    /// The value form.
    const MODE: WorkloadCluster;
    /// What `Context::workload` returns.
    type Access<'a>;
    /// Picks the access from what the runtime ordered.
    #[doc(hidden)]
    fn select(access: Option<&ClusterAccess>) -> Self::Access<'_>;
}

/// Marker types for [`WorkloadAccess`], named in `#[service_provider]` output.
pub mod workload {
    use super::{ClusterAccess, WorkloadAccess, WorkloadCluster};

    /// `workload_cluster = none` (the default).
    pub struct NotDeclared;
    /// `workload_cluster = optional`.
    pub struct Optional;
    /// `workload_cluster = required`.
    pub struct Required;

    /// Implemented for the workload-cluster modes in which `Context::workload` exists.
    #[diagnostic::on_unimplemented(
        message = "this provider declares no workload cluster, so its Context has none",
        note = "add `workload_cluster = required` (or `optional`) to `#[service_provider(...)]`"
    )]
    pub trait Declared: WorkloadAccess {}

    impl WorkloadAccess for NotDeclared {
        const MODE: WorkloadCluster = WorkloadCluster::None;
        type Access<'a> = ();
        fn select(_: Option<&ClusterAccess>) {}
    }

    impl WorkloadAccess for Optional {
        const MODE: WorkloadCluster = WorkloadCluster::Optional;
        type Access<'a> = Option<&'a ClusterAccess>;
        fn select(access: Option<&ClusterAccess>) -> Option<&ClusterAccess> {
            access
        }
    }
    impl Declared for Optional {}

    impl WorkloadAccess for Required {
        const MODE: WorkloadCluster = WorkloadCluster::Required;
        type Access<'a> = &'a ClusterAccess;
        fn select(access: Option<&ClusterAccess>) -> &ClusterAccess {
            access.expect("the runtime builds a Context for a provider that requires a workload cluster only once that cluster's access is granted")
        }
    }
    impl Declared for Required {}
}
