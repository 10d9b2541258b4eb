//! `cargo xtask realstack`: builds the real kube-apiserver and etcd from the Go modules pinned in
//! `realstack/` into a cache directory keyed by their versions, and prints it as
//! `KUBEBUILDER_ASSETS=<dir>` (the last line, on stdout; everything else goes to stderr).
//!
//! They are test-time tools, like kubectl: built here, never committed, never linked into anything
//! the project ships. `realstack/go.mod` pins `k8s.io/kubernetes` (its staging modules replaced by
//! the tags of the same release) and `realstack/etcd/go.mod` the etcd server, each in a module of
//! its own so that each binary builds with the dependencies its release pins.
//!
//! When `KUBEBUILDER_ASSETS` already names a directory holding both binaries (envtest's
//! convention, e.g. from `setup-envtest`), that directory is printed and nothing is built.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, bail};

use crate::test_binaries::{TestBinaries, TestTarget};

/// The programs a real control plane needs, as envtest names them.
pub(crate) const BINARIES: [&str; 2] = ["kube-apiserver", "etcd"];

/// The Go module that pins kube-apiserver, relative to the repository root.
const KUBE_MODULE_DIR: &str = "realstack";
/// The Go module that pins etcd, relative to the repository root.
const ETCD_MODULE_DIR: &str = "realstack/etcd";
/// The main package of kube-apiserver.
const KUBE_APISERVER_PACKAGE: &str = "k8s.io/kubernetes/cmd/kube-apiserver";
/// The module whose version is kube-apiserver's.
const KUBE_MODULE: &str = "k8s.io/kubernetes";
/// The module whose version is etcd's.
const ETCD_MODULE: &str = "go.etcd.io/etcd/server/v3";

/// The versions the cache directory is keyed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Versions {
    /// `k8s.io/kubernetes`'s version, e.g. `v1.37.2`.
    pub(crate) kubernetes: String,
    /// `go.etcd.io/etcd/server/v3`'s version, e.g. `v3.7.3`.
    pub(crate) etcd: String,
}

impl Versions {
    /// The cache directory's name: `1.37.2-etcd3.7.3`.
    pub(crate) fn dir_name(&self) -> String {
        format!(
            "{}-etcd{}",
            self.kubernetes.trim_start_matches('v'),
            self.etcd.trim_start_matches('v')
        )
    }
}

