//! Developer helper for `make run` (there is no kubectl or openssl on a fresh machine):
//! `install-crds DIR...` installs CRDs into the cluster of KUBECONFIG;
//! `serving-cert DIR` writes a self-signed `tls.crt`/`tls.key` for 127.0.0.1 and localhost.

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
        Some("serving-cert") => {
            let dir =
                std::path::PathBuf::from(args.next().context("usage: odh-dev serving-cert DIR")?);
            let cert =
                rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])?;
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("tls.crt"), cert.cert.pem())?;
            std::fs::write(dir.join("tls.key"), cert.signing_key.serialize_pem())?;
            println!("wrote {}/tls.crt and tls.key", dir.display());
            Ok(())
        }
        _ => anyhow::bail!("usage: odh-dev install-crds DIR... | odh-dev serving-cert DIR"),
    }
}
