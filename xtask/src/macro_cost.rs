//! `cargo xtask macro-cost`: what `#[service_provider]` costs at compile time.
//!
//! 1. Incremental rebuild: edit a doc comment on a spec field (a real change to the spec struct,
//!    which changes its schema) and time `cargo build` of `examples/velero` and of its hand-written
//!    kube-derive twin (`xtask/macro-cost/velero_by_hand.rs`), alternating, in the same run; the
//!    same for `cargo check`, whose difference is mostly expansion and type checking.
//! 2. Expansion: time the attribute's own expansion function on the velero declaration, built
//!    with the settings rustc runs proc macros with in dev builds (`dev` plus the workspace's
//!    `[profile.dev.build-override] opt-level = 3`, as the `macro-bench` profile).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The spec field doc line both variants share; editing it changes the spec struct.
const MARKER: &str = "/// Velero version; must be offered in ProviderConfig `spec.versions`.";

struct Variant {
    example: &'static str,
    source: PathBuf,
    original: String,
}

/// Puts the sources back however the measurement ends.
struct Restore<'a>(&'a [Variant]);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        for variant in self.0 {
            if let Err(err) = std::fs::write(&variant.source, &variant.original) {
                eprintln!(
                    "error: could not restore {}: {err}",
                    variant.source.display()
                );
            }
        }
    }
}

fn cargo_quiet(args: &[&str]) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = crate::cargo()
        .args(args)
        .arg("--quiet")
        .status()
        .context("running cargo")?;
    let elapsed = start.elapsed();
    if !status.success() {
        bail!("`cargo {}` failed", args.join(" "));
    }
    Ok(elapsed)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub(crate) fn run(root: &Path, runs: usize, expansions: usize) -> anyhow::Result<ExitCode> {
    let runs = runs.max(1);
    let variants = [
        ("velero", root.join("examples/velero/main.rs")),
        (
            "velero-by-hand",
            root.join("xtask/macro-cost/velero_by_hand.rs"),
        ),
    ]
    .into_iter()
    .map(|(example, source)| {
        let original = std::fs::read_to_string(&source)
            .with_context(|| format!("reading {}", source.display()))?;
        if !original.contains(MARKER) {
            bail!(
                "{} lacks the line `{MARKER}` this measurement edits",
                source.display()
            );
        }
        Ok(Variant {
            example,
            source,
            original,
        })
    })
    .collect::<anyhow::Result<Vec<_>>>()?;

    println!("warming up: building both variants once");
    for variant in &variants {
        cargo_quiet(&["build", "--example", variant.example])?;
        cargo_quiet(&["check", "--example", variant.example])?;
    }

    let restore = Restore(&variants);
    let mut results: Vec<[Vec<Duration>; 2]> =
        variants.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    for run in 0..runs {
        for (mode_index, mode) in ["build", "check"].into_iter().enumerate() {
            // Alternate the order so neither variant always runs on a warmer machine.
            let order: Vec<usize> = if run % 2 == 0 { vec![0, 1] } else { vec![1, 0] };
            for i in order {
                let variant = &restore.0[i];
                let edited = variant
                    .original
                    .replace(MARKER, &format!("{MARKER} Edit {run}{mode}."));
                std::fs::write(&variant.source, edited)
                    .with_context(|| format!("editing {}", variant.source.display()))?;
                let took = cargo_quiet(&[mode, "--example", variant.example])?;
                println!(
                    "  run {run} {mode:>5} {:<15} {:6.2} s",
                    variant.example,
                    secs(took)
                );
                results[i][mode_index].push(took);
            }
        }
    }
    drop(restore);
    // Leave the build matching the sources again.
    for variant in &variants {
        cargo_quiet(&["build", "--example", variant.example])?;
    }

    println!(
        "\nexpansion: timing #[service_provider] on the velero declaration ({expansions} expansions)"
    );
    let output = crate::cargo()
        .args([
            "test",
            "--quiet",
            "--profile",
            "macro-bench",
            "-p",
            "service-provider-macros",
            "--lib",
            "velero_expansion",
            "--",
            "--nocapture",
        ])
        .env("SP_EXPANSIONS", expansions.to_string())
        .output()
        .context("running the expansion benchmark")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("macro-cost:"))
        .map(str::to_owned);
    if !output.status.success() || line.is_none() {
        eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        bail!("the expansion benchmark failed");
    }

    println!(
        "\nresults (median of {runs} runs, wall clock, incremental, after editing the spec struct):"
    );
    let [mut velero, mut by_hand] = [results.remove(0), results.remove(0)];
    for (mode_index, mode) in ["build", "check"].into_iter().enumerate() {
        let (macro_time, hand_time) = (
            median(&mut velero[mode_index]),
            median(&mut by_hand[mode_index]),
        );
        println!(
            "  cargo {mode:<5}  #[service_provider] {:6.2} s   kube-derive by hand {:6.2} s   ratio {:.3}x   delta {:+.2} s",
            secs(macro_time),
            secs(hand_time),
            secs(macro_time) / secs(hand_time),
            secs(macro_time) - secs(hand_time),
        );
    }
    println!(
        "  expansion      {}",
        line.unwrap_or_default().trim_start_matches("macro-cost: ")
    );
    Ok(ExitCode::SUCCESS)
}
