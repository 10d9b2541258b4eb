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
use crate::context::Context;
use crate::controller::finalizer;
use crate::controller::plan::{self, CleanupAccess, Path, Timing};
use crate::controller::source::{AccessRoute, PlatformAccess, Resolved, Source, Tenant, Writer};
use crate::deletion_guard::Guards;
use crate::error::Error;
use crate::events::EventRecorder;
use crate::observed::Observed;
use crate::openmcp::constants::{OPERATION_ANNOTATION, OPERATION_IGNORE, OPERATION_RECONCILE};
use crate::ops::metrics::{ControllerMetrics, ControllerResult, Metrics, ReconcileResult};
use crate::platform::{ConfigState, Platform};
use crate::provider_config::ProviderConfigResource;
use crate::queue::Requeue;
use crate::reconcile::Reconcile;
use crate::status::resources::ResourceSink;
use crate::status::write::{self as status, REASON_INVALID_OBJECT, Report};
use crate::tenant::{ClusterAccess, Identity, WorkloadAccess, WorkloadCluster};
use crate::waits::Waits;

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
    /// The deletion guards of tenants being deleted, with a watch on each that holds.
    guards: Guards,
    /// The managed objects each tenant waits for, watched.
    waits: Waits,
    /// Each tenant's set members, watched, so that a no-op reconcile reads none.
    observed: Arc<Observed>,
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
            guards: Guards::default(),
            waits: Waits::default(),
            observed: Arc::default(),
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
        let mut tenant = match self.source.resolve(id) {
            Resolved::Found(tenant) => tenant,
            Resolved::Invalid(invalid) => {
                self.report_invalid(id, &invalid.object, invalid.writer.as_ref())
                    .await;
                return self.release_invalid(id, &invalid).await;
            }
            Resolved::Gone => {
                self.reported_invalid
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(id);
                self.forget(id);
                return Step::new(ReconcileResult::skipped, Requeue::Never);
            }
        };
        // A detached object is only ever cleaned up: no annotation keeps its access alive.
        let operation = if tenant.detached() {
            None
        } else {
            tenant
                .object
                .annotations()
                .get(OPERATION_ANNOTATION)
                .map(String::as_str)
        };
        match operation {
            Some(OPERATION_IGNORE) => {
                tracing::debug!(object = %id, "skipping: {OPERATION_ANNOTATION}={OPERATION_IGNORE}");
                return Step::new(ReconcileResult::skipped, Requeue::Never);
            }
            Some(OPERATION_RECONCILE) => {
                tracing::info!(object = %id, "reconcile requested by {OPERATION_ANNOTATION}={OPERATION_RECONCILE}");
                let patch = serde_json::json!({ "metadata": { "annotations": { OPERATION_ANNOTATION: null } } });
                match self.patch_object(id, &tenant, patch).await {
                    Ok(updated) => tenant.object = updated,
                    Err(err) => {
                        let err = Error::from(err).context("removing the operation annotation");
                        let decision = plan::failed(&err, Path::Create, self.timing(None));
                        return self.finish(id, &tenant, decision).await;
                    }
                }
            }
            _ => {}
        }
        let deleting = tenant.object.meta().deletion_timestamp.is_some();
        let path = if deleting { Path::Delete } else { Path::Create };
        let config = match self.platform.config() {
            ConfigState::Ready(config) => config,
            // The ProviderConfig watch brings every object back when it changes.
            state => {
                let decision = plan::config_unusable(state, self.platform.provider_name(), path);
                return self.finish(id, &tenant, decision).await;
            }
        };
        let timing = self.timing(Some(&config));
        match finalizer::event(tenant.object.meta(), &P::INFO.finalizer()) {
            finalizer::Event::Apply { add } => {
                self.create_path(id, tenant, config, add, timing).await
            }
            finalizer::Event::Cleanup => self.delete_path(id, tenant, config, timing).await,
            // Not ours (or already released): nothing to clean up.
            finalizer::Event::Done => Step::new(ReconcileResult::skipped, Requeue::Never),
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
        writer: Option<&Writer<P>>,
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
        let Some(writer) = writer else {
            return;
        };
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
            kube::Client::from(writer.api.clone()),
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
        writer
            .events
            .for_object(reference)
            .warning(REASON_INVALID_OBJECT, message)
            .await;
    }

    /// The timings the plan decides with; `config` gives the poll interval once it is known.
    fn timing(&self, config: Option<&P::ProviderConfig>) -> Timing {
        let poll = match config {
            Some(config) => Some(config.common().poll_interval.into()),
            None => match self.platform.config() {
                ConfigState::Ready(config) => Some(config.common().poll_interval.into()),
                _ => None,
            },
        };
        Timing {
            poll: poll.filter(|poll: &Duration| !poll.is_zero()),
            access_status_after: self.options.access_status_after,
            access_recheck: self.options.access_recheck,
        }
    }

    /// The workload registration the ProviderConfig asks for now, if any.
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

    /// The route to the workload cluster under `registration`.
    fn workload_route(&self, id: &Identity, registration: Registration) -> PlatformAccess {
        PlatformAccess::new(self.platform.access().clone(), registration, id.clone())
    }

    /// Asks each route for its access in order, stopping at the first that is not granted (a
    /// refusal goes on on the delete path, where the rest still decides whether to wait).
    async fn ensure(routes: &[&dyn AccessRoute], path: Path) -> Vec<Result<AccessState, Error>> {
        let mut states = Vec::with_capacity(routes.len());
        for route in routes {
            let state = route.ensure().await;
            let go_on = matches!(
                (&state, path),
                (Ok(AccessState::Ready(_)), _) | (Ok(AccessState::Denied { .. }), Path::Delete)
            );
            states.push(state);
            if !go_on {
                break;
            }
        }
        states
    }

    /// How long `id` has waited for access, when the last state says it still waits.
    fn waited(&self, id: &Identity, states: &[Result<AccessState, Error>]) -> Duration {
        if !matches!(states.last(), Some(Ok(AccessState::Waiting { .. }))) {
            return Duration::ZERO;
        }
        self.waiting_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.clone())
            .or_insert_with(Instant::now)
            .elapsed()
    }

    async fn create_path(
        &self,
        id: &Identity,
        mut tenant: Tenant<P>,
        config: Arc<P::ProviderConfig>,
        add_finalizer: bool,
        timing: Timing,
    ) -> Step {
        if let Err(refusal) = &tenant.admission {
            tracing::info!(object = %id, reason = %refusal.reason, message = %refusal.message, "not served");
            let decision = plan::refused(refusal.reason.clone(), refusal.message.clone());
            return self.finish(id, &tenant, decision).await;
        }
        if add_finalizer {
            let patch = finalizer::add(tenant.object.meta(), &P::INFO.finalizer());
            match self.patch_object(id, &tenant, patch).await {
                Ok(updated) => tenant.object = updated,
                Err(err) => {
                    let err = Error::from(err).context("failed to add finalizer");
                    let decision = plan::failed(&err, Path::Create, timing);
                    return self.finish(id, &tenant, decision).await;
                }
            }
        }

        let workload = self
            .workload(&config)
            .map(|reg| self.workload_route(id, reg));
        let mut routes: Vec<&dyn AccessRoute> = vec![&*tenant.access];
        routes.extend(workload.as_ref().map(|w| w as &dyn AccessRoute));
        let states = Self::ensure(&routes, Path::Create).await;
        let waited = self.waited(id, &states);
        let mut granted = match plan::access(states, waited, timing, Path::Create) {
            Ok(granted) => granted.into_iter(),
            Err(decision) => return self.finish(id, &tenant, decision).await,
        };
        self.stop_waiting(id);
        let (Some(mcp), workload) = (granted.next(), granted.next()) else {
            return self
                .finish(
                    id,
                    &tenant,
                    plan::failed(
                        &Error::transient_msg("no access to the tenant's cluster"),
                        Path::Create,
                        timing,
                    ),
                )
                .await;
        };

        let cx = match self.context(id, &tenant, &config, mcp, workload) {
            Ok(cx) => cx,
            Err(err) => {
                return self
                    .finish(id, &tenant, plan::failed(&err, Path::Create, timing))
                    .await;
            }
        };
        let decision = match self.call_author(tenant.object.create_or_update(&cx)).await {
            AuthorCall::Panicked(panic) => plan::panicked(
                "create_or_update",
                &plan::panic_message(&*panic),
                Path::Create,
            ),
            AuthorCall::TimedOut(limit) => plan::timed_out("create_or_update", limit, Path::Create),
            AuthorCall::Returned(Err(err)) => {
                plan::failed(&self.source.classify(err), Path::Create, timing)
            }
            AuthorCall::Returned(Ok(outcome)) => {
                let (state, requeue, extra) = outcome.into_parts();
                self.watch_waits(id, &cx);
                let requeue = plan::with_revisit(requeue, cx.resources().take_revisit(), timing);
                plan::created(state, requeue, extra, cx.resources().take(), timing)
            }
        };
        self.finish(id, &tenant, decision).await
    }

    async fn delete_path(
        &self,
        id: &Identity,
        tenant: Tenant<P>,
        config: Arc<P::ProviderConfig>,
        timing: Timing,
    ) -> Step {
        // Only access the ProviderConfig asks for now decides whether `delete` is skipped: an
        // optional workload cluster the config does not ask for has no AccessRequest, and its
        // absence is not "access already gone".
        let wanted = self
            .workload(&config)
            .map(|reg| self.workload_route(id, reg));
        let mut routes: Vec<&dyn AccessRoute> = vec![&*tenant.access];
        routes.extend(wanted.as_ref().map(|w| w as &dyn AccessRoute));
        let released = routes
            .iter()
            .map(|route| route.released())
            .try_fold(false, |any, released| released.map(|r| any || r));
        let released = match released {
            Ok(released) => released,
            Err(err) => {
                return self
                    .finish(id, &tenant, plan::failed(&err, Path::Delete, timing))
                    .await;
            }
        };
        if !released {
            let states = Self::ensure(&routes, Path::Delete).await;
            match plan::cleanup_access(states, timing) {
                Err(decision) => return self.finish(id, &tenant, decision).await,
                // Access the platform refused can have installed nothing: skip `delete` then.
                Ok(CleanupAccess::Skip) => {}
                Ok(CleanupAccess::Delete(granted)) => {
                    let mut granted = granted.into_iter();
                    let (mcp, workload) = (granted.next(), granted.next());
                    if let Some(decision) = self
                        .call_delete(id, &tenant, &config, mcp, workload, timing)
                        .await
                    {
                        return self.finish(id, &tenant, decision).await;
                    }
                }
            }
        }

        let config = Some(&*config);
        if let Some(decision) = self.give_back(id, &*tenant.access, config, timing).await {
            return self.finish(id, &tenant, decision).await;
        }

        if tenant.detached() {
            // Its access is given back; there is no object left to release.
            self.forget(id);
        } else {
            let patch = finalizer::remove(tenant.object.meta(), &P::INFO.finalizer());
            match self.patch_object(id, &tenant, patch).await {
                // Gone already: what we wanted.
                Ok(_) => {}
                Err(err) if crate::access::is_status(&err, 404) => {}
                Err(err) => {
                    let err = Error::from(err).context("failed to remove finalizer");
                    let decision = plan::failed(&err, Path::Delete, timing);
                    return self.finish(id, &tenant, decision).await;
                }
            }
        }
        tracing::info!(object = %id, "deleted: access given back, finalizer removed");
        self.finish(id, &tenant, plan::finished()).await
    }

    /// Gives the access back: the workload cluster first, then the tenant's own (`tenant`), so
    /// nothing the workload cluster runs for the tenant outlives it with a live credential; `None`
    /// once all of it is gone. The workload registration is torn down whatever the ProviderConfig
    /// says now (`config`; `None` when it is unusable): it may have asked for one earlier.
    async fn give_back(
        &self,
        id: &Identity,
        tenant: &dyn AccessRoute,
        config: Option<&P::ProviderConfig>,
        timing: Timing,
    ) -> Option<plan::Decision<P::ExtraStatus>> {
        let workload = (<P::WorkloadCluster as WorkloadAccess>::MODE != WorkloadCluster::None)
            .then(|| {
                let reg = config
                    .and_then(|config| self.workload(config))
                    .unwrap_or_else(|| Registration::workload(None, P::workload_access()));
                self.workload_route(id, reg)
            });
        let mut routes: Vec<&dyn AccessRoute> = Vec::with_capacity(2);
        routes.extend(workload.as_ref().map(|w| w as &dyn AccessRoute));
        routes.push(tenant);
        for route in routes {
            let decision = match route.release().await {
                Ok(gone) => plan::released(gone, timing),
                Err(err) => Some(plan::failed(
                    &err.context("failed cluster access reconcile delete"),
                    Path::Delete,
                    timing,
                )),
            };
            if decision.is_some() {
                return decision;
            }
        }
        None
    }

    /// Runs the author's `delete`; `None` when it is done and the access can be given back.
    async fn call_delete(
        &self,
        id: &Identity,
        tenant: &Tenant<P>,
        config: &Arc<P::ProviderConfig>,
        mcp: Option<ClusterAccess>,
        workload: Option<ClusterAccess>,
        timing: Timing,
    ) -> Option<plan::Decision<P::ExtraStatus>> {
        let Some(mcp) = mcp else {
            return Some(plan::failed(
                &Error::transient_msg("no access to the tenant's cluster"),
                Path::Delete,
                timing,
            ));
        };
        if !P::DELETION_GUARDS.is_empty() {
            let triggers = self.platform.triggers();
            match self
                .guards
                .check(id, mcp.client(), P::DELETION_GUARDS, triggers)
                .await
            {
                Ok(None) => {}
                Ok(Some((reason, message))) => return Some(plan::guarded(reason, message, timing)),
                Err(err) => return Some(plan::failed(&err, Path::Delete, timing)),
            }
        }
        let cx = match self.context(id, tenant, config, mcp, workload) {
            Ok(cx) => cx,
            Err(err) => return Some(plan::failed(&err, Path::Delete, timing)),
        };
        match self.call_author(tenant.object.delete(&cx)).await {
            AuthorCall::Panicked(panic) => Some(plan::panicked(
                "delete",
                &plan::panic_message(&*panic),
                Path::Delete,
            )),
            AuthorCall::TimedOut(limit) => Some(plan::timed_out("delete", limit, Path::Delete)),
            AuthorCall::Returned(Err(err)) => Some(plan::failed(
                &self.source.classify(err),
                Path::Delete,
                timing,
            )),
            AuthorCall::Returned(Ok(outcome)) => {
                let (state, requeue, extra) = outcome.into_parts();
                self.watch_waits(id, &cx);
                plan::deleted(state, requeue, extra, cx.resources().take())
            }
        }
    }

    /// Watches what the reconcile's sets wait for, instead of what they waited for before.
    fn watch_waits(&self, id: &Identity, cx: &Context<P>) {
        let waits = cx.resources().take_waits();
        self.waits.wait_for(id, waits, self.platform.triggers());
        if let Some(observed) = cx.resources().observed() {
            self.observed.settle(observed);
        }
    }

    /// Carries a decision out: writes its status (and the Event of a transition) and logs a
    /// failure; the step says how the reconcile ended and when the object is due again.
    async fn finish(
        &self,
        id: &Identity,
        tenant: &Tenant<P>,
        decision: plan::Decision<P::ExtraStatus>,
    ) -> Step {
        match decision.result {
            ReconcileResult::invalid => {
                if let Some(report) = &decision.report {
                    tracing::info!(object = %id, reason = %report.reason, message = %report.message, "invalid input");
                }
            }
            ReconcileResult::error => {
                if let Some(report) = &decision.report {
                    tracing::warn!(object = %id, reason = %report.reason, error = %report.message, "reconcile failed; retrying with backoff");
                }
            }
            ReconcileResult::panic => {
                if let Some(report) = &decision.report {
                    tracing::error!(object = %id, message = %report.message, "the provider's code panicked; retrying with backoff");
                }
            }
            ReconcileResult::timeout => {
                if let Some(report) = &decision.report {
                    tracing::warn!(object = %id, message = %report.message, "the provider's code timed out");
                }
            }
            _ => {}
        }
        if let Some(report) = decision.report {
            self.write_status(id, tenant, report).await;
        }
        Step::new(decision.result, decision.requeue)
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

    fn context(
        &self,
        id: &Identity,
        tenant: &Tenant<P>,
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
        let events = match &tenant.writer {
            Some(writer) => writer.events.for_object(tenant.object.object_ref(&())),
            None => EventRecorder::disabled().for_object(tenant.object.object_ref(&())),
        };
        Ok(cx
            .with_events(events)
            .with_field_manager(self.platform.provider_name())
            .with_provider_namespace(self.platform.pod_namespace())
            .with_referenced(self.platform.referenced_objects().clone())
            .with_resource_sink(ResourceSink::observing(
                self.observed.view(id, self.platform.triggers()),
            )))
    }

    fn forget(&self, id: &Identity) {
        self.stop_waiting(id);
        self.guards.stop(id);
        self.waits.stop(id);
        self.observed.stop(id);
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
        tenant: &Tenant<P>,
        patch: serde_json::Value,
    ) -> Result<Arc<P>, kube::Error> {
        let Some(writer) = &tenant.writer else {
            // Out of reach: nothing is written back.
            return Ok(tenant.object.clone());
        };
        let updated = writer
            .api
            .patch(
                &tenant.object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        self.source.observe(id, updated.clone());
        Ok(Arc::new(updated))
    }

    /// Writes `report` into the object's status when that changes it, and records an Event when
    /// the `Ready` condition changed from one recorded state to another (or to a new failure).
    async fn write_status(
        &self,
        id: &Identity,
        tenant: &Tenant<P>,
        report: Report<P::ExtraStatus>,
    ) {
        let Some(writer) = &tenant.writer else {
            return;
        };
        let object = &tenant.object;
        let warning = report.warning;
        let old = object.status();
        let new = status::apply(
            old,
            object.meta().generation,
            report,
            k8s_openapi::jiff::Timestamp::now(),
        );
        match status::patch_status(&writer.api, &object.name_any(), old, &new).await {
            Ok(None) => return,
            Ok(Some(updated)) => self.source.observe(id, updated),
            Err(err) if matches!(&err, kube::Error::Api(s) if s.code == 404) => return,
            Err(err) => {
                // The next reconcile computes the same status and tries again.
                tracing::warn!(object = %id, error = %err, "could not write status");
                return;
            }
        }
        let before = status::ready_state(old);
        let after = status::ready_state(Some(&new));
        if before == after {
            return;
        }
        let Some(condition) = new.condition(status::READY) else {
            return;
        };
        let events = writer.events.for_object(object.object_ref(&()));
        if condition.status == "True" {
            // The first Ready of a new object is not a transition worth an Event (it would be a
            // fourth write on the way to Ready); a recovery is.
            if before.is_some() {
                events
                    .normal(&condition.reason, condition.message.clone())
                    .await;
            }
        } else if warning {
            events
                .warning(&condition.reason, condition.message.clone())
                .await;
        } else {
            events
                .normal(&condition.reason, condition.message.clone())
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
