//! The `odh-model-controller` binary as a child process: [`HostProcess`] runs it with any
//! arguments, [`ServingHost`] runs `run` serving its webhooks on loopback, ready.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::net::{free_port, get, rand_suffix, remove_dir, serving_cert};

/// An `odh-model-controller` child process, killed when dropped.
pub struct HostProcess {
    pub child: std::process::Child,
    /// Its stdout and stderr.
    pub log: PathBuf,
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows the log in its error (or panics and keeps the file to read).
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

impl HostProcess {
    /// Starts `odh-model-controller run` against the test cluster with `args` (JSON logs,
    /// metrics off unless given) and `env`; output goes to a log file named after `name`.
    pub fn start(name: &str, args: &[String], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start_as(&crate::cluster()?.kubeconfig, name, args, env)
    }

    /// [`HostProcess::start`] with the credentials of `kubeconfig` (e.g. a ServiceAccount's
    /// token, see [`crate::service_account`]).
    pub fn start_as(
        kubeconfig: &Path,
        name: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let mut run = vec![
            "run".to_string(),
            "--zap-devel=false".to_string(),
            format!("--kubeconfig={}", kubeconfig.display()),
        ];
        // The compiled built-ins are shared between the hosts of a test run (wasmtime's output
        // keyed by the component's digest and the engine's settings): a host compiling all of
        // them at start can outlast a readiness wait on a loaded machine.
        if !args.iter().any(|a| a.starts_with("--plugin-cache-dir")) {
            run.push(format!(
                "--plugin-cache-dir={}",
                crate::workspace_root()
                    .join("target/test-plugin-cache")
                    .display()
            ));
        }
        run.extend_from_slice(args);
        // The profile switches come from the test, not from whoever runs it.
        Self::spawn(name, &run, &["ODH_PLATFORM_TYPE", "ENABLE_WEBHOOKS"], env)
    }

    /// Starts the binary ([`crate::binary::host`]) with exactly `args`, without the variables
    /// `unset` and with `env`; output goes to a log file named after `name`.
    pub fn spawn(
        name: &str,
        args: &[String],
        unset: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let log = std::env::temp_dir().join(format!(
            "{name}-{}-{}.log",
            std::process::id(),
            rand_suffix()
        ));
        let file = std::fs::File::create(&log)?;
        let mut cmd = std::process::Command::new(crate::binary::host());
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        for var in unset {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        Ok(Self {
            child: cmd.spawn()?,
            log,
        })
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, and waits for it to die: no shutdown code runs.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM, as the kubelet does on pod deletion.
    pub fn terminate(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the process to exit, at most `within`.
    pub fn wait(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `odh-model-controller run` serving its webhooks on loopback with a fresh certificate, ready.
pub struct ServingHost {
    pub process: HostProcess,
    pub webhook_port: u16,
    /// The CA bundle a webhook configuration needs (the self-signed serving certificate).
    pub ca_pem: String,
    cert_dir: PathBuf,
}

impl ServingHost {
    /// Starts the host with the default plugins, metrics off and `env`, and waits until
    /// `/readyz` answers 200 (the error carries the host's log).
    pub async fn start(name: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start_with(name, false, env).await
    }

    /// [`ServingHost::start`]; with `sync_webhooks` the host also keeps the cluster's webhook
    /// configurations in step with what it serves, pointing the apiserver at its loopback port.
    pub async fn start_with(
        name: &str,
        sync_webhooks: bool,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        Self::start_as(&crate::cluster()?.kubeconfig, name, sync_webhooks, env).await
    }

    /// [`ServingHost::start_with`] with the credentials of `kubeconfig`.
    pub async fn start_as(
        kubeconfig: &Path,
        name: &str,
        sync_webhooks: bool,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        Self::start_as_with_args(kubeconfig, name, sync_webhooks, &[], env).await
    }

    /// [`ServingHost::start_as`] with `extra_args` after the test's own flags.
    pub async fn start_as_with_args(
        kubeconfig: &Path,
        name: &str,
        sync_webhooks: bool,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let (cert_dir, _) = serving_cert(name);
        let ca_pem = std::fs::read_to_string(cert_dir.join("tls.crt"))?;
        let webhook_port = free_port();
        let health_port = free_port();
        let mut args = vec![
            "--metrics-bind-address=0".to_string(),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
            format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        ];
        if sync_webhooks {
            args.push("--sync-webhook-configurations".into());
            args.push(format!("--webhook-url=https://127.0.0.1:{webhook_port}"));
        }
        args.extend(extra_args.iter().map(|a| a.to_string()));
        let host = Self {
            process: HostProcess::start_as(kubeconfig, name, &args, env)?,
            webhook_port,
            ca_pem,
            cert_dir,
        };
        crate::eventually("the host is ready", crate::Timing::default(), || async {
            let reply = get(([127, 0, 0, 1], health_port).into(), "/readyz").await?;
            anyhow::ensure!(reply.status == 200, "{}: {}", reply.status, reply.body);
            Ok(())
        })
        .await
        .map_err(|e| host.with_log(e))?;
        Ok(host)
    }

    /// `e` with the host's output so far.
    pub fn with_log(&self, e: anyhow::Error) -> anyhow::Error {
        anyhow::anyhow!("{e}; log: {}", self.process.output())
    }

    /// The `clientConfig` of a webhook configuration entry for `path` on this host.
    pub fn client_config(&self, path: &str) -> serde_json::Value {
        use base64::Engine as _;
        serde_json::json!({
            "url": format!("https://127.0.0.1:{}{path}", self.webhook_port),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
        })
    }
}

impl Drop for ServingHost {
    fn drop(&mut self) {
        remove_dir(&self.cert_dir);
    }
}
