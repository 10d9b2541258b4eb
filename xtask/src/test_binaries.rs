//! The workspace's `tests/` binaries, run as `cargo test --workspace` built them.
//!
//! `cargo test -p <package> --features <f>` resolves features for that package alone, and here
//! they differ from the workspace's (tokio, hyper, rustls, kube and everything above them), so
//! each such run compiled a second copy of half the dependency graph and of our crates: minutes on
//! two cores, right after `cargo test --workspace` had built every test binary CI runs. Asking
//! cargo for the workspace's test executables instead (`--no-run`, which compiles nothing when that
//! build is fresh) and running them as `cargo test` does, from the package's directory, runs the
//! same code without the second build.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use anyhow::{Context, bail};

/// One `tests/` target: `[[test]]` `name` of the workspace package `package`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TestTarget {
    pub(crate) package: &'static str,
    pub(crate) name: &'static str,
}

impl std::fmt::Display for TestTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} --test {}", self.package, self.name)
    }
}

/// A built test executable and the directory `cargo test` runs it from.
#[derive(Debug)]
struct Executable {
    path: PathBuf,
    package_dir: PathBuf,
}

/// The workspace's test executables, by target.
#[derive(Debug)]
pub(crate) struct TestBinaries {
    by_target: HashMap<(String, String), Executable>,
}

impl TestBinaries {
    /// `cargo test --workspace --no-run`: builds what is not fresh (nothing, after `cargo test
    /// --workspace`) and lists the test executables.
    pub(crate) fn build() -> anyhow::Result<Self> {
        let output = crate::cargo()
            .args(["test", "--workspace", "--no-run", "--message-format=json"])
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running cargo test --workspace --no-run")?;
        if !output.status.success() {
            bail!("cargo test --workspace --no-run failed ({})", output.status);
        }
        let stdout =
            String::from_utf8(output.stdout).context("cargo's JSON output is not UTF-8")?;
        Self::from_messages(&stdout)
    }

    /// Reads cargo's JSON messages (one per line) and keeps the executables of `test` targets.
    fn from_messages(messages: &str) -> anyhow::Result<Self> {
        let mut by_target = HashMap::new();
        for line in messages.lines().filter(|l| l.starts_with('{')) {
            let message: serde_json::Value =
                serde_json::from_str(line).with_context(|| format!("cargo message {line}"))?;
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            let is_test = message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "test"));
            let (Some(path), Some(name), Some(id), Some(manifest)) = (
                message["executable"].as_str(),
                message["target"]["name"].as_str(),
                message["package_id"].as_str(),
                message["manifest_path"].as_str(),
            ) else {
                continue;
            };
            if !is_test {
                continue;
            }
            let package_dir = Path::new(manifest)
                .parent()
                .with_context(|| format!("manifest path {manifest} has no directory"))?
                .to_path_buf();
            by_target.insert(
                (package_name(id).to_owned(), name.to_owned()),
                Executable {
                    path: PathBuf::from(path),
                    package_dir,
                },
            );
        }
        Ok(Self { by_target })
    }

    /// The command that runs `target`'s binary as `cargo test` does: from its package's directory,
    /// with `CARGO_MANIFEST_DIR` set (trybuild reads it); `args` go to the test harness.
    fn command(&self, target: TestTarget, args: &[&str]) -> anyhow::Result<Command> {
        let key = (target.package.to_owned(), target.name.to_owned());
        let Some(executable) = self.by_target.get(&key) else {
            let mut built: Vec<String> = self
                .by_target
                .keys()
                .map(|(package, name)| format!("{package} --test {name}"))
                .collect();
            built.sort();
            bail!(
                "cargo test --workspace built no test binary {target}; it built: {}",
                built.join(", ")
            );
        };
        let mut cmd = Command::new(&executable.path);
        cmd.args(args)
            .current_dir(&executable.package_dir)
            .env("CARGO_MANIFEST_DIR", &executable.package_dir);
        Ok(cmd)
    }

    /// Runs `target` with `args` and `envs`, echoing the command as `cargo test` does.
    pub(crate) fn run(
        &self,
        target: TestTarget,
        args: &[&str],
        envs: &[(&str, &std::ffi::OsStr)],
    ) -> anyhow::Result<ExitStatus> {
        let mut cmd = self.command(target, args)?;
        cmd.envs(envs.iter().copied());
        eprintln!("     Running {target} {}", args.join(" "));
        cmd.status().with_context(|| format!("running {target}"))
    }
}

/// The package name in a cargo package ID: `path+file:///r/runtime#service-provider-runtime@0.1.0`
/// names it after `#`; `path+file:///r/xtask#0.0.0`, where it is the directory's name, does not.
fn package_name(id: &str) -> &str {
    let (url, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
    match fragment.split_once('@') {
        Some((name, _version)) => name,
        None => url.rsplit('/').next().unwrap_or(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_read_with_and_without_the_name_in_the_fragment() {
        assert_eq!(
            package_name("path+file:///r/runtime#service-provider-runtime@0.1.0"),
            "service-provider-runtime"
        );
        assert_eq!(package_name("path+file:///r/xtask#0.0.0"), "xtask");
        assert_eq!(
            package_name("registry+https://github.com/rust-lang/crates.io-index#serde@1.0.228"),
            "serde"
        );
    }

    #[test]
    fn test_executables_are_found_by_package_and_target() {
        let messages = [
            r#"{"reason":"compiler-artifact","package_id":"path+file:///r#service-provider@0.1.0","manifest_path":"/r/Cargo.toml","target":{"kind":["test"],"name":"kcp"},"executable":"/t/debug/deps/kcp-1"}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///r/apiserver#service-provider-apiserver@0.1.0","manifest_path":"/r/apiserver/Cargo.toml","target":{"kind":["test"],"name":"kcp"},"executable":"/t/debug/deps/kcp-2"}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///r#service-provider@0.1.0","manifest_path":"/r/Cargo.toml","target":{"kind":["lib"],"name":"service_provider"},"executable":"/t/debug/deps/service_provider-3"}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        let binaries = TestBinaries::from_messages(&messages).unwrap();
        let target = |package, name| TestTarget { package, name };
        let cmd = binaries
            .command(target("service-provider-apiserver", "kcp"), &["--", "x"])
            .unwrap();
        assert_eq!(cmd.get_program(), "/t/debug/deps/kcp-2");
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/r/apiserver")));
        let facade = binaries
            .command(target("service-provider", "kcp"), &[])
            .unwrap();
        assert_eq!(facade.get_program(), "/t/debug/deps/kcp-1");
        let missing = binaries
            .command(target("service-provider", "service_provider"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("built no test binary service-provider --test service_provider")
                && missing.contains("service-provider-apiserver --test kcp"),
            "{missing}"
        );
    }
}
