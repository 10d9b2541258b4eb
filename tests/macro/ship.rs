//! What ships: the production build of `examples/velero` that its Dockerfile makes links neither
//! the embedded control plane nor the simulated platform.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The arguments of the `cargo build` the Dockerfile runs, up to the `&&` that copies the binary.
fn dockerfile_build_args(dockerfile: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dockerfile).unwrap();
    // Join continuation lines, so a `RUN` split over several lines is one instruction.
    let joined = text.replace("\\\n", " ");
    let run = joined
        .lines()
        .filter_map(|line| line.trim().strip_prefix("RUN "))
        .find(|line| line.trim_start().starts_with("cargo build"))
        .unwrap_or_else(|| panic!("{} has no `RUN cargo build` line", dockerfile.display()));
    let command = run.split("&&").next().unwrap_or_default();
    let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    assert_eq!(words[..2], ["cargo", "build"], "{command}");
    words[2..].to_vec()
}

/// The packages `cargo tree -e normal` lists for a build with `args`: what the binary can link.
/// Resolving is cheap; a release build of the provider takes minutes on a small machine, so the
/// test checks the dependency graph the build is made from, with the same flags.
fn linked_packages(args: &[String]) -> String {
    // `tree` takes the package-selection and feature flags of `build`; the profile and the lock
    // mode do not change the graph.
    let tree_args: Vec<&String> = args
        .iter()
        .filter(|a| !matches!(a.as_str(), "--release" | "--locked"))
        .collect();
    let output = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(tree_args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_production_image_links_no_embedded_server() {
    let args = dockerfile_build_args(&root().join("examples/velero/Dockerfile"));
    assert!(
        args.iter().any(|a| a == "--no-default-features"),
        "the image must be built without `dev`: {args:?}"
    );
    let production = linked_packages(&args);
    assert!(
        production.contains("service-provider-runtime"),
        "{production}"
    );
    for dev_only in ["service-provider-apiserver", "kube-cel"] {
        assert!(
            !production.contains(dev_only),
            "the production build links {dev_only}:\n{production}"
        );
    }
    // The same package with its default features (`cargo run -p velero-provider`) does have the
    // embedded server: the flags, not the package, keep it out.
    let dev = linked_packages(&["-p".to_owned(), "velero-provider".to_owned()]);
    assert!(dev.contains("service-provider-apiserver"), "{dev}");
}
