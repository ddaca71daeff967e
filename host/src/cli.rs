//! Command line: upstream's flags for the controller, plus our own subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::logging::Encoder;

#[derive(Debug, Parser)]
#[command(
    name = "odh-model-controller",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand the controller runs, as upstream's `/manager` does.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller (the default).
    Run(RunArgs),
    /// Print the CRDs this project owns, or write them into a directory.
    Crds {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Work with plugins offline: inspect a manifest, evaluate a call against files.
    #[command(subcommand)]
    Plugin(PluginCommand),
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Print a plugin's manifest as JSON (with its WIT package version and sha256).
    Inspect {
        /// A component file (`.wasm`) or the name of a built-in plugin.
        plugin: String,
    },
    /// Run one reconcile, mutate or validate call and print the result as JSON.
    Eval(crate::plugin_cli::EvalArgs),
}

/// Upstream's flags and defaults (spec part 2, §2.2).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The address the metrics endpoint binds to; `0` disables it.
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// The address the health probe endpoint binds to.
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Enable leader election; only the leader runs reconcilers.
    #[arg(long, default_value_t = false)]
    pub leader_elect: bool,
    /// Serve metrics over HTTPS with authentication.
    #[arg(long, default_value_t = false)]
    pub metrics_secure: bool,
    /// Allow HTTP/2 on the webhook and metrics servers.
    #[arg(long, default_value_t = false)]
    pub enable_http2: bool,
    /// Parsed for compatibility; unused (upstream reads MONITORING_NAMESPACE).
    #[arg(long, default_value = "")]
    pub monitoring_namespace: String,
    /// Path to a kubeconfig; otherwise KUBECONFIG, in-cluster, then ~/.kube/config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Development logging (console encoder, debug level), zap's default here.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub zap_devel: bool,
    /// Log encoding: json or console.
    #[arg(long)]
    pub zap_encoder: Option<Encoder>,
    /// Log level: debug, info or error.
    #[arg(long)]
    pub zap_log_level: Option<String>,
}

impl RunArgs {
    pub fn log_encoder(&self) -> Encoder {
        self.zap_encoder.unwrap_or(if self.zap_devel {
            Encoder::Console
        } else {
            Encoder::Json
        })
    }

    pub fn log_level(&self) -> String {
        self.zap_log_level
            .clone()
            .unwrap_or_else(|| if self.zap_devel { "debug" } else { "info" }.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_upstream() {
        let cli = Cli::try_parse_from(["odh-model-controller"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.metrics_bind_address, ":8080");
        assert_eq!(cli.run.health_probe_bind_address, ":8081");
        assert!(!cli.run.leader_elect && !cli.run.enable_http2 && !cli.run.metrics_secure);
        assert_eq!(cli.run.log_encoder(), Encoder::Console);
    }

    #[test]
    fn upstream_deployment_args_parse_without_subcommand() {
        let cli = Cli::try_parse_from([
            "odh-model-controller",
            "--leader-elect",
            "--health-probe-bind-address=:8082",
            "--zap-encoder=json",
        ])
        .unwrap();
        assert!(cli.run.leader_elect);
        assert_eq!(cli.run.health_probe_bind_address, ":8082");
        assert_eq!(cli.run.log_encoder(), Encoder::Json);
    }

    #[test]
    fn unknown_flag_is_rejected() {
        assert!(Cli::try_parse_from(["odh-model-controller", "--no-such-flag"]).is_err());
    }
}
