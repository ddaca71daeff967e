//! Shared harness for integration tests.
//!
//! Every integration test talks to a real kube-apiserver: the launcher in `tests/apiserver/`,
//! started once per test run and shared by all test binaries (a lock file serialises the start,
//! and each test process holds a lease the launcher watches, so it stops soon after the last
//! test process exits), or the cluster of `KUBECONFIG` when `ODH_TEST_USE_EXISTING_CLUSTER=1`.
//!
//! ```no_run
//! # async fn t() -> anyhow::Result<()> {
//! let t = odh_test_support::TestContext::new("my-test").await?;
//! // t.client, t.namespace ...
//! # Ok(()) }
//! ```

mod apiserver;
pub mod bench_gate;
pub mod binary;
pub mod cluster_checks;
pub mod crds;
pub mod dev;
pub mod host;
pub mod https_stand_in;
pub mod namespace;
pub mod net;
pub mod process;
pub mod proxy;
pub mod refusal;
pub mod service_account;
mod wait;

use std::path::{Path, PathBuf};

pub use apiserver::{Cluster, RestartableApiserver, cluster, isolated_cluster};
pub use namespace::TestContext;
pub use wait::{Timing, absent, consistently, eventually, exists};

/// The workspace root (where `Cargo.toml`, `deploy/` and `tests/` live).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tests/support sits two levels below the workspace root")
        .to_path_buf()
}

/// The directories whose CRDs every test cluster gets: the ones we own and the external ones.
pub fn crd_dirs() -> Vec<PathBuf> {
    let root = workspace_root();
    vec![root.join("deploy/crds"), root.join("tests/crds")]
}

/// The path of a plugin component built by `make plugins` (`target/plugins/<name>.wasm`),
/// building every plugin first if needed (once per process; make skips what is up to date).
pub fn plugin_wasm(name: &str) -> anyhow::Result<PathBuf> {
    static BUILT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let root = workspace_root();
    BUILT
        .get_or_init(|| {
            let status = std::process::Command::new("make")
                .args(["--no-print-directory", "-s", "-C"])
                .arg(&root)
                .arg("plugins")
                .stdout(std::process::Stdio::null())
                .status()
                .map_err(|e| format!("running `make plugins`: {e}"))?;
            if status.success() {
                Ok(())
            } else {
                Err("`make plugins` failed".to_string())
            }
        })
        .clone()
        .map_err(anyhow::Error::msg)?;
    let path = root.join("target/plugins").join(format!("{name}.wasm"));
    anyhow::ensure!(path.exists(), "no plugin component at {}", path.display());
    Ok(path)
}
