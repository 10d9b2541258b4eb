//! Log output of a provider binary: `--verbosity` mapped onto `tracing` filters.
//!
//! The runtime never logs a token or a kubeconfig: clusters are described by their Secret's
//! name, `ClusterAccess`'s `Debug` redacts the kubeconfig, and errors about kubeconfigs never
//! quote them. Dependencies log at most `info` (at `DEBUG`) so their request tracing, which
//! shows URLs but never headers, stays out of the way.

use tracing_subscriber::EnvFilter;

use crate::cli::Verbosity;

/// The filter for a verbosity: the runtime's own crates at that level, dependencies quieter.
pub fn filter(verbosity: Verbosity) -> EnvFilter {
    let directives = match verbosity {
        Verbosity::Debug => {
            "info,service_provider=debug,service_provider_runtime=debug,kube_runtime=debug,kube_client=info"
        }
        Verbosity::Info => "warn,service_provider=info,service_provider_runtime=info",
        Verbosity::Error => "error",
    };
    EnvFilter::new(directives)
}

/// Installs the global subscriber (stderr, plain text); `RUST_LOG` overrides the verbosity.
/// Does nothing when a subscriber is already installed (e.g. in tests).
pub fn init(verbosity: Verbosity) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| filter(verbosity));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
