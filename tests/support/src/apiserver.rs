//! Finding or starting the shared test apiserver.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;

/// How to reach the cluster the tests run against.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub kubeconfig: PathBuf,
    /// True when the tests use a cluster they did not start.
    pub existing: bool,
}

/// The ready line the launcher prints (and writes to its ready file).
#[derive(Debug, Deserialize)]
struct Ready {
    kubeconfig: PathBuf,
    pid: u32,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
/// This process's lease on the shared apiserver; the lock lives as long as the process.
static LEASE: OnceLock<File> = OnceLock::new();

/// The cluster for this test process, started or joined on first use.
pub fn cluster() -> anyhow::Result<&'static Cluster> {
    CLUSTER
        .get_or_init(|| resolve().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("test cluster unavailable: {e}"))
}

/// Makes this test process use an apiserver of its own (`target/test-apiserver-<name>`)
/// instead of the shared one, for tests that change what every other test would see (the
/// cluster's webhook configurations). Call it first, before anything touches the cluster; with
/// `ODH_TEST_USE_EXISTING_CLUSTER=1` it refuses (the cluster would not be the test's own).
pub fn isolated_cluster(name: &str) -> anyhow::Result<&'static Cluster> {
    anyhow::ensure!(
        std::env::var("ODH_TEST_USE_EXISTING_CLUSTER").as_deref() != Ok("1"),
        "this test changes cluster-wide state and needs an apiserver of its own; it does not run against an existing cluster"
    );
    let dir = crate::workspace_root()
        .join("target")
        .join(format!("test-apiserver-{name}"));
    let mut started_here = false;
    let cluster = CLUSTER.get_or_init(|| {
        started_here = true;
        shared_apiserver(&dir).map_err(|e| format!("{e:#}"))
    });
    anyhow::ensure!(
        started_here,
        "isolated_cluster({name:?}) must come before any other use of the test cluster"
    );
    cluster
        .as_ref()
        .map_err(|e| anyhow::anyhow!("test cluster unavailable: {e}"))
}

fn resolve() -> anyhow::Result<Cluster> {
    if std::env::var("ODH_TEST_USE_EXISTING_CLUSTER").as_deref() == Ok("1") {
        let kubeconfig = std::env::var_os("KUBECONFIG")
            .map(PathBuf::from)
            .context("ODH_TEST_USE_EXISTING_CLUSTER=1 needs KUBECONFIG")?;
        return Ok(Cluster {
            kubeconfig,
            existing: true,
        });
    }
    let dir = std::env::var_os("ODH_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target/test-apiserver"));
    shared_apiserver(&dir)
}

fn shared_apiserver(dir: &Path) -> anyhow::Result<Cluster> {
    let leases = dir.join("leases");
    fs::create_dir_all(&leases)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))?;
    lock.lock()
        .context("locking the test apiserver directory")?;

    // Take the lease before looking for a server, so a running one cannot reap itself meanwhile.
    let lease = File::create(leases.join(std::process::id().to_string()))?;
    lease.lock_shared()?;
    let _ = LEASE.set(lease);

    let ready_file = dir.join("ready.json");
    if let Some(ready) = read_ready(&ready_file)
        && Path::new(&format!("/proc/{}", ready.pid)).exists()
        && ready.kubeconfig.exists()
    {
        return Ok(Cluster {
            kubeconfig: ready.kubeconfig,
            existing: false,
        });
    }
    let _ = fs::remove_file(&ready_file);
    let ready = launch(dir, &ready_file)?;
    Ok(Cluster {
        kubeconfig: ready.kubeconfig,
        existing: false,
    })
}

