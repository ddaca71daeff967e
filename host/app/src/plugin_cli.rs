//! `odh-model-controller plugin inspect|eval`: run a plugin offline, exactly as the host would,
//! against objects in files. The JSON printed here is a stable interface (docs/plugin-authors.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::builtins;
use crate::gvk::Gvk;
use crate::label_selector::LabelSelector;
use crate::plugin::bindings::WIT_PACKAGE;
use crate::plugin::wire::{Manifest, Operation, RawJson, RequestKey, WebhookType};
use crate::plugin::{
    AdmissionInput, CallEnv, CallError, EngineOptions, LoadRequest, LoadedPlugin, MemoryCluster,
    PRECOMPILED_DIR, PluginEngine, ReconcileInput, Source,
};
use crate::webhook::selector_admits;
use crate::webhook::verdict::patch_for;
use odh_plugin_runtime::precompile::Precompiler;

/// Exit status 1: the plugin failed. Exit status 2: bad arguments or input.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0:#}")]
    Usage(anyhow::Error),
    #[error("{0}")]
    Plugin(CallError),
}

impl EvalError {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Plugin(_) => 1,
        }
    }
}

fn usage(e: impl Into<anyhow::Error>) -> EvalError {
    EvalError::Usage(e.into())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Op {
    Reconcile,
    Mutate,
    Validate,
}

/// Arguments of `plugin eval`.
#[derive(Debug, Clone, clap::Args)]
pub struct EvalArgs {
    /// A component file (`.wasm`) or the name of a built-in plugin.
    #[arg(long)]
    pub plugin: String,
    #[arg(long, value_enum)]
    pub op: Op,
    /// The primary object (reconcile) or the object under review (admission), YAML or JSON.
    #[arg(long)]
    pub object: PathBuf,
    /// The existing object of an UPDATE or DELETE review.
    #[arg(long)]
    pub old_object: Option<PathBuf>,
    /// A directory of YAML/JSON files (one or many objects each) that the plugin's cluster
    /// reads see.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The plugin's settings, YAML or JSON.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// The admission operation (default CREATE, or UPDATE when --old-object is given).
    #[arg(long, value_parser = operation_parser())]
    pub operation: Option<Operation>,
    /// Namespace of the request (default: the object's).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Which of the plugin's controllers to reconcile for (default: the one whose primary kind
    /// is the object's).
    #[arg(long)]
    pub controller: Option<String>,
    /// The version serving now (a file or a built-in's name): the same call is made on it and
    /// the differences from `--plugin`'s answer are reported as a shadow run reports them.
    #[arg(long, value_name = "ACTIVE")]
    pub against: Option<String>,
    /// The serving version's settings (default: `--settings`).
    #[arg(long, requires = "against")]
    pub against_settings: Option<PathBuf>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct PrecompileArgs {
    /// The directory to write into (created); `--plugin-precompiled-dir` of `run` reads it.
    #[arg(long)]
    pub out: PathBuf,
    /// Compile for this target rather than this machine: a Rust triple of the image's
    /// architecture (x86_64-, aarch64-, s390x-unknown-linux-…) or `pulley64` (ppc64le), as far
    /// as this build's compiler has the backend.
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,
}

/// Compiles every built-in plugin for the engine `run` uses on the target's architecture, into
/// the files `run` looks for: named by the component's sha256 and the engine's compatibility
/// hash, which does not depend on the CPU (each architecture's baseline: x86-64-v2, Armv8.0,
/// z14, Pulley), so the image's build machine compiles for every node.
pub fn precompile(args: &PrecompileArgs) -> Result<Value, EvalError> {
    // The engine first: a target this build cannot compile for leaves no directory behind.
    let compiler = Precompiler::new(args.target.as_deref()).map_err(usage)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| usage(anyhow::anyhow!("creating {}: {e}", args.out.display())))?;
    let names: Vec<&str> = builtins::names().collect();
    let results = crate::plugin::parallel::each_in_parallel(&names, |n| {
        let bytes = builtins::component(n).expect("every registered built-in is embedded");
        compiler.compile_into(bytes, &args.out)
    });
    let mut compiled = serde_json::Map::new();
    for (name, result) in names.iter().zip(results) {
        let sha = result.map_err(|e| usage(e.context(format!("compiling {name}"))))?;
        compiled.insert(name.to_string(), json!({ "sha256": sha }));
    }
    Ok(json!({
        "dir": args.out,
        "target": args.target.as_deref().unwrap_or(std::env::consts::ARCH),
        "compatibility": compiler.compatibility(),
        "plugins": compiled,
    }))
}

fn engine() -> anyhow::Result<PluginEngine> {
    let cache_dir = std::env::var_os("ODH_PLUGIN_CACHE_DIR").map(PathBuf::from);
    // As `run`: the image's precompiled built-ins, or a directory `plugin precompile` wrote.
    let precompiled_dir = std::env::var_os("ODH_PLUGIN_PRECOMPILED_DIR")
        .map_or_else(|| PathBuf::from(PRECOMPILED_DIR), PathBuf::from);
    PluginEngine::new(EngineOptions {
        cache_dir,
        precompiled_dir: Some(precompiled_dir),
        // `pulley64` runs the plugins on wasmtime's interpreter, in a build that has it
        // (`--features wasmtime/pulley`): docs/performance.md compares it with Cranelift.
        target: std::env::var("ODH_PLUGIN_TARGET").ok(),
        max_instances: 8,
        ..Default::default()
    })
}

fn resolve(spec: &str) -> anyhow::Result<(Source, Vec<u8>)> {
    let path = Path::new(spec);
    if path.exists() {
        let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {spec}: {e}"))?;
        return Ok((Source::File(path.to_path_buf()), bytes));
    }
    if let Some(bytes) = builtins::component(spec) {
        return Ok((Source::Builtin(spec.to_string()), bytes.to_vec()));
    }
    let known: Vec<&str> = builtins::names().collect();
    anyhow::bail!(
        "{spec:?} is neither a file nor a built-in plugin (built-ins: {})",
        known.join(", ")
    )
}

/// Loads the component of `spec`; without `settings` its `validate-settings` is not called
/// (the settings of a plugin described are the admin's, not known here).
pub(crate) fn load(spec: &str, settings: Option<Value>) -> Result<LoadedPlugin, EvalError> {
    let (source, bytes) = resolve(spec).map_err(usage)?;
    load_bytes(source, &bytes, settings)
}

fn load_bytes(
    source: Source,
    bytes: &[u8],
    settings: Option<Value>,
) -> Result<LoadedPlugin, EvalError> {
    let engine = engine().map_err(usage)?;
    let request = match settings {
        Some(settings) => LoadRequest::new(source, bytes).settings(settings),
        None => LoadRequest::new(source, bytes).without_settings_check(),
    };
    LoadedPlugin::load(&engine, request).map_err(|e| match e {
        crate::plugin::LoadError::Call(c) => EvalError::Plugin(c),
        other => usage(anyhow::anyhow!("{other}")),
    })
}

/// `plugin inspect`: the manifest, where it came from and the WIT package it was built for;
/// for `oci://…` also what the registry says of it.
pub fn inspect(args: &crate::plugin_publish::InspectArgs) -> Result<Value, EvalError> {
    let spec = args.plugin.as_str();
    let (plugin, oci) = if spec.starts_with("oci://") {
        let (bytes, info) = crate::plugin_publish::pull(args).map_err(usage)?;
        let source = Source::Oci(spec.trim_start_matches("oci://").to_string());
        (load_bytes(source, &bytes, None)?, Some(info))
    } else {
        (load(spec, None)?, None)
    };
    let mut out = serde_json::to_value(plugin.manifest()).map_err(usage)?;
    if let Some(info) = oci {
        out["oci"] = info;
    }
    out["wit"] = json!(WIT_PACKAGE);
    out["routes"] = json!(plugin.routes());
    out["source"] = json!(plugin.source().to_string());
    out["sha256"] = json!(plugin.sha256());
    Ok(out)
}

/// Reads every object in a YAML or JSON file (`---`-separated documents, `List`s expanded).
pub fn read_objects(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc)
            .map_err(|e| anyhow::anyhow!("parsing {}: {e}", path.display()))?;
        match value {
            Value::Null => {}
            Value::Object(ref o)
                if o.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List")) =>
            {
                out.extend(
                    o.get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Value::Object(_) => out.push(value),
            _ => anyhow::bail!("{}: a document is not an object", path.display()),
        }
    }
    Ok(out)
}

pub(crate) fn read_one(path: &Path) -> anyhow::Result<Value> {
    let mut objects = read_objects(path)?;
    anyhow::ensure!(
        objects.len() == 1,
        "{} must hold exactly one object, it holds {}",
        path.display(),
        objects.len()
    );
    Ok(objects.remove(0))
}

fn load_state(dir: &Path) -> anyhow::Result<MemoryCluster> {
    let mut cluster = MemoryCluster::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("reading state directory {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    for file in files {
        for obj in read_objects(&file)? {
            cluster
                .insert(obj)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        }
    }
    Ok(cluster)
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(obj, |v, k| v.get(k))?.as_str()
}

/// `plugin eval`: one call, printed as JSON. Offline and replayable: reads come from `--state`
/// files and outgoing HTTP is limited to GET and HEAD (the call may not change anything).
pub fn eval(args: &EvalArgs) -> Result<Value, EvalError> {
    let Some(active) = &args.against else {
        return eval_one(args, &args.plugin, args.settings.as_deref());
    };
    // A plugin's failure is an answer to compare; a usage error stops both.
    let answer = |spec: &str, settings: Option<&Path>| match eval_one(args, spec, settings) {
        Ok(result) => Ok(Ok(result)),
        Err(EvalError::Plugin(e)) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    };
    let candidate = answer(&args.plugin, args.settings.as_deref())?;
    let serving = answer(
        active,
        args.against_settings
            .as_deref()
            .or(args.settings.as_deref()),
    )?;
    let answer_of = |r: &Result<Value, String>| -> Result<Value, String> {
        match r {
            Ok(v) => Ok(v
                .get("outcome")
                .or_else(|| v.get("decision"))
                .cloned()
                .unwrap_or(Value::Null)),
            Err(e) => Err(e.clone()),
        }
    };
    let (a, c) = (answer_of(&serving), answer_of(&candidate));
    let differs = a != c;
    let shown = |r: Result<Value, String>| match r {
        Ok(v) => v,
        Err(e) => json!({"error": e}),
    };
    Ok(json!({
        "op": op_label(args.op),
        "candidate": shown(candidate),
        "active": shown(serving),
        "differs": differs,
        "difference": differs.then(|| {
            crate::plugin::shadow_report::describe(&borrowed(&a), &borrowed(&c))
        }),
    }))
}

fn borrowed(r: &Result<Value, String>) -> Result<Value, &str> {
    r.as_ref().cloned().map_err(String::as_str)
}

/// The op's name as the CLI and its JSON output spell it.
pub fn op_label(op: Op) -> &'static str {
    match op {
        Op::Reconcile => "reconcile",
        Op::Mutate => "mutate",
        Op::Validate => "validate",
    }
}

