//! `odh-model-controller run`: connect, discover, serve until a signal arrives.

use anyhow::Context;
use kube::{Client, Config, config::KubeConfigOptions};
use tracing::info;

use crate::cli::RunArgs;
use crate::discovery::{self, OPTIONAL_KINDS};

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let client = connect(&args).await?;
    let version = client
        .apiserver_version()
        .await
        .context("unable to reach the API server")?;
    info!(version = %version.git_version, "connected to the API server");

    let found = discovery::discover(&client, OPTIONAL_KINDS).await?;
    for (kind, available) in found.iter() {
        info!(group_version = %kind.group_version(), kind = kind.kind, available, "optional kind");
    }

    shutdown_signal().await;
    info!("shutting down");
    Ok(())
}

/// Kube config resolution as upstream: `--kubeconfig`, then KUBECONFIG, in-cluster, ~/.kube/config.
async fn connect(args: &RunArgs) -> anyhow::Result<Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer()
            .await
            .context("unable to load kube config")?,
    };
    Ok(Client::try_from(config)?)
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
