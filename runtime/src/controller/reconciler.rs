//! The reconcile algorithm of the Go runtime's `APIReconciler` (`openmcp.md` §5), for any mode.
//!
//! Per key: object from the cache (gone: forget it) → `openmcp.cloud/operation` (`ignore`: skip;
//! `reconcile`: remove the annotation and go on) → ProviderConfig (missing, deleting or invalid:
//! say so in status and wait for it to change) → deleting? the delete path : the create path.
//!
//! Create path: finalizer `<group>/finalizer` → tenant access (mode) and workload access →
//! `create_or_update` → status → requeue (the author's interval, else the poll interval).
//!
//! Delete path: unless the tenant's access is already gone or going, `delete` (blocked: say so,
//! retry) → give back workload and tenant access, wait until it is gone → remove the finalizer.
//!
//! What the runtime adds over the Go one: state comes from watch caches, so a reconcile with
//! nothing to do makes no API call; status is written only when it changes and only when a wait
//! is noticeable (a grant that arrives within [`Options::access_status_after`] never shows up as
//! `WaitingForAccess`), which keeps a create→Ready at three writes besides the author's (finalizer,
//! AccessRequest, status); a panic in the author's code is a failed reconcile, not a dead process.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use tokio::time::Instant;
use tracing::Instrument;

use crate::access::{AccessState, Registration};
use crate::context::{Context, WorkloadAccess};
use crate::controller::source::Source;
use crate::error::Error;
use crate::openmcp::constants::{OPERATION_ANNOTATION, OPERATION_IGNORE, OPERATION_RECONCILE};
use crate::ops::metrics::{ControllerMetrics, ControllerResult, Metrics, ReconcileResult};
use crate::outcome::{DEFAULT_WAIT, State};
use crate::platform::{ConfigState, Platform};
use crate::provider_config::ProviderConfigResource;
use crate::queue::Requeue;
use crate::reconcile::{Reconcile, WorkloadCluster};
use crate::resources::apply::ResourcePhase;
use crate::status::write::{
    self as status, REASON_CLEANUP, REASON_DENIED, REASON_ERROR, REASON_INVALID,
    REASON_INVALID_OBJECT, REASON_PANICKED, REASON_TERMINATING, REASON_TIMED_OUT, REASON_WAITING,
    Report,
};
use crate::tenant::{ClusterAccess, Identity};

mod invalid;

/// Numbers each reconcile of the process, for telling apart the log lines of two reconciles of
/// the same object (controller-runtime's `reconcileID`).
static RECONCILE_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Tunables of the reconcile algorithm.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long access may take before the object says `WaitingForAccess`.
    pub access_status_after: Duration,
    /// Re-check interval while access is pending or being given back, as a safety net behind
    /// the request watches.
    pub access_recheck: Duration,
    /// How long the author's `create_or_update` or `delete` may take before it is cancelled
    /// (its future dropped) and the reconcile fails with reason `ReconcileTimedOut`, freeing
    /// the worker; retried with backoff. `None` (the default, as controller-runtime's
    /// `ReconciliationTimeout`): no limit. Code that blocks its thread instead of awaiting
    /// cannot be cancelled; the reconcile still fails once it returns.
    pub timeout: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            access_status_after: Duration::from_secs(2),
            access_recheck: Duration::from_secs(30),
            timeout: None,
        }
    }
}

/// How an author's call ended.
enum AuthorCall<T> {
    /// It returned.
    Returned(T),
    /// It panicked, with this payload.
    Panicked(Box<dyn std::any::Any + Send>),
    /// It ran past the timeout and was cancelled.
    TimedOut(Duration),
}

/// Re-check interval while a managed object is pending: nothing watches the objects themselves,
/// and a HelmRelease or a rollout is usually ready within seconds.
const RESOURCE_RECHECK: Duration = Duration::from_secs(2);

/// What a reconcile achieved, for the queue and the metrics.
struct Step {
    requeue: Requeue,
    result: ReconcileResult,
}

impl Step {
    fn new(result: ReconcileResult, requeue: Requeue) -> Self {
        Step { requeue, result }
    }
}

