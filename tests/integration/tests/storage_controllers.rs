//! The `storage` plugin's controllers on the real apiserver (docs/plugins/storage.md; scenarios
//! CM-1..CM-3, SEC-1..SEC-5, X-5, X-6): one host running the built `target/plugins/storage.wasm`
//! for the whole test binary, each test in a namespace of its own.
//!
//! The host talks to the apiserver through a counting proxy, so a test can count the writes
//! the controllers sent for its own objects (the acceptance: a data-connection change rewrites
//! `storage-config` once, a no-op reconcile writes nothing).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use odh_model_controller::plugin::record::Recorder;
use odh_test_support::host::{
    RunningControllers, Setup, controllers_running, controllers_running_with, load, quiet,
    reconciled_names, record_every_call,
};
use odh_test_support::proxy::CountingProxy;
use odh_test_support::{TestContext, Timing, absent, consistently, eventually, exists};
use serde_json::json;

const BUNDLE: &str = "odh-kserve-custom-ca-bundle";
const TRUSTED: &str = "odh-trusted-ca-bundle";
const SERVICE_CA: &str = "openshift-service-ca.crt";
const STORAGE_CONFIG: &str = "storage-config";
const HTTP: &str = "aws-connection-minio-http";
const HTTPS: &str = "aws-connection-minio-https";

const NO_CA_HTTP: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","endpoint_url":"http://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;
const NO_CA_HTTPS: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","endpoint_url":"https://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;
const CA_HTTPS: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","cabundle_configmap":"odh-kserve-custom-ca-bundle","endpoint_url":"https://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;

/// The certificates of the CM scenarios, as the sources hold them (blocks to be trimmed).
const CLUSTERWIDE: &str =
    "-----BEGIN CERTIFICATE-----\nQ0xVU1RFUldJREU=\n-----END CERTIFICATE-----\n";
const CUSTOM: &str = "\n-----BEGIN CERTIFICATE-----\nQ1VTVE9N\n-----END CERTIFICATE-----\n\n";
const SERVING: &str = "  -----BEGIN CERTIFICATE-----\nU0VSVklORw==\n-----END CERTIFICATE-----\t\n";

/// The storage controllers, once per test binary (4 workers), on a runtime of their own,
/// behind the proxy that records their requests.
fn controllers() -> &'static CountingProxy {
    static PROXY: OnceLock<CountingProxy> = OnceLock::new();
    controllers_running_with(|upstream| async move {
        let proxy = CountingProxy::start(upstream).await.expect("proxy");
        let client = Client::try_from(proxy.config()).expect("proxied client");
        assert!(PROXY.set(proxy).is_ok(), "one proxy");
        Setup::new(client, vec![load("storage")], 4)
    });
    PROXY.get().expect("the proxy of the running controllers")
}

/// The running controllers (started by [`controllers`]).
fn running() -> &'static RunningControllers {
    controllers();
    controllers_running(Vec::new, 1)
}

/// A recorder of every call of the storage plugin, set on its slot by the first caller.
fn recorded_calls() -> &'static Recorder {
    static RECORDER: OnceLock<std::sync::Arc<Recorder>> = OnceLock::new();
    RECORDER.get_or_init(|| record_every_call(&running().slots[0]))
}

/// A test namespace, with the controllers running.
async fn setup(prefix: &str) -> anyhow::Result<TestContext> {
    let t = TestContext::new(prefix).await?;
    controllers();
    Ok(t)
}

/// Writes (anything but GET) the controllers sent for `namespace/<kind plural>/<name>`.
fn writes_to(namespace: &str, plural: &str, name: &str) -> usize {
    let path = format!("/api/v1/namespaces/{namespace}/{plural}/{name}");
    controllers()
        .requests()
        .iter()
        .filter(|r| r.is_write() && r.path.split('?').next() == Some(path.as_str()))
        .count()
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .expect("a ConfigMap")
}

/// Creates or replaces (a plain update, as a user would) a ConfigMap.
async fn put_config_map(api: &Api<ConfigMap>, cm: ConfigMap) -> anyhow::Result<()> {
    match api.get_opt(&cm.name_any()).await? {
        None => {
            api.create(&PostParams::default(), &cm).await?;
        }
        Some(existing) => {
            let mut cm = cm;
            cm.metadata.resource_version = existing.resource_version();
            api.replace(&existing.name_any(), &PostParams::default(), &cm)
                .await?;
        }
    }
    Ok(())
}

