//! Repository tasks: `cargo xtask corpus` (what of the suites' requests the differential
//! corpus covers), `cargo xtask crds` (generate and check the examples' manifests),
//! `cargo xtask builtins` (the embedded API server's built-in types, from k8s-openapi),
//! `cargo xtask macro-cost` (what `#[service_provider]` costs at compile time), `cargo xtask
//! modules` (the runtime's import graph, without circles), `cargo xtask protobuf` (the embedded API
//! server's protobuf descriptors), `cargo xtask public-items` (how many names the facade, the
//! runtime and the embedded API server make public) and `cargo xtask realstack` (the real kube-apiserver and etcd,
//! built from Go modules for tests).

mod builtins;
mod corpus;
mod crds;
mod macro_cost;
mod modules;
mod protobuf;
mod public_items;
mod realstack;
mod test_binaries;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use test_binaries::TestTarget;

#[derive(Parser)]
#[command(about = "Repository tasks of service-provider")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the end-to-end suites and the kubectl battery on the embedded server recording every
    /// request, and print the request shapes the differential corpus
    /// (runtime/tests/conformance/corpus.yaml) does not cover.
    Corpus {
        /// Read this recording (JSON lines) instead of running the suites.
        #[arg(long)]
        recording: Option<PathBuf>,
    },
    /// Write every example's manifests into manifests/EXAMPLE/.
    Crds {
        /// Change nothing; fail and name the files that are missing, stale or extra.
        #[arg(long)]
        check: bool,
    },
    /// Write the list of built-in API types the embedded API server serves, read from
    /// k8s-openapi's sources, into apiserver/src/builtin/types.rs.
    Builtins {
        /// Change nothing; fail if the checked-in list is stale.
        #[arg(long)]
        check: bool,
    },
    /// Measure the incremental rebuild of examples/velero against the same provider written by
    /// hand with kube-derive, and the expansion time of `#[service_provider]` itself.
    MacroCost {
        /// Rebuilds of each variant; the median is reported.
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// Expansions of the velero declaration to time.
        #[arg(long, default_value_t = 2000)]
        expansions: usize,
    },
    /// Print the runtime's module graph and its import circles (edges between sibling modules).
    Modules {
        /// Fail when there is an import circle.
        #[arg(long)]
        check: bool,
    },
    /// Compile Kubernetes' generated.proto files into the embedded API server's descriptor set.
    Protobuf {
        /// The directory holding `api/`, `apimachinery/`, … with their `generated.proto` files.
        #[arg(long)]
        protos: PathBuf,
    },
    /// Count the public names of the facade and the runtime (from rustdoc's JSON output), by
    /// module.
    PublicItems,
    /// Build the real kube-apiserver and etcd from the Go modules pinned in realstack/ into a
    /// cache directory keyed by their versions (reused when present), and print it as the last
    /// line, `KUBEBUILDER_ASSETS=<dir>`. A KUBEBUILDER_ASSETS that already holds both is used as is.
    Realstack,
    /// Build the real kube-apiserver and etcd if needed (as `realstack` does) and run the tests
    /// that use them, with SERVICE_PROVIDER_TEST_BACKEND=kube-apiserver so none of them skips.
    TestReal,
}

fn main() -> ExitCode {
    let root = workspace_root();
    let result = match Cli::parse().command {
        Command::Corpus { recording } => corpus::run(&root, recording.as_deref()),
        Command::Crds { check } => crds::run(&root, check),
        Command::Builtins { check } => builtins::run(&root, check),
        Command::MacroCost { runs, expansions } => macro_cost::run(&root, runs, expansions),
        Command::Modules { check } => modules::run(&root, "runtime", check),
        Command::Protobuf { protos } => protobuf::run(&root, &protos),
        Command::PublicItems => public_items::run(&root),
        Command::Realstack => realstack::run(&root),
        Command::TestReal => realstack::test_real(&root),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root: the parent of this crate's directory.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `cargo`, as the one running us, without the variables `cargo run` describes this package by.
///
/// Build scripts watch some of them (ring's says `rerun-if-env-changed=CARGO_PKG_NAME`,
/// `CARGO_MANIFEST_DIR`, ...), so a cargo started from here with `xtask`'s values inherited finds
/// them changed since `cargo test --workspace`, reruns those scripts and recompiles everything
/// above them: rustls, kube and our crates, minutes on two cores.
fn cargo() -> std::process::Command {
    let mut cmd =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace_root());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(describes_this_package) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Whether `var` is one of the variables Cargo sets for the binary it runs (its package, crate and
/// manifest), as opposed to those that configure Cargo (`CARGO_HOME`, `CARGO_TARGET_DIR`, ...).
fn describes_this_package(var: &str) -> bool {
    var.starts_with("CARGO_PKG_")
        || var.starts_with("CARGO_MANIFEST_")
        || matches!(
            var,
            "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
        )
}

/// The end-to-end suite in standard mode, whose simulated platform runs on the embedded server
/// or, under `SERVICE_PROVIDER_TEST_BACKEND`, on real kube-apiservers.
const STANDARD_SUITE: TestTarget = TestTarget {
    package: "service-provider",
    name: "standard",
};

/// The end-to-end suite in kcp mode.
const KCP_SUITE: TestTarget = TestTarget {
    package: "service-provider",
    name: "kcp",
};

#[cfg(test)]
mod tests {
    use super::describes_this_package;

    #[test]
    fn only_the_running_packages_description_is_dropped() {
        for var in [
            "CARGO_PKG_NAME",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
        ] {
            assert!(describes_this_package(var), "{var}");
        }
        for var in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
        ] {
            assert!(!describes_this_package(var), "{var}");
        }
    }
}
