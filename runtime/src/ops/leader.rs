//! Leader election on a `coordination.k8s.io/v1` Lease, one per mode, with kube-lease-manager.
//!
//! The Lease lives on the platform cluster in the provider's namespace and is named
//! `<provider-name>-<mode>` (e.g. `velero-standard`), so standard and kcp mode of one process can
//! be led by different replicas. A replica that stops gracefully releases its Lease, so a
//! standby takes over within a second or two; a replica that dies is replaced when its Lease
//! expires (the lease duration).

use std::time::Duration;

use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::context::Mode;

/// How leader election is configured.
#[derive(Clone, Debug)]
pub struct LeaderOptions {
    /// How long a Lease stays valid after its last renewal.
    pub lease_duration: Duration,
    /// How long before expiry the holder renews it.
    pub renew_grace: Duration,
    /// This replica's identity in the Lease (the pod name, made unique).
    pub identity: String,
}

impl Default for LeaderOptions {
    fn default() -> Self {
        LeaderOptions {
            lease_duration: Duration::from_secs(15),
            renew_grace: Duration::from_secs(5),
            identity: default_identity(),
        }
    }
}

/// `POD_NAME` (or the host name) plus a random suffix, so two processes on one host differ.
pub fn default_identity() -> String {
    let base = std::env::var(crate::openmcp::constants::ENV_POD_NAME)
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "service-provider".to_owned());
    let suffix: u32 = {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        hasher.write_u32(std::process::id());
        hasher.finish() as u32
    };
    format!("{base}-{suffix:08x}")
}

/// The name of a mode's Lease.
pub fn lease_name(provider_name: &str, mode: Mode) -> String {
    format!("{provider_name}-{}", mode.as_str())
}

/// Leadership of one mode: a channel that says whether this replica leads.
pub struct LeaderElection {
    /// `true` while this replica leads.
    pub leading: watch::Receiver<bool>,
    task: Option<JoinHandle<Result<kube_lease_manager::LeaseManager, LeaseManagerError>>>,
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
            task: None,
            _always: Some(sender),
        }
    }

    /// Campaigns for the Lease `name` in `namespace` with `client`.
    pub async fn campaign(
        client: kube::Client,
        namespace: &str,
        name: &str,
        options: &LeaderOptions,
    ) -> Result<Self, LeaseManagerError> {
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .with_identity(&options.identity)
            .with_duration(options.lease_duration.as_secs().max(2))
            .with_grace(options.renew_grace.as_secs().max(1))
            .build()
            .await?;
        let (leading, task) = manager.watch().await;
        tracing::info!(lease = %name, %namespace, identity = %options.identity, "campaigning for leadership");
        Ok(LeaderElection {
            leading,
            task: Some(task),
            _always: None,
        })
    }

    /// Stops campaigning and releases the Lease if held. Every other receiver of
    /// [`leading`](Self::leading) must be dropped first.
    pub async fn release(self) {
        let LeaderElection { leading, task, .. } = self;
        drop(leading);
        if let Some(task) = task {
            // The manager notices that nobody listens any more, releases the Lease and ends.
            match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(Ok(Ok(_))) => tracing::info!("released leadership"),
                Ok(Ok(Err(err))) => tracing::warn!(error = %err, "could not release the Lease"),
                Ok(Err(err)) => tracing::warn!(error = %err, "the leader election task failed"),
                Err(_) => tracing::warn!("timed out releasing the Lease"),
            }
        }
    }
}