/// Reconciles one mode's objects. Shared by the controller's workers.
pub struct Reconciler<P: Reconcile, S: Source<P>> {
    source: Arc<S>,
    platform: Arc<Platform<P>>,
    metrics: Metrics,
    controller_metrics: ControllerMetrics,
    options: Options,
    /// When each key started waiting for access.
    waiting_since: Mutex<HashMap<Identity, Instant>>,
    /// Undecodable objects already reported, with the generation and error reported, so that
    /// the echo of the report (a new resourceVersion of the same broken object) is not
    /// reported again.
    reported_invalid: Mutex<HashMap<Identity, (Option<i64>, String)>>,
}

impl<P: Reconcile, S: Source<P>> Reconciler<P, S> {
    /// A reconciler for `source`'s objects.
    pub fn new(
        source: Arc<S>,
        platform: Arc<Platform<P>>,
        metrics: Metrics,
        options: Options,
    ) -> Self {
        let controller_metrics = metrics.controller(&crate::controller::controller_name(
            platform.provider_name(),
            source.mode(),
        ));
        Reconciler {
            source,
            platform,
            metrics,
            controller_metrics,
            options,
            waiting_since: Mutex::new(HashMap::new()),
            reported_invalid: Mutex::new(HashMap::new()),
        }
    }

    /// The series of this mode's controller under controller-runtime's names.
    pub fn controller_metrics(&self) -> &ControllerMetrics {
        &self.controller_metrics
    }

    /// The mode's source.
    pub fn source(&self) -> &Arc<S> {
        &self.source
    }

