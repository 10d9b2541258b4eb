//! How kcp mode is configured at start-up: the provider workspace, the export and its endpoint
//! slice, how workspace credentials are obtained, and which workspaces this replica serves.

use std::time::Duration;

use crate::provider::ProviderInfo;

/// Where the runtime gets the credential it hands to the author for each consumer workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkspaceCredentials {
    /// The runtime creates a ServiceAccount in each workspace (with `cluster-admin` there) and
    /// mints its tokens with TokenRequest at the workspace URL, refreshing each at 80% of
    /// `lifetime` and after a 401; the ServiceAccount is deleted when the tenant goes.
    Mint {
        /// `expirationSeconds` of each TokenRequest.
        lifetime: Duration,
    },
    /// The platform supplies a kubeconfig per workspace: Secret `kcp-<logical cluster>` in
    /// `namespace` on the platform cluster, key `kubeconfig`. The runtime waits for it and
    /// never changes it.
    Secret {
        /// Namespace of the Secrets on the platform cluster.
        namespace: String,
    },
}

impl WorkspaceCredentials {
    /// Minted tokens valid for one hour, kube-apiserver's default for bound tokens.
    pub fn minted() -> Self {
        WorkspaceCredentials::Mint {
            lifetime: Duration::from_secs(3600),
        }
    }

    /// The name of the Secret holding the platform-supplied kubeconfig of workspace `cluster`.
    pub fn secret_name(cluster: &str) -> String {
        format!("kcp-{cluster}")
    }
}

/// Which share of the workspaces this replica serves: those whose logical cluster name hashes to
/// `index` modulo `count` (see [`Sharding::owns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sharding {
    /// This replica's share, `0..count`.
    pub index: u32,
    /// How many shares there are.
    pub count: u32,
}

impl Default for Sharding {
    fn default() -> Self {
        Sharding { index: 0, count: 1 }
    }
}

/// A sharding flag combination that cannot work.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "--shard-index {index} is not below --shard-count {count}; number the replicas 0 to {}",
    count.saturating_sub(1)
)]
pub struct ShardingError {
    index: u32,
    count: u32,
}

impl Sharding {
    /// Share `index` of `count`.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardingError> {
        if count == 0 || index >= count {
            return Err(ShardingError { index, count });
        }
        Ok(Sharding { index, count })
    }

    /// Whether this replica serves the workspace `cluster`: the first 8 bytes of the SHA-256 of
    /// its logical cluster name, big-endian, modulo `count`. Stable across versions, platforms
    /// and restarts, so replicas never disagree about a workspace.
    pub fn owns(&self, cluster: &str) -> bool {
        if self.count <= 1 {
            return true;
        }
        shard_of(cluster, self.count) == self.index
    }

    /// The Lease name suffix of this share: none when unsharded, else `-<index>-of-<count>`, so
    /// that two replicas started with the same share never both serve it.
    pub fn lease_suffix(&self) -> String {
        if self.count <= 1 {
            String::new()
        } else {
            format!("-{}-of-{}", self.index, self.count)
        }
    }
}

/// The share `cluster` belongs to among `count`.
pub fn shard_of(cluster: &str, count: u32) -> u32 {
    let digest = ring::digest::digest(&ring::digest::SHA256, cluster.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    (u64::from_be_bytes(first) % u64::from(count.max(1))) as u32
}

/// Everything kcp mode needs at start-up.
#[derive(Clone)]
pub struct KcpSettings {
    /// Kubeconfig of the provider's identity, pointing at the provider workspace
    /// (`<kcp>/clusters/<path>`), or at the kcp front URL when `provider_workspace` is set.
    pub kubeconfig: Vec<u8>,
    /// Path of the provider workspace (`root:org:services`), for a kubeconfig whose server is the
    /// bare front URL (the ProviderConfig `kcp.providerWorkspace`).
    pub provider_workspace: Option<String>,
    /// Name of the APIExport (default: the Service API group).
    pub export_name: String,
    /// Name of the APIExportEndpointSlice to follow (default: the export's name, the slice kcp
    /// creates for every export).
    pub endpoint_slice: String,
    /// Create the APIResourceSchema and create or update the APIExport at start-up.
    pub provision: bool,
    /// How workspace credentials are obtained.
    pub credentials: WorkspaceCredentials,
    /// Which workspaces this replica serves.
    pub sharding: Sharding,
}

impl std::fmt::Debug for KcpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig holds a credential.
        f.debug_struct("KcpSettings")
            .field(
                "kubeconfig",
                &format_args!("<{} bytes>", self.kubeconfig.len()),
            )
            .field("provider_workspace", &self.provider_workspace)
            .field("export_name", &self.export_name)
            .field("endpoint_slice", &self.endpoint_slice)
            .field("provision", &self.provision)
            .field("credentials", &self.credentials)
            .field("sharding", &self.sharding)
            .finish()
    }
}

impl KcpSettings {
    /// Defaults for provider `info` with the given provider-workspace kubeconfig: export and
    /// slice named like the API group, no provisioning, minted tokens, one share.
    pub fn new(info: &ProviderInfo, kubeconfig: impl Into<Vec<u8>>) -> Self {
        KcpSettings {
            kubeconfig: kubeconfig.into(),
            provider_workspace: None,
            export_name: info.default_api_export_name().to_owned(),
            endpoint_slice: info.default_api_export_name().to_owned(),
            provision: false,
            credentials: WorkspaceCredentials::minted(),
            sharding: Sharding::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_workspaces_stably_and_completely() {
        let names: Vec<String> = (0..1000).map(|i| format!("ws{i:013}")).collect();
        let shards: Vec<Sharding> = (0..3).map(|i| Sharding::new(i, 3).unwrap()).collect();
        let mut per_shard = [0usize; 3];
        for name in &names {
            let owners: Vec<u32> = shards
                .iter()
                .filter(|s| s.owns(name))
                .map(|s| s.index)
                .collect();
            assert_eq!(owners.len(), 1, "{name} is served by exactly one replica");
            per_shard[owners[0] as usize] += 1;
        }
        assert!(per_shard.iter().all(|n| *n > 250), "{per_shard:?}");
        // Pinned, so that a change of the hash (which would move every workspace) is noticed.
        assert_eq!(shard_of("27uqz02z4wed6sjb", 7), 4);
        assert_eq!(shard_of("27uqz02z4wed6sjb", 2), 0);
        assert!(Sharding::default().owns("anything"));
    }

    #[test]
    fn sharding_flags_are_checked() {
        assert!(Sharding::new(0, 1).is_ok());
        let err = Sharding::new(3, 3).unwrap_err();
        assert!(err.to_string().contains("0 to 2"), "{err}");
        assert!(Sharding::new(0, 0).is_err());
        assert_eq!(Sharding::new(1, 4).unwrap().lease_suffix(), "-1-of-4");
        assert_eq!(Sharding::default().lease_suffix(), "");
    }
}
