//! The FIPS variant (`--features fips`, `make fips-check`): the real binary, built on AWS-LC's
//! FIPS module, serves TLS 1.3 on its webhook port with an approved suite, says FIPS mode in its
//! log, refuses clients that offer only what FIPS does not approve (ChaCha20-Poly1305, X25519),
//! and does not start when the module is not in FIPS mode. The clients are rustls with ring:
//! another implementation than the server's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use odh_test_support::net::{free_port, get, remove_dir, serving_cert};
use odh_test_support::process::HostProcess;
use odh_test_support::{Timing, eventually};
use rustls::crypto::ring::{cipher_suite as cs, kx_group};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CipherSuite, NamedGroup, ProtocolVersion, SupportedCipherSuite};
use serde_json::json;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

mod common;

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

/// A TLS 1.3 (and 1.2) client offering exactly `suites` and `groups`.
async fn connect(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    suites: &[SupportedCipherSuite],
    groups: &[&'static dyn SupportedKxGroup],
) -> std::io::Result<Tls> {
    let provider = CryptoProvider {
        cipher_suites: suites.to_vec(),
        kx_groups: groups.to_vec(),
        ..rustls::crypto::ring::default_provider()
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("the test CA");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .expect("a client configuration")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").expect("a server name");
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// One admission request over `tls`: the webhook's answer.
async fn admit(tls: Tls) -> anyhow::Result<(u16, serde_json::Value)> {
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let review = common::config_map_review("uid-fips", "fips", json!({}));
    let request = http::Request::post("/validate-misbehave")
        .header("content-type", "application/json")
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::from(serde_json::to_vec(&review)?)))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, serde_json::from_slice(&body)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fips_build_serves_approved_tls_only_and_says_so() -> anyhow::Result<()> {
    // The test's own kube clients (the test apiserver) build their TLS from the process default,
    // which a process with both rustls providers compiled in must install.
    odh_crypto::init().map_err(anyhow::Error::msg)?;
    let (cert_dir, ca) = serving_cert("fips");
    let (health, webhook) = (free_port(), free_port());
    let host = HostProcess::start(
        "fips",
        &[
            format!(
                "--plugin={}",
                odh_test_support::plugin_wasm("misbehave")?.display()
            ),
            "--no-default-plugins".into(),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address=127.0.0.1:{webhook}"),
            format!("--health-probe-bind-address=127.0.0.1:{health}"),
            "--metrics-bind-address=0".into(),
        ],
        &[],
    )?;
    let health: SocketAddr = ([127, 0, 0, 1], health).into();
    let webhook: SocketAddr = ([127, 0, 0, 1], webhook).into();
    eventually("the host is ready", Timing::default(), || async {
        let reply = get(health, "/readyz").await?;
        anyhow::ensure!(reply.status == 200, "{}: {}", reply.status, reply.body);
        Ok(())
    })
    .await
    .map_err(|e| e.context(host.output()))?;

    let output = host.output();
    assert!(
        output.contains("FIPS mode is on") && output.contains("AWS-LC FIPS"),
        "the start-up log says FIPS mode and names the module:\n{output}"
    );

    // An approved TLS 1.3 suite. The client offers X25519 first and the NIST curves after it:
    // the server asks for P-256 instead (HelloRetryRequest), never X25519.
    let tls = connect(
        webhook,
        &ca,
        &[cs::TLS13_AES_256_GCM_SHA384],
        &[kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
    )
    .await?;
    let session = tls.get_ref().1;
    assert_eq!(session.protocol_version(), Some(ProtocolVersion::TLSv1_3));
    assert_eq!(
        session.negotiated_cipher_suite().map(|s| s.suite()),
        Some(CipherSuite::TLS13_AES_256_GCM_SHA384)
    );
    assert_eq!(
        session.negotiated_key_exchange_group().map(|g| g.name()),
        Some(NamedGroup::secp256r1),
        "X25519 is not an approved curve"
    );
    let (status, answer) = admit(tls).await?;
    assert_eq!(
        (status, &answer["response"]["allowed"]),
        (200, &json!(true)),
        "{answer}"
    );

    // Only what FIPS does not approve: each is refused in the handshake.
    let refused: [(
        &str,
        &[SupportedCipherSuite],
        &[&'static dyn SupportedKxGroup],
    ); 3] = [
        (
            "TLS 1.3 with ChaCha20-Poly1305 only",
            &[cs::TLS13_CHACHA20_POLY1305_SHA256],
            &[kx_group::SECP256R1],
        ),
        (
            "TLS 1.2 with ChaCha20-Poly1305 only",
            &[cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256],
            &[kx_group::SECP256R1],
        ),
        (
            "key exchange on X25519 only",
            &[cs::TLS13_AES_256_GCM_SHA384],
            &[kx_group::X25519],
        ),
    ];
    for (what, suites, groups) in refused {
        match connect(webhook, &ca, suites, groups).await {
            Ok(tls) => panic!(
                "{what}: the server accepted {:?} on {:?}",
                tls.get_ref().1.negotiated_cipher_suite(),
                tls.get_ref()
                    .1
                    .negotiated_key_exchange_group()
                    .map(|g| g.name())
            ),
            Err(e) => assert!(
                e.to_string().contains("HandshakeFailure"),
                "{what}: refused with a handshake_failure alert, not: {e}"
            ),
        }
    }
    drop(host);
    remove_dir(&cert_dir);
    Ok(())
}

/// A FIPS build whose module is not in FIPS mode exits non-zero at once with a clear error,
/// before serving anything. (`ODH_TEST_FIPS_REFUSE`, read by debug builds only, stands in for
/// the module answering "not in FIPS mode".)
#[test]
fn the_fips_build_refuses_to_start_without_fips_mode() {
    let mut host = HostProcess::spawn(
        "fips-refuse",
        &["run".into(), "--metrics-bind-address=0".into()],
        &[],
        &[("ODH_TEST_FIPS_REFUSE", "1")],
    )
    .expect("starting the binary");
    let status = host
        .wait(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("it kept running:\n{}", host.output()));
    let output = host.output();
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(
        output.contains("error: refusing to start: this is the FIPS build")
            && output.contains("not in FIPS mode"),
        "{output}"
    );
}
