//! Developer helper for `make run`: installs CRDs from directories into the cluster of
//! KUBECONFIG (there is no kubectl on a fresh machine).

use anyhow::Context;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("install-crds") => {
            let dirs: Vec<String> = args.collect();
            anyhow::ensure!(!dirs.is_empty(), "usage: odh-dev install-crds DIR...");
            let client = kube::Client::try_default()
                .await
                .context("connecting with KUBECONFIG")?;
            let names = odh_test_support::crds::install(&client, &dirs).await?;
            println!("installed {} CRDs", names.len());
            Ok(())
        }
        _ => anyhow::bail!("usage: odh-dev install-crds DIR..."),
    }
}
