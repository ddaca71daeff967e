use clap::Parser;
use odh_model_controller::cli::{Cli, Command, PluginCommand};
use odh_model_controller::{cli, crd, logging, plugin_cli, plugin_new, plugin_publish, run};

fn main() -> std::process::ExitCode {
    // Before anything can build a TLS object or check a signature (the trace exporter starts
    // before logging): the FIPS build stops here unless its module is in FIPS mode.
    if let Err(e) = odh_crypto::init() {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    let cli = Cli::parse_from(cli::normalize_go_flags(std::env::args()));
    if let Some(Command::Plugin(PluginCommand::Replay(args))) = &cli.command {
        logging::init(logging::Encoder::Console, "warn", None, None);
        return odh_model_controller::plugin_replay::main(args);
    }
    if let Some(Command::Plugin(PluginCommand::Record(cmd))) = &cli.command {
        return odh_model_controller::plugin_record::main(cmd);
    }
    if let Some(Command::Plugin(cmd)) = &cli.command {
        return plugin_command(cmd);
    }
    if let Some(Command::ModelServingApi(args)) = &cli.command {
        return model_serving_api(args);
    }
    let result = match cli.command {
        Some(Command::Plugin(_) | Command::ModelServingApi(_)) => unreachable!("handled above"),
        Some(Command::Crds { write }) => print_crds(write),
        Some(Command::DeployManifests { dir, check }) => {
            odh_model_controller::deploy_manifests::run(&dir, check)
        }
        Some(Command::Run(args)) => run_controller(*args),
        None => run_controller(cli.run),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_controller(args: odh_model_controller::cli::RunArgs) -> anyhow::Result<()> {
    let traces = odh_model_controller::traces::TraceConfig::from_env(
        |k| std::env::var(k).ok(),
        "odh-model-controller",
    )?
    .map(|c| c.start())
    .transpose()?;
    logging::init(
        args.log_encoder(),
        &args.log_level(),
        args.zap_time_encoding,
        traces,
    );
    log_fips_mode();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run::run(args))
}

/// `model-serving-api`: upstream's start-up: the configuration (an error exits with 1 and the
/// message; the settings the gateways plugin takes from the environment are part of it),
/// logging, then the server until SIGTERM or SIGINT.
fn model_serving_api(args: &cli::ModelServingApiArgs) -> std::process::ExitCode {
    use odh_model_controller::model_serving_api::{self as msa, config::ServerConfig};
    use odh_model_controller::startup::SettingsRefused;
    let config = match ServerConfig::from_env(|k| std::env::var(k).ok()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("failed to load config: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let traces = match odh_model_controller::traces::TraceConfig::from_env(
        |k| std::env::var(k).ok(),
        "model-serving-api",
    )
    .and_then(|c| c.map(|c| c.start()).transpose())
    {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("failed to load config: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    logging::init_json_stdout(config.log_level, traces);
    log_fips_mode();
    let options = msa::Options {
        kubeconfig: args.kubeconfig.clone(),
        plugins: args.plugins.clone(),
        plugin_cache_dir: args.plugin_cache_dir.clone(),
        plugin_precompiled_dir: Some(args.plugin_precompiled_dir.clone()),
    };
    let result = match msa::load_plugins(&options) {
        Err(e) if e.downcast_ref::<SettingsRefused>().is_some() => {
            let refused = e.downcast_ref::<SettingsRefused>().expect("checked");
            eprintln!("failed to load config: {}", refused.message);
            return std::process::ExitCode::FAILURE;
        }
        Err(e) => Err(e),
        Ok(plugins) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(msa::run(options, config, plugins))),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The FIPS build says so at start; the default build logs nothing new.
fn log_fips_mode() {
    if let Some(mode) = odh_crypto::mode().filter(|m| m.fips) {
        tracing::info!(
            module = %mode.module,
            "FIPS mode is on: TLS, signature checks and artifact digests use AWS-LC's FIPS module"
        );
    }
}

fn print_crds(write: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    for (file, crd) in crd::owned_crds() {
        let manifest = crd::to_manifest(&crd)?;
        match &write {
            Some(dir) => std::fs::write(dir.join(file), manifest)?,
            None => print!("---\n{manifest}"),
        }
    }
    Ok(())
}

fn publish(
    result: anyhow::Result<serde_json::Value>,
) -> Result<serde_json::Value, plugin_cli::EvalError> {
    result.map_err(plugin_cli::EvalError::Usage)
}

/// Prints the result as JSON on stdout; exit 0 on success, 1 when the plugin failed, 2 on bad
/// arguments or input (the message goes to stderr).
fn plugin_command(cmd: &PluginCommand) -> std::process::ExitCode {
    logging::init(logging::Encoder::Console, "warn", None, None);
    let (op, result) = match cmd {
        PluginCommand::Inspect(args) => ("inspect", plugin_cli::inspect(args)),
        PluginCommand::Push(args) => ("push", publish(plugin_publish::push(args))),
        PluginCommand::Sign(args) => ("sign", publish(plugin_publish::sign(args))),
        PluginCommand::Keygen(args) => ("keygen", publish(plugin_publish::keygen(args))),
        PluginCommand::Precompile(args) => ("precompile", plugin_cli::precompile(args)),
        PluginCommand::New(args) => ("new", publish(plugin_new::new(args))),
        PluginCommand::Replay(_) | PluginCommand::Record(_) => unreachable!("handled in main"),
        PluginCommand::Eval(args) => (plugin_cli::op_label(args.op), plugin_cli::eval(args)),
    };
    match result {
        Ok(out) => {
            print_out(&serde_json::to_string_pretty(&out).expect("JSON values always serialize"));
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            if let plugin_cli::EvalError::Plugin(call) = &e {
                print_out(&plugin_cli::error_json(op, call).to_string());
            }
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
    }
}

/// Prints a result line; a reader that went away (`| head`) is not an error of ours.
fn print_out(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}
