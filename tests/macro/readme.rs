//! The README's "Testing your provider" example is the `examples/hello` test that runs in this
//! binary (`hello::tests`), so it compiles and passes, and cannot drift from it; README's Cargo
//! lines resolve to a build k8s-openapi accepts; its "Writing a provider" example and "Managed
//! resources" lines are `readme_provider.rs`, compiled here, and the validation rules are
//! `examples/hello`'s.

/// The first fenced code block after `heading` whose info string starts with `rust`.
fn rust_block_after<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let section = &text[text.find(heading)?..];
    let start = section.find("```rust")?;
    let body = &section[start..];
    let body = &body[body.find('\n')? + 1..];
    Some(&body[..body.find("\n```")?])
}

#[test]
fn readme_testing_example_is_the_hello_examples_test() {
    let readme = include_str!("../../README.md");
    let hello = include_str!("../../examples/hello/main.rs");
    let block = rust_block_after(readme, "## Testing your provider")
        .expect("README.md has a rust block under \"## Testing your provider\"");
    assert!(
        block.contains("mod tests") && block.contains("TestPlatform"),
        "the README block is the kit example:\n{block}"
    );
    assert!(
        hello.contains(block),
        "README.md's \"Testing your provider\" example differs from the test in examples/hello/main.rs; copy the test module over:\n{block}"
    );
}

/// Every fenced block whose info string is `toml`, in order.
fn toml_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```toml\n") {
        let body = &rest[start + "```toml\n".len()..];
        let Some(end) = body.find("\n```") else { break };
        blocks.push(&body[..end]);
        rest = &body[end..];
    }
    blocks
}

/// The k8s-openapi features `cargo test` of a provider crate with this `Cargo.toml` body would
/// build with (normal and dev dependencies unified, as for a test build), resolved by `cargo tree`
/// in a scratch crate that depends on this checkout instead of crates.io: resolving takes a
/// second, building the provider would take minutes.
fn k8s_openapi_versions(name: &str, manifest: &str) -> Vec<String> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("readme-cargo-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    // The checkout's lock file, so `--offline` resolves to what is already downloaded.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let path = format!("path = {:?}", root.display().to_string());
    let manifest = format!(
        "[package]\nname = \"readme-provider\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n\n{}\n",
        manifest.replace("version = \"0.1\"", &path)
    );
    std::fs::write(dir.join("Cargo.toml"), &manifest).unwrap();
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(&dir)
        .args(["tree", "--offline", "-e", "normal,dev", "--prefix", "none"])
        .args(["-i", "k8s-openapi", "--depth", "0", "-f", "{f}"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "cargo tree for {name}:\n{manifest}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    let mut versions: Vec<String> = stdout
        .split([',', '\n'])
        .map(str::trim)
        .filter(|f| f.starts_with("v1_"))
        .map(str::to_owned)
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// README's Cargo lines, put together as a provider author would: each way of depending on the
/// facade (the defaults, a chosen Kubernetes version, the `dev` feature switched per build) with
/// the test kit's `[dev-dependencies]`, builds its tests with exactly one Kubernetes version
/// (k8s-openapi's build refuses two: "Both v1_34 and v1_37 features are enabled").
#[test]
fn readme_cargo_lines_give_a_test_build_one_kubernetes_version() {
    let readme = include_str!("../../README.md");
    let blocks = toml_blocks(readme);
    let dev_dependencies = blocks
        .iter()
        .find(|b| b.starts_with("[dev-dependencies]"))
        .expect("README.md has the test kit's [dev-dependencies] block");
    let version_line = blocks
        .iter()
        .find(|b| b.contains("\"v1_34\""))
        .expect("README.md has the line picking a Kubernetes version");
    let dev_switch = blocks
        .iter()
        .find(|b| b.starts_with("[features]"))
        .expect("README.md has the block switching `dev` per build");
    for (name, dependencies, expected) in [
        (
            "defaults",
            "[dependencies]\nservice-provider = { version = \"0.1\" }",
            None,
        ),
        (
            "v1_34",
            &*format!("[dependencies]\n{version_line}"),
            Some("v1_34"),
        ),
        ("dev-switch", dev_switch, None),
    ] {
        let versions = k8s_openapi_versions(name, &format!("{dependencies}\n\n{dev_dependencies}"));
        assert_eq!(
            versions.len(),
            1,
            "README's {name} dependency with its [dev-dependencies] enables k8s-openapi {versions:?}"
        );
        if let Some(expected) = expected {
            assert_eq!(versions, [expected], "{name}");
        }
    }
}

/// Whether `file` holds `block`'s lines, consecutively, each as written up to its indentation.
fn holds_lines(file: &str, block: &str) -> bool {
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let (file, block) = (lines(file), lines(block));
    !block.is_empty() && file.windows(block.len()).any(|w| w == block.as_slice())
}

/// README's Rust an author copies compiles: the provider of "Writing a provider" and the lines
/// of "Managed resources" are `readme_provider.rs` (compiled in this binary), the validation
/// rules and the versions are examples/hello's (compiled and tested in this binary).
#[test]
fn readme_rust_examples_are_compiled_here() {
    let readme = include_str!("../../README.md");
    let copied = include_str!("readme_provider.rs");
    let hello = include_str!("../../examples/hello/main.rs");
    for (heading, file, name) in [
        (
            "## Writing a provider",
            copied,
            "tests/macro/readme_provider.rs",
        ),
        (
            "### Managed resources",
            copied,
            "tests/macro/readme_provider.rs",
        ),
        ("### Validation rules", hello, "examples/hello/main.rs"),
        ("### Versions", hello, "examples/hello/main.rs"),
    ] {
        let block = rust_block_after(readme, heading)
            .unwrap_or_else(|| panic!("README.md has a rust block under {heading:?}"));
        assert!(
            holds_lines(file, block),
            "README.md's example under {heading:?} differs from {name}, where it is compiled; copy it over:\n{block}"
        );
    }
}
