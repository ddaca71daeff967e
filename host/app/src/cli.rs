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
    Run(Box<RunArgs>),
    /// Print the CRDs this project owns, or write them into a directory.
    Crds {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Generate the parts of `deploy/` that follow from the built-in plugins' manifests (RBAC,
    /// webhook configurations), or check that they are current.
    DeployManifests {
        /// The `deploy/` directory.
        #[arg(long, default_value = "deploy")]
        dir: PathBuf,
        /// Change nothing; fail when a file differs from what would be generated.
        #[arg(long)]
        check: bool,
    },
    /// Work with plugins offline: inspect a manifest, evaluate a call against files.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Run the model-serving-api server alone, as upstream's own Deployment does: configured
    /// by upstream's environment (LISTEN_ADDR, TLS_CERT_DIR, METRICS_ADDR, LOG_LEVEL,
    /// READ_TIMEOUT, WRITE_TIMEOUT, IDLE_TIMEOUT, KUBE_QPS, KUBE_BURST,
    /// GATEWAY_LABEL_SELECTOR); no controllers, webhooks or leader election.
    ModelServingApi(ModelServingApiArgs),
}

/// `model-serving-api`'s flags; its configuration is the environment.
#[derive(Debug, Clone, Args)]
pub struct ModelServingApiArgs {
    /// Path to a kubeconfig; otherwise KUBECONFIG, in-cluster, then ~/.kube/config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The plugins whose API routes are served: built-in names or `.wasm` files
    /// (repeatable); by default the llm-gateway plugin.
    #[arg(long = "plugin", value_name = "NAME|FILE")]
    pub plugins: Vec<String>,
    /// Where compiled plugins are cached between starts.
    #[arg(long)]
    pub plugin_cache_dir: Option<PathBuf>,
    /// Plugins compiled when the image was built (`plugin precompile`); read only.
    #[arg(long, default_value = crate::plugin::PRECOMPILED_DIR)]
    pub plugin_precompiled_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Print a plugin's manifest as JSON (with its WIT package version and sha256; for
    /// `oci://…` also its manifest digest and signature status).
    Inspect(crate::plugin_publish::InspectArgs),
    /// Run one reconcile, mutate or validate call and print the result as JSON.
    Eval(crate::plugin_cli::EvalArgs),
    /// Publish a component to an OCI registry (one `application/wasm` layer).
    Push(crate::plugin_publish::PushArgs),
    /// Sign a published component as cosign does (the signature is stored beside it).
    Sign(crate::plugin_publish::SignArgs),
    /// Make an ECDSA P-256 key pair for `plugin sign`.
    Keygen(crate::plugin_publish::KeygenArgs),
    /// Compile the built-in plugins into a directory, for `--plugin-precompiled-dir` (run when
    /// the image is built, so no pod compiles them at start).
    Precompile(crate::plugin_cli::PrecompileArgs),
    /// Write a new plugin crate (manifest, webhooks, a controller, native tests, samples, a
    /// README with the build/inspect/eval/ship commands) that builds and passes its tests.
    New(crate::plugin_new::NewArgs),
    /// Call a candidate version offline on every call of a record and report what it answers
    /// differently; exit 3 past `--max-changed` or `--max-changed-ratio`.
    Replay(crate::plugin_replay::ReplayArgs),
    /// Work with the calls the host recorded (an entry's `record`).
    #[command(subcommand)]
    Record(crate::plugin_record::RecordCommand),
}