async fn sources(
    t: &TestContext,
    clusterwide: &str,
    custom: &str,
    serving: &str,
) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = t.api();
    put_config_map(
        &cms,
        config_map(
            TRUSTED,
            &[
                ("ca-bundle.crt", clusterwide),
                ("odh-ca-bundle.crt", custom),
            ],
        ),
    )
    .await?;
    put_config_map(&cms, config_map(SERVICE_CA, &[("service-ca.crt", serving)])).await
}

fn joined(blocks: &[&str]) -> String {
    blocks
        .iter()
        .map(|b| b.trim())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Waits until the bundle's `data` is exactly `{cabundle.crt: expected}`.
async fn bundle_is(t: &TestContext, expected: &str) -> anyhow::Result<ConfigMap> {
    let cms: Api<ConfigMap> = t.api();
    eventually(
        "the bundle holds the joined certificates",
        Timing::default(),
        || async {
            let cm = exists_now(&cms, BUNDLE).await?;
            let want = BTreeMap::from([("cabundle.crt".to_string(), expected.to_string())]);
            anyhow::ensure!(cm.data.as_ref() == Some(&want), "data {:?}", cm.data);
            Ok(cm)
        },
    )
    .await
}

async fn exists_now<K>(api: &Api<K>, name: &str) -> anyhow::Result<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("{name} does not exist (yet)"))
}

fn data_connection(name: &str, endpoint: &str) -> Secret {
    let data: BTreeMap<String, ByteString> = [
        ("AWS_ACCESS_KEY_ID", "admin"),
        ("AWS_SECRET_ACCESS_KEY", "password"),
        ("AWS_S3_ENDPOINT", endpoint),
        ("AWS_S3_BUCKET", "test-example-models"),
        ("AWS_DEFAULT_REGION", "us-south"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
    .collect();
    let mut secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"opendatahub.io/managed": "true", "opendatahub.io/dashboard": "true"},
            "annotations": {"opendatahub.io/connection-type": "s3"},
        },
    }))
    .expect("a Secret");
    secret.data = Some(data);
    secret
}

async fn create_connections(t: &TestContext) -> anyhow::Result<()> {
    let secrets: Api<Secret> = t.api();
    for (name, endpoint) in [
        (HTTP, "http://minio.minio.svc:9000"),
        (HTTPS, "https://minio.minio.svc:9000"),
    ] {
        secrets
            .create(&PostParams::default(), &data_connection(name, endpoint))
            .await?;
    }
    Ok(())
}