fn eval_one(args: &EvalArgs, plugin: &str, settings: Option<&Path>) -> Result<Value, EvalError> {
    let object = read_one(&args.object).map_err(usage)?;
    let gvk = Gvk::of_object(&object)
        .ok_or_else(|| usage(anyhow::anyhow!("the object has no apiVersion/kind")))?;
    let old_object = args
        .old_object
        .as_deref()
        .map(read_one)
        .transpose()
        .map_err(usage)?;
    let settings = match settings {
        Some(p) => read_one(p).map_err(usage)?,
        None => json!({}),
    };
    let cluster: Arc<dyn crate::plugin::ClusterView> = match &args.state {
        Some(dir) => Arc::new(load_state(dir).map_err(usage)?),
        None => Arc::new(MemoryCluster::default()),
    };
    let env = CallEnv::read_only(cluster);
    let namespace = args
        .namespace
        .clone()
        .or_else(|| str_at(&object, &["metadata", "namespace"]).map(str::to_string));
    let name = str_at(&object, &["metadata", "name"]).map(str::to_string);
    let plugin = load(plugin, Some(settings))?;
    let manifest = plugin.manifest();

    match args.op {
        Op::Reconcile => {
            let controller = match &args.controller {
                Some(c) => manifest.controllers.iter().find(|x| &x.name == c),
                None => manifest.controllers.iter().find(|x| x.primary == gvk),
            }
            .ok_or_else(|| {
                let wanted = match &args.controller {
                    Some(c) => format!("no controller {c:?}"),
                    None => format!("no controller for {gvk}"),
                };
                usage(anyhow::anyhow!(
                    "plugin {} has {wanted} ({})",
                    plugin.name(),
                    controllers_of(manifest)
                ))
            })?;
            let name =
                name.ok_or_else(|| usage(anyhow::anyhow!("the object has no metadata.name")))?;
            let input = ReconcileInput {
                controller: controller.name.clone(),
                key: RequestKey { namespace, name },
                object: Some(object.to_string()),
            };
            let outcome = plugin
                .reconcile_blocking(&input, &env)
                .map_err(EvalError::Plugin)?;
            Ok(json!({"op": "reconcile", "plugin": plugin.name(), "outcome": outcome}))
        }
        Op::Mutate | Op::Validate => {
            let operation = args.operation.unwrap_or(if old_object.is_some() {
                Operation::Update
            } else {
                Operation::Create
            });
            let wanted = if args.op == Op::Mutate {
                WebhookType::Mutating
            } else {
                WebhookType::Validating
            };
            // The apiserver calls a webhook only for what it registered: an export without such
            // a webhook would answer a request the plugin never receives.
            let webhook = manifest
                .webhooks
                .iter()
                .find(|w| w.type_ == wanted && w.gvk == gvk && w.operations.contains(&operation))
                .ok_or_else(|| {
                    usage(anyhow::anyhow!(
                        "plugin {} has no {} webhook for {} of {gvk} ({})",
                        plugin.name(),
                        kind_name(wanted),
                        op_name(operation),
                        webhooks_of(manifest, wanted)
                    ))
                })?;
            let input = AdmissionInput {
                uid: "00000000-0000-0000-0000-000000000000".into(),
                path: webhook.path.clone(),
                resource: odh_reconcile::kinds::plural(&gvk),
                gvk,
                sub_resource: None,
                operation,
                namespace,
                name,
                object: (operation != Operation::Delete).then(|| RawJson::from_value(&object)),
                old_object: old_object
                    .as_ref()
                    .or((operation == Operation::Delete).then_some(&object))
                    .map(RawJson::from_value),
                dry_run: false,
                user_info: RawJson::from(json!({"username": "plugin-eval"})),
            };
            let op = if wanted == WebhookType::Mutating {
                "mutate"
            } else {
                "validate"
            };
            // What the host answers without calling the plugin, so eval shows what a live
            // request gets.
            if let Some(selector) = &webhook.object_selector {
                let parsed = LabelSelector::parse(selector).map_err(usage)?;
                if !selector_admits(&parsed, input.object.as_ref(), input.old_object.as_ref()) {
                    return Ok(json!({"op": op, "plugin": plugin.name(),
                    "decision": {"allowed": true},
                    "notReviewed": format!(
                        "the object does not match the object selector {selector:?} of \
                         webhook {}: the host admits it without calling the plugin",
                        webhook.path
                    )}));
                }
            }
            let mut decision = plugin
                .admit_blocking(wanted, &input, &env)
                .map_err(EvalError::Plugin)?;
            if wanted == WebhookType::Mutating {
                decision.patch = patch_for(
                    decision.patch.take(),
                    decision.mutated.clone(),
                    (operation != Operation::Delete).then_some(&object),
                );
            }
            Ok(json!({"op": op, "plugin": plugin.name(), "decision": decision}))
        }
    }
}