pub(crate) fn run(root: &Path) -> anyhow::Result<ExitCode> {
    let dir = assets(root)?;
    println!("KUBEBUILDER_ASSETS={}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The one end-to-end test that cannot run on real kube-apiservers: it injects faults into the
/// embedded server (and starts 100 MCP clusters, a process each on a real backend).
const EMBEDDED_ONLY: &str = "faults::a_hundred_objects_survive_faults_and_leave_nothing_behind";

/// `cargo xtask test-real`: the binaries (built when the cache is cold), then every test that
/// runs on real kube-apiservers, with `SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver` so a test
/// that cannot find them fails instead of skipping.
pub(crate) fn test_real(root: &Path) -> anyhow::Result<ExitCode> {
    let dir = assets(root)?;
    let binaries = TestBinaries::build()?;
    let envs = [
        ("KUBEBUILDER_ASSETS", dir.as_os_str()),
        ("SERVICE_PROVIDER_TEST_BACKEND", "kube-apiserver".as_ref()),
    ];
    let runtime = |name| TestTarget {
        package: "service-provider-runtime",
        name,
    };
    // Every test that starts real kube-apiservers, by target and name filter: the launcher's
    // own, the differential corpus (the embedded server answers it as kube-apiserver does), the
    // macro's rules and the hello example, and the end-to-end suites.
    let suites: [(TestTarget, &[&str]); 5] = [
        (runtime("realstack"), &[]),
        (runtime("conformance"), &[]),
        (
            TestTarget {
                package: "service-provider",
                name: "macro",
            },
            &["real_rules", "hello::"],
        ),
        (crate::STANDARD_SUITE, &["--skip", EMBEDDED_ONLY]),
        (crate::KCP_SUITE, &[]),
    ];
    for (target, args) in suites {
        if !binaries.run(target, args, &envs)?.success() {
            return Ok(ExitCode::FAILURE);
        }
    }
    // The test kit's examples, whose simulated platform runs on real kube-apiservers under
    // SERVICE_PROVIDER_TEST_BACKEND. rustdoc compiles them again (doc tests have no binary to
    // keep); `--workspace` keeps the libraries `cargo test --workspace` built.
    let status = crate::cargo()
        .args(["test", "--workspace", "--doc", "--", "src/testing.rs"])
        .envs(envs)
        .status()
        .context("running cargo test --doc")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The directory holding both binaries: `KUBEBUILDER_ASSETS` when it does, else the cache,
/// built first when it is cold.
fn assets(root: &Path) -> anyhow::Result<PathBuf> {
    let assets = std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty());
    if let Some(dir) = assets {
        let dir = PathBuf::from(dir);
        if has_binaries(&dir) {
            eprintln!(
                "realstack: KUBEBUILDER_ASSETS={} holds {}; building nothing",
                dir.display(),
                BINARIES.join(" and ")
            );
            return Ok(dir);
        }
        eprintln!(
            "realstack: KUBEBUILDER_ASSETS={} does not hold both {}; using the realstack cache",
            dir.display(),
            BINARIES.join(" and ")
        );
    }

    let versions = versions(root)?;
    let cache = cache_root()?.join("realstack");
    let dir = cache.join(versions.dir_name());
    if has_binaries(&dir) {
        eprintln!("realstack: cached: {}", dir.display());
    } else {
        build(root, &versions, &cache, &dir)?;
    }
    Ok(dir)
}

/// Both binaries are regular files in `dir`.
pub(crate) fn has_binaries(dir: &Path) -> bool {
    BINARIES.iter().all(|b| dir.join(b).is_file())
}

/// The versions pinned by the two `go.mod` files.
fn versions(root: &Path) -> anyhow::Result<Versions> {
    let read = |dir: &str, module: &str| -> anyhow::Result<String> {
        let path = root.join(dir).join("go.mod");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        required_version(&text, module)
            .with_context(|| format!("{} requires no version of {module}", path.display()))
    };
    Ok(Versions {
        kubernetes: read(KUBE_MODULE_DIR, KUBE_MODULE)?,
        etcd: read(ETCD_MODULE_DIR, ETCD_MODULE)?,
    })
}

/// The version a `go.mod` text requires of `module`, from a `require module vX` line or a line
/// of a `require ( .. )` block. `replace` lines are not requirements.
pub(crate) fn required_version(go_mod: &str, module: &str) -> Option<String> {
    let mut in_require = false;
    for line in go_mod.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if in_require {
            if line == ")" {
                in_require = false;
                continue;
            }
        } else if line == "require (" {
            in_require = true;
            continue;
        }
        let spec = if in_require {
            line
        } else if let Some(rest) = line.strip_prefix("require ") {
            rest.trim()
        } else {
            continue;
        };
        let mut words = spec.split_whitespace();
        if words.next() == Some(module)
            && let Some(version) = words.next()
        {
            return Some(version.to_string());
        }
    }
    None
}

/// `$XDG_CACHE_HOME/service-provider`, else `~/.cache/service-provider`.
fn cache_root() -> anyhow::Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    cache_root_from(xdg, home)
        .context("neither XDG_CACHE_HOME nor HOME is set to an absolute path: no cache directory")
}

/// The cache root from the values of `XDG_CACHE_HOME` and `HOME`; relative paths are ignored,
/// as the XDG base directory specification says.
pub(crate) fn cache_root_from(xdg: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = xdg
        .filter(|p| p.is_absolute())
        .or_else(|| home.filter(|p| p.is_absolute()).map(|h| h.join(".cache")))?;
    Some(base.join("service-provider"))
}