async fn delete_connections(t: &TestContext) -> anyhow::Result<()> {
    let secrets: Api<Secret> = t.api();
    for name in [HTTP, HTTPS] {
        secrets.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}

fn entries(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

fn want(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Waits until `storage-config` holds exactly `expected`.
async fn storage_config_is(
    t: &TestContext,
    expected: &BTreeMap<String, String>,
) -> anyhow::Result<Secret> {
    let secrets: Api<Secret> = t.api();
    eventually(
        "storage-config holds the documents",
        Timing::default(),
        || async {
            let s = exists_now(&secrets, STORAGE_CONFIG).await?;
            anyhow::ensure!(&entries(&s) == expected, "entries {:?}", entries(&s));
            Ok(s)
        },
    )
    .await
}

/// Sets `storage-config`'s managed label (and, optionally, every entry), as a user would.
async fn unmanage_storage_config(t: &TestContext, overwrite: Option<&str>) -> anyhow::Result<()> {
    let secrets: Api<Secret> = t.api();
    let mut patch = json!({"metadata": {"labels": {"opendatahub.io/managed": "false"}}});
    if let Some(value) = overwrite {
        let encoded = k8s_openapi::ByteString(value.as_bytes().to_vec());
        patch["data"] = json!({HTTP: encoded, HTTPS: encoded});
    }
    secrets
        .patch(
            STORAGE_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await?;
    Ok(())
}

fn a_while() -> Timing {
    Timing::within(Duration::from_secs(3))
}

/// CM-1, CM-2, CM-3: the bundle is made from both sources, follows their updates, and is
/// deleted with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cm_1_cm_2_cm_3_the_bundle_follows_its_sources() -> anyhow::Result<()> {
    let t = setup("storage-cm").await?;
    sources(&t, CLUSTERWIDE, CUSTOM, SERVING).await?;
    let made = bundle_is(&t, &joined(&[CLUSTERWIDE, CUSTOM, SERVING])).await?;
    assert_eq!(
        made.labels()
            .get("opendatahub.io/managed")
            .map(String::as_str),
        Some("true")
    );
    assert!(
        made.owner_references().is_empty(),
        "no owner: it is the namespace's"
    );

    // CM-2
    let updated = [
        "-----BEGIN CERTIFICATE-----\nQ0xVU1RFUldJREUgVVBEQVRFRA==\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\nQ1VTVE9NIFVQREFURUQ=\n-----END CERTIFICATE-----",
        "\n-----BEGIN CERTIFICATE-----\nU0VSVklORyBVUERBVEVE\n-----END CERTIFICATE-----\n",
    ];
    sources(&t, updated[0], updated[1], updated[2]).await?;
    bundle_is(&t, &joined(&updated)).await?;

    // CM-3
    let cms: Api<ConfigMap> = t.api();
    cms.delete(TRUSTED, &DeleteParams::default()).await?;
    bundle_is(&t, &joined(&updated[2..])).await?;
    cms.delete(SERVICE_CA, &DeleteParams::default()).await?;
    absent(&cms, BUNDLE).await
}

/// Upstream's name predicate of `core-configmap`, as the plugin's event filter: ConfigMaps of
/// other names never reach the plugin (created, updated or deleted), the sources do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_configmaps_never_reach_the_plugin() -> anyhow::Result<()> {
    let t = setup("storage-names").await?;
    let recorder = recorded_calls();
    let cms: Api<ConfigMap> = t.api();
    for i in 0..5 {
        put_config_map(&cms, config_map(&format!("unrelated-{i}"), &[("k", "v")])).await?;
    }
    put_config_map(&cms, config_map("unrelated-0", &[("k", "w")])).await?;
    cms.delete("unrelated-1", &DeleteParams::default()).await?;
    sources(&t, CLUSTERWIDE, CUSTOM, SERVING).await?;
    bundle_is(&t, &joined(&[CLUSTERWIDE, CUSTOM, SERVING])).await?;
    quiet(&running().ctx, Timing::default()).await?;
    let reconciled = reconciled_names(recorder, "core-configmap", &t.namespace);
    assert!(reconciled.iter().any(|n| n == TRUSTED), "{reconciled:?}");
    assert!(
        !reconciled.iter().any(|n| n.starts_with("unrelated-")),
        "{reconciled:?}"
    );
    Ok(())
}

/// SEC-1, and the acceptance: a data-connection change rewrites `storage-config` once, and a
/// reconcile that changes nothing writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sec_1_storage_config_is_written_once_per_change() -> anyhow::Result<()> {
    let t = setup("storage-sec1").await?;
    create_connections(&t).await?;
    let first = storage_config_is(&t, &want(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])).await?;
    assert_eq!(first.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        first.labels(),
        &BTreeMap::from([("opendatahub.io/managed".to_string(), "true".to_string())])
    );
    let ns = t.namespace.clone();
    // Settled: once both connections are in, nothing more is written. (How many writes that
    // took depends on how the two creations interleave with the reconciles: one, two, or an
    // extra no-op apply when a reconcile read a cache that had not yet seen the last write.)
    let settled = eventually("the writes settle", Timing::default(), || async {
        let n = writes_to(&ns, "secrets", STORAGE_CONFIG);
        consistently(
            "no further write",
            Timing::within(Duration::from_secs(2)),
            || async {
                let now = writes_to(&ns, "secrets", STORAGE_CONFIG);
                anyhow::ensure!(now == n, "{now} writes, then more");
                Ok(())
            },
        )
        .await?;
        Ok(n)
    })
    .await?;
    anyhow::ensure!(settled >= 1, "storage-config was never written");

    // A change of one connection: one write.
    let secrets: Api<Secret> = t.api();
    let region = json!({"data": {"AWS_DEFAULT_REGION": ByteString(b"eu-de".to_vec())}});
    secrets
        .patch(HTTP, &PatchParams::default(), &Patch::Merge(region))
        .await?;
    let moved = NO_CA_HTTP.replace("us-south", "eu-de");
    let second = storage_config_is(&t, &want(&[(HTTP, &moved), (HTTPS, NO_CA_HTTPS)])).await?;
    assert_ne!(first.resource_version(), second.resource_version());
    consistently("one write for one change", a_while(), || async {
        let n = writes_to(&ns, "secrets", STORAGE_CONFIG);
        anyhow::ensure!(
            n == settled + 1,
            "{n} writes of storage-config after {settled} for the creation"
        );
        Ok(())
    })
    .await?;

    // A change that does not matter to storage-config: reconciled, nothing written.
    let unrelated = json!({"metadata": {"annotations": {"note": "irrelevant"}}});
    secrets
        .patch(HTTPS, &PatchParams::default(), &Patch::Merge(unrelated))
        .await?;
    consistently("a no-op reconcile writes nothing", a_while(), || async {
        let n = writes_to(&ns, "secrets", STORAGE_CONFIG);
        anyhow::ensure!(
            n == settled + 1,
            "{n} writes of storage-config after the no-op"
        );
        let now = exists_now(&secrets, STORAGE_CONFIG).await?;
        anyhow::ensure!(
            now.resource_version() == second.resource_version(),
            "rewritten"
        );
        Ok(())
    })
    .await
}

