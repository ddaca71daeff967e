//! `odh-model-controller plugin record export --dir DIR [--plugin NAME]`: the calls the host
//! recorded (an entry's `record`), as JSON lines on stdout, each plugin's oldest first. Run it
//! in the controller's container (`kubectl exec`), where `DIR` is `<--plugin-cache-dir>/records`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::plugin::record::{RecordLine, segment_files};
use crate::plugin_cli::EvalError;

#[derive(Debug, clap::Subcommand)]
pub enum RecordCommand {
    /// Print recorded calls as JSON lines (the input of `plugin replay`).
    Export(ExportArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    /// The records directory: `<--plugin-cache-dir>/records`, one directory per plugin.
    #[arg(long)]
    pub dir: PathBuf,
    /// Only this plugin's calls.
    #[arg(long)]
    pub plugin: Option<String>,
}

fn usage(e: impl Into<anyhow::Error>) -> EvalError {
    EvalError::Usage(e.into())
}

/// Writes every recorded line to `out`; returns how many were written and how many were
/// skipped (a line cut short when the process stopped mid-write).
pub fn export(args: &ExportArgs, out: &mut impl Write) -> Result<(u64, u64), EvalError> {
    let plugins: Vec<PathBuf> = match &args.plugin {
        Some(name) => {
            let dir = args.dir.join(name);
            if !dir.is_dir() {
                return Err(usage(anyhow::anyhow!(
                    "no record of plugin {name:?} in {} (is its entry's record on?)",
                    args.dir.display()
                )));
            }
            vec![dir]
        }
        None => {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(&args.dir)
                .map_err(|e| usage(anyhow::anyhow!("reading {}: {e}", args.dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            dirs.sort();
            dirs
        }
    };
    let (mut written, mut skipped) = (0, 0);
    for dir in plugins {
        let (w, s) = export_plugin(&dir, out)?;
        written += w;
        skipped += s;
    }
    Ok((written, skipped))
}

fn export_plugin(dir: &Path, out: &mut impl Write) -> Result<(u64, u64), EvalError> {
    let files =
        segment_files(dir).map_err(|e| usage(anyhow::anyhow!("reading {}: {e}", dir.display())))?;
    let (mut written, mut skipped) = (0, 0);
    for file in files {
        // A file removed since it was listed was pruned by the recorder: its lines are gone.
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines() {
            if RecordLine::parse(line).is_err() {
                skipped += 1;
                continue;
            }
            writeln!(out, "{line}").map_err(|e| usage(anyhow::anyhow!("writing: {e}")))?;
            written += 1;
        }
    }
    Ok((written, skipped))
}

/// Runs `plugin record …`: lines on stdout, a count on stderr.
pub fn main(cmd: &RecordCommand) -> std::process::ExitCode {
    let RecordCommand::Export(args) = cmd;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = export(args, &mut out);
    let flushed = out.flush();
    match (result, flushed) {
        (Ok((written, skipped)), Ok(())) => {
            eprintln!(
                "exported {written} recorded calls{}",
                if skipped > 0 {
                    format!(" ({skipped} incomplete lines skipped)")
                } else {
                    String::new()
                }
            );
            std::process::ExitCode::SUCCESS
        }
        (Err(e), _) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
        (_, Err(e)) => {
            eprintln!("error: writing: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