/// Upstream's flags and defaults (its `cmd/main.go`).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The address the metrics endpoint binds to; `0` disables it.
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// The address the health probe endpoint binds to.
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Enable leader election; only the leader runs reconcilers.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub leader_elect: bool,
    /// Serve metrics over HTTPS with authentication.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub metrics_secure: bool,
    /// Allow HTTP/2 on the webhook and metrics servers.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub enable_http2: bool,
    /// Parsed for compatibility; unused (upstream reads MONITORING_NAMESPACE).
    #[arg(long, default_value = "")]
    pub monitoring_namespace: String,
    /// Path to a kubeconfig; otherwise KUBECONFIG, in-cluster, then ~/.kube/config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Development logging (console encoder, debug level), upstream's default; `false`:
    /// JSON at info.
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub zap_devel: bool,
    /// Log encoding: json or console.
    #[arg(long)]
    pub zap_encoder: Option<Encoder>,
    /// Log level: debug, info, error, panic, or an integer > 0 (more verbose as it grows).
    #[arg(long, value_parser = parse_zap_level)]
    pub zap_log_level: Option<String>,
    /// Level at and above which zap captures stack traces (info, error, panic): accepted for
    /// upstream's Deployments; a Rust log line carries no goroutine stack to capture.
    #[arg(long, value_parser = ["info", "error", "panic"])]
    pub zap_stacktrace_level: Option<String>,
    /// Time encoding of log lines (epoch, millis, nano, iso8601, rfc3339, rfc3339nano);
    /// unset: RFC 3339 with microseconds.
    #[arg(long)]
    pub zap_time_encoding: Option<crate::logging::TimeEncoding>,
    /// Plugins to serve besides the default built-ins: names of built-in plugins or paths of
    /// `.wasm` components (repeatable).
    #[arg(long = "plugin", value_name = "NAME|FILE")]
    pub plugins: Vec<String>,
    /// Serve only the plugins `--plugin` names, not the default built-ins.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub no_default_plugins: bool,
    /// Keep the Mutating/ValidatingWebhookConfigurations in step with the webhooks served
    /// (off where an operator owns them).
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub sync_webhook_configurations: bool,
    /// Namespaces (comma-separated) no webhook of a plugin added at run time is called for,
    /// besides kube-system, kube-public, kube-node-lease, OpenShift's control plane and
    /// POD_NAMESPACE, which are always excluded. Built-in webhooks keep upstream's selectors.
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACES")]
    pub webhook_excluded_namespaces: Vec<String>,
    /// The Service in front of the webhook servers, in POD_NAMESPACE, as the synced
    /// configurations name it.
    #[arg(long, default_value = "odh-model-controller-webhook-service")]
    pub webhook_service: String,
    /// The port of `--webhook-service`.
    #[arg(long, default_value_t = 443)]
    pub webhook_service_port: u16,
    /// A base URL the apiserver reaches the webhook server at, instead of the Service (a
    /// controller outside the cluster, e.g. `https://127.0.0.1:9443`).
    #[arg(long)]
    pub webhook_url: Option<String>,
    /// Leave the synced configurations' `caBundle` to OpenShift's service CA or cert-manager's
    /// CA injector instead of writing the serving certificate's CA.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub webhook_ca_injected: bool,
    /// The admission webhook server's address (controller-runtime's default port).
    #[arg(long, default_value = ":9443")]
    pub webhook_bind_address: String,
    /// Directory holding the webhook server's `tls.crt` and `tls.key` (reloaded on change).
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_dir: PathBuf,
    /// How many full-size (8 MiB) admission requests the webhook server holds at once; each
    /// request weighs its body's declared length (at least 64 KiB), so many more small ones
    /// fit. Past it requests queue for up to 10 s, then get 503 (the webhook's failurePolicy
    /// applies). Default: twice the summed `concurrency` of the plugins serving webhooks at
    /// start.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub webhook_max_requests_in_flight: Option<u64>,
    /// The model-serving-api server's address (HTTPS); `0` disables it.
    #[arg(long, default_value = "0")]
    pub model_serving_api_bind_address: String,
    /// Directory holding the model-serving-api server's `tls.crt` and `tls.key` (reloaded on
    /// change); upstream's `TLS_CERT_DIR`.
    #[arg(
        long,
        env = "TLS_CERT_DIR",
        default_value = "/tmp/model-serving-api/serving-certs"
    )]
    pub model_serving_api_cert_dir: PathBuf,
    /// Requests per second to each API resource (controller-runtime's client default, 20);
    /// `0`: unlimited.
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f64,
    /// Requests to one API resource that may go at once before `--kube-api-qps` paces them
    /// (controller-runtime's client default, 30).
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Workers per controller.
    #[arg(long, default_value_t = 1)]
    pub max_concurrent_reconciles: usize,
    /// How often every primary object is reconciled without an event (controller-runtime's
    /// cache SyncPeriod, 10 h, with up to 10% jitter); `0` never.
    #[arg(long, default_value = "10h", value_parser = parse_duration)]
    pub sync_period: std::time::Duration,
    /// On SIGTERM, how long the webhook and model-serving API servers keep serving before they
    /// stop: /readyz fails and every answer says `Connection: close`, so callers (the apiserver)
    /// move to another replica instead of sending a request on a connection being closed.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub shutdown_drain_duration: std::time::Duration,
    /// Leader election: how long a lease is valid (controller-runtime's default).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: std::time::Duration,
    /// Leader election: how long the leader keeps trying to renew before it gives up.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,
    /// Leader election: release the lease when the process stops (after its controllers
    /// stopped), so a successor takes over at once; by default it expires.
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub leader_elect_release_on_cancel: bool,
    /// Leader election: how often candidates retry.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: std::time::Duration,
    /// Field managers of the controller this one replaces, comma-separated (the Go controller
    /// writes as `manager`): their fields are taken over on first apply and objects they
    /// created count as ours for deletes. Empty: none.
    #[arg(long, default_value = "manager", value_delimiter = ',')]
    pub adopt_field_managers: Vec<String>,
    /// Where compiled plugins are cached between starts.
    #[arg(long)]
    pub plugin_cache_dir: Option<PathBuf>,
    /// Plugins compiled when the image was built (`plugin precompile`); read only.
    #[arg(long, default_value = crate::plugin::PRECOMPILED_DIR)]
    pub plugin_precompiled_dir: PathBuf,
    /// The directory `file://` sources of the plugins ConfigMap are read from (regular files
    /// under it only); unset, such sources are refused.
    #[arg(long, value_name = "DIR")]
    pub plugin_file_dir: Option<PathBuf>,
    /// PEM files of CAs a plugin's HTTPS trusts besides the public web PKI (repeatable); by
    /// default OpenShift's service CA beside the ServiceAccount token, when it is there.
    #[arg(long = "plugin-http-ca-file", value_name = "FILE")]
    pub plugin_http_ca_files: Vec<PathBuf>,
    /// Memory (MiB) all plugin calls in flight may hold together; by default half the
    /// container's memory limit (none without one). Past it a call's memory growth fails.
    #[arg(long, value_name = "MIB")]
    pub plugin_memory_budget_mib: Option<usize>,
    /// The ceiling of the plugins ConfigMap (docs/security.md): kinds an entry may grant reads
    /// of beyond what its plugin holds without a grant. `*`: every kind but the sensitive ones
    /// (Secrets, Pods, workloads, RBAC, webhook configurations, CRDs); `Kind`, `Kind.group`,
    /// `*.group` add kinds, sensitive ones included; empty: none.
    #[arg(long, default_value = "*", value_delimiter = ',', value_name = "KINDS")]
    pub plugin_grantable_reads: Vec<String>,
    /// The ceiling: kinds an entry may grant writes of (as `--plugin-grantable-reads`).
    #[arg(long, default_value = "*", value_delimiter = ',', value_name = "KINDS")]
    pub plugin_grantable_writes: Vec<String>,
    /// The ceiling: kinds a plugin may intercept with webhooks the version it replaces did not
    /// have (as `--plugin-grantable-reads`).
    #[arg(long, default_value = "*", value_delimiter = ',', value_name = "KINDS")]
    pub plugin_grantable_webhook_kinds: Vec<String>,
    /// The ceiling: HTTP host patterns an entry may grant (`host`, `host:port`, `*.suffix`,
    /// `*` for any host the address checks allow).
    #[arg(long, default_value = "*", value_delimiter = ',', value_name = "HOSTS")]
    pub plugin_grantable_hosts: Vec<String>,
    /// The ceiling: namespaces an entry may add to `serviceAccountNamespaces` (whose Services
    /// may receive the controller's token) beyond the built-ins' own.
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACES")]
    pub plugin_grantable_identity_namespaces: Vec<String>,
    /// `required`: every plugin from outside the host must be an `oci://` artifact signed by a
    /// trusted key (a sha256 pin alone is refused); `optional`: as each entry says.
    #[arg(long, default_value = "optional", value_name = "optional|required")]
    pub plugin_signatures: odh_plugin_sources::SignatureRequirement,
    /// Fingerprints (as `plugin keygen` and `plugin inspect` print them) of the only keys whose
    /// signatures count, whatever keys an entry's key source holds; empty: those keys.
    #[arg(long, value_delimiter = ',', value_name = "FINGERPRINTS")]
    pub plugin_trusted_keys: Vec<String>,
}