    /// Reconciles `id` once and says when it is due again.
    pub async fn reconcile(&self, id: &Identity) -> Requeue {
        let started = Instant::now();
        // The whole reconcile, the author's `create_or_update`/`delete` included, runs inside this
        // span (instrumenting the future, as kube-runtime's controller does), so a log line of the
        // author says which tenant it is about. Info level: it must exist at the default
        // verbosity for its fields to reach the author's lines.
        let span = tracing::info_span!(
            "reconcile",
            mode = %self.source.mode().as_str(),
            cluster = %id.cluster.as_deref().unwrap_or(""),
            namespace = %id.namespace,
            name = %id.name,
            reconcile_id = RECONCILE_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let step = async {
            tracing::debug!("reconciling");
            self.reconcile_inner(id).await
        }
        .instrument(span)
        .await;
        let elapsed = started.elapsed();
        self.metrics
            .reconciled(self.source.mode(), step.result, elapsed.as_secs_f64());
        self.controller_metrics
            .reconciled(controller_result(&step), elapsed.as_secs_f64());
        match step.result {
            ReconcileResult::panic => self.controller_metrics.panicked(),
            ReconcileResult::timeout => self.controller_metrics.timed_out(),
            _ => {}
        }
        tracing::debug!(object = %id, result = ?step.result, requeue = ?step.requeue, elapsed_ms = elapsed.as_millis() as u64, "reconciled");
        step.requeue
    }

    async fn reconcile_inner(&self, id: &Identity) -> Step {
        let Some(mut object) = self.source.get(id) else {
            if let Some(invalid) = self.source.invalid(id) {
                self.report_invalid(id, &invalid).await;
                return self.release_invalid(id, &invalid).await;
            }
            self.reported_invalid
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
            self.forget(id);
            return Step::new(ReconcileResult::skipped, Requeue::Never);
        };
        // A detached object is only ever cleaned up: no annotation keeps its access alive.
        let operation = if self.source.detached(id) {
            None
        } else {
            object
                .annotations()
                .get(OPERATION_ANNOTATION)
                .map(String::as_str)
        };
        match operation {
            Some(OPERATION_IGNORE) => {
                tracing::debug!(object = %id, "skipping: {OPERATION_ANNOTATION}={OPERATION_IGNORE}");
                return Step::new(ReconcileResult::skipped, Requeue::Never);
            }
            Some(OPERATION_RECONCILE) => match self.remove_operation(id, &object).await {
                Ok(updated) => object = updated,
                Err(err) => {
                    return self
                        .fail(
                            id,
                            &object,
                            &err.context("removing the operation annotation"),
                            false,
                        )
                        .await;
                }
            },
            _ => {}
        }
        let config = match self.platform.config() {
            ConfigState::Ready(config) => config,
            state => {
                // Go: `StatusProgressing(obj, ReconcileError, "No ProviderConfig found")`, no
                // requeue; the ProviderConfig watch brings every object back when it appears.
                let message = match state {
                    ConfigState::Deleting => format!(
                        "ProviderConfig {} is marked for deletion",
                        self.platform.provider_name()
                    ),
                    ConfigState::Invalid(message) => message,
                    _ => "No ProviderConfig found".to_owned(),
                };
                let phase = if object.meta().deletion_timestamp.is_some() {
                    Report::terminating(REASON_ERROR, message)
                } else {
                    Report::progressing(REASON_ERROR, message)
                };
                self.write_status(id, &object, phase, false).await;
                return Step::new(ReconcileResult::skipped, Requeue::Never);
            }
        };
        if object.meta().deletion_timestamp.is_some() {
            self.delete_path(id, object, config).await
        } else {
            self.create_path(id, object, config).await
        }
    }

    /// Reports an object the provider's type cannot decode, on the object itself: `Ready=False`
    /// with reason `InvalidObject` and the decoding error in its status (phase Progressing, or
    /// Terminating while it is deleted), a Warning Event, and a warn log. Written with an
    /// untyped merge patch, since the typed object cannot be read back. The object is not
    /// reconciled (no access, no author code) until it decodes again; every other object is.
    async fn report_invalid(
        &self,
        id: &Identity,
        invalid: &kube::core::error_boundary::InvalidObject,
    ) {
        let meta = &invalid.metadata;
        let reported = (meta.generation, invalid.error.clone());
        {
            let mut done = self
                .reported_invalid
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if done.get(id) == Some(&reported) {
                return;
            }
            done.insert(id.clone(), reported);
        }
        let message = format!(
            "{} {id} cannot be read by this provider: {}; fix the object to match the {} CRD \
             (or update the provider)",
            P::INFO.kind,
            invalid.error,
            P::INFO.kind
        );
        tracing::warn!(object = %id, error = %invalid.error, "not reconciling an object that cannot be decoded");
        if self.source.detached(id) {
            return;
        }
        let deleting = meta.deletion_timestamp.is_some();
        let mut conditions = Vec::new();
        status::set_condition(
            &mut conditions,
            status::READY,
            false,
            REASON_INVALID_OBJECT,
            &message,
            meta.generation,
            k8s_openapi::jiff::Timestamp::now(),
        );
        let phase = if deleting {
            crate::status::Phase::Terminating
        } else {
            crate::status::Phase::Progressing
        };
        let patch = serde_json::json!({ "status": {
            "observedGeneration": meta.generation,
            "phase": phase.as_str(),
            "conditions": conditions,
        } });
        let resource = kube::api::ApiResource::erase::<P>(&());
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            kube::Client::from(self.source.api(id)),
            &id.namespace,
            &resource,
        );
        let name = meta.name.clone().unwrap_or_else(|| id.name.clone());
        if let Err(err) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(object = %id, error = %err, "could not report the undecodable object in its status");
        }
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(P::INFO.api_version()),
            kind: Some(P::INFO.kind.to_owned()),
            name: Some(name),
            namespace: Some(id.namespace.clone()),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            ..Default::default()
        };
        self.source
            .events(id)
            .for_object(reference)
            .warning(REASON_INVALID_OBJECT, message)
            .await;
    }

    fn poll_interval(config: &P::ProviderConfig) -> Option<Duration> {
        let poll: Duration = config.common().poll_interval.into();
        (!poll.is_zero()).then_some(poll)
    }

    fn workload(&self, config: &P::ProviderConfig) -> Option<Registration> {
        let declared = <P::WorkloadCluster as WorkloadAccess>::MODE;
        let wanted = match declared {
            WorkloadCluster::None => false,
            WorkloadCluster::Required => true,
            WorkloadCluster::Optional => config.common().workload_cluster.is_some(),
        };
        wanted.then(|| {
            Registration::workload(
                config
                    .common()
                    .workload_cluster
                    .as_ref()
                    .and_then(|w| w.purpose.as_deref()),
                P::workload_access(),
            )
        })
    }

    async fn create_path(
        &self,
        id: &Identity,
        mut object: Arc<P>,
        config: Arc<P::ProviderConfig>,
    ) -> Step {
        let finalizer = P::INFO.finalizer();
        if let Err(refusal) = self.source.admit(id, &object) {
            tracing::info!(object = %id, reason = %refusal.reason, message = %refusal.message, "not served");
            self.write_status(
                id,
                &object,
                Report::progressing(refusal.reason, refusal.message),
                false,
            )
            .await;
            return Step::new(ReconcileResult::skipped, Requeue::Never);
        }
        if !object.finalizers().contains(&finalizer) {
            match self.add_finalizer(id, &object, &finalizer).await {
                Ok(updated) => object = updated,
                Err(err) => {
                    return self
                        .fail(id, &object, &err.context("failed to add finalizer"), false)
                        .await;
                }
            }
        }

        let mcp = match self.source.tenant_access(id, &object).await {
            Ok(AccessState::Ready(access)) => access,
            Ok(AccessState::Waiting { message }) => {
                return self.wait_for_access(id, &object, &config, message).await;
            }
            Ok(AccessState::Denied { message }) => {
                return self.denied(id, &object, &config, message).await;
            }
            Err(err) => {
                return self
                    .fail(id, &object, &err.context("cluster setup error"), false)
                    .await;
            }
        };
        let workload = match self.workload(&config) {
            None => None,
            Some(reg) => match self.platform.access().ensure(&reg, id).await {
                Ok(AccessState::Ready(access)) => Some(access),
                Ok(AccessState::Waiting { message }) => {
                    return self.wait_for_access(id, &object, &config, message).await;
                }
                Ok(AccessState::Denied { message }) => {
                    return self.denied(id, &object, &config, message).await;
                }
                Err(err) => {
                    let err = access_error(err);
                    return self
                        .fail(id, &object, &err.context("cluster setup error"), false)
                        .await;
                }
            },
        };
        self.stop_waiting(id);

        let cx = match self.context(id, &object, &config, mcp, workload) {
            Ok(cx) => cx,
            Err(err) => return self.fail(id, &object, &err, false).await,
        };
        let result = self.call_author(object.create_or_update(&cx)).await;
        let poll = Self::poll_interval(&config);
        match result {
            AuthorCall::Panicked(panic) => {
                self.panicked(id, &object, "create_or_update", panic, false)
                    .await
            }
            AuthorCall::TimedOut(limit) => {
                self.timed_out(id, &object, "create_or_update", limit, false)
                    .await
            }
            AuthorCall::Returned(Err(err)) => {
                let err = self.source.classify(id, err);
                self.fail(id, &object, &err, false).await
            }
            AuthorCall::Returned(Ok(outcome)) => {
                let (state, requeue, extra) = outcome.into_parts();
                // The managed objects decide too: the object is Ready only when every one is.
                let resources = cx.resources().take();
                let held = resources.as_deref().and_then(status::held_up_by);
                let state = match (state, held) {
                    (State::Ready | State::Done, Some((reason, message))) => {
                        State::Progressing { reason, message }
                    }
                    (state, _) => state,
                };
                let requeue = requeue.or_else(|| {
                    resources
                        .as_deref()
                        .is_some_and(|r| r.iter().any(|r| r.phase == ResourcePhase::Pending))
                        .then_some(RESOURCE_RECHECK)
                });
                match state {
                    // `Done` and `Blocked` are `delete`'s; `create_or_update`'s type cannot
                    // carry them, the arms only keep the match exhaustive.
                    State::Ready | State::Done => {
                        self.write_status(
                            id,
                            &object,
                            Report::ready().with_extra(extra).with_resources(resources),
                            false,
                        )
                        .await;
                        let requeue = requeue.or(poll).map_or(Requeue::Never, Requeue::After);
                        Step::new(ReconcileResult::ready, requeue)
                    }
                    State::Progressing { reason, message } | State::Blocked { reason, message } => {
                        self.write_status(
                            id,
                            &object,
                            Report::progressing(reason, message)
                                .with_extra(extra)
                                .with_resources(resources),
                            false,
                        )
                        .await;
                        Step::new(
                            ReconcileResult::progressing,
                            Requeue::After(requeue.unwrap_or(DEFAULT_WAIT)),
                        )
                    }
                }
            }
        }
    }

    async fn delete_path(
        &self,
        id: &Identity,
        object: Arc<P>,
        config: Arc<P::ProviderConfig>,
    ) -> Step {
        let finalizer = P::INFO.finalizer();
        if !object.finalizers().contains(&finalizer) {
            // Not ours (or already released): nothing to clean up.
            return Step::new(ReconcileResult::skipped, Requeue::Never);
        }
        // The workload registration is torn down whatever the ProviderConfig says now: it may
        // have asked for one earlier.
        let workload_declared =
            <P::WorkloadCluster as WorkloadAccess>::MODE != WorkloadCluster::None;
        let workload_reg = self
            .workload(&config)
            .unwrap_or_else(|| Registration::workload(None, P::workload_access()));

        // Only access the ProviderConfig asks for now decides whether `delete` is skipped: an
        // optional workload cluster the config does not ask for has no AccessRequest, and its
        // absence is not "access already gone".
        let released = match self.released(id, self.workload(&config).as_ref()) {
            Ok(released) => released,
            Err(err) => return self.fail(id, &object, &err, true).await,
        };
        if !released {
            let mcp = match self.source.tenant_access(id, &object).await {
                Ok(AccessState::Ready(access)) => Some(access),
                Ok(AccessState::Denied { .. }) => None,
                Ok(AccessState::Waiting { .. }) => {
                    return self.cleanup_wait(id, &object).await;
                }
                Err(err) => {
                    return self
                        .fail(id, &object, &err.context("cluster cleanup error"), true)
                        .await;
                }
            };
            let workload = match self.workload(&config) {
                None => Some(None),
                Some(reg) => match self.platform.access().ensure(&reg, id).await {
                    Ok(AccessState::Ready(access)) => Some(Some(access)),
                    Ok(AccessState::Denied { .. }) => None,
                    Ok(AccessState::Waiting { .. }) => return self.cleanup_wait(id, &object).await,
                    Err(err) => {
                        let err = access_error(err);
                        return self
                            .fail(id, &object, &err.context("cluster cleanup error"), true)
                            .await;
                    }
                },
            };
            // Access the platform refused can have installed nothing: skip `delete` then.
            if let (Some(mcp), Some(workload)) = (mcp, workload) {
                let cx = match self.context(id, &object, &config, mcp, workload) {
                    Ok(cx) => cx,
                    Err(err) => return self.fail(id, &object, &err, true).await,
                };
                let result = self.call_author(object.delete(&cx)).await;
                match result {
                    AuthorCall::Panicked(panic) => {
                        return self.panicked(id, &object, "delete", panic, true).await;
                    }
                    AuthorCall::TimedOut(limit) => {
                        return self.timed_out(id, &object, "delete", limit, true).await;
                    }
                    AuthorCall::Returned(Err(err)) => {
                        let err = self.source.classify(id, err);
                        return self.fail(id, &object, &err, true).await;
                    }
                    AuthorCall::Returned(Ok(outcome)) => {
                        let (state, requeue, extra) = outcome.into_parts();
                        // Managed objects still going hold the deletion, named in the status.
                        let resources = cx.resources().take();
                        let held = resources.as_deref().and_then(status::held_up_by);
                        let (state, requeue) = match (state, held) {
                            (State::Done | State::Ready, Some((reason, message))) => (
                                State::Progressing { reason, message },
                                requeue.or(Some(RESOURCE_RECHECK)),
                            ),
                            (state, _) => (state, requeue),
                        };
                        match state {
                            State::Done | State::Ready => {}
                            State::Blocked { reason, message } => {
                                self.write_status(
                                    id,
                                    &object,
                                    Report::terminating(reason.clone(), message.clone())
                                        .with_extra(extra)
                                        .with_blocked(reason, message),
                                    true,
                                )
                                .await;
                                return Step::new(
                                    ReconcileResult::deleting,
                                    Requeue::After(requeue.unwrap_or(DEFAULT_WAIT)),
                                );
                            }
                            State::Progressing { reason, message } => {
                                self.write_status(
                                    id,
                                    &object,
                                    Report::terminating(reason, message)
                                        .with_extra(extra)
                                        .with_resources(resources),
                                    true,
                                )
                                .await;
                                return Step::new(
                                    ReconcileResult::deleting,
                                    Requeue::After(requeue.unwrap_or(DEFAULT_WAIT)),
                                );
                            }
                        }
                    }
                }
            }
        }

        // Give the access back: the workload cluster first, then the tenant's own.
        let workload_gone = if workload_declared {
            match self.platform.access().teardown(&workload_reg, id).await {
                Ok(gone) => gone,
                Err(err) => {
                    let err = access_error(err);
                    return self
                        .fail(
                            id,
                            &object,
                            &err.context("failed cluster access reconcile delete"),
                            true,
                        )
                        .await;
                }
            }
        } else {
            true
        };
        // The tenant's own access goes last: nothing the workload cluster runs for the tenant
        // outlives it with a live credential.
        if !workload_gone {
            return self.cleanup_wait(id, &object).await;
        }
        let tenant_gone = match self.source.release_tenant(id).await {
            Ok(gone) => gone,
            Err(err) => {
                return self
                    .fail(
                        id,
                        &object,
                        &err.context("failed cluster access reconcile delete"),
                        true,
                    )
                    .await;
            }
        };
        if !tenant_gone {
            return self.cleanup_wait(id, &object).await;
        }

        match self.remove_finalizer(id, &object, &finalizer).await {
            Ok(()) => {
                tracing::info!(object = %id, "deleted: access given back, finalizer removed");
                Step::new(ReconcileResult::deleted, Requeue::Never)
            }
            Err(err) => {
                self.fail(
                    id,
                    &object,
                    &err.context("failed to remove finalizer"),
                    true,
                )
                .await
            }
        }
    }

    /// Whether the author's `delete` must be skipped: the tenant's (or the workload) access is
    /// gone or being deleted, as the Go runtime's `areAccessRequestsInDeletion` decides.
    fn released(&self, id: &Identity, workload: Option<&Registration>) -> Result<bool, Error> {
        if self.source.tenant_released(id)? {
            return Ok(true);
        }
        match workload {
            Some(reg) => self
                .platform
                .access()
                .released(reg, id)
                .map_err(access_error),
            None => Ok(false),
        }
    }

    async fn cleanup_wait(&self, id: &Identity, object: &P) -> Step {
        self.write_status(
            id,
            object,
            Report::terminating(REASON_CLEANUP, "cluster cleanup"),
            true,
        )
        .await;
        Step::new(
            ReconcileResult::deleting,
            Requeue::After(self.options.access_recheck),
        )
    }

    async fn wait_for_access(
        &self,
        id: &Identity,
        object: &P,
        config: &P::ProviderConfig,
        message: String,
    ) -> Step {
        let since = *self
            .waiting_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.clone())
            .or_insert_with(Instant::now);
        let waited = since.elapsed();
        let requeue = if waited >= self.options.access_status_after {
            self.write_status(
                id,
                object,
                Report::progressing(REASON_WAITING, message),
                false,
            )
            .await;
            // The request watches bring the object back as soon as something changes.
            Self::poll_interval(config)
                .unwrap_or(self.options.access_recheck)
                .min(self.options.access_recheck)
        } else {
            self.options.access_status_after - waited
        };
        Step::new(ReconcileResult::waiting, Requeue::After(requeue))
    }

    async fn denied(
        &self,
        id: &Identity,
        object: &P,
        config: &P::ProviderConfig,
        message: String,
    ) -> Step {
        self.write_status(
            id,
            object,
            Report::progressing(REASON_DENIED, message),
            false,
        )
        .await;
        Step::new(
            ReconcileResult::waiting,
            Self::poll_interval(config).map_or(Requeue::Never, Requeue::After),
        )
    }

    async fn fail(&self, id: &Identity, object: &P, err: &Error, deleting: bool) -> Step {
        let (reason, result) = if err.is_invalid_input() {
            (
                err.reason().unwrap_or(REASON_INVALID),
                ReconcileResult::invalid,
            )
        } else {
            (err.reason().unwrap_or(REASON_ERROR), ReconcileResult::error)
        };
        if err.is_invalid_input() {
            tracing::info!(object = %id, reason, message = %err, "invalid input");
        } else {
            tracing::warn!(object = %id, reason, error = %err, "reconcile failed; retrying with backoff");
        }
        let report = if deleting {
            Report::terminating(reason, err.message())
        } else {
            Report::progressing(reason, err.message())
        };
        self.write_status(id, object, report, deleting).await;
        let requeue = if err.is_invalid_input() {
            // Not retried until the object or the ProviderConfig changes (their watches bring
            // it back), except at the poll interval like any object.
            match self.platform.config() {
                ConfigState::Ready(config) => {
                    Self::poll_interval(&config).map_or(Requeue::Never, Requeue::After)
                }
                _ => Requeue::Never,
            }
        } else {
            Requeue::Backoff
        };
        Step::new(result, requeue)
    }

    /// Runs an author's call: a panic is caught, and past [`Options::timeout`] the call is
    /// cancelled (its future dropped), which frees the worker for other objects.
    async fn call_author<T>(&self, call: impl std::future::Future<Output = T>) -> AuthorCall<T> {
        let call = AssertUnwindSafe(call).catch_unwind();
        let result = match self.options.timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => return AuthorCall::TimedOut(limit),
            },
            None => call.await,
        };
        match result {
            Ok(value) => AuthorCall::Returned(value),
            Err(panic) => AuthorCall::Panicked(panic),
        }
    }

    async fn timed_out(
        &self,
        id: &Identity,
        object: &P,
        function: &str,
        limit: Duration,
        deleting: bool,
    ) -> Step {
        let message = format!(
            "{function} did not finish within {} (the reconcile timeout) and was cancelled; retrying with backoff",
            crate::duration::Duration(limit)
        );
        tracing::warn!(object = %id, %message, "the provider's code timed out");
        let report = if deleting {
            Report::terminating(REASON_TIMED_OUT, message)
        } else {
            Report::progressing(REASON_TIMED_OUT, message)
        };
        self.write_status(id, object, report, deleting).await;
        Step::new(ReconcileResult::timeout, Requeue::Backoff)
    }

    async fn panicked(
        &self,
        id: &Identity,
        object: &P,
        function: &str,
        panic: Box<dyn std::any::Any + Send>,
        deleting: bool,
    ) -> Step {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".to_owned());
        let message = format!("{function} panicked: {what}");
        tracing::error!(object = %id, %message, "the provider's code panicked; retrying with backoff");
        let report = if deleting {
            Report::terminating(REASON_PANICKED, message)
        } else {
            Report::progressing(REASON_PANICKED, message)
        };
        self.write_status(id, object, report, deleting).await;
        Step::new(ReconcileResult::panic, Requeue::Backoff)
    }

    fn context(
        &self,
        id: &Identity,
        object: &P,
        config: &Arc<P::ProviderConfig>,
        mcp: ClusterAccess,
        workload: Option<ClusterAccess>,
    ) -> Result<Context<P>, Error> {
        let cx = Context::new(
            config.clone(),
            mcp,
            workload,
            self.platform.client().clone(),
            id.clone(),
        )
        .map_err(Error::transient)?;
        let events = self.source.events(id).for_object(object.object_ref(&()));
        Ok(cx
            .with_events(events)
            .with_field_manager(self.platform.provider_name())
            .with_provider_namespace(self.platform.pod_namespace()))
    }

    fn forget(&self, id: &Identity) {
        self.stop_waiting(id);
        self.source.forget(id);
    }

    /// `id` no longer waits for access. The map is shrunk once mostly empty: after thousands of
    /// tenants waited at once, its room would otherwise stay allocated.
    fn stop_waiting(&self, id: &Identity) {
        let mut waiting = self.waiting_since.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.remove(id).is_some()
            && waiting.capacity() > 1024
            && waiting.len() < waiting.capacity() / 8
        {
            let len = waiting.len();
            waiting.shrink_to(len * 2);
        }
    }

    async fn patch_object(
        &self,
        id: &Identity,
        object: &P,
        patch: serde_json::Value,
    ) -> Result<Arc<P>, kube::Error> {
        if self.source.detached(id) {
            // Out of reach: nothing is written back.
            return Ok(Arc::new(object.clone()));
        }
        let api = self.source.api(id);
        let updated = api
            .patch(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        self.source.observe(id, updated.clone());
        Ok(Arc::new(updated))
    }

    /// Adds the finalizer with the object's resourceVersion as precondition, so a stale cache
    /// fails with a conflict (and a retry) rather than dropping someone else's finalizer.
    async fn add_finalizer(
        &self,
        id: &Identity,
        object: &P,
        finalizer: &str,
    ) -> Result<Arc<P>, Error> {
        let mut finalizers = object.finalizers().to_vec();
        finalizers.push(finalizer.to_owned());
        let patch = serde_json::json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": object.resource_version(),
            }
        });
        Ok(self.patch_object(id, object, patch).await?)
    }

    async fn remove_finalizer(
        &self,
        id: &Identity,
        object: &P,
        finalizer: &str,
    ) -> Result<(), Error> {
        if self.source.detached(id) {
            // Its access is given back; there is no object left to release.
            self.forget(id);
            return Ok(());
        }
        let finalizers: Vec<&String> = object
            .finalizers()
            .iter()
            .filter(|f| *f != finalizer)
            .collect();
        let patch = serde_json::json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": object.resource_version(),
            }
        });
        match self.patch_object(id, object, patch).await {
            Ok(_) => Ok(()),
            // Gone already: what we wanted.
            Err(err) if crate::access::is_status(&err, 404) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    async fn remove_operation(&self, id: &Identity, object: &P) -> Result<Arc<P>, Error> {
        tracing::info!(object = %id, "reconcile requested by {OPERATION_ANNOTATION}={OPERATION_RECONCILE}");
        let patch =
            serde_json::json!({ "metadata": { "annotations": { OPERATION_ANNOTATION: null } } });
        Ok(self.patch_object(id, object, patch).await?)
    }

    /// Writes `report` into the object's status when that changes it, and records an Event when
    /// the `Ready` condition changed from one recorded state to another (or to a new failure).
    async fn write_status(
        &self,
        id: &Identity,
        object: &P,
        report: Report<P::ExtraStatus>,
        deleting: bool,
    ) {
        if self.source.detached(id) {
            return;
        }
        let old = object.status();
        let new = status::apply(
            old,
            object.meta().generation,
            report,
            k8s_openapi::jiff::Timestamp::now(),
        );
        let api = self.source.api(id);
        match status::patch_status(&api, &object.name_any(), old, &new).await {
            Ok(None) => return,
            Ok(Some(updated)) => self.source.observe(id, updated),
            Err(err) if matches!(&err, kube::Error::Api(s) if s.code == 404) => return,
            Err(err) => {
                // The next reconcile computes the same status and tries again.
                tracing::warn!(object = %id, error = %err, "could not write status");
                return;
            }
        }
        self.record_transition(id, object, old, &new, deleting)
            .await;
    }

    async fn record_transition(
        &self,
        id: &Identity,
        object: &P,
        old: Option<&crate::status::ServiceStatus<P::ExtraStatus>>,
        new: &crate::status::ServiceStatus<P::ExtraStatus>,
        deleting: bool,
    ) {
        let before = status::ready_state(old);
        let after = status::ready_state(Some(new));
        if before == after {
            return;
        }
        let Some(condition) = new.condition(status::READY) else {
            return;
        };
        let events = self.source.events(id).for_object(object.object_ref(&()));
        let _ = deleting;
        if condition.status == "True" {
            // The first Ready of a new object is not a transition worth an Event (it would be a
            // fourth write on the way to Ready); a recovery is.
            if before.is_some() {
                events
                    .normal(&condition.reason, condition.message.clone())
                    .await;
            }
        } else if [REASON_WAITING, REASON_CLEANUP, REASON_TERMINATING]
            .contains(&condition.reason.as_str())
        {
            events
                .normal(&condition.reason, condition.message.clone())
                .await;
        } else {
            events
                .warning(&condition.reason, condition.message.clone())
                .await;
        }
    }
}

/// How a reconcile ended in controller-runtime's terms: a failure is an `error` (terminal when it
/// is not retried), otherwise a delay the reconcile chose is `requeue_after`, and no delay is
/// `success` (controller-runtime's `reconcileHandler`).
fn controller_result(step: &Step) -> ControllerResult {
    match step.result {
        ReconcileResult::invalid => ControllerResult::Error { terminal: true },
        ReconcileResult::error | ReconcileResult::panic | ReconcileResult::timeout => {
            ControllerResult::Error { terminal: false }
        }
        _ => match step.requeue {
            Requeue::After(_) => ControllerResult::RequeueAfter,
            // Only failures back off; a success that did would still be a requeue after a delay.
            Requeue::Backoff => ControllerResult::RequeueAfter,
            Requeue::Never => ControllerResult::Success,
        },
    }
}

/// Access failures are transient, except a request that belongs to someone else: that needs a
/// person, so it is reported like invalid input.
pub fn access_error(err: crate::access::AccessError) -> Error {
    match err {
        crate::access::AccessError::NotManaged { .. } => {
            Error::invalid_input(err.to_string()).with_reason("AccessRequestConflict")
        }
        other => Error::transient(other),
    }
}
