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

use super::{Reconciler, Step};
use crate::controller::finalizer;
use crate::controller::source::{Invalid, Source};
use crate::openmcp::constants::{OPERATION_ANNOTATION, OPERATION_IGNORE};
use crate::ops::metrics::ReconcileResult;
use crate::platform::ConfigState;
use crate::queue::Requeue;
use crate::reconcile::Reconcile;
use crate::tenant::Identity;

impl<P: Reconcile, S: Source<P>> Reconciler<P, S> {
    /// The reconcile of an undecodable object (already reported on itself): nothing while it
    /// lives; once it is being deleted and still carries the runtime's finalizer, the workload
    /// access and then the tenant's access are given back and the finalizer is removed.
    pub(super) async fn release_invalid(&self, id: &Identity, invalid: &Invalid<P>) -> Step {
        let meta = &invalid.object.metadata;
        let finalizer = P::INFO.finalizer();
        if finalizer::event(meta, &finalizer) != finalizer::Event::Cleanup {
            return Step::new(ReconcileResult::invalid, Requeue::Never);
        }
        let ignored = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(OPERATION_ANNOTATION))
            .is_some_and(|op| op == OPERATION_IGNORE);
        if ignored && invalid.writer.is_some() {
            tracing::debug!(object = %id, "skipping: {OPERATION_ANNOTATION}={OPERATION_IGNORE}");
            return Step::new(ReconcileResult::skipped, Requeue::Never);
        }
        let config = match self.platform.config() {
            ConfigState::Ready(config) => Some(config),
            _ => None,
        };
        let timing = self.timing(config.as_deref());
        if let Some(decision) = self
            .give_back(id, &*invalid.access, config.as_deref(), timing)
            .await
        {
            // Its status cannot be written typed; the step and a log line say what happens.
            if let Some(report) = &decision.report
                && decision.result == ReconcileResult::error
            {
                tracing::warn!(object = %id, error = %report.message, "giving back the access of an undecodable object failed; retrying with backoff");
            }
            return Step::new(decision.result, decision.requeue);
        }
        let Some(writer) = &invalid.writer else {
            self.forget(id);
            return Step::new(ReconcileResult::deleted, Requeue::Never);
        };
        let resource = ApiResource::erase::<P>(&());
        let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
            kube::Client::from(writer.api.clone()),
            &id.namespace,
            &resource,
        );
        let name = meta.name.clone().unwrap_or_else(|| id.name.clone());
        let patch = finalizer::remove(meta, &finalizer);
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            // Gone already: what we wanted.
            Ok(_) => {}
            Err(err) if crate::access::is_status(&err, 404) => {}
            Err(err) => {
                tracing::warn!(object = %id, error = %err, "removing the finalizer of an undecodable object failed; retrying with backoff");
                return Step::new(ReconcileResult::error, Requeue::Backoff);
            }
        }
        tracing::info!(object = %id, "deleted an object that cannot be decoded: access given back, finalizer removed; its `delete` was not called");
        Step::new(ReconcileResult::deleted, Requeue::Never)
    }
}