/// `its controllers: name (kind), ...` or `it has no controllers`.
fn controllers_of(manifest: &Manifest) -> String {
    if manifest.controllers.is_empty() {
        return "it has no controllers".into();
    }
    let list: Vec<String> = manifest
        .controllers
        .iter()
        .map(|c| format!("{} ({})", c.name, c.primary))
        .collect();
    format!("its controllers: {}", list.join(", "))
}

/// An operation as `--operation` takes it (`CREATE`).
/// `--operation`: the admission operations as Kubernetes spells them.
fn operation_parser() -> impl clap::builder::TypedValueParser<Value = Operation> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(["CREATE", "UPDATE", "DELETE", "CONNECT"]).map(|op| {
        match op.as_str() {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            _ => Operation::Connect,
        }
    })
}

fn op_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

fn kind_name(kind: WebhookType) -> &'static str {
    match kind {
        WebhookType::Mutating => "mutating",
        WebhookType::Validating => "validating",
    }
}

/// `its mutating webhooks: path (kind: operations), ...` or `it has no mutating webhooks`.
fn webhooks_of(manifest: &Manifest, kind: WebhookType) -> String {
    let list: Vec<String> = manifest
        .webhooks
        .iter()
        .filter(|w| w.type_ == kind)
        .map(|w| {
            let ops: Vec<&str> = w.operations.iter().map(|o| op_name(*o)).collect();
            format!("{} ({}: {})", w.path, w.gvk, ops.join(", "))
        })
        .collect();
    if list.is_empty() {
        format!("it has no {} webhooks", kind_name(kind))
    } else {
        format!("its {} webhooks: {}", kind_name(kind), list.join(", "))
    }
}

/// The JSON printed on stdout when a plugin call fails (exit status 1).
pub fn error_json(op: &str, err: &CallError) -> Value {
    json!({
        "op": op,
        "error": {
            "reason": err.metric_label(),
            "kind": err.guest_error().map(|g| g.kind()),
            "message": err.to_string(),
        }
    })
}
