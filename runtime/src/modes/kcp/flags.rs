//! The `run` flags that switch kcp mode on and configure it, and their checks.

use std::path::PathBuf;

use clap::Args;

use crate::modes::kcp::settings::{KcpSettings, Sharding, WorkspaceCredentials};
use crate::provider::ProviderInfo;

/// kcp mode's flags of `run`.
#[derive(Clone, Debug, Default, Args)]
pub struct KcpArgs {
    /// Serve tenants in kcp workspaces: a kubeconfig of the provider's identity in the provider
    /// workspace (the one holding the APIExport). Without it, kcp mode follows the ProviderConfig's
    /// `kcp` block, if any.
    #[arg(long)]
    pub kcp_kubeconfig: Option<PathBuf>,
    /// The APIExportEndpointSlice to follow (default: the one kcp creates for the export, named
    /// like it).
    #[arg(long)]
    pub apiexport_endpointslice: Option<String>,
    /// The APIExport's name (default: the Service API group).
    #[arg(long)]
    pub apiexport_name: Option<String>,
    /// Create the APIResourceSchema and create or update the APIExport at start-up.
    #[arg(long)]
    pub provision_apiexport: bool,
    /// Serve only the workspaces whose logical cluster name hashes to this share (0-based).
    #[arg(long)]
    pub shard_index: Option<u32>,
    /// How many shares the workspaces are split into (one replica, or one leader-elected group
    /// of replicas, per share).
    #[arg(long)]
    pub shard_count: Option<u32>,
    /// Lifetime of the ServiceAccount tokens minted in each workspace (refreshed at 80%), e.g.
    /// `1h`.
    #[arg(long)]
    pub kcp_token_lifetime: Option<crate::duration::Duration>,
    /// Do not mint workspace tokens: use the kubeconfig the platform puts into Secret
    /// `kcp-<logical cluster>` in this namespace of the platform cluster.
    #[arg(long)]
    pub kcp_credentials_secret_namespace: Option<String>,
}

