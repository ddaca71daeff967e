//! `odh-model-controller plugin record export --dir DIR [--plugin NAME]`: the calls the host
//! recorded (an entry's `record`), as JSON lines on stdout, each plugin's oldest first. Run it
//! in the controller's container (`kubectl exec`), where `DIR` is `<--plugin-cache-dir>/records`,
//! or from outside with `--url` (the secure metrics server's record route, `record_route`).

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
    #[arg(long, required_unless_present = "url", conflicts_with = "url")]
    pub dir: Option<PathBuf>,
    /// A running controller's secure metrics server (`--metrics-secure`), e.g.
    /// `https://localhost:8443` through `kubectl port-forward`: reads
    /// `/debug/plugins/<plugin>/record` with the bearer token of `--token-file`.
    #[arg(long, requires_all = ["plugin", "token_file"])]
    pub url: Option<String>,
    /// A file holding the bearer token (e.g. `kubectl create token <sa> > token`); its user
    /// needs `get` on the non-resource URL `/debug/plugins/*`.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// CA certificates (PEM) the server's certificate is checked against.
    #[arg(long, value_name = "PATH", conflicts_with = "insecure_skip_tls_verify")]
    pub ca_file: Option<PathBuf>,
    /// Believe any server certificate (the metrics server's own is self-signed, as upstream's):
    /// only through a channel you trust, such as `kubectl port-forward`.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
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
    if let Some(url) = &args.url {
        let text = remote::fetch(url, args).map_err(usage)?;
        return write_lines(&text, out);
    }
    let Some(root) = &args.dir else {
        return Err(usage(anyhow::anyhow!("give --dir or --url")));
    };
    let plugins: Vec<PathBuf> = match &args.plugin {
        Some(name) => {
            let dir = root.join(name);
            if !dir.is_dir() {
                return Err(usage(anyhow::anyhow!(
                    "no record of plugin {name:?} in {} (is its entry's record on?)",
                    root.display()
                )));
            }
            vec![dir]
        }
        None => {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
                .map_err(|e| usage(anyhow::anyhow!("reading {}: {e}", root.display())))?
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
        let (w, s) = write_lines(&text, out)?;
        written += w;
        skipped += s;
    }
    Ok((written, skipped))
}

/// Writes the record lines of `text` to `out`, skipping what is not one.
fn write_lines(text: &str, out: &mut impl Write) -> Result<(u64, u64), EvalError> {
    let (mut written, mut skipped) = (0, 0);
    for line in text.lines() {
        if RecordLine::parse(line).is_err() {
            skipped += 1;
            continue;
        }
        writeln!(out, "{line}").map_err(|e| usage(anyhow::anyhow!("writing: {e}")))?;
        written += 1;
    }
    Ok((written, skipped))
}

/// The record route of a running controller, read over HTTPS with a bearer token.
mod remote {
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Bytes;

    use super::ExportArgs;
    use crate::plugin::HttpTrust;

    pub(super) fn fetch(url: &str, args: &ExportArgs) -> anyhow::Result<String> {
        let plugin = args.plugin.as_deref().unwrap_or_default();
        let token_file = args
            .token_file
            .as_deref()
            .unwrap_or(std::path::Path::new(""));
        let token = std::fs::read_to_string(token_file)
            .map_err(|e| anyhow::anyhow!("reading --token-file {}: {e}", token_file.display()))?;
        let trust = match (&args.ca_file, args.insecure_skip_tls_verify) {
            (_, true) => HttpTrust::accepting_any_certificate(),
            (Some(ca), false) => HttpTrust::with_pem_files(&[ca])?,
            (None, false) => HttpTrust::default(),
        };
        let base: hyper::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("--url {url:?}: {e}"))?;
        anyhow::ensure!(
            base.scheme_str() == Some("https"),
            "--url {url:?}: the record route is served over HTTPS only (--metrics-secure)"
        );
        let host = base
            .host()
            .ok_or_else(|| anyhow::anyhow!("--url {url:?} names no host"))?
            .trim_matches(['[', ']'])
            .to_string();
        let port = base.port_u16().unwrap_or(443);
        let path = format!("/debug/plugins/{plugin}/record");
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(get(&host, port, &path, token.trim(), trust))
    }

    async fn get(
        host: &str,
        port: u16,
        path: &str,
        token: &str,
        trust: HttpTrust,
    ) -> anyhow::Result<String> {
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| anyhow::anyhow!("connecting to {host}:{port}: {e}"))?;
        let name = rustls::pki_types::ServerName::try_from(host.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(trust.client_config())
            .connect(name, tcp)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "TLS with {host}:{port}: {e} (the metrics server's certificate is its own: give --ca-file, or --insecure-skip-tls-verify through a port-forward)"
                )
            })?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
        tokio::spawn(connection);
        let request = hyper::Request::get(path)
            .header(hyper::header::HOST, format!("{host}:{port}"))
            .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Empty::<Bytes>::new())?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let body = String::from_utf8_lossy(&body).into_owned();
        anyhow::ensure!(status.is_success(), "GET {path}: {status}: {}", body.trim());
        Ok(body)
    }
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
