//! `plugin new` as a vendor runs it (docs/plugin-authors.md §5): the crate it writes passes its
//! own tests unchanged, builds into a component, and that component is inspected and evaluated
//! by the controller's CLI with the samples the crate ships — each export deciding as its README
//! says.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `command`, failing the test with its output unless it succeeds; returns stdout.
fn ok(command: &mut Command) -> String {
    let out = command.output().expect("start the command");
    assert!(
        out.status.success(),
        "{command:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn json(command: &mut Command) -> Value {
    serde_json::from_str(&ok(command)).expect("JSON on stdout")
}

/// The same cargo as the test run's, offline: the crate's dependencies are the workspace's
/// (its lock file is copied in), so nothing is fetched.
fn cargo(dir: &Path, target_dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(dir)
        .args(args)
        .arg("--offline")
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("RUSTFLAGS");
    c
}

#[test]
fn a_new_plugin_builds_passes_its_tests_and_decides_as_its_readme_says() {
    let root = root();
    let dir = std::env::temp_dir().join(format!("odh-plugin-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let crate_dir = dir.join("acme-license");
    let written = json(
        bin()
            .args(["plugin", "new", "acme-license", "--out"])
            .arg(&crate_dir)
            .arg("--sdk-path")
            .arg(root.join("plugins/sdk")),
    );
    assert_eq!(written["plugin"], "acme-license");
    std::fs::copy(root.join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();

    let tests = ok(&mut cargo(
        &crate_dir,
        &root.join("target/scaffold"),
        &["test", "-q"],
    ));
    assert!(tests.contains("5 passed"), "{tests}");
    // The wasm target directory `make plugins` uses: the SDK's dependencies are built there.
    ok(&mut cargo(
        &crate_dir,
        &root.join("target/wasm"),
        &[
            "build",
            "-q",
            "--profile",
            "wasm",
            "--target",
            "wasm32-wasip2",
        ],
    ));
    let wasm = root.join("target/wasm/wasm32-wasip2/wasm/acme_license.wasm");
    let wasm = wasm.to_str().unwrap();

    let manifest = json(bin().args(["plugin", "inspect", wasm]));
    assert_eq!(manifest["name"], "acme-license");
    assert_eq!(
        manifest["controllers"][0]["primary"]["kind"],
        "ServingRuntime"
    );
    let paths: Vec<&str> = manifest["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["path"].as_str())
        .collect();
    assert_eq!(paths, ["/mutate-acme-license", "/validate-acme-license"]);

    let eval = |op: &str, sample: &str| {
        json(
            bin()
                .current_dir(&crate_dir)
                .args([
                    "plugin",
                    "eval",
                    "--plugin",
                    wasm,
                    "--settings",
                    "samples/settings.yaml",
                ])
                .args(["--op", op, "--object", sample]),
        )
    };
    let denied = eval("validate", "samples/denied.yaml");
    assert_eq!(denied["decision"]["allowed"], false, "{denied}");
    assert_eq!(
        denied["decision"]["message"],
        "acme-license: ServingRuntime \"example\": tier \"gold\" is not one of [\"standard\", \"premium\"]"
    );
    let mutated = eval("mutate", "samples/object.yaml");
    assert_eq!(
        mutated["decision"]["patch"][0]["value"]["example.com/acme-license-tier"], "standard",
        "{mutated}"
    );
    let reconciled = eval("reconcile", "samples/object.yaml");
    let applied = &reconciled["outcome"]["apply"][0]["object"];
    assert_eq!(
        applied["metadata"]["name"], "example-acme-license",
        "{reconciled}"
    );
    assert_eq!(applied["data"]["tier"], "standard");

    // The README's commands are the ones this test ran.
    let readme = std::fs::read_to_string(crate_dir.join("README.md")).unwrap();
    for command in [
        "cargo test",
        "cargo build --profile wasm --target wasm32-wasip2",
        "plugin eval --plugin $WASM --settings samples/settings.yaml --op validate --object samples/denied.yaml",
    ] {
        assert!(readme.contains(command), "README lacks {command:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
