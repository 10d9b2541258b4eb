//! Leader election on a `coordination.k8s.io/v1` Lease, one per mode, with client-go's
//! algorithm (`tools/leaderelection`, `LeaseLock`), so that a Go replica (controller-runtime's
//! manager) and a replica of this runtime that campaign for the same Lease exclude each other.
//!
//! - The record is client-go's: `holderIdentity`, `leaseDurationSeconds`, `acquireTime` and
//!   `renewTime` (MicroTime), `leaseTransitions` (+1 when the holder changes); a Lease is created
//!   when missing and otherwise written with `update` on the resourceVersion last read, so two
//!   candidates never both win.
//! - Expiry is judged as client-go judges it, by the local clock: a Lease held by another identity
//!   is free once its record has not changed for its `leaseDurationSeconds` since this replica
//!   first saw it that way (no comparison of clocks across machines). An empty `holderIdentity`
//!   (a released Lease) is free at once.
//! - Timing is controller-runtime's: a candidate tries every retry period (2 s, jittered by up to
//!   1.2×); the leader renews every retry period and gives up leading when it could not renew
//!   within the renew deadline (10 s), before its lease duration (15 s) lets another replica in.
//! - A replica that stops gracefully releases the Lease as client-go's `ReleaseOnCancel` does
//!   (empty holder, `leaseDurationSeconds: 1`), so a standby — Go or Rust — takes over at its
//!   next try.
//!
//! Standard mode's Lease is on the onboarding cluster, in the provider's namespace, named after
//! the Go provider's `LeaderElectionID` when one is given — where a Go provider's manager holds
//! it. kcp mode's Lease `<provider-name>-kcp` stays on the platform cluster.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::tenant::Mode;

/// How leader election is configured; the defaults are controller-runtime's.
#[derive(Clone, Debug)]
pub struct LeaderOptions {
    /// How long a candidate waits after it last saw the Lease change before taking it over
    /// (controller-runtime's `LeaseDuration`, 15 s); also what this replica writes into
    /// `leaseDurationSeconds`.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading (`RenewDeadline`,
    /// 10 s).
    pub renew_deadline: Duration,
    /// How often a candidate tries to acquire and the leader renews (`RetryPeriod`, 2 s).
    pub retry_period: Duration,
    /// This replica's identity in the Lease (the pod name, made unique).
    pub identity: String,
}

impl Default for LeaderOptions {
    fn default() -> Self {
        LeaderOptions {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            identity: default_identity(),
        }
    }
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// `POD_NAME` (or the host name) plus a random suffix, so two processes on one host differ
/// (controller-runtime uses the host name plus `_` and a UUID).
pub fn default_identity() -> String {
    let base = std::env::var(crate::openmcp::constants::ENV_POD_NAME)
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "service-provider".to_owned());
    format!("{base}_{:016x}", random_u64())
}

/// The default name of a mode's Lease: `<provider-name>-<mode>`.
pub fn lease_name(provider_name: &str, mode: Mode) -> String {
    format!("{provider_name}-{}", mode.as_str())
}

/// client-go's `LeaderElectionRecord`: what a Lease's spec says about its holder.
#[derive(Clone, Debug, Default, PartialEq)]
struct Record {
    holder: String,
    lease_duration_seconds: i32,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    transitions: i32,
}

impl Record {
    fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(spec) = spec else {
            return Record::default();
        };
        Record {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    /// `LeaderElectionRecordToLeaseSpec`: every field written, the holder even when empty.
    fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.clone(),
            renew_time: self.renew_time.clone(),
            lease_transitions: Some(self.transitions),
            ..Default::default()
        }
    }
}

/// Now, in the Lease's microseconds (so a record read back equals the one written).
fn now() -> MicroTime {
    let micros = k8s_openapi::jiff::Timestamp::now().as_microsecond();
    MicroTime(k8s_openapi::jiff::Timestamp::from_microsecond(micros).unwrap_or_default())
}

/// One candidate's view of the Lease: client-go's `LeaderElector` state.
struct Elector {
    client: kube::Client,
    api: Api<Lease>,
    name: String,
    namespace: String,
    options: LeaderOptions,
    /// The Lease as last read or written (its resourceVersion guards the next update).
    lease: Option<Lease>,
    /// The record last seen, and when it was first seen so (local clock).
    observed: Record,
    observed_at: tokio::time::Instant,
    warned_namespace: bool,
}

impl Elector {
    fn is_leader(&self) -> bool {
        self.observed.holder == self.options.identity
    }

    fn lease_valid(&self, now: tokio::time::Instant) -> bool {
        let duration = Duration::from_secs(self.observed.lease_duration_seconds.max(0) as u64);
        self.observed_at + duration > now
    }