/// SEC-2: both data connections deleted → the managed `storage-config` is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sec_2_no_connections_delete_storage_config() -> anyhow::Result<()> {
    let t = setup("storage-sec2").await?;
    create_connections(&t).await?;
    storage_config_is(&t, &want(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])).await?;
    delete_connections(&t).await?;
    absent(&t.api::<Secret>(), STORAGE_CONFIG).await
}

/// SEC-3: relabelled `"false"`, then both connections deleted → `storage-config` stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sec_3_an_unmanaged_storage_config_is_not_deleted() -> anyhow::Result<()> {
    let t = setup("storage-sec3").await?;
    create_connections(&t).await?;
    storage_config_is(&t, &want(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])).await?;
    unmanage_storage_config(&t, None).await?;
    delete_connections(&t).await?;
    let secrets: Api<Secret> = t.api();
    consistently("storage-config stays", a_while(), || async {
        let s = exists_now(&secrets, STORAGE_CONFIG).await?;
        anyhow::ensure!(entries(&s).len() == 2, "entries {:?}", entries(&s));
        Ok(())
    })
    .await
}

/// SEC-4: relabelled `"false"` and overwritten → the controller does not revert it, even when
/// a data connection changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sec_4_an_unmanaged_storage_config_is_not_reverted() -> anyhow::Result<()> {
    let t = setup("storage-sec4").await?;
    create_connections(&t).await?;
    storage_config_is(&t, &want(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])).await?;
    unmanage_storage_config(&t, Some("unmanaged")).await?;
    let secrets: Api<Secret> = t.api();
    let region = json!({"data": {"AWS_DEFAULT_REGION": ByteString(b"eu-de".to_vec())}});
    secrets
        .patch(HTTP, &PatchParams::default(), &Patch::Merge(region))
        .await?;
    let kept = want(&[(HTTP, "unmanaged"), (HTTPS, "unmanaged")]);
    consistently(
        "storage-config keeps the user's values",
        a_while(),
        || async {
            let s = exists_now(&secrets, STORAGE_CONFIG).await?;
            anyhow::ensure!(entries(&s) == kept, "entries {:?}", entries(&s));
            Ok(())
        },
    )
    .await
}

