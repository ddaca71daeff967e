//! Upstream's Go controller as the peer of a side-by-side run (`ODH_BENCH_UPSTREAM_BIN`, built
//! outside the repository from upstream's source): how it is started, and the figures of both
//! summed up as medians and ratios.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Go controller's binary, when the run has one.
pub fn upstream_binary() -> Option<PathBuf> {
    std::env::var_os("ODH_BENCH_UPSTREAM_BIN")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The controllers a side-by-side run measures, in the order each round runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contender {
    /// The host binary (`common::host_binary`), logging at info (`--zap-devel=false`).
    Ours,
    /// Upstream's manager as its Deployment runs it (config/manager/manager.yaml): no zap
    /// flags, so controller-runtime's development logger (console encoder, debug level,
    /// unsampled), and NIM_STATE, KSERVE_STATE, MODELREGISTRY_STATE `replace`. Its
    /// `--leader-elect` is left out: outside a cluster controller-runtime finds no namespace
    /// for the lease and the manager does not start.
    GoProduction,
    /// The same with `--zap-devel=false`: controller-runtime's production logger (JSON, info
    /// level, sampled), the cheapest logging upstream offers short of hiding its info lines.
    GoInfo,
}

impl Contender {
    pub const ALL: [Contender; 3] = [Contender::Ours, Contender::GoProduction, Contender::GoInfo];

    pub fn label(self) -> &'static str {
        match self {
            Contender::Ours => "ours",
            Contender::GoProduction => "go_production",
            Contender::GoInfo => "go_info",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Contender::Ours => "odh-model-controller run --zap-devel=false (info, JSON)",
            Contender::GoProduction => {
                "upstream manager, its Deployment's flags (zap development: debug, console)"
            }
            Contender::GoInfo => "upstream manager --zap-devel=false (info, JSON, sampled)",
        }
    }

    pub fn program(self) -> PathBuf {
        match self {
            Contender::Ours => super::host_binary(),
            Contender::GoProduction | Contender::GoInfo => {
                upstream_binary().expect("ODH_BENCH_UPSTREAM_BIN")
            }
        }
    }

    /// The command that starts this controller against `kubeconfig`, with its controllers'
    /// namespace `namespace`, metrics and probes on the given loopback addresses. Webhooks are
    /// on when `webhooks` is Some(ours: the bind address and certificate directory; Go: its
    /// certificate directory; controller-runtime's server listens on :9443, which no flag
    /// changes, and reads `$TMPDIR/k8s-webhook-server/serving-certs`).
    pub fn command(
        self,
        kubeconfig: &Path,
        namespace: &str,
        metrics_addr: &str,
        health_addr: &str,
        webhooks: Option<(&str, &Path)>,
    ) -> Command {
        let mut cmd = Command::new(self.program());
        if self == Contender::Ours {
            cmd.arg("run");
        }
        cmd.env("POD_NAMESPACE", namespace)
            .env("KUBECONFIG", kubeconfig)
            .arg(format!("--metrics-bind-address={metrics_addr}"))
            .arg(format!("--health-probe-bind-address={health_addr}"));
        match self {
            Contender::Ours => {
                let cache = super::out_dir().join("plugin-cache");
                // As a pod of the image starts: the built-ins compiled already. Otherwise the
                // first round's peak RSS would be the compiler's (a fresh output directory, or
                // a binary of another build, finds nothing in the cache).
                static PRECOMPILED: std::sync::Once = std::sync::Once::new();
                PRECOMPILED.call_once(|| {
                    let status = Command::new(self.program())
                        .args(["plugin", "precompile", "--out"])
                        .arg(&cache)
                        .stdout(std::process::Stdio::null())
                        .status()
                        .expect("plugin precompile");
                    assert!(status.success(), "plugin precompile failed");
                });
                cmd.arg("--zap-devel=false")
                    .arg(format!("--kubeconfig={}", kubeconfig.display()))
                    // As the Deployment runs it: compiled plugins from the cache.
                    .arg(format!("--plugin-cache-dir={}", cache.display()));
                if let Some((bind, cert_dir)) = webhooks {
                    cmd.arg(format!("--webhook-bind-address={bind}"))
                        .arg(format!("--webhook-cert-dir={}", cert_dir.display()));
                }
            }
            Contender::GoProduction | Contender::GoInfo => {
                for (k, v) in [
                    ("NIM_STATE", "replace"),
                    ("KSERVE_STATE", "replace"),
                    ("MODELREGISTRY_STATE", "replace"),
                ] {
                    cmd.env(k, v);
                }
                if self == Contender::GoInfo {
                    cmd.arg("--zap-devel=false");
                }
                if let Some((_, cert_dir)) = webhooks {
                    // cert_dir is <tmp>/k8s-webhook-server/serving-certs.
                    let tmp = cert_dir
                        .parent()
                        .and_then(Path::parent)
                        .expect("a certificate directory two levels down");
                    cmd.env("TMPDIR", tmp);
                }
            }
        }
        cmd.env(
            "ENABLE_WEBHOOKS",
            if webhooks.is_some() { "true" } else { "false" },
        );
        cmd
    }
}

/// What each contender is, for the results.
pub fn describe_all() -> serde_json::Value {
    Contender::ALL
        .iter()
        .map(|c| (c.label().to_string(), c.describe().into()))
        .collect::<serde_json::Map<String, serde_json::Value>>()
        .into()
}

/// Whether a process started for a run is still running (not gone, not a zombie).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// The median of some figures (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Load average (1, 5, 15 minutes) now.
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(f64::NAN));
    [
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
    ]
}

/// Stops a process started for a run and waits for it.
pub fn stop(child: &mut std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}
