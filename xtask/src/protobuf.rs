//! `cargo xtask protobuf --protos DIR`: compiles Kubernetes' `generated.proto` files into the
//! descriptor set the embedded API server encodes and decodes `application/vnd.kubernetes.protobuf`
//! with (`apiserver/src/protobuf/kubernetes.fds`).
//!
//! The `.proto` files are not fetched here: kube-rs's `k8s-pb` crate ships prost structs without
//! descriptors, so the sources come from a directory laid out as `api/<group>/<version>/generated.proto`
//! plus `apimachinery/…`, as the crates.io package `k8s-rs-pb` ships them under `src/v1_XX/`
//! (`cargo info k8s-rs-pb` downloads it into `~/.cargo/registry/src/`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use prost::Message;

/// Where the descriptor set is written, relative to the repository root.
pub(crate) const OUTPUT: &str = "apiserver/src/protobuf/kubernetes.fds";

fn proto_files(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            // apimachinery's test API group is not served by any API server.
            if path.file_name().is_some_and(|n| n == "testapigroup") {
                continue;
            }
            proto_files(&path, base, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path.strip_prefix(base)?.to_path_buf());
        }
    }
    Ok(())
}

pub(crate) fn run(root: &Path, protos: &Path) -> anyhow::Result<ExitCode> {
    let mut files = Vec::new();
    proto_files(protos, protos, &mut files)?;
    files.sort();
    if files.is_empty() {
        bail!("no .proto files under {}", protos.display());
    }
    let mut fds = protox::compile(&files, [protos]).context("compiling the .proto files")?;
    // Comments and source positions are half the size and nothing the server reads.
    for f in &mut fds.file {
        f.source_code_info = None;
    }
    let bytes = fds.encode_to_vec();
    let out = root.join(OUTPUT);
    std::fs::write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "{}: {} files, {} bytes",
        out.display(),
        fds.file.len(),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}