/// Builds both binaries into a fresh directory beside `dir` and renames it to `dir`, so an
/// interrupted build never leaves a half-filled cache.
fn build(root: &Path, versions: &Versions, cache: &Path, dir: &Path) -> anyhow::Result<()> {
    let go_version = go(root, &["version"]).context(
        "running `go version`: Go 1.26 or newer must be on PATH to build the real control plane \
         (or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd)",
    )?;
    eprintln!(
        "realstack: building kube-apiserver {} and etcd {} with {} into {}",
        versions.kubernetes,
        versions.etcd,
        go_version.trim(),
        dir.display()
    );
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    remove_stale_temporaries(cache, &versions.dir_name());
    let tmp = TempDir(cache.join(format!(
        ".tmp-{}-{}",
        versions.dir_name(),
        std::process::id()
    )));
    std::fs::create_dir_all(&tmp.0).with_context(|| format!("creating {}", tmp.0.display()))?;

    let kube_dir = root.join(KUBE_MODULE_DIR);
    // The release's commit time, as the release's own build stamps it (`buildDate`).
    let released = go(
        &kube_dir,
        &[
            "list",
            "-m",
            "-f",
            "{{if .Time}}{{.Time}}{{end}}",
            KUBE_MODULE,
        ],
    )?;
    let ldflags = kube_ldflags(&versions.kubernetes, released.trim())?;
    // The binaries are the cache: Go's build cache of this one-off build (about 3 GB) is not
    // kept, unless GOCACHE names one to keep.
    let own_cache = tmp.0.join("go-build");
    let go_cache = std::env::var_os("GOCACHE")
        .filter(|v| !v.is_empty())
        .map_or_else(|| own_cache.clone(), PathBuf::from);
    let started = Instant::now();
    go_build(
        &kube_dir,
        &ldflags,
        "grpcnotrace",
        &go_cache,
        &tmp.0.join("kube-apiserver"),
        KUBE_APISERVER_PACKAGE,
    )?;
    eprintln!(
        "realstack: kube-apiserver built in {:.0?}",
        started.elapsed()
    );
    let started = Instant::now();
    go_build(
        &root.join(ETCD_MODULE_DIR),
        "",
        "",
        &go_cache,
        &tmp.0.join("etcd"),
        ".",
    )?;
    eprintln!("realstack: etcd built in {:.0?}", started.elapsed());
    if own_cache.exists() {
        std::fs::remove_dir_all(&own_cache)
            .with_context(|| format!("removing {}", own_cache.display()))?;
    }

    match std::fs::rename(&tmp.0, dir) {
        Ok(()) => {}
        // Another build finished first; its binaries are the same.
        Err(_) if has_binaries(dir) => {}
        Err(err) => {
            return Err(err)
                .with_context(|| format!("renaming {} to {}", tmp.0.display(), dir.display()));
        }
    }
    eprintln!("realstack: built: {}", dir.display());
    Ok(())
}

/// The `-ldflags` that make `/version` report `version` as a release build does
/// (`hack/lib/version.sh` sets the same variables in both packages).
pub(crate) fn kube_ldflags(version: &str, build_date: &str) -> anyhow::Result<String> {
    let numbers = version.trim_start_matches('v');
    let mut parts = numbers.split('.');
    let (Some(major), Some(minor)) = (parts.next(), parts.next()) else {
        bail!("{KUBE_MODULE} version {version} is not vMAJOR.MINOR.PATCH");
    };
    if major.parse::<u32>().is_err() || minor.parse::<u32>().is_err() {
        bail!("{KUBE_MODULE} version {version} is not vMAJOR.MINOR.PATCH");
    }
    let mut vars = vec![
        ("gitVersion", version),
        ("gitMajor", major),
        ("gitMinor", minor),
        ("gitTreeState", "clean"),
        // The module zip carries no commit; an empty one reads better than `$Format:%H$`.
        ("gitCommit", ""),
    ];
    if !build_date.is_empty() {
        vars.push(("buildDate", build_date));
    }
    let mut flags = Vec::new();
    for package in [
        "k8s.io/component-base/version",
        "k8s.io/client-go/pkg/version",
    ] {
        for (name, value) in &vars {
            flags.push(format!("-X '{package}.{name}={value}'"));
        }
    }
    Ok(flags.join(" "))
}

/// `go build` of `package` in the module at `dir` with the build cache `go_cache`, as Kubernetes
/// builds a release when not debugging (`hack/lib/golang.sh`, `kube::golang::build_binaries`):
/// static, without local paths, symbol table or DWARF (`-s -w`, which also shortens the link of
/// kube-apiserver, the longest single step of a cold CI run), with the caller's build tags, and
/// without the repository's VCS state (the binaries depend on the pinned modules only).
fn go_build(
    dir: &Path,
    ldflags: &str,
    tags: &str,
    go_cache: &Path,
    output: &Path,
    package: &str,
) -> anyhow::Result<()> {
    let mut cmd = Command::new("go");
    cmd.current_dir(dir)
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", go_cache)
        .args(["build", "-trimpath", "-buildvcs=false"])
        .arg(format!("-tags={tags}"))
        .arg(format!("-ldflags=-s -w {ldflags}"))
        .arg("-o")
        .arg(output)
        .arg(package);
    let status = cmd
        .status()
        .with_context(|| format!("running go build {package} in {}", dir.display()))?;
    if !status.success() {
        bail!(
            "go build {package} in {} failed ({status}); a module the proxy refuses is named above",
            dir.display()
        );
    }
    Ok(())
}