fn read_ready(path: &Path) -> Option<Ready> {
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

fn launcher_binary() -> anyhow::Result<PathBuf> {
    let root = crate::workspace_root();
    let bin = root.join("target/odh-test-apiserver");
    // `make` knows how to build it and skips the work when it is up to date.
    let status = Command::new("make")
        .args(["--no-print-directory", "-s", "-C"])
        .arg(&root)
        .arg("target/odh-test-apiserver")
        .stdout(Stdio::null())
        .status()
        .context("running `make target/odh-test-apiserver` (is make installed?)")?;
    if !status.success() || !bin.exists() {
        bail!("building the apiserver launcher failed: run `make apiserver` to see why");
    }
    Ok(bin)
}

fn launch(dir: &Path, ready_file: &Path) -> anyhow::Result<Ready> {
    let bin = launcher_binary()?;
    let log_path = dir.join("apiserver.log");
    let log = File::create(&log_path)?;
    let mut cmd = Command::new(bin);
    cmd.arg("--dir")
        .arg(dir.join("cluster"))
        .arg("--ready-file")
        .arg(ready_file)
        .arg("--lease-dir")
        .arg(dir.join("leases"))
        .arg("--lock-file")
        .arg(dir.join("lock"))
        .arg("--idle-timeout")
        .arg(idle_timeout())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // Its own process group: a Ctrl-C on the test run must not kill it before the leases go.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().context("starting the apiserver launcher")?;
    wait_ready(&mut child, ready_file, &log_path)
}

/// Waits for the launcher `child` to write its ready line to `ready_file` (at most 180 s; it is
/// killed then); its log's tail tells why it did not.
fn wait_ready(
    child: &mut std::process::Child,
    ready_file: &Path,
    log_path: &Path,
) -> anyhow::Result<Ready> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(ready) = read_ready(ready_file) {
            return Ok(ready);
        }
        if let Some(status) = child.try_wait()? {
            bail!(
                "the apiserver launcher exited with {status}:\n{}",
                tail(log_path)
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!(
                "the apiserver was not ready within 180 s:\n{}",
                tail(log_path)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn idle_timeout() -> String {
    std::env::var("ODH_TEST_APISERVER_IDLE").unwrap_or_else(|_| "10s".to_string())
}

fn tail(path: &Path) -> String {
    let mut s = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut s));
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// An apiserver of one test's own that the test stops and starts again, keeping its etcd data,
/// certificates and port (`--keep-data`): a control-plane restart as its clients see it. The
/// launcher stops when this is dropped (its standard input closes).
pub struct RestartableApiserver {
    dir: PathBuf,
    port: u16,
    process: Option<(std::process::Child, std::process::ChildStdin)>,
    /// The admin kubeconfig; the same across restarts.
    pub kubeconfig: PathBuf,
}

impl RestartableApiserver {
    /// Starts it in `target/test-apiserver-<name>-<pid>` (a fresh store).
    pub fn start(name: &str) -> anyhow::Result<Self> {
        let dir = crate::workspace_root()
            .join("target")
            .join(format!("test-apiserver-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut server = Self {
            kubeconfig: dir.join("cluster/kubeconfig"),
            dir,
            port,
            process: None,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        let ready_file = self.dir.join("ready.json");
        let _ = fs::remove_file(&ready_file);
        let log_path = self.dir.join("apiserver.log");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let mut child = Command::new(launcher_binary()?)
            .arg("--dir")
            .arg(self.dir.join("cluster"))
            .arg("--ready-file")
            .arg(&ready_file)
            .arg(format!("--port={}", self.port))
            .args(["--keep-data", "--exit-on-stdin-close"])
            .stdin(Stdio::piped())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting the apiserver launcher")?;
        let stdin = child.stdin.take().expect("piped");
        let ready = wait_ready(&mut child, &ready_file, &log_path);
        self.process = Some((child, stdin));
        ready.map(|_| ())
    }

    /// Stops it as a node shutdown would (SIGTERM) and waits for it to exit.
    pub fn stop(&mut self) -> anyhow::Result<()> {
        let Some((mut child, stdin)) = self.process.take() else {
            return Ok(());
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                bail!("the apiserver did not stop within 60 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(stdin);
        Ok(())
    }

    /// Stops it and starts it again with the same data, certificates and port.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop()?;
        self.launch()
    }

    /// The kube config of its admin (the same across restarts: the address and PKI stay).
    pub async fn config(&self) -> anyhow::Result<kube::Config> {
        crate::namespace::kube_config(&self.kubeconfig).await
    }
}

impl Drop for RestartableApiserver {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.process.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
