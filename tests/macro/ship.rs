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

/// Where the Dockerfile's `cargo build` writes: a target directory of its own beside the one of
/// this test run (`<target>/image`), so this build neither waits for the lock of the `cargo test`
/// that runs it nor mixes release artefacts of other feature sets into it, and a CI cache of
/// `target/` keeps it incremental like the rest.
fn image_target_dir() -> PathBuf {
    // This test binary is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("{} is not in a cargo target directory", exe.display()))
        .join("image")
}

/// The binary the Dockerfile copies into the image: the source of its `cp`, relative to
/// `target/`.
fn dockerfile_copied_binary(dockerfile: &Path) -> PathBuf {
    let text = std::fs::read_to_string(dockerfile).unwrap();
    let joined = text.replace("\\\n", " ");
    let copy = joined
        .split("&&")
        .map(str::trim)
        .find_map(|part| part.strip_prefix("cp "))
        .unwrap_or_else(|| panic!("{} copies no binary out of target/", dockerfile.display()));
    let source = copy.split_whitespace().next().unwrap_or_default();
    let relative = source
        .strip_prefix("target/")
        .unwrap_or_else(|| panic!("the Dockerfile copies {source}, not a file under target/"));
    image_target_dir().join(relative)
}

/// The shared libraries an ELF binary asks the dynamic loader for (`readelf -d`'s NEEDED).
fn needed_libraries(binary: &Path) -> Vec<String> {
    let output = Command::new("readelf")
        .args(["-d", "-W"])
        .arg(binary)
        .output()
        .expect("readelf (binutils) is needed to read the binary's shared libraries");
    assert!(
        output.status.success(),
        "readelf failed on {}",
        binary.display()
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| Some(line.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect()
}

/// The image's binary, built exactly as the Dockerfile builds it (its `cargo build` flags; only
/// `--offline` is added, which changes nothing in the binary), is a production provider: it
/// carries no code of the embedded server, needs nothing beyond glibc and libgcc (what the
/// distroless `cc` runtime stage has), writes the platform operator's manifests and refuses `dev`.
///
/// This is the one release build of the test suite: a few minutes on two cores from a clean
/// target directory, incremental afterwards.
#[test]
fn the_image_binary_is_a_production_provider() {
    let dockerfile = root().join("examples/velero/Dockerfile");
    let args = dockerfile_build_args(&dockerfile);
    let target = image_target_dir();
    let output = Command::new(env!("CARGO"))
        .current_dir(root())
        .env("CARGO_TARGET_DIR", &target)
        .arg("build")
        .args(&args)
        .arg("--offline")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the Dockerfile's build failed: cargo build {}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    // Cargo replays a fresh crate's warnings, so this holds on a warm target directory too.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("warning:"),
        "the Dockerfile's build warns; code that only `dev` uses belongs behind that feature, \
         since every provider's release build compiles without it:\n{stderr}"
    );
    let binary = dockerfile_copied_binary(&dockerfile);
    let bytes = std::fs::read(&binary)
        .unwrap_or_else(|e| panic!("the Dockerfile copies {}: {e}", binary.display()));

    // Symbol names and panic locations carry the crate names.
    let contains = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        contains("service_provider_runtime"),
        "no runtime symbols in {}",
        binary.display()
    );
    for dev_only in ["service_provider_apiserver", "kube_cel"] {
        assert!(
            !contains(dev_only),
            "{} carries {dev_only}",
            binary.display()
        );
    }

    // distroless/cc-debian12 has glibc and libgcc and nothing else.
    const IN_DISTROLESS_CC: [&str; 8] = [
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libutil.so.1",
        "ld-linux-x86-64.so.2",
    ];
    let needed = needed_libraries(&binary);
    assert!(needed.iter().any(|l| l == "libc.so.6"), "{needed:?}");
    for library in &needed {
        assert!(
            IN_DISTROLESS_CC.contains(&library.as_str()),
            "{} needs {library}, which the distroless cc image does not have",
            binary.display()
        );
    }

    // What the platform operator runs it for, without any cluster.
    let out = std::env::temp_dir().join(format!("image-binary-{}", std::process::id()));
    let manifests = Command::new(&binary)
        .args(["manifests", "--output"])
        .arg(&out)
        .args(["--image", "registry.example/velero-provider:0.1.0"])
        .output()
        .unwrap();
    assert!(
        manifests.status.success(),
        "{}",
        String::from_utf8_lossy(&manifests.stderr)
    );
    let service_provider =
        std::fs::read_to_string(out.join("deploy/serviceprovider.yaml")).unwrap();
    assert!(
        service_provider.contains("image: registry.example/velero-provider:0.1.0"),
        "{service_provider}"
    );
    std::fs::remove_dir_all(&out).unwrap();

    let dev = Command::new(&binary)
        .arg("dev")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&dev.stderr);
    assert!(!dev.status.success(), "{stderr}");
    assert!(
        stderr.contains("built without the `dev` feature"),
        "{stderr}"
    );
}
