//! What a mode contributes to the reconcile core: where Service API objects come from, and, once
//! per reconcile, the tenant behind a key — its object, the handles that write it back, whether
//! the mode serves it, and the route to its own cluster.
//!
//! Standard mode reads objects from a watch on the onboarding cluster and reaches the tenant's MCP
//! cluster through an AccessRequest; kcp mode reads them from wildcard watches through the
//! APIExport virtual workspace and reaches the workspace with a token it mints there. Everything
//! else — ProviderConfig, finalizer, workload access, status, requeues, events — is the same and
//! lives in [`Reconciler`](super::reconciler::Reconciler).

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Api;
use kube::core::error_boundary::InvalidObject;

use crate::access::{AccessManager, AccessState, Registration};
use crate::error::Error;
use crate::events::EventRecorder;
use crate::provider::ServiceProvider;
use crate::tenant::{Identity, Mode};

/// A mode's view of its Service API objects.
///
/// Keys are [`Identity`]s: in kcp mode two objects with the same namespace and name in different
/// workspaces are different keys.
pub trait Source<P: ServiceProvider>: Send + Sync + 'static {
    /// Which mode this is.
    fn mode(&self) -> Mode;

    /// Everything the reconcile needs to know about `id`, looked up once: the mode's caches,
    /// locks and clients are not consulted again during the reconcile.
    fn resolve(&self, id: &Identity) -> Resolved<P>;

    /// Every object's key (to re-reconcile all of them), including undecodable ones.
    fn keys(&self) -> Vec<Identity>;

    /// How many objects there are.
    fn len(&self) -> usize {
        self.keys().len()
    }

    /// Whether there is no object at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records the response of one of the runtime's own writes to `id`: it is newer than the
    /// cache, and its echo from the watch must not trigger another reconcile.
    fn observe(&self, id: &Identity, object: P);

    /// Drops what the source keeps for `id` once its object is gone.
    fn forget(&self, id: &Identity) {
        let _ = id;
    }

    /// Explains an error of the author's code in the mode's terms before it is reported (kcp:
    /// installing workloads into a workspace is invalid input pointing at the workload cluster).
    fn classify(&self, err: Error) -> Error {
        err
    }
}

/// What a key stands for in this reconcile.
pub enum Resolved<P: ServiceProvider> {
    /// No object (any more), or not one this replica serves.
    Gone,
    /// An object the provider's type cannot decode.
    Invalid(Invalid<P>),
    /// An object to reconcile.
    Found(Tenant<P>),
}

/// An object the provider's type cannot decode: it is reported on itself, and when it is deleted
/// its access is still given back and its finalizer removed.
pub struct Invalid<P: ServiceProvider> {
    /// Its metadata and why it cannot be decoded.
    pub object: Arc<InvalidObject>,
    /// The handles to report on it; `None` when it is out of reach.
    pub writer: Option<Writer<P>>,
    /// The route to the tenant's own cluster, to give it back.
    pub access: Box<dyn AccessRoute>,
}

/// The handles that write a Service API object back: its API (metadata and status) and its
/// Event recorder.
pub struct Writer<P: ServiceProvider> {
    /// An API handle for the object's namespace.
    pub api: Api<P>,
    /// The recorder for Events about the object.
    pub events: EventRecorder,
}

/// A tenant as one reconcile sees it.
pub struct Tenant<P: ServiceProvider> {
    /// The Service API object.
    pub object: Arc<P>,
    /// Where it is written back; `None` when it is out of reach although its tenant may still
    /// hold access (kcp: the workspace's last APIBinding went, or the object vanished with the
    /// runtime's finalizer still on it). Such an object is only ever cleaned up: the runtime runs
    /// the delete path to give everything back, writes nothing to the object, and forgets it at
    /// the end.
    pub writer: Option<Writer<P>>,
    /// `Err` when the mode does not serve the object (kcp: one object per workspace): it gets no
    /// finalizer and no access; its status says why, and it is reconsidered when something
    /// triggers it again. Decided only for an object that is not being deleted.
    pub admission: Result<(), Refusal>,
    /// The route to the tenant's own cluster: the MCP cluster, or the kcp workspace.
    pub access: Box<dyn AccessRoute>,
}

impl<P: ServiceProvider> Tenant<P> {
    /// Whether the object is out of reach (see [`writer`](Self::writer)).
    pub fn detached(&self) -> bool {
        self.writer.is_none()
    }
}

/// Why a mode does not serve an object (see [`Tenant::admission`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The `Ready` condition's reason, UpperCamelCase.
    pub reason: String,
    /// What the end user can do about it.
    pub message: String,
}

/// One cluster a tenant is reached in, and how that access is ordered and given back. The
/// reconcile walks its tenant's routes in order (its own cluster first, then the workload cluster
/// when the provider has one) and gives them back in reverse.
pub trait AccessRoute: Send + Sync {
    /// Orders the access (if needed) and reports whether it is granted.
    fn ensure(&self) -> BoxFuture<'_, Result<AccessState, Error>>;

    /// Whether the access is gone or being given back, in which case the author's `delete` is
    /// skipped (there is nothing left it could reach).
    fn released(&self) -> Result<bool, Error>;

    /// Gives the access back; `true` once it is gone.
    fn release(&self) -> BoxFuture<'_, Result<bool, Error>>;
}

/// Access ordered on the platform cluster with a ClusterRequest/AccessRequest pair
/// ([`AccessManager`]): the MCP cluster in standard mode, and the workload cluster in both modes.
pub struct PlatformAccess {
    manager: Arc<AccessManager>,
    registration: Registration,
    id: Identity,
}

impl PlatformAccess {
    /// The route for `id` under `registration`.
    pub fn new(manager: Arc<AccessManager>, registration: Registration, id: Identity) -> Self {
        PlatformAccess {
            manager,
            registration,
            id,
        }
    }
}

impl AccessRoute for PlatformAccess {
    fn ensure(&self) -> BoxFuture<'_, Result<AccessState, Error>> {
        Box::pin(async move {
            self.manager
                .ensure(&self.registration, &self.id)
                .await
                .map_err(access_error)
        })
    }

    fn released(&self) -> Result<bool, Error> {
        self.manager
            .released(&self.registration, &self.id)
            .map_err(access_error)
    }

    fn release(&self) -> BoxFuture<'_, Result<bool, Error>> {
        Box::pin(async move {
            self.manager
                .teardown(&self.registration, &self.id)
                .await
                .map_err(access_error)
        })
    }
}

/// Access failures are transient, except a request that belongs to someone else: that needs a
/// person, so it is reported like invalid input.
fn access_error(err: crate::access::AccessError) -> Error {
    match err {
        crate::access::AccessError::NotManaged { .. } => {
            Error::invalid_input(err.to_string()).with_reason("AccessRequestConflict")
        }
        other => Error::transient(other),
    }
}
