//! What TLS the server speaks: never below 1.2 (a TLS 1.0/1.1 ClientHello, written byte by
//! byte since rustls cannot send one, is refused with a protocol_version alert), no CBC
//! suites, and with the model-serving-api's policy only its cipher suites and groups. Each
//! suite and group is offered alone, so a test fails if the server accepts one outside its
//! policy or refuses one inside it.

use std::net::SocketAddr;
use std::time::Duration;

use odh_model_controller::tls::TlsPolicy;
use rustls::crypto::ring::{ALL_CIPHER_SUITES, ALL_KX_GROUPS, cipher_suite as cs};
use rustls::{CipherSuite, NamedGroup, SupportedCipherSuite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{Server, Settings, client_config, connect_with};

// ---------------------------------------------------------------------------------------------
// Raw ClientHellos.

const TLS1_0: u16 = 0x0301;
const TLS1_1: u16 = 0x0302;
const TLS1_2: u16 = 0x0303;

/// A ClientHello record offering `version` (no supported_versions extension, so this is the
/// highest version offered), `suites` and the X25519 and P-256 groups.
fn client_hello(version: u16, suites: &[u16]) -> Vec<u8> {
    fn u16s(values: &[u16]) -> Vec<u8> {
        let mut out = ((values.len() * 2) as u16).to_be_bytes().to_vec();
        values.iter().for_each(|v| out.extend(v.to_be_bytes()));
        out
    }
    fn extension(out: &mut Vec<u8>, kind: u16, data: &[u8]) {
        out.extend(kind.to_be_bytes());
        out.extend((data.len() as u16).to_be_bytes());
        out.extend(data);
    }
    let mut body = version.to_be_bytes().to_vec();
    body.extend([0x5a; 32]); // random
    body.push(0); // no session id
    body.extend(u16s(suites));
    body.extend([1, 0]); // compression: null only
    let mut extensions = Vec::new();
    extension(&mut extensions, 10, &u16s(&[0x001d, 0x0017])); // supported_groups
    extension(&mut extensions, 11, &[1, 0]); // ec_point_formats: uncompressed
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256
    extension(&mut extensions, 13, &u16s(&[0x0403, 0x0804, 0x0401]));
    extension(&mut extensions, 0xff01, &[0]); // renegotiation_info (empty)
    body.extend((extensions.len() as u16).to_be_bytes());
    body.extend(extensions);
    let mut handshake = vec![1]; // client_hello
    handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend(body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

/// The first record the server answers with.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// A handshake record starting with a ServerHello of this version.
    ServerHello(u16),
    /// A fatal alert with this description.
    Alert(u8),
    Other(Vec<u8>),
}

async fn answer_to(addr: SocketAddr, hello: &[u8]) -> Answer {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(hello).await.unwrap();
    let mut head = [0u8; 5];
    tokio::time::timeout(Duration::from_secs(10), tcp.read_exact(&mut head))
        .await
        .expect("an answer within 10 s")
        .expect("a record header");
    let len = u16::from_be_bytes([head[3], head[4]]) as usize;
    let mut body = vec![0u8; len];
    tcp.read_exact(&mut body).await.unwrap();
    match head[0] {
        0x15 if body.len() == 2 && body[0] == 2 => Answer::Alert(body[1]),
        0x16 if body.first() == Some(&2) => {
            Answer::ServerHello(u16::from_be_bytes([body[4], body[5]]))
        }
        _ => Answer::Other([&head[..], &body].concat()),
    }
}

const PROTOCOL_VERSION: u8 = 70;
const HANDSHAKE_FAILURE: u8 = 40;

/// ECDHE-ECDSA with AES-GCM (the test certificate is ECDSA).
const GCM: [u16; 2] = [0xc02b, 0xc02c];
/// Suites of the TLS 1.0-1.2 era the server must never take: CBC with SHA-1 and SHA-256, RC4
/// and 3DES, RSA key exchange.
const LEGACY: [u16; 8] = [
    0xc009, 0xc00a, 0xc023, 0xc013, 0x002f, 0x0035, 0x000a, 0x0005,
];

#[tokio::test]
async fn tls_1_0_and_1_1_are_refused_and_cbc_suites_never_chosen() {
    for policy in [TlsPolicy::Default, TlsPolicy::ModelServingApi] {
        let server = Server::start(Settings {
            policy,
            ..Settings::default()
        })
        .await;
        // The hello itself is good: at TLS 1.2 it gets a TLS 1.2 ServerHello.
        assert_eq!(
            answer_to(server.addr, &client_hello(TLS1_2, &GCM)).await,
            Answer::ServerHello(TLS1_2),
            "{policy:?}"
        );
        for version in [TLS1_0, TLS1_1] {
            let suites = [&GCM[..], &LEGACY[..]].concat();
            assert_eq!(
                answer_to(server.addr, &client_hello(version, &suites)).await,
                Answer::Alert(PROTOCOL_VERSION),
                "{policy:?}: version {version:#06x}"
            );
        }
        assert_eq!(
            answer_to(server.addr, &client_hello(TLS1_2, &LEGACY)).await,
            Answer::Alert(HANDSHAKE_FAILURE),
            "{policy:?}: legacy suites only"
        );
        server.stop().await;
    }
}

// ---------------------------------------------------------------------------------------------
// Suites and groups, offered one at a time by rustls.

/// What a policy allows (mirrors `TlsPolicy`'s documentation; for the model-serving-api,
/// docs/plugins/llm-gateway.md, "Server behaviour (both ways)").
fn allowed_suite(policy: TlsPolicy, suite: CipherSuite) -> bool {
    match policy {
        TlsPolicy::Default => true,
        TlsPolicy::ModelServingApi => [
            cs::TLS13_AES_128_GCM_SHA256,
            cs::TLS13_AES_256_GCM_SHA384,
            cs::TLS13_CHACHA20_POLY1305_SHA256,
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ]
        .iter()
        .any(|s| s.suite() == suite),
    }
}

fn allowed_group(policy: TlsPolicy, group: NamedGroup) -> bool {
    match policy {
        TlsPolicy::Default => true,
        TlsPolicy::ModelServingApi => {
            group == NamedGroup::secp256r1 || group == NamedGroup::secp384r1
        }
    }
}

/// The certificate is ECDSA: a TLS 1.2 suite authenticating with RSA cannot be served.
fn servable(suite: &SupportedCipherSuite) -> bool {
    match suite {
        SupportedCipherSuite::Tls13(_) => true,
        SupportedCipherSuite::Tls12(s) => s
            .sign
            .contains(&rustls::SignatureScheme::ECDSA_NISTP256_SHA256),
    }
}

/// A handshake offering only `suite` and `group`; the negotiated (version, suite, group).
async fn offer(
    server: &Server,
    suite: SupportedCipherSuite,
    group: &'static dyn rustls::crypto::SupportedKxGroup,
) -> anyhow::Result<(rustls::ProtocolVersion, CipherSuite, NamedGroup)> {
    let provider = rustls::crypto::CryptoProvider {
        cipher_suites: vec![suite],
        kx_groups: vec![group],
        ..rustls::crypto::ring::default_provider()
    };
    let version = match suite {
        SupportedCipherSuite::Tls13(_) => &rustls::version::TLS13,
        SupportedCipherSuite::Tls12(_) => &rustls::version::TLS12,
    };
    let config = client_config(&server.ca.der(), provider, &[version], &["http/1.1"]);
    let tls = connect_with(server.addr, config).await?;
    let conn = tls.get_ref().1;
    Ok((
        conn.protocol_version().unwrap(),
        conn.negotiated_cipher_suite().unwrap().suite(),
        conn.negotiated_key_exchange_group().unwrap().name(),
    ))
}

#[tokio::test]
async fn only_the_policy_s_cipher_suites_and_groups_are_negotiated() {
    for policy in [TlsPolicy::Default, TlsPolicy::ModelServingApi] {
        let server = Server::start(Settings {
            policy,
            ..Settings::default()
        })
        .await;
        let mut accepted = Vec::new();
        for &suite in ALL_CIPHER_SUITES {
            for &group in ALL_KX_GROUPS {
                let want = allowed_suite(policy, suite.suite())
                    && allowed_group(policy, group.name())
                    && servable(&suite);
                match offer(&server, suite, group).await {
                    Ok((_, got_suite, got_group)) => {
                        assert!(
                            want,
                            "{policy:?} accepted {:?} with {:?}",
                            suite.suite(),
                            group.name()
                        );
                        assert_eq!((got_suite, got_group), (suite.suite(), group.name()));
                        accepted.push(format!("{:?}/{:?}", suite.suite(), group.name()));
                    }
                    Err(e) => assert!(
                        !want,
                        "{policy:?} refused {:?} with {:?}: {e:#}",
                        suite.suite(),
                        group.name()
                    ),
                }
            }
        }
        println!(
            "{policy:?}: {} suite/group pairs accepted: {accepted:?}",
            accepted.len()
        );
        server.stop().await;
    }
}

#[tokio::test]
async fn both_tls_1_2_and_1_3_are_served_and_1_3_is_preferred() {
    let server = Server::start(Settings::default()).await;
    let both = client_config(
        &server.ca.der(),
        rustls::crypto::ring::default_provider(),
        &[&rustls::version::TLS13, &rustls::version::TLS12],
        &["http/1.1"],
    );
    let tls = connect_with(server.addr, both).await.unwrap();
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    let only_12 = client_config(
        &server.ca.der(),
        rustls::crypto::ring::default_provider(),
        &[&rustls::version::TLS12],
        &["http/1.1"],
    );
    let tls = connect_with(server.addr, only_12).await.unwrap();
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    server.stop().await;
}
