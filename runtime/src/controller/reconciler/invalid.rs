//! Deleting an object whose spec the provider's type cannot decode: its access is given back and
//! its finalizer removed, so it never blocks its namespace or the ControlPlane's deletion.
//!
//! Kept apart from the reconcile algorithm: it runs only for objects the cache holds as
//! undecodable (the status never makes an object undecodable, see
//! [`ServiceStatus`](crate::status::ServiceStatus)), it writes untyped, and it calls no author
//! code — the author's `delete` needs the typed object, which does not exist. What the author
//! installed in the tenant's cluster is therefore not uninstalled; the tenant's access is still
//! given back, as the Go runtime gives it back when the access is already going.

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::error_boundary::InvalidObject;

use super::{Reconciler, Step, access_error};
use crate::access::Registration;
use crate::context::WorkloadAccess;
use crate::controller::source::Source;
use crate::error::Error;
use crate::openmcp::constants::{OPERATION_ANNOTATION, OPERATION_IGNORE};
use crate::ops::metrics::ReconcileResult;
use crate::platform::ConfigState;
use crate::queue::Requeue;
use crate::reconcile::{Reconcile, WorkloadCluster};
use crate::tenant::Identity;

impl<P: Reconcile, S: Source<P>> Reconciler<P, S> {
    /// The reconcile of an undecodable object (already reported on itself): nothing while it
    /// lives; once it is being deleted and still carries the runtime's finalizer, the workload
    /// access and then the tenant's access are given back and the finalizer is removed.
    pub(super) async fn release_invalid(&self, id: &Identity, invalid: &InvalidObject) -> Step {
        let meta = &invalid.metadata;
        let finalizer = P::INFO.finalizer();
        let ours = meta
            .finalizers
            .as_ref()
            .is_some_and(|f| f.contains(&finalizer));
        if meta.deletion_timestamp.is_none() || !ours {
            return Step::new(ReconcileResult::invalid, Requeue::Never);
        }
        let ignored = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(OPERATION_ANNOTATION))
            .is_some_and(|op| op == OPERATION_IGNORE);
        if ignored && !self.source.detached(id) {
            tracing::debug!(object = %id, "skipping: {OPERATION_ANNOTATION}={OPERATION_IGNORE}");
            return Step::new(ReconcileResult::skipped, Requeue::Never);
        }
        match self.release_invalid_access(id).await {
            Ok(true) => {}
            Ok(false) => {
                // The request watches bring the object back as soon as the access is gone.
                return Step::new(
                    ReconcileResult::deleting,
                    Requeue::After(self.options.access_recheck),
                );
            }
            Err(err) => {
                tracing::warn!(object = %id, error = %err, "giving back the access of an undecodable object failed; retrying with backoff");
                return Step::new(ReconcileResult::error, Requeue::Backoff);
            }
        }
        match self.remove_invalid_finalizer(id, invalid, &finalizer).await {
            Ok(()) => {
                tracing::info!(object = %id, "deleted an object that cannot be decoded: access given back, finalizer removed; its `delete` was not called");
                Step::new(ReconcileResult::deleted, Requeue::Never)
            }
            Err(err) => {
                tracing::warn!(object = %id, error = %err, "removing the finalizer of an undecodable object failed; retrying with backoff");
                Step::new(ReconcileResult::error, Requeue::Backoff)
            }
        }
    }

    /// Gives back the workload access (when the provider declares one: the ProviderConfig may
    /// have asked for it earlier), then the tenant's own; `true` once both are gone.
    async fn release_invalid_access(&self, id: &Identity) -> Result<bool, Error> {
        if <P::WorkloadCluster as WorkloadAccess>::MODE != WorkloadCluster::None {
            let reg = match self.platform.config() {
                ConfigState::Ready(config) => self.workload(&config),
                _ => None,
            }
            .unwrap_or_else(|| Registration::workload(None, P::workload_access()));
            let gone = self
                .platform
                .access()
                .teardown(&reg, id)
                .await
                .map_err(access_error)?;
            if !gone {
                return Ok(false);
            }
        }
        self.source.release_tenant(id).await
    }

    /// Removes the runtime's finalizer with an untyped merge patch, with the object's
    /// resourceVersion as precondition so a stale cache never drops someone else's finalizer.
    async fn remove_invalid_finalizer(
        &self,
        id: &Identity,
        invalid: &InvalidObject,
        finalizer: &str,
    ) -> Result<(), kube::Error> {
        if self.source.detached(id) {
            self.forget(id);
            return Ok(());
        }
        let meta = &invalid.metadata;
        let finalizers: Vec<&String> = meta
            .finalizers
            .iter()
            .flatten()
            .filter(|f| *f != finalizer)
            .collect();
        let patch = serde_json::json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": meta.resource_version,
            }
        });
        let resource = ApiResource::erase::<P>(&());
        let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
            kube::Client::from(self.source.api(id)),
            &id.namespace,
            &resource,
        );
        let name = meta.name.clone().unwrap_or_else(|| id.name.clone());
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            // Gone already: what we wanted.
            Err(err) if crate::access::is_status(&err, 404) => Ok(()),
            Err(err) => Err(err),
        }
    }
}