    fn observe(&mut self, record: Record) {
        self.observed = record;
        self.observed_at = tokio::time::Instant::now();
    }

    /// Writes `record` on the Lease last read or written (its resourceVersion guards it).
    async fn update(&mut self, record: &Record) -> Result<(), kube::Error> {
        let mut lease = self.lease.clone().unwrap_or_default();
        lease.spec = Some(record.to_spec());
        let written = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        self.lease = Some(written);
        Ok(())
    }

    /// client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now_local = tokio::time::Instant::now();
        let now = now();
        let mut desired = Record {
            holder: self.options.identity.clone(),
            lease_duration_seconds: i32::try_from(self.options.lease_duration.as_secs())
                .unwrap_or(i32::MAX),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions: 0,
        };
        // 1. The leader renews optimistically on the Lease it last wrote.
        if self.is_leader() && self.lease_valid(now_local) {
            desired.acquire_time = self.observed.acquire_time.clone();
            desired.transitions = self.observed.transitions;
            match self.update(&desired).await {
                Ok(()) => {
                    self.observe(desired);
                    return true;
                }
                Err(err) => {
                    tracing::debug!(lease = %self.name, error = %err, "optimistic renewal failed; reading the Lease");
                }
            }
        }
        // 2. Read it, or create it.
        let current = match self.api.get_opt(&self.name).await {
            Ok(current) => current,
            Err(err) => {
                tracing::debug!(lease = %self.name, error = %err, "cannot read the Lease");
                return false;
            }
        };
        let Some(current) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(desired.to_spec()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.lease = Some(created);
                    self.observe(desired);
                    true
                }
                Err(err) if crate::access::is_status(&err, 404) => {
                    // The provider's namespace is on the platform cluster; the onboarding cluster
                    // may not have it. A Go manager would wait forever; we create it (a Go
                    // replica then finds it too) and try again at the next retry.
                    self.create_namespace().await;
                    false
                }
                Err(err) => {
                    tracing::debug!(lease = %self.name, error = %err, "cannot create the Lease");
                    false
                }
            };
        };
        // 3. Is it held by someone else, and not expired by our clock?
        let record = Record::from_spec(current.spec.as_ref());
        self.lease = Some(current);
        if record != self.observed {
            self.observe(record.clone());
        }
        if !record.holder.is_empty() && self.lease_valid(now_local) && !self.is_leader() {
            return false;
        }
        // 4. Take it (or renew it on the slow path).
        if self.is_leader() {
            desired.acquire_time = record.acquire_time;
            desired.transitions = record.transitions;
        } else {
            desired.transitions = record.transitions.saturating_add(1);
        }
        match self.update(&desired).await {
            Ok(()) => {
                self.observe(desired);
                true
            }
            Err(err) => {
                tracing::debug!(lease = %self.name, error = %err, "cannot write the Lease");
                false
            }
        }
    }

    async fn create_namespace(&mut self) {
        use k8s_openapi::api::core::v1::Namespace;
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(self.namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => {
                tracing::info!(namespace = %self.namespace, lease = %self.name, "created the Lease's namespace");
            }
            Err(err) if crate::access::is_status(&err, 409) => {}
            Err(err) if !self.warned_namespace => {
                self.warned_namespace = true;
                tracing::warn!(lease = %self.name, namespace = %self.namespace, error = %err, "cannot create the Lease: its namespace does not exist on that cluster and cannot be created; create it");
            }
            Err(_) => {}
        }
    }

    /// One try, bounded like client-go's lock client (half the renew deadline, at least 1 s).
    async fn try_once(&mut self) -> bool {
        let timeout = (self.options.renew_deadline / 2).max(Duration::from_secs(1));
        tokio::time::timeout(timeout, self.try_acquire_or_renew())
            .await
            .unwrap_or(false)
    }

    /// client-go's `tryRelease`: an empty holder and `leaseDurationSeconds: 1`.
    async fn release(&mut self) -> bool {
        for _ in 0..3 {
            let current = match self.api.get_opt(&self.name).await {
                Ok(Some(current)) => current,
                _ => return false,
            };
            let record = Record::from_spec(current.spec.as_ref());
            self.lease = Some(current);
            if record.holder != self.options.identity {
                return true;
            }
            let now = now();
            let released = Record {
                holder: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                transitions: record.transitions,
            };
            match self.update(&released).await {
                Ok(()) => {
                    self.observe(released);
                    return true;
                }
                Err(err) if crate::access::is_status(&err, 409) => continue,
                Err(err) => {
                    tracing::warn!(lease = %self.name, error = %err, "could not release the Lease");
                    return false;
                }
            }
        }
        false
    }

    fn jittered_retry(&self) -> Duration {
        // wait.JitterUntil with client-go's JitterFactor 1.2.
        let fraction = (random_u64() % 1000) as f64 / 1000.0;
        self.options.retry_period.mul_f64(1.0 + 1.2 * fraction)
    }

    /// client-go's `renew` step: tries every retry period until it renews or the renew
    /// deadline passes.
    async fn renew(&mut self, stop: &CancellationToken) -> bool {
        let deadline = tokio::time::Instant::now() + self.options.renew_deadline;
        loop {
            if self.try_once().await {
                return true;
            }
            if stop.is_cancelled()
                || tokio::time::Instant::now() + self.options.retry_period > deadline
            {
                return false;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.options.retry_period) => {}
                _ = stop.cancelled() => return false,
            }
        }
    }

    async fn run(mut self, leading: watch::Sender<bool>, stop: CancellationToken) {
        tracing::info!(lease = %self.name, namespace = %self.namespace, identity = %self.options.identity, "campaigning for leadership");
        loop {
            // Acquire: try every retry period (jittered) until it works.
            loop {
                if self.try_once().await {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep(self.jittered_retry()) => {}
                    _ = stop.cancelled() => return,
                }
            }
            tracing::info!(lease = %self.name, identity = %self.options.identity, "acquired the Lease");
            leading.send_replace(true);
            // Renew every retry period until stopped or the renew deadline passes.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(self.options.retry_period) => {}
                    _ = stop.cancelled() => break,
                }
                if !self.renew(&stop).await {
                    break;
                }
            }
            leading.send_replace(false);
            if stop.is_cancelled() {
                // Stopping: nobody reconciles under the Lease any more.
                if self.release().await {
                    tracing::info!(lease = %self.name, "released the Lease");
                }
                return;
            }
            tracing::warn!(lease = %self.name, "could not renew the Lease within the renew deadline; standing by");
        }
    }
}

