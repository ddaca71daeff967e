//! Developer helper for `make run` (there is no kubectl or openssl on a fresh machine), for the
//! cluster of KUBECONFIG:
//!
//! * `install-crds DIR...`: the CRDs of these directories;
//! * `serving-cert DIR`: a self-signed `tls.crt`/`tls.key` for 127.0.0.1 and localhost;
//! * `ensure-namespace NS`;
//! * `apply NS FILE...`: server-side apply of every object of the files;
//! * `wait-for NS API_VERSION KIND NAME`: until the object exists (a minute at most);
//! * `show NS`: the objects of the serving kinds in NS, with their finalizers;
//! * `bench-gate GATE_FILE RESULTS_DIR`: the benchmark figures against their limits (CI).

use std::path::PathBuf;

use anyhow::Context;
use odh_test_support::dev;

const USAGE: &str = "usage: odh-dev install-crds DIR... | serving-cert DIR | ensure-namespace NS | \
    apply NS FILE... | \
    wait-for NS API_VERSION KIND NAME | show NS | bench-gate GATE_FILE RESULTS_DIR";

/// The kinds `show` lists: what an InferenceService's reconcile makes, and the service itself.
const SHOWN: [(&str, &str); 6] = [
    ("serving.kserve.io/v1beta1", "InferenceService"),
    ("serving.kserve.io/v1alpha1", "ServingRuntime"),
    ("route.openshift.io/v1", "Route"),
    ("v1", "Service"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("v1", "ConfigMap"),
];

async fn client() -> anyhow::Result<kube::Client> {
    kube::Client::try_default()
        .await
        .context("connecting with KUBECONFIG")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = || args[1..].to_vec();
    match args.first().map(String::as_str) {
        Some("install-crds") => {
            anyhow::ensure!(args.len() > 1, "{USAGE}");
            let names = odh_test_support::crds::install(&client().await?, &rest()).await?;
            println!("installed {} CRDs", names.len());
        }
        Some("serving-cert") => {
            let dir = PathBuf::from(args.get(1).context(USAGE)?);
            let cert =
                rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])?;
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("tls.crt"), cert.cert.pem())?;
            std::fs::write(dir.join("tls.key"), cert.signing_key.serialize_pem())?;
            println!("wrote {}/tls.crt and tls.key", dir.display());
        }
        Some("ensure-namespace") => {
            dev::ensure_namespace(&client().await?, args.get(1).context(USAGE)?).await?;
        }
        Some("apply") if args.len() > 2 => {
            let client = client().await?;
            for file in &args[2..] {
                for applied in dev::apply_file(&client, file.as_ref(), &args[1]).await? {
                    println!("applied {applied}");
                }
            }
        }
        Some("wait-for") if args.len() == 5 => {
            dev::wait_for(&client().await?, &args[1], &args[2], &args[3], &args[4]).await?;
        }
        Some("show") => {
            let ns = args.get(1).context(USAGE)?;
            for line in dev::show(&client().await?, ns, &SHOWN).await? {
                println!("  {line}");
            }
        }
        Some("bench-gate") if args.len() == 3 => {
            let gate: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(&args[1])
                    .with_context(|| format!("reading {}", args[1]))?,
            )?;
            let checked = odh_test_support::bench_gate::check(&gate, args[2].as_ref())?;
            for c in &checked {
                let verdict = if c.ok { "ok  " } else { "FAIL" };
                println!(
                    "{verdict} {} {} = {:.3} ({})",
                    c.file, c.pointer, c.value, c.limit
                );
            }
            let failed = checked.iter().filter(|c| !c.ok).count();
            anyhow::ensure!(failed == 0, "{failed} benchmark figure(s) over their limit");
        }
        _ => anyhow::bail!("{USAGE}"),
    }
    Ok(())
}
