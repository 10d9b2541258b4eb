//! What a mode contributes to the reconcile core: where Service API objects come from, the
//! client that writes them back, and how the tenant's own cluster is reached.
//!
//! Standard mode reads objects from a watch on the onboarding cluster and reaches the tenant's MCP
//! cluster through an AccessRequest; kcp mode reads them from wildcard watches through the
//! APIExport virtual workspace and reaches the workspace with a token it mints there. Everything
//! else — ProviderConfig, finalizer, workload access, status, requeues, events — is the same and
//! lives in [`Reconciler`](super::reconciler::Reconciler).

use std::future::Future;
use std::sync::Arc;

use kube::Api;

use crate::access::AccessState;
use crate::error::Error;
use crate::events::EventRecorder;
use crate::reconcile::ServiceProvider;
use crate::tenant::{Identity, Mode};

/// A mode's view of its Service API objects and tenant clusters.
///
/// Every method is keyed by [`Identity`]: in kcp mode two objects with the same namespace and
/// name in different workspaces are different keys.
pub trait Source<P: ServiceProvider>: Send + Sync + 'static {
    /// Which mode this is.
    fn mode(&self) -> Mode;

    /// The object as the source's cache has it; `None` when it is gone.
    fn get(&self, id: &Identity) -> Option<Arc<P>>;

    /// The object under `id` that cannot be decoded into the provider's type (its metadata and
    /// why); the runtime reports it on the object instead of reconciling it.
    fn invalid(&self, id: &Identity) -> Option<Arc<kube::core::error_boundary::InvalidObject>> {
        let _ = id;
        None
    }

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

    /// An API handle to write `id` (metadata and status).
    fn api(&self, id: &Identity) -> Api<P>;

    /// The recorder for Events about `id`.
    fn events(&self, id: &Identity) -> EventRecorder;

    /// Orders (if needed) and reports access to `id`'s own cluster: the MCP cluster, or the kcp
    /// workspace.
    fn tenant_access(
        &self,
        id: &Identity,
        object: &P,
    ) -> impl Future<Output = Result<AccessState, Error>> + Send;

    /// Whether the tenant's access is gone or being given back, in which case the author's
    /// `delete` is skipped (there is nothing left it could reach).
    fn tenant_released(&self, id: &Identity) -> Result<bool, Error>;

    /// Gives the tenant's access back; `true` once it is gone.
    fn release_tenant(&self, id: &Identity) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Drops what the source keeps for `id` once its object is gone.
    fn forget(&self, id: &Identity) {
        let _ = id;
    }

    /// Whether the mode serves `id` at all (kcp: one object per workspace). A refused object
    /// gets no finalizer and no access; its status says why, and it is reconsidered when
    /// something triggers it again.
    fn admit(&self, id: &Identity, object: &P) -> Result<(), Refusal> {
        let _ = (id, object);
        Ok(())
    }

    /// Whether `id`'s object is out of reach although its tenant may still hold access (kcp: the
    /// workspace's last APIBinding went, or the object vanished with the runtime's finalizer
    /// still on it). [`get`](Self::get) then returns the last known object marked as deleting:
    /// the runtime runs the delete path to give everything back, writes nothing to the object,
    /// and [`forget`](Self::forget)s it at the end.
    fn detached(&self, id: &Identity) -> bool {
        let _ = id;
        false
    }

    /// Explains an error of the author's code in the mode's terms before it is reported (kcp:
    /// installing workloads into a workspace is invalid input pointing at the workload cluster).
    fn classify(&self, id: &Identity, err: Error) -> Error {
        let _ = id;
        err
    }
}

/// Why a mode does not serve an object (see [`Source::admit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The `Ready` condition's reason, UpperCamelCase.
    pub reason: String,
    /// What the end user can do about it.
    pub message: String,
}