/// The standard output of `go ARGS` in `dir`.
fn go(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("go")
        .current_dir(dir)
        .args(args)
        .output()
        .with_context(|| format!("running go {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "go {} in {} failed ({}): {}",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("go printed something that is not UTF-8")
}

/// Removes temporary directories that builds of `name` which no longer run left behind.
fn remove_stale_temporaries(cache: &Path, name: &str) {
    let prefix = format!(".tmp-{name}-");
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !process_runs(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` runs; where that cannot be told, it is assumed to.
fn process_runs(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// A directory removed when dropped, unless it was renamed away.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO_MOD: &str = "module example.com/x

go 1.26.0

require k8s.io/kubernetes v1.37.2

require (
\tgo.etcd.io/etcd/server/v3 v3.7.3 // pinned
\tk8s.io/api v0.0.0 // indirect
)

replace (
\tk8s.io/api => k8s.io/api v0.37.2
)
";

    #[test]
    fn reads_single_line_and_block_requirements() {
        assert_eq!(
            required_version(GO_MOD, "k8s.io/kubernetes").as_deref(),
            Some("v1.37.2")
        );
        assert_eq!(
            required_version(GO_MOD, "go.etcd.io/etcd/server/v3").as_deref(),
            Some("v3.7.3")
        );
        // The requirement, not the replacement.
        assert_eq!(
            required_version(GO_MOD, "k8s.io/api").as_deref(),
            Some("v0.0.0")
        );
        assert_eq!(required_version(GO_MOD, "k8s.io/client-go"), None);
    }

    #[test]
    fn the_repository_pins_what_the_cache_is_keyed_by() -> anyhow::Result<()> {
        let root = crate::workspace_root();
        let v = versions(&root)?;
        assert!(v.kubernetes.starts_with("v1."), "{v:?}");
        assert!(v.etcd.starts_with("v3."), "{v:?}");
        // Every staging module is replaced by the tag of the same release.
        let go_mod = std::fs::read_to_string(root.join(KUBE_MODULE_DIR).join("go.mod"))?;
        let staging = format!("v0.{}", v.kubernetes.trim_start_matches("v1."));
        let replaced: Vec<&str> = go_mod.lines().filter(|l| l.contains("=>")).collect();
        assert!(replaced.len() > 20, "{replaced:?}");
        for line in replaced {
            assert!(line.trim_end().ends_with(&staging), "{line}");
        }
        Ok(())
    }

    #[test]
    fn the_launcher_looks_for_the_versions_built_here() -> anyhow::Result<()> {
        // runtime/src/dev/realstack.rs finds the cache directory by these versions.
        let root = crate::workspace_root();
        let v = versions(&root)?;
        let launcher = std::fs::read_to_string(root.join("runtime/src/dev/realstack.rs"))?;
        for line in [
            format!("pub const KUBERNETES_VERSION: &str = \"{}\";", v.kubernetes),
            format!("pub const ETCD_VERSION: &str = \"{}\";", v.etcd),
        ] {
            assert!(
                launcher.contains(&line),
                "runtime/src/dev/realstack.rs lacks {line}"
            );
        }
        Ok(())
    }

    #[test]
    fn cache_directory_is_keyed_by_both_versions() {
        let v = Versions {
            kubernetes: "v1.37.2".into(),
            etcd: "v3.7.3".into(),
        };
        assert_eq!(v.dir_name(), "1.37.2-etcd3.7.3");
    }

    #[test]
    fn cache_root_prefers_an_absolute_xdg_cache_home() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            cache_root_from(Some("/c".into()), home.clone()),
            Some(PathBuf::from("/c/service-provider"))
        );
        assert_eq!(
            cache_root_from(Some("relative".into()), home.clone()),
            Some(PathBuf::from("/home/u/.cache/service-provider"))
        );
        assert_eq!(
            cache_root_from(None, home),
            Some(PathBuf::from("/home/u/.cache/service-provider"))
        );
        assert_eq!(cache_root_from(None, None), None);
    }

    #[test]
    fn ldflags_stamp_both_version_packages() -> anyhow::Result<()> {
        let flags = kube_ldflags("v1.37.2", "2026-10-27T12:01:04Z")?;
        for package in [
            "k8s.io/component-base/version",
            "k8s.io/client-go/pkg/version",
        ] {
            assert!(flags.contains(&format!("-X '{package}.gitVersion=v1.37.2'")));
            assert!(flags.contains(&format!("-X '{package}.gitMajor=1'")));
            assert!(flags.contains(&format!("-X '{package}.gitMinor=37'")));
            assert!(flags.contains(&format!("-X '{package}.buildDate=2026-10-27T12:01:04Z'")));
        }
        assert!(kube_ldflags("latest", "").is_err());
        Ok(())
    }

    #[test]
    fn a_directory_with_both_binaries_is_used_as_is() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("xtask-realstack-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let _cleanup = TempDir(dir.clone());
        assert!(!has_binaries(&dir));
        std::fs::write(dir.join("kube-apiserver"), b"")?;
        assert!(!has_binaries(&dir));
        std::fs::write(dir.join("etcd"), b"")?;
        assert!(has_binaries(&dir));
        Ok(())
    }
}
