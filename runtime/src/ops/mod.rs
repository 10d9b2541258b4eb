//! Operating a provider: log output, metrics, health and readiness probes, leader election and shutdown.

pub mod leader;
pub(crate) mod logging;
pub mod metrics;
pub mod server;
pub mod shutdown;
pub mod tls;

pub use leader::{LeaderElection, LeaderOptions};
pub use metrics::Metrics;
pub use server::{CONVERT_PATH, Readiness, serve_health, serve_metrics, serve_webhook};
pub use shutdown::shutdown_signal;
pub use tls::ServingCert;