/// Leadership of one mode: a channel that says whether this replica leads.
pub struct LeaderElection {
    /// `true` while this replica leads.
    pub leading: watch::Receiver<bool>,
    stop: Option<CancellationToken>,
    task: Option<JoinHandle<()>>,
    /// Keeps the channel of [`always`](Self::always) open.
    _always: Option<watch::Sender<bool>>,
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("leading", &*self.leading.borrow())
            .finish()
    }
}

impl LeaderElection {
    /// No election: this replica always leads.
    pub fn always() -> Self {
        let (sender, leading) = watch::channel(true);
        LeaderElection {
            leading,
            stop: None,
            task: None,
            _always: Some(sender),
        }
    }

    /// Campaigns for the Lease `name` in `namespace` with `client` (in the background, until
    /// [`release`](Self::release)).
    pub fn campaign(
        client: kube::Client,
        namespace: &str,
        name: &str,
        options: &LeaderOptions,
    ) -> Self {
        let (sender, leading) = watch::channel(false);
        let stop = CancellationToken::new();
        let elector = Elector {
            api: Api::namespaced(client.clone(), namespace),
            client,
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            options: options.clone(),
            lease: None,
            observed: Record::default(),
            observed_at: tokio::time::Instant::now(),
            warned_namespace: false,
        };
        let task = tokio::spawn(elector.run(sender, stop.clone()));
        LeaderElection {
            leading,
            stop: Some(stop),
            task: Some(task),
            _always: None,
        }
    }

    /// Stops campaigning and releases the Lease if held. Every other receiver of
    /// [`leading`](Self::leading) must be dropped first.
    pub async fn release(self) {
        let LeaderElection {
            leading,
            stop,
            task,
            ..
        } = self;
        drop(leading);
        if let Some(stop) = stop {
            stop.cancel();
        }
        if let Some(task) = task
            && tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
        {
            tracing::warn!("timed out releasing the Lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_client_go_writes_them() {
        let record = Record {
            holder: "a_1".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(now()),
            renew_time: Some(now()),
            transitions: 3,
        };
        let spec = record.to_spec();
        assert_eq!(spec.holder_identity.as_deref(), Some("a_1"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(Record::from_spec(Some(&spec)), record);
        // A released Lease (client-go: empty holder, 1 s) and an empty spec are free.
        let released = Record::from_spec(Some(&LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            ..Default::default()
        }));
        assert!(released.holder.is_empty());
        assert_eq!(Record::from_spec(None), Record::default());
        let json = serde_json::to_value(Record::default().to_spec()).unwrap();
        assert_eq!(
            json["holderIdentity"], "",
            "the holder is written even when empty"
        );
    }

    #[test]
    fn defaults_are_controller_runtimes() {
        let options = LeaderOptions::default();
        assert_eq!(
            (
                options.lease_duration,
                options.renew_deadline,
                options.retry_period
            ),
            (
                Duration::from_secs(15),
                Duration::from_secs(10),
                Duration::from_secs(2)
            )
        );
    }
}