/// SEC-5: with the bundle, only the https entry names it; a source update goes through the
/// ConfigMap → Secret chain (storage-config deleted and rebuilt) to the same two values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sec_5_the_ca_bundle_chain() -> anyhow::Result<()> {
    let t = setup("storage-sec5").await?;
    sources(&t, CLUSTERWIDE, CUSTOM, SERVING).await?;
    bundle_is(&t, &joined(&[CLUSTERWIDE, CUSTOM, SERVING])).await?;
    create_connections(&t).await?;
    let expected = want(&[(HTTP, NO_CA_HTTP), (HTTPS, CA_HTTPS)]);
    let before = storage_config_is(&t, &expected).await?;

    sources(&t, "UPDATED-1", "UPDATED-2", "UPDATED-3").await?;
    bundle_is(&t, "UPDATED-1\n\nUPDATED-2\n\nUPDATED-3").await?;
    let secrets: Api<Secret> = t.api();
    eventually("storage-config is rebuilt", Timing::default(), || async {
        let s = exists_now(&secrets, STORAGE_CONFIG).await?;
        anyhow::ensure!(s.uid() != before.uid(), "not rebuilt yet");
        anyhow::ensure!(entries(&s) == expected, "entries {:?}", entries(&s));
        Ok(())
    })
    .await?;
    Ok(())
}

/// X-5: a user-created bundle in a namespace without sources is deleted; with sources, a
/// manual edit is reverted and the user's labels kept, and a deleted bundle is re-created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_5_a_user_bundle_is_deleted_or_reverted() -> anyhow::Result<()> {
    let t = setup("storage-x5").await?;
    let cms: Api<ConfigMap> = t.api();
    cms.create(
        &PostParams::default(),
        &config_map(BUNDLE, &[("cabundle.crt", "mine")]),
    )
    .await?;
    absent(&cms, BUNDLE).await?;

    sources(&t, "A", "", "C").await?;
    bundle_is(&t, "A\n\nC").await?;
    let edit = json!({"metadata": {"labels": {"team": "x"}}, "data": {"cabundle.crt": "edited"}});
    cms.patch(BUNDLE, &PatchParams::default(), &Patch::Merge(edit))
        .await?;
    let reverted = bundle_is(&t, "A\n\nC").await?;
    assert_eq!(reverted.labels().get("team").map(String::as_str), Some("x"));

    // Deleted by hand: its own delete event brings it back.
    cms.delete(BUNDLE, &DeleteParams::default()).await?;
    eventually("the bundle is re-created", Timing::default(), || async {
        let cm = exists_now(&cms, BUNDLE).await?;
        anyhow::ensure!(cm.uid() != reverted.uid(), "not deleted yet");
        Ok(())
    })
    .await?;
    bundle_is(&t, "A\n\nC").await?;
    Ok(())
}

/// X-6: a bundle change deletes a managed storage-config (rebuilt) but leaves an unmanaged one
/// alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_6_an_unmanaged_storage_config_survives_a_bundle_change() -> anyhow::Result<()> {
    let t = setup("storage-x6").await?;
    create_connections(&t).await?;
    storage_config_is(&t, &want(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])).await?;
    unmanage_storage_config(&t, None).await?;
    let secrets: Api<Secret> = t.api();
    let before = exists(&secrets, STORAGE_CONFIG).await?;
    sources(&t, "A", "", "").await?;
    bundle_is(&t, "A").await?;
    consistently(
        "the unmanaged storage-config stays as it was",
        a_while(),
        || async {
            let s = exists_now(&secrets, STORAGE_CONFIG).await?;
            anyhow::ensure!(s.uid() == before.uid(), "deleted and re-created");
            anyhow::ensure!(s.resource_version() == before.resource_version(), "written");
            Ok(())
        },
    )
    .await
}

/// The claim before a delete names the uid it read: the API server refuses it for another
/// object of the same name (one re-created meanwhile), so a claim never takes over an object
/// the controller did not decide about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_naming_another_uid_is_refused() -> anyhow::Result<()> {
    let t = TestContext::new("storage-claim").await?;
    let cms: Api<ConfigMap> = t.api();
    let user = cms
        .create(
            &PostParams::default(),
            &config_map("someone-elses", &[("k", "v")]),
        )
        .await?;
    let claim = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "someone-elses", "uid": "00000000-0000-0000-0000-000000000000",
                     "labels": {"opendatahub.io/managed": "true"}},
    });
    let refused = cms
        .patch(
            "someone-elses",
            &PatchParams::apply("odh-model-controller/storage").force(),
            &Patch::Apply(claim),
        )
        .await;
    assert!(
        refused.is_err(),
        "a claim with a stale uid was applied: {refused:?}"
    );
    let after = exists_now(&cms, "someone-elses").await?;
    assert_eq!(after.resource_version(), user.resource_version());
    Ok(())
}
