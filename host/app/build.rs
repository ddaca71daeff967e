//! Builds the built-in plugins for wasm32-wasip2 and embeds them in the host binary.
//!
//! The plugins are built by a nested cargo with its own target directory (`target/wasm`):
//! sharing the outer build's directory would deadlock on its lock. `make plugins` uses the
//! same directory, so nothing is compiled twice.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The registration list (`src/builtins/list.rs`): which plugin packages to build and embed.
#[allow(dead_code)]
mod list {
    include!("src/builtins/list.rs");
}
use list::BUILTINS;

fn main() -> anyhow::Result<()> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("host/app sits two levels below the workspace root")
        .to_path_buf();
    println!("cargo:rerun-if-changed={}", root.join("plugins").display());
    println!("cargo:rerun-if-changed=src/builtins/list.rs");
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    // The plugins' build profile (`[profile.wasm]`) lives in the workspace's manifest.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.toml").display()
    );
    // The plugins' link flags (their initial memory) live there.
    println!(
        "cargo:rerun-if-changed={}",
        root.join(".cargo/config.toml").display()
    );
    println!("cargo:rerun-if-env-changed=ODH_BUILTIN_PLUGIN_DIR");

    let dir = match std::env::var_os("ODH_BUILTIN_PLUGIN_DIR") {
        // Prebuilt components (e.g. from a container build stage).
        Some(dir) => PathBuf::from(dir),
        None => build_plugins(&root)?,
    };
    let mut out = String::from(
        "/// (name, component bytes, hex sha256 of the bytes) of every built-in plugin.\npub static COMPONENTS: &[(&str, &[u8], &str)] = &[\n",
    );
    for name in BUILTINS.iter().map(|b| b.name) {
        let file = dir.join(format!("{}.wasm", name.replace('-', "_")));
        anyhow::ensure!(
            file.exists(),
            "built-in plugin {name} was not built: {} is missing",
            file.display()
        );
        // The digest is taken here, once: the host finds a built-in's compiled code by it (its
        // cache entries are named by it) without hashing the bytes at every start and swap.
        let digest = hex::encode(Sha256::digest(std::fs::read(&file)?));
        out.push_str(&format!(
            "    ({name:?}, include_bytes!({:?}), {digest:?}),\n",
            file.display().to_string()
        ));
    }
    out.push_str("];\n");
    std::fs::write(
        PathBuf::from(std::env::var("OUT_DIR")?).join("builtin_plugins.rs"),
        out,
    )?;
    Ok(())
}

/// A toolchain without the wasm target fails deep in the nested build with "can't find crate
/// for `std`"; say what is missing and how to add it instead.
fn check_wasm_target(root: &Path) -> anyhow::Result<()> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .current_dir(root)
        .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
        .output()?;
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    anyhow::ensure!(
        out.status.success() && Path::new(&libdir).is_dir(),
        "the wasm32-wasip2 target is not installed for this Rust toolchain; run `make toolchain` \
         (or `rustup target add wasm32-wasip2`)"
    );
    Ok(())
}

fn build_plugins(root: &Path) -> anyhow::Result<PathBuf> {
    check_wasm_target(root)?;
    let target_dir = root.join("target/wasm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            // The workspace's Cargo.lock, as the outer build resolved it: no other versions.
            "--locked",
            "--profile",
            "wasm",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    for b in BUILTINS {
        cmd.args(["-p", b.name]);
    }
    // The outer build's settings (flags, wrappers such as clippy's, target) are not for this one.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_MAKEFLAGS"
            || matches!(
                &*key,
                "RUSTC"
                    | "RUSTDOC"
                    | "RUSTC_WRAPPER"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTFLAGS"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "OPT_LEVEL"
                    | "PROFILE"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "RUSTC_LINKER"
            )
        {
            cmd.env_remove(&*key);
        }
    }
    let status = cmd.status()?;
    anyhow::ensure!(status.success(), "building the built-in plugins failed");
    Ok(target_dir.join("wasm32-wasip2/wasm"))
}
