//! The host binary cargo built, for tests that start it as a process.
//!
//! Cargo hands `CARGO_BIN_EXE_<name>` only to the integration tests of the package that owns
//! the binary; tests of other packages find it here instead. `cargo test --workspace` (what
//! `make test` runs) builds it: building the host package's integration tests builds its
//! binaries, and every test executable of the run sits in the same target directory. A run of
//! another package alone (`cargo test -p odh-integration-tests`) does not build it: build it
//! first (`cargo build -p odh-model-controller --bin odh-model-controller`), or it is the one
//! left by an earlier build.

use std::path::PathBuf;

/// The variable that names the host binary to run instead of the one in the target directory.
pub const HOST_BIN_VAR: &str = "ODH_HOST_BIN";

/// The `odh-model-controller` binary: `$ODH_HOST_BIN` if set, else the one in the target
/// directory of the running test executable (`<target>/<profile>/`, the parent of its
/// `deps/`). Panics, saying how to build it, when there is none.
pub fn host() -> PathBuf {
    if let Some(path) = std::env::var_os(HOST_BIN_VAR) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{HOST_BIN_VAR}={} is not a file",
            path.display()
        );
        return path;
    }
    let exe = std::env::current_exe().expect("the path of the running test executable");
    let dir = exe
        .parent()
        .map(|dir| match dir.parent() {
            Some(profile) if dir.ends_with("deps") => profile,
            _ => dir,
        })
        .expect("the test executable's directory");
    let path = dir.join(format!(
        "odh-model-controller{}",
        std::env::consts::EXE_SUFFIX
    ));
    assert!(
        path.is_file(),
        "no odh-model-controller binary at {}: `cargo test --workspace` (what `make test` runs) \
         builds it with the tests; to run the tests of one package other than the host's, build \
         it first (`cargo build -p odh-model-controller --bin odh-model-controller`), or set \
         {HOST_BIN_VAR} to the binary to run",
        path.display()
    );
    path
}