impl RunArgs {
    /// The ceiling the `--plugin-grantable-*`, `--plugin-signatures` and
    /// `--plugin-trusted-keys` flags set.
    pub fn plugin_ceiling(&self) -> anyhow::Result<odh_plugin_sources::Ceiling> {
        use odh_plugin_sources::KindCeiling;
        let kinds = |flag: &str, items: &[String]| {
            KindCeiling::parse(items).map_err(|m| anyhow::anyhow!("--{flag}: {m}"))
        };
        let listed = |items: &[String]| {
            items
                .iter()
                .map(|i| i.trim().to_string())
                .filter(|i| !i.is_empty())
                .collect::<std::collections::BTreeSet<String>>()
        };
        Ok(odh_plugin_sources::Ceiling {
            reads: kinds("plugin-grantable-reads", &self.plugin_grantable_reads)?,
            writes: kinds("plugin-grantable-writes", &self.plugin_grantable_writes)?,
            webhook_kinds: kinds(
                "plugin-grantable-webhook-kinds",
                &self.plugin_grantable_webhook_kinds,
            )?,
            http_hosts: odh_plugin_sources::ceiling::hosts(listed(&self.plugin_grantable_hosts)),
            identity_namespaces: listed(&self.plugin_grantable_identity_namespaces),
            signatures: self.plugin_signatures,
            trusted_keys: listed(&self.plugin_trusted_keys)
                .into_iter()
                .map(|k| k.to_ascii_lowercase())
                .collect(),
        })
    }
}