impl KcpArgs {
    /// The flags that were given, by name (for the error about a provider without `kcp`).
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut flag = |on: bool, name| {
            if on {
                given.push(name);
            }
        };
        flag(self.kcp_kubeconfig.is_some(), "--kcp-kubeconfig");
        flag(
            self.apiexport_endpointslice.is_some(),
            "--apiexport-endpointslice",
        );
        flag(self.apiexport_name.is_some(), "--apiexport-name");
        flag(self.provision_apiexport, "--provision-apiexport");
        flag(self.shard_index.is_some(), "--shard-index");
        flag(self.shard_count.is_some(), "--shard-count");
        flag(self.kcp_token_lifetime.is_some(), "--kcp-token-lifetime");
        flag(
            self.kcp_credentials_secret_namespace.is_some(),
            "--kcp-credentials-secret-namespace",
        );
        given
    }

    /// Checks the flags against the provider and applies them to `settings` (from
    /// `--kcp-kubeconfig` or the ProviderConfig).
    pub fn apply(&self, info: &ProviderInfo, settings: &mut KcpSettings) -> Result<(), String> {
        self.check(info)?;
        if let Some(name) = &self.apiexport_name {
            settings.export_name = name.clone();
            settings.endpoint_slice = name.clone();
        }
        if let Some(slice) = &self.apiexport_endpointslice {
            settings.endpoint_slice = slice.clone();
        }
        settings.provision |= self.provision_apiexport;
        if let Some(sharding) = self.sharding()? {
            settings.sharding = sharding;
        }
        if let Some(namespace) = &self.kcp_credentials_secret_namespace {
            settings.credentials = WorkspaceCredentials::Secret {
                namespace: namespace.clone(),
            };
        } else if let Some(lifetime) = self.kcp_token_lifetime {
            let lifetime: std::time::Duration = lifetime.into();
            if lifetime.as_secs() < 600 {
                return Err(format!(
                    "--kcp-token-lifetime {}s is below kube-apiserver's minimum of 10m; give it 10m or more",
                    lifetime.as_secs()
                ));
            }
            settings.credentials = WorkspaceCredentials::Mint { lifetime };
        }
        Ok(())
    }

    /// Refuses kcp flags for a provider declared without `kcp`, and contradicting flags.
    pub fn check(&self, info: &ProviderInfo) -> Result<(), String> {
        let given = self.given();
        if !info.kcp && !given.is_empty() {
            return Err(format!(
                "{} is declared without `kcp` in #[service_provider(...)], so it cannot serve kcp workspaces; remove {} or add `kcp` to the attribute",
                info.kind,
                given.join(", ")
            ));
        }
        if self.kcp_credentials_secret_namespace.is_some() && self.kcp_token_lifetime.is_some() {
            return Err(
                "--kcp-token-lifetime applies to minted tokens only; drop it or --kcp-credentials-secret-namespace"
                    .to_owned(),
            );
        }
        self.sharding()?;
        Ok(())
    }

    /// The share `--shard-index`/`--shard-count` ask for (index 0, count 1 when only the other is
    /// given); `None` without either.
    fn sharding(&self) -> Result<Option<Sharding>, String> {
        if self.shard_index.is_none() && self.shard_count.is_none() {
            return Ok(None);
        }
        Sharding::new(self.shard_index.unwrap_or(0), self.shard_count.unwrap_or(1))
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// The settings `--kcp-kubeconfig` asks for; `None` without it.
    pub fn settings(&self, info: &ProviderInfo) -> Result<Option<KcpSettings>, String> {
        self.check(info)?;
        let Some(path) = &self.kcp_kubeconfig else {
            return Ok(None);
        };
        let kubeconfig = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read --kcp-kubeconfig {}: {e}; pass the provider workspace's kubeconfig",
                path.display()
            )
        })?;
        let mut settings = KcpSettings::new(info, kubeconfig);
        self.apply(info, &mut settings)?;
        Ok(Some(settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KCP: ProviderInfo = ProviderInfo {
        group: "velero.services.open-control-plane.io",
        version: "v1alpha1",
        kind: "Velero",
        plural: "veleroes",
        kcp: true,
    };
    const PLAIN: ProviderInfo = ProviderInfo { kcp: false, ..KCP };

    #[test]
    fn a_provider_without_kcp_refuses_kcp_flags() {
        let args = KcpArgs {
            kcp_kubeconfig: Some("/k".into()),
            provision_apiexport: true,
            ..Default::default()
        };
        let err = args.settings(&PLAIN).unwrap_err();
        assert!(err.contains("declared without `kcp`"), "{err}");
        assert!(
            err.contains("--kcp-kubeconfig, --provision-apiexport"),
            "{err}"
        );
        assert!(KcpArgs::default().settings(&PLAIN).unwrap().is_none());
    }

    #[test]
    fn flags_shape_the_settings() {
        let args = KcpArgs {
            apiexport_name: Some("velero-export".into()),
            shard_index: Some(1),
            shard_count: Some(3),
            kcp_token_lifetime: Some("2h".parse().unwrap()),
            ..Default::default()
        };
        let mut settings = KcpSettings::new(&KCP, Vec::new());
        args.apply(&KCP, &mut settings).unwrap();
        assert_eq!(settings.export_name, "velero-export");
        assert_eq!(settings.endpoint_slice, "velero-export");
        assert_eq!(settings.sharding, Sharding::new(1, 3).unwrap());
        assert_eq!(
            settings.credentials,
            WorkspaceCredentials::Mint {
                lifetime: std::time::Duration::from_secs(7200)
            }
        );
        let bad = KcpArgs {
            shard_index: Some(3),
            shard_count: Some(3),
            ..Default::default()
        };
        assert!(bad.check(&KCP).unwrap_err().contains("--shard-index 3"));
        let short = KcpArgs {
            kcp_token_lifetime: Some("1m".parse().unwrap()),
            ..Default::default()
        };
        assert!(
            short
                .apply(&KCP, &mut settings)
                .unwrap_err()
                .contains("10m")
        );
        let missing = KcpArgs {
            kcp_kubeconfig: Some("/does/not/exist".into()),
            ..Default::default()
        };
        assert!(
            missing
                .settings(&KCP)
                .unwrap_err()
                .contains("--kcp-kubeconfig /does/not/exist")
        );
    }
}
