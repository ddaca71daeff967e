//! `odh-model-controller plugin inspect|eval` as documented in docs/plugin-authors.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
}

fn run(args: &[&str]) -> (i32, Value, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = bin().args(args).output().expect("run the binary");
    let json = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
    (
        status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// `plugin eval --plugin <plugin> --op <op> --object <object>`.
fn eval(plugin: &str, op: &str, object: &str) -> (i32, Value, String) {
    run(&[
        "plugin", "eval", "--plugin", plugin, "--op", op, "--object", object,
    ])
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("odh-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const DEMO: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  namespace: ns1\ndata:\n  a: b\n";

/// The example plugin's component (`make plugins`): examples are not built into the host.
fn hello() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        odh_test_support::plugin_wasm("hello")
            .unwrap()
            .to_string_lossy()
            .into_owned()
    })
}

/// A plugin whose settings have a required key (the example vendor plugin's `imageRegistry`)
/// is described without settings: they are the admin's, checked when it serves; `eval` still
/// checks the settings it is given.
#[test]
fn inspect_describes_a_plugin_whose_settings_are_required() {
    let vendor = odh_test_support::plugin_wasm("vendor-runtime").unwrap();
    let vendor = vendor.to_str().unwrap();
    let (code, out, err) = run(&["plugin", "inspect", vendor]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["name"], "vendor-runtime");
    assert_eq!(out["controllers"][0]["primary"]["kind"], "ServingRuntime");
    let dir = tmpdir("vendor");
    let runtime = write(
        &dir,
        "runtime.yaml",
        "apiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\nmetadata:\n  name: r\n  namespace: ns\n",
    );
    let (code, _, err) = eval(vendor, "validate", runtime.to_str().unwrap());
    assert_eq!(code, 1, "its validate-settings refuses: {err}");
    assert!(err.contains("imageRegistry"), "{err}");
}

#[test]
fn inspect_prints_the_manifest_with_the_wit_version() {
    let (code, out, err) = run(&["plugin", "inspect", hello()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["name"], "hello");
    assert_eq!(out["wit"], "odh:controller@0.1.5");
    assert_eq!(out["source"], format!("file://{}", hello()));
    assert_eq!(out["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(out["controllers"][0]["primary"]["kind"], "ConfigMap");
    assert_eq!(out["webhooks"][0]["path"], "/mutate-hello-configmap");
    assert_eq!(out["routes"][0]["path"], "/api/v1/hello");

    let (code, builtin, err) = run(&["plugin", "inspect", "isvc"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(builtin["name"], "isvc");
    assert_eq!(builtin["source"], "builtin:isvc");
    let file = odh_test_support::plugin_wasm("isvc").unwrap();
    let (code, by_file, err) = run(&["plugin", "inspect", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        by_file["sha256"], builtin["sha256"],
        "the built-in is the same component as the file"
    );
}

#[test]
fn eval_reconcile_prints_the_outcome() {
    let d = tmpdir("reconcile");
    let obj = write(&d, "cm.yaml", DEMO);
    let (code, out, err) = eval(hello(), "reconcile", obj.to_str().unwrap());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["op"], "reconcile");
    let applied = &out["outcome"]["apply"][0];
    assert_eq!(applied["ownership"], "controller");
    assert_eq!(applied["object"]["metadata"]["name"], "demo-hello");
    assert_eq!(applied["object"]["data"]["greeting"], "Hello, demo!");
    assert_eq!(out["outcome"]["finalizer"], "keep");
}

#[test]
fn eval_mutate_and_validate_print_decisions() {
    let d = tmpdir("admission");
    let obj = write(
        &d,
        "cm.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"n"},"data":{"forbidden":"1"},"extra":{"kept":true}}"#,
    );
    let (code, out, err) = eval(hello(), "mutate", obj.to_str().unwrap());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["decision"]["allowed"], true);
    assert_eq!(out["decision"]["patch"][0]["op"], "add");
    assert_eq!(
        out["decision"]["mutated"]["extra"]["kept"], true,
        "unknown fields survive"
    );

    let (code, out, err) = eval(hello(), "validate", obj.to_str().unwrap());
    assert_eq!(code, 0, "a denial is a decision, not a failure: {err}");
    assert_eq!(out["decision"]["allowed"], false);
    assert_eq!(
        out["decision"]["message"],
        r#"hello: the key "forbidden" is not allowed"#
    );
}

#[test]
fn eval_state_directory_feeds_cluster_reads() {
    let d = tmpdir("state");
    let state = d.join("state");
    std::fs::create_dir_all(&state).unwrap();
    write(
        &state,
        "objects.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\n  namespace: ns1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: ns1\n",
    );
    let obj = write(
        &d,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  namespace: ns1\ndata:\n  behaviour: read-granted\n  target: target\n",
    );
    let plugin = odh_test_support::plugin_wasm("misbehave").unwrap();
    let args = [
        "plugin",
        "eval",
        "--plugin",
        plugin.to_str().unwrap(),
        "--op",
        "reconcile",
        "--object",
        obj.to_str().unwrap(),
    ];
    let (code, out, err) = run(&[&args[..], &["--state", state.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["outcome"]["status"]["found"], true);
    let (code, out, _) = run(&args);
    assert_eq!(code, 0);
    assert_eq!(
        out["outcome"]["status"]["found"], false,
        "without --state the cluster is empty"
    );
}

/// `plugin eval` is offline: a reconcile that POSTs sends nothing (a GET still goes out), and
/// the refusal reaches the plugin, which reports it in its outcome.
#[test]
fn eval_sends_no_post() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/records", listener.local_addr().unwrap());
    let (tx, requests) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = [0u8; 4096];
            let n = conn.read(&mut buf).unwrap_or(0);
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    let d = tmpdir("eval-post");
    let plugin = odh_test_support::plugin_wasm("misbehave").unwrap();
    let reconcile = |behaviour: &str| {
        let obj = write(
            &d,
            &format!("{behaviour}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  namespace: ns1\ndata:\n  behaviour: {behaviour}\n  url: {url}\n"
            ),
        );
        eval(plugin.to_str().unwrap(), "reconcile", obj.to_str().unwrap())
    };
    let (code, out, err) = reconcile("http-post");
    assert_eq!(code, 0, "the plugin returned an outcome: {err}");
    let error = &out["outcome"]["error"];
    assert_eq!(error["kind"], "transient", "{out}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("may only send GET and HEAD"),
        "{out}"
    );
    assert_eq!(
        out["outcome"]["apply"][0]["object"]["metadata"]["name"], "r-ok",
        "what it decided is still there"
    );
    let (code, out, err) = reconcile("http-get");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["outcome"]["status"]["httpStatus"], 200, "{out}");
    let seen: Vec<String> = requests.try_iter().collect();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("GET /records"), "{seen:?}");
}

#[test]
fn a_plugin_failure_exits_1_with_a_json_error() {
    let d = tmpdir("fail");
    let obj = write(
        &d,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  namespace: ns1\ndata:\n  behaviour: panic\n",
    );
    let plugin = odh_test_support::plugin_wasm("misbehave").unwrap();
    let (code, out, err) = eval(plugin.to_str().unwrap(), "reconcile", obj.to_str().unwrap());
    assert_eq!(code, 1);
    assert_eq!(out["error"]["reason"], "trap");
    assert!(err.contains("misbehave: deliberate panic"), "{err}");

    let obj = write(
        &d,
        "t.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  behaviour: error-transient\n",
    );
    let (code, out, _) = eval(plugin.to_str().unwrap(), "reconcile", obj.to_str().unwrap());
    assert_eq!(code, 1);
    assert_eq!(out["error"]["kind"], "transient");
}

#[test]
fn bad_arguments_and_input_exit_2() {
    let d = tmpdir("bad");
    let good = write(&d, "cm.yaml", DEMO);
    let not_yaml = write(&d, "bad.yaml", "kind: [unclosed");
    let no_kind = write(&d, "nokind.yaml", "metadata:\n  name: x\n");
    for args in [
        vec![
            "plugin",
            "eval",
            "--plugin",
            "no-such-plugin",
            "--op",
            "reconcile",
            "--object",
            good.to_str().unwrap(),
        ],
        vec![
            "plugin",
            "eval",
            "--plugin",
            hello(),
            "--op",
            "reconcile",
            "--object",
            not_yaml.to_str().unwrap(),
        ],
        vec![
            "plugin",
            "eval",
            "--plugin",
            hello(),
            "--op",
            "reconcile",
            "--object",
            no_kind.to_str().unwrap(),
        ],
        vec![
            "plugin",
            "eval",
            "--plugin",
            hello(),
            "--op",
            "reconcile",
            "--object",
            "/does/not/exist.yaml",
        ],
        vec![
            "plugin",
            "eval",
            "--plugin",
            hello(),
            "--op",
            "explode",
            "--object",
            good.to_str().unwrap(),
        ],
        vec!["plugin", "inspect", "/does/not/exist.wasm"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!err.trim().is_empty(), "{args:?} printed no message");
    }
}

#[test]
fn an_unknown_controller_is_named_with_the_plugins_controllers() {
    let d = tmpdir("controller");
    let obj = write(&d, "cm.yaml", DEMO);
    let (code, out, err) = run(&[
        "plugin",
        "eval",
        "--plugin",
        hello(),
        "--op",
        "reconcile",
        "--object",
        obj.to_str().unwrap(),
        "--controller",
        "nope",
    ]);
    assert_eq!((code, out), (2, Value::Null), "{err}");
    assert!(
        err.contains(
            r#"plugin hello has no controller "nope" (its controllers: hello (ConfigMap/v1))"#
        ),
        "{err}"
    );

    let pod = write(
        &d,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns1\n",
    );
    let (code, _, err) = eval(hello(), "reconcile", pod.to_str().unwrap());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "plugin hello has no controller for Pod/v1 (its controllers: hello (ConfigMap/v1))"
        ),
        "{err}"
    );
}

#[test]
fn eval_answers_as_the_host_for_an_object_outside_the_webhook_selector() {
    let d = tmpdir("selector");
    let misbehave = odh_test_support::plugin_wasm("misbehave").unwrap();
    let outside = write(
        &d,
        "outside.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  namespace: ns\n  labels:\n    misbehave/unreviewed: \"yes\"\ndata:\n  behaviour: panic\n",
    );
    let (code, out, err) = eval(
        misbehave.to_str().unwrap(),
        "validate",
        outside.to_str().unwrap(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["decision"], json!({"allowed": true}));
    assert_eq!(
        out["notReviewed"],
        r#"the object does not match the object selector "!misbehave/unreviewed" of webhook /validate-misbehave: the host admits it without calling the plugin"#
    );
    // Inside the selector the plugin is called (and panics, as asked).
    let inside = write(
        &d,
        "inside.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  namespace: ns\ndata:\n  behaviour: panic\n",
    );
    let (code, _, err) = eval(
        misbehave.to_str().unwrap(),
        "validate",
        inside.to_str().unwrap(),
    );
    assert_ne!(code, 0);
    assert!(err.contains("trapped"), "{err}");
}

#[test]
fn admission_needs_a_declared_webhook_of_that_type() {
    let d = tmpdir("webhooks");
    let obj = write(&d, "cm.yaml", DEMO);
    // `owner` declares no webhooks; calling its mutate export would only say "not implemented".
    let owner = odh_test_support::plugin_wasm("owner").unwrap();
    for (op, kind) in [("mutate", "mutating"), ("validate", "validating")] {
        let (code, out, err) = eval(owner.to_str().unwrap(), op, obj.to_str().unwrap());
        assert_eq!((code, out), (2, Value::Null), "{op}: {err}");
        assert!(
            err.contains(&format!(
                "plugin owner has no {kind} webhook for CREATE of ConfigMap/v1 (it has no {kind} webhooks)"
            )),
            "{op}: {err}"
        );
    }
    // hello's webhooks take CREATE and UPDATE, not DELETE.
    let (code, _, err) = run(&[
        "plugin",
        "eval",
        "--plugin",
        hello(),
        "--op",
        "validate",
        "--object",
        obj.to_str().unwrap(),
        "--operation",
        "DELETE",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "plugin hello has no validating webhook for DELETE of ConfigMap/v1 (its validating webhooks: /validate-hello-configmap (ConfigMap/v1: CREATE, UPDATE))"
        ),
        "{err}"
    );
}

/// `plugin precompile` into a directory that cannot be made: exit 2 and a message naming it,
/// nothing compiled. (A successful run is the start-up bench's: `make bench-gate` starts the
/// host from what it wrote.)
#[test]
fn precompile_into_an_unwritable_directory_is_a_usage_error() {
    let dir = tmpdir("precompile");
    let file = write(&dir, "a-file", "not a directory");
    let out = file.join("plugins");
    let (code, json, stderr) = run(&["plugin", "precompile", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(json, Value::Null);
    assert!(
        stderr.contains(&format!("creating {}", out.display())),
        "{stderr}"
    );
}

/// `plugin precompile --target`: Pulley's bytecode (ppc64le's plugin code) from any build,
/// under a compatibility hash of its own, so this machine's engine never picks it up; a target
/// whose Cranelift backend this build lacks is a usage error naming it, and nothing is written.
#[test]
fn precompile_for_another_target() {
    let dir = tmpdir("precompile-target");
    let native = dir.join("native");
    let (code, here, stderr) = run(&["plugin", "precompile", "--out", native.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let pulley = dir.join("pulley");
    let (code, json, stderr) = run(&[
        "plugin",
        "precompile",
        "--target",
        "pulley64",
        "--out",
        pulley.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(json["target"], "pulley64");
    assert_eq!(json["plugins"], here["plugins"], "the same built-ins");
    assert_ne!(json["compatibility"], here["compatibility"]);
    let written = std::fs::read_dir(&pulley).unwrap().count();
    assert_eq!(written, 2 * json["plugins"].as_object().unwrap().len());

    let foreign = if std::env::consts::ARCH == "s390x" {
        "aarch64-unknown-linux-gnu"
    } else {
        "s390x-unknown-linux-gnu"
    };
    let out = dir.join("foreign");
    let (code, json, stderr) = run(&[
        "plugin",
        "precompile",
        "--target",
        foreign,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(json, Value::Null);
    assert!(
        stderr.contains(&format!("compiling for {foreign}")),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
}

/// `eval --against`: the same call on the serving version and the candidate, and their
/// differences as a shadow run logs them (JSON pointers with both values), offline.
#[test]
fn eval_against_the_serving_version_reports_the_differences() {
    let misbehave = odh_test_support::plugin_wasm("misbehave").unwrap();
    let misbehave = misbehave.to_str().unwrap();
    let d = tmpdir("against");
    let obj = write(&d, "cm.yaml", DEMO);
    let v2 = write(&d, "v2.yaml", "okLabel: v2\n");
    let compare = |settings: &Path| {
        run(&[
            "plugin",
            "eval",
            "--plugin",
            misbehave,
            "--settings",
            settings.to_str().unwrap(),
            "--against",
            misbehave,
            "--against-settings",
            write(&d, "v1.yaml", "okLabel: \"true\"\n")
                .to_str()
                .unwrap(),
            "--op",
            "mutate",
            "--object",
            obj.to_str().unwrap(),
        ])
    };
    let (code, out, err) = compare(&v2);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["differs"], true, "{out}");
    assert_eq!(
        out["candidate"]["decision"]["mutated"]["metadata"]["labels"]["misbehave/ok"],
        "v2"
    );
    assert_eq!(
        out["active"]["decision"]["mutated"]["metadata"]["labels"]["misbehave/ok"],
        "true"
    );
    let difference = out["difference"].as_str().unwrap();
    assert!(
        difference.contains("/mutated/metadata/labels/misbehave~1ok: \"true\" → \"v2\""),
        "{difference}"
    );
    let (code, same, err) = compare(&write(&d, "same.yaml", "okLabel: \"true\"\n"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(same["differs"], false, "{same}");
    assert_eq!(same["difference"], Value::Null);
}

/// Records of crates that log through the `log` crate (wasmtime's, here the engine's pool
/// creation at debug) reach the process's log like its own.
#[test]
fn records_of_the_log_crate_reach_the_log() {
    let out = bin()
        .args(["plugin", "inspect", hello()])
        .env("RUST_LOG", "warn,wasmtime=debug")
        .output()
        .expect("run the binary");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("creating memory pool"),
        "no wasmtime record in the log:\n{stderr}"
    );
}