/// A duration such as `15s`, `500ms`, `2m`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" | "" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit in {s:?} (use ms, s, m or h)"
            ));
        }
    };
    Ok(std::time::Duration::from_secs_f64(secs))
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

/// A boolean as Go's `strconv.ParseBool` reads one (`--flag` alone is `true`).
pub(crate) fn parse_go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        other => Err(format!("invalid boolean value {other:?}")),
    }
}

/// A zap level as controller-runtime's `--zap-log-level` takes it, as the tracing level it
/// means: `debug`, `info`, `error`, `panic` (nothing is logged below a panic: `off`), or a
/// verbosity `n > 0` (`1` is debug, more is trace).
fn parse_zap_level(s: &str) -> Result<String, String> {
    let level = match s.to_ascii_lowercase().as_str() {
        "debug" => "debug",
        "info" => "info",
        "error" => "error",
        "panic" => "off",
        other => match other.parse::<i64>() {
            Ok(1) => "debug",
            Ok(n) if n > 1 => "trace",
            _ => {
                return Err(format!(
                    "invalid log level {s:?}: one of debug, info, error, panic or an integer > 0"
                ));
            }
        },
    };
    Ok(level.to_string())
}

/// Go's `flag` package accepts `-name` as well as `--name`; clap only the latter. Rewrites
/// single-dash long flags so upstream's Deployment arguments keep working.
pub fn normalize_go_flags(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let single_dash_long = i > 0
                && a.starts_with('-')
                && !a.starts_with("--")
                && a.len() > 2
                && a.as_bytes()[1].is_ascii_alphabetic();
            if single_dash_long { format!("-{a}") } else { a }
        })
        .collect()
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
        assert_eq!(cli.run.webhook_max_requests_in_flight, None);
    }

    #[test]
    fn the_bound_on_admission_requests_in_flight_is_a_positive_number() {
        let parse = |v: &str| {
            Cli::try_parse_from([
                "odh-model-controller",
                "--webhook-max-requests-in-flight",
                v,
            ])
            .map(|c| c.run.webhook_max_requests_in_flight)
        };
        assert_eq!(parse("32").unwrap(), Some(32));
        assert!(parse("0").is_err());
        assert!(parse("-1").is_err());
        assert!(parse("many").is_err());
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

    /// Every flag controller-runtime's zap `BindFlags` and upstream's `main.go` define parses
    /// as Go would take it, with its meaning.
    #[test]
    fn upstream_flags_parse_as_go_takes_them() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("odh-model-controller").chain(args.iter().copied()))
                .map(|c| c.run)
        };
        type Holds = fn(&RunArgs) -> bool;
        let cases: &[(&[&str], Holds)] = &[
            (&["--zap-devel"], |a| a.zap_devel),
            (&["--zap-devel=false"], |a| {
                !a.zap_devel && a.log_encoder() == Encoder::Json && a.log_level() == "info"
            }),
            (&["--zap-devel=0"], |a| !a.zap_devel),
            (&["--zap-encoder=console", "--zap-devel=false"], |a| {
                a.log_encoder() == Encoder::Console
            }),
            (&["--zap-log-level=error"], |a| a.log_level() == "error"),
            (&["--zap-log-level=panic"], |a| a.log_level() == "off"),
            (&["--zap-log-level=1"], |a| a.log_level() == "debug"),
            (&["--zap-log-level=5"], |a| a.log_level() == "trace"),
            (&["--zap-stacktrace-level=error"], |a| {
                a.zap_stacktrace_level.as_deref() == Some("error")
            }),
            (&["--zap-time-encoding=rfc3339nano"], |a| {
                a.zap_time_encoding == Some(crate::logging::TimeEncoding::Rfc3339nano)
            }),
            (&["--zap-time-encoding=epoch"], |a| {
                a.zap_time_encoding == Some(crate::logging::TimeEncoding::Epoch)
            }),
            (&["--leader-elect"], |a| a.leader_elect),
            (&["--leader-elect=true"], |a| a.leader_elect),
            (&["--leader-elect=false"], |a| !a.leader_elect),
            (&["--metrics-secure=false", "--enable-http2=true"], |a| {
                !a.metrics_secure && a.enable_http2
            }),
        ];
        for (args, holds) in cases {
            let run = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert!(holds(&run), "{args:?}");
        }
        for bad in [
            &["--zap-log-level=verbose"][..],
            &["--zap-log-level=0"],
            &["--zap-stacktrace-level=debug"],
            &["--zap-time-encoding=unix"],
            &["--leader-elect=maybe"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} must be refused");
        }
        // `--flag value` is Go's syntax for non-booleans only: a bare bool takes no value.
        let run = parse(&["--leader-elect", "--zap-log-level", "info"]).unwrap();
        assert!(run.leader_elect && run.log_level() == "info");
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(
            parse_duration("15s"),
            Ok(std::time::Duration::from_secs(15))
        );
        assert_eq!(
            parse_duration("500ms"),
            Ok(std::time::Duration::from_millis(500))
        );
        assert_eq!(
            parse_duration("2m"),
            Ok(std::time::Duration::from_secs(120))
        );
        assert!(parse_duration("soon").is_err() && parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn model_serving_api_is_a_subcommand() {
        let cli = Cli::try_parse_from(["odh-model-controller", "model-serving-api"]).unwrap();
        let Some(Command::ModelServingApi(args)) = cli.command else {
            panic!("not the model-serving-api subcommand");
        };
        assert!(args.plugins.is_empty() && args.kubeconfig.is_none());
        let cli = Cli::try_parse_from([
            "odh-model-controller",
            "model-serving-api",
            "--kubeconfig=/k",
            "--plugin=llm-gateway",
        ])
        .unwrap();
        assert!(
            matches!(cli.command, Some(Command::ModelServingApi(a)) if a.plugins == ["llm-gateway"])
        );
    }

    #[test]
    fn unknown_flag_is_rejected() {
        assert!(Cli::try_parse_from(["odh-model-controller", "--no-such-flag"]).is_err());
    }

    #[test]
    fn go_style_single_dash_flags_are_accepted() {
        let args = [
            "bin",
            "-leader-elect",
            "--metrics-bind-address=:8080",
            "-h",
            "-x",
            "plain",
        ]
        .map(String::from);
        assert_eq!(
            normalize_go_flags(args),
            vec![
                "bin",
                "--leader-elect",
                "--metrics-bind-address=:8080",
                "-h",
                "-x",
                "plain"
            ]
        );
    }
}
