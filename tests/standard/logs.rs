//! What a provider's logs say: an author's line inside `create_or_update` carries the object it is
//! about, from the runtime's reconcile span, in text and in the JSON lines `run` writes.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use service_provider::testing::{TestError, eventually};

use crate::flaky::Flaky;
use crate::process::Provider;
use crate::support;

/// Collects formatted log lines in memory.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn find(&self, needle: &str) -> Option<String> {
        let bytes = self.0.lock().unwrap();
        String::from_utf8_lossy(&bytes)
            .lines()
            .find(|l| l.contains(needle))
            .map(str::to_owned)
    }
}

/// Runs [`authors_log_line`] in a process of its own: it installs the global subscriber, and
/// tracing caches whether a callsite is enabled when the callsite is first hit, so a subscriber
/// installed while other tests' reconciles are already running can miss the runtime's span.
#[test]
fn an_authors_log_line_says_which_object_it_is_about() {
    const CHILD: &str = "SP_TEST_LOGS_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(authors_log_line())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "logs::an_authors_log_line_says_which_object_it_is_about",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env_remove("RUST_LOG")
        .status()
        .expect("the test binary runs again");
    assert!(
        status.success(),
        "the logging test failed in its own process: {status}"
    );
}

async fn authors_log_line() -> Result<(), TestError> {
    const NAMESPACE: &str = "project-logs--ws-a";
    let lines = Lines::default();
    let writer = lines.clone();
    // Only the reconcile span and the author's module, at the default verbosity (INFO).
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(
            "service_provider_runtime::controller::reconciler=info,standard::flaky=info",
        )
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber)
        .expect("no other test installs a global subscriber (unset RUST_LOG)");

    let platform = support::platform::<Flaky>(json!({})).start().await?;
    platform
        .create_tenant(&format!("{NAMESPACE}/logged"), json!({}))
        .await?;

    let line = eventually(
        "the author's line to be logged",
        support::TIMEOUT,
        || async {
            lines
                .find("flaky is installed")
                .filter(|line| line.contains(NAMESPACE))
        },
    )
    .await?;
    for field in [
        "mode=standard",
        &format!("namespace={NAMESPACE}"),
        "name=logged",
        "reconcile_id=",
    ] {
        assert!(line.contains(field), "{field} missing from {line:?}");
    }
    platform.stop().await;
    Ok(())
}

/// `run` writes JSON lines by default, as the platform's Go providers do (controller-utils' zap
/// logger in production), and an author's line in them carries the reconcile span's fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_writes_json_lines_that_say_which_object_they_are_about() -> Result<(), TestError> {
    const NAMESPACE: &str = "project-json-logs--ws-a";
    let platform = support::platform::<Flaky>(json!({}))
        .start_without_provider()
        .await?;
    let mut provider = Provider::run("flaky", platform.env(), &["--log-format", "json"]);
    let tenant = platform
        .create_tenant(&format!("{NAMESPACE}/logged-json"), json!({}))
        .await?;
    tenant.wait_ready().await?;
    // Ready is written after the author's line, so the line is in the pipe by now; the process
    // still runs until SIGTERM, which flushes nothing more than stderr already has.
    provider.terminate();
    let status = provider.wait(support::TIMEOUT).await;
    let logs = provider.stderr();
    assert_eq!(status.code(), Some(0), "stderr:\n{logs}");
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["ts"].is_string() && l["msg"].is_string()),
        "every line has zap's level, ts and msg:\n{logs}"
    );
    let line = lines
        .iter()
        .find(|l| l["msg"] == "flaky is installed")
        .unwrap_or_else(|| panic!("the author's line is logged:\n{logs}"));
    assert_eq!(line["level"], "info", "{line}");
    assert_eq!(line["mode"], "standard", "{line}");
    assert_eq!(line["namespace"], NAMESPACE, "{line}");
    assert_eq!(line["name"], "logged-json", "{line}");
    assert!(line["reconcile_id"].is_u64(), "{line}");
    platform.stop().await;
    Ok(())
}
