//! The provider binary's command line: what `service_provider::run::<P>()` does with its arguments.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::manifests;
use crate::provider::Reconcile;

/// The command line of a provider binary.
#[derive(Debug, Parser)]
#[command(about = "An openMCP service provider built with service-provider")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write every manifest of this provider (CRDs, kcp APIResourceSchema and APIExport, RBAC)
    /// into a directory, one object per YAML file, removing files that are no longer generated.
    Manifests {
        /// The directory to write into; created when missing.
        #[arg(long, short)]
        output: PathBuf,
        /// Change nothing; list the files that are missing, stale or extra, and fail if any are.
        #[arg(long)]
        check: bool,
    },
}

/// Runs the provider binary for `P` with the process's arguments; the whole `main` of a provider.
///
/// ```text
/// fn main() -> std::process::ExitCode { service_provider::run::<Velero>() }
/// ```
pub fn run<P: Reconcile>() -> ExitCode {
    run_with_args::<P, _, _>(std::env::args_os())
}

/// [`run`] with explicit arguments (the first is the program name), for tests.
pub fn run_with_args<P, I, T>(args: I) -> ExitCode
where
    P: Reconcile,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // Prints help or the usage error and exits with clap's code (0 for --help).
        Err(err) => err.exit(),
    };
    match cli.command {
        Command::Manifests { output, check } => manifests_command::<P>(output, check),
    }
}

fn manifests_command<P: Reconcile>(output: PathBuf, check: bool) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    if check {
        match manifests::check::<P>(&output) {
            Ok(differences) if differences.is_empty() => {
                let _ = writeln!(stdout, "{}: up to date", output.display());
                ExitCode::SUCCESS
            }
            Ok(differences) => {
                for difference in &differences {
                    eprintln!("{difference}");
                }
                eprintln!(
                    "{}: {} file(s) differ from what {} generates; regenerate them with `manifests --output {}`",
                    output.display(),
                    differences.len(),
                    P::INFO.kind,
                    output.display()
                );
                ExitCode::FAILURE
            }
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        }
    } else {
        match manifests::write::<P>(&output) {
            Ok(reports) => {
                for report in reports {
                    let _ = writeln!(stdout, "{report}");
                }
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        }
    }
}
