//! The real `kubectl` against a consumer workspace: list, create and delete bound objects.
//!
//! Fails when kubectl is missing, unless `SKIP_KUBECTL=1` is set.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::*;

fn kubectl_available() -> bool {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    if std::env::var("SKIP_KUBECTL").as_deref() == Ok("1") {
        eprintln!("kubectl not found; skipped because SKIP_KUBECTL=1");
        return false;
    }
    panic!("kubectl is not installed; install it or set SKIP_KUBECTL=1 to skip this test");
}

/// Runs kubectl in a blocking thread; returns (success, stdout, stderr).
async fn kubectl(args: Vec<String>, stdin: Option<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new("kubectl");
        cmd.args(&args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(i) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(i.as_bytes())
                .expect("write stdin");
        }
        let out = child.wait_with_output().expect("kubectl finishes");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    })
    .await
    .expect("kubectl task")
}

#[tokio::test]
async fn kubectl_lists_creates_and_deletes_bound_objects_in_a_consumer_workspace() {
    if !kubectl_available() {
        return;
    }
    let kcp = kcp().await;
    let p = provider(&kcp, "provider").await;
    let ws = consumer(&kcp, "consumer", &p).await;
    let dir: PathBuf = std::env::temp_dir().join(format!("kcp-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    // The admin kubeconfig of the root workspace; `--server` picks the consumer workspace.
    kcp.write_kubeconfig("root", &kubeconfig).unwrap();
    let server = format!("{}/clusters/root:consumer", kcp.url());
    let base = vec![
        "--kubeconfig".to_string(),
        kubeconfig.display().to_string(),
        "--server".to_string(),
        server,
    ];
    let run = |extra: &[&str], stdin: Option<&str>| {
        let mut args = base.clone();
        args.extend(extra.iter().map(|s| s.to_string()));
        kubectl(args, stdin.map(str::to_string))
    };

    let (ok, out, err) = run(&["get", "cowboys"], None).await;
    assert!(ok, "{out}\n{err}");
    assert!(err.contains("No resources found"), "{out}\n{err}");

    let manifest = serde_json::to_string(&json!({
        "apiVersion": "wildwest.dev/v1alpha1", "kind": "Cowboy",
        "metadata": {"name": "lucky"}, "spec": {"intent": "ride", "horses": 2}
    }))
    .unwrap();
    let (ok, out, err) = run(&["create", "-f", "-"], Some(&manifest)).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("cowboy.wildwest.dev/lucky created"), "{out}");

    let (ok, out, err) = run(&["get", "cowboys", "-o", "json"], None).await;
    assert!(ok, "{out}\n{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "lucky");
    assert_eq!(
        list["items"][0]["metadata"]["annotations"]["kcp.io/cluster"],
        json!(ws.name)
    );

    // The schema's validation reaches kubectl with the field named.
    let bad = serde_json::to_string(&json!({
        "apiVersion": "wildwest.dev/v1alpha1", "kind": "Cowboy",
        "metadata": {"name": "broken"}, "spec": {"horses": -1}
    }))
    .unwrap();
    let (ok, out, err) = run(&["create", "-f", "-"], Some(&bad)).await;
    assert!(!ok, "{out}");
    assert!(err.contains("spec.horses"), "{err}");

    let (ok, out, err) = run(&["delete", "cowboy", "lucky"], None).await;
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("cowboy.wildwest.dev \"lucky\" deleted"),
        "{out}"
    );
    let (ok, out, err) = run(&["get", "cowboys"], None).await;
    assert!(ok, "{out}\n{err}");
    assert!(err.contains("No resources found"), "{out}\n{err}");

    // The workspace and its kcp types are visible too.
    let (ok, out, err) = run(&["get", "apibindings"], None).await;
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("cowboys"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
