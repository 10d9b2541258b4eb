//! What the end-to-end test binaries (`tests/standard`, `tests/kcp`) share: the timeout, logs,
//! the kit's platform with this suite's logs, and the conditions they wait for. Each binary
//! loads it with `#[path]` as `support`. The waits are the author's test kit's
//! (`service_provider::testing`), with a panic for a test that cannot go on (the kit's
//! `eventually` is called directly: `.unwrap()` prints its message).

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use service_provider::kube::{Api, Resource};
use service_provider::testing::{TestPlatform, TestPlatformBuilder};
use service_provider::{Reconcile, ServiceProvider};

/// Generous: the whole suite shares two cores.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(120);

/// Installs `tracing` output once when `RUST_LOG` is set (for debugging a failing test).
pub(crate) fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The author's test kit's platform for provider `P` with ProviderConfig spec `config` and this
/// suite's logs: add `.modes(..)` if need be, then `.start()`.
pub(crate) fn platform<P: Reconcile>(config: impl Serialize) -> TestPlatformBuilder<P> {
    logs();
    TestPlatform::builder().provider_config(config)
}

/// Ready, for the object's current generation.
pub(crate) fn ready<P: ServiceProvider>(object: Option<&P>) -> bool {
    object.is_some_and(service_provider::testing::is_ready)
}

/// The `Ready` condition's (status, reason, message).
pub(crate) fn ready_condition<P: ServiceProvider>(object: &P) -> Option<(String, String, String)> {
    let c = object.status()?.condition("Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until `object` satisfies `condition`, watching it; returns it.
pub(crate) async fn wait<K>(
    api: &Api<K>,
    name: &str,
    condition: impl Fn(Option<&K>) -> bool + Send + 'static,
) -> Option<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    service_provider::testing::wait_for_object(api, name, TIMEOUT, condition)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The kit's [`eventually`](service_provider::testing::eventually), where a timeout also reports
/// what `explain` finds stuck: it is asked once, on the timeout, so the wait itself does no more
/// work than a plain `eventually`'s.
pub(crate) async fn eventually_explained<T, F, Fut, E, EFut>(
    what: &str,
    timeout: Duration,
    check: F,
    explain: E,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
    E: FnOnce() -> EFut,
    EFut: Future<Output = String>,
{
    match service_provider::testing::eventually(what, timeout, check).await {
        Ok(value) => value,
        Err(e) => {
            let stuck = explain().await;
            let separator = if stuck.is_empty() {
                ""
            } else {
                "; still missing: "
            };
            panic!("{e}{separator}{stuck}");
        }
    }
}

/// A TCP port free on this machine now (for endpoints bound on every interface).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One HTTP/1.1 GET on `addr`; the whole response (status line, headers, body).
pub(crate) async fn http_get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: provider\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}
