//! The Secret controller (docs/plugins/storage.md, "Controller `secret`"; scenarios
//! SEC-1..SEC-5, X-6..X-8).

mod common;

use std::collections::BTreeMap;

use common::*;
use odh_kinds::gvk;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Object, json};
use odh_test_fixtures::secret;
use storage::storage_config::{concerns, connection_document};

/// Upstream's document without the CA (as its Go controller writes it), byte for byte.
const NO_CA_HTTP: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","endpoint_url":"http://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;
const NO_CA_HTTPS: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","endpoint_url":"https://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;
/// Upstream's document with the CA, byte for byte.
const CA_HTTPS: &str = r#"{"access_key_id":"admin","bucket":"test-example-models","cabundle_configmap":"odh-kserve-custom-ca-bundle","endpoint_url":"https://minio.minio.svc:9000","region":"us-south","secret_access_key":"password","type":"s3"}"#;

fn entries(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn with_connections() -> FakeCluster {
    let mut cluster = cluster();
    for c in both_connections() {
        cluster.insert(c);
    }
    cluster
}

fn bundle(cert: &str) -> odh_plugin_sdk::Value {
    config_map("odh-kserve-custom-ca-bundle", &[("cabundle.crt", cert)])
}

/// SEC-1: both connections → exactly two entries, the spec's no-CA documents.
#[test]
fn sec_1_connections_make_storage_config() {
    let mut cluster = with_connections();
    let outcome = reconcile(&cluster, SEC, HTTP);
    let applied = outcome.applied_object("Secret", "storage-config");
    assert_eq!(
        applied.labels(),
        [("opendatahub.io/managed".to_string(), "true".to_string())].into()
    );
    assert_eq!(applied.at(&["type"]), None, "the server defaults the type");
    assert_eq!(
        outcome
            .applied("Secret", "storage-config")
            .unwrap()
            .ownership,
        odh_plugin_sdk::Ownership::None
    );
    apply(&mut cluster, &outcome);
    assert_eq!(
        storage_config_entries(&cluster),
        entries(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)])
    );
    // Its own event, and any other managed Secret's, change nothing.
    for trigger in ["storage-config", HTTPS, "unrelated"] {
        let again = reconcile(&cluster, SEC, trigger);
        assert!(
            again.apply.is_empty() && again.delete.is_empty(),
            "{trigger}"
        );
    }
}

/// SEC-2: both connections deleted → the managed storage-config is deleted.
#[test]
fn sec_2_no_connections_delete_a_managed_storage_config() {
    let mut cluster = with_connections();
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    for name in [HTTP, HTTPS] {
        cluster.remove(&gvk::secret(), Some(NS), name);
    }
    let outcome = reconcile(&cluster, SEC, HTTPS);
    assert!(outcome.deleted("Secret", "storage-config"));
    apply(&mut cluster, &outcome);
    assert_eq!(storage_config_entries(&cluster), None);
    let nothing_left = reconcile(&cluster, SEC, HTTPS);
    assert!(nothing_left.apply.is_empty() && nothing_left.delete.is_empty());
}

fn relabel(cluster: &mut FakeCluster, value: &str, data: Option<&str>) {
    let held = cluster
        .objects()
        .iter()
        .find(|o| o.kind() == "Secret" && o.name() == "storage-config")
        .cloned()
        .unwrap();
    let mut held = held.0;
    held["metadata"]["labels"]["opendatahub.io/managed"] = value.into();
    if let Some(data) = data {
        let encoded = odh_plugin_sdk::base64::encode(data);
        held["data"] = json!({HTTP: encoded, HTTPS: encoded});
    }
    cluster.insert(held);
}

/// SEC-3: relabelled `"false"`, then both connections deleted → storage-config stays.
#[test]
fn sec_3_an_unmanaged_storage_config_is_not_deleted() {
    let mut cluster = with_connections();
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    relabel(&mut cluster, "false", None);
    for name in [HTTP, HTTPS] {
        cluster.remove(&gvk::secret(), Some(NS), name);
    }
    for trigger in [HTTP, "storage-config"] {
        let outcome = reconcile(&cluster, SEC, trigger);
        assert!(
            outcome.apply.is_empty() && outcome.delete.is_empty(),
            "{trigger}"
        );
    }
}

/// SEC-4: relabelled `"false"` and overwritten → the controller does not revert it.
#[test]
fn sec_4_an_unmanaged_storage_config_is_not_reverted() {
    let mut cluster = with_connections();
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    relabel(&mut cluster, "false", Some("unmanaged"));
    for trigger in [HTTP, HTTPS, "storage-config"] {
        let outcome = reconcile(&cluster, SEC, trigger);
        assert!(
            outcome.apply.is_empty() && outcome.delete.is_empty(),
            "{trigger}"
        );
    }
    assert_eq!(
        storage_config_entries(&cluster),
        entries(&[(HTTP, "unmanaged"), (HTTPS, "unmanaged")])
    );
}

/// SEC-5: with the CA bundle, only the https connection names it; a CA change goes through
/// the ConfigMap controller (which deletes storage-config) and the Secret controller rebuilds
/// the same two values.
#[test]
fn sec_5_the_ca_bundle_reaches_https_connections_and_survives_the_chain() {
    let mut cluster = with_connections();
    cluster.insert(config_map(
        "openshift-service-ca.crt",
        &[("service-ca.crt", "SERVING")],
    ));
    let outcome = reconcile(&cluster, CM, "openshift-service-ca.crt");
    apply(&mut cluster, &outcome);
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    let expected = entries(&[(HTTP, NO_CA_HTTP), (HTTPS, CA_HTTPS)]);
    assert_eq!(storage_config_entries(&cluster), expected);

    cluster.insert(config_map(
        "openshift-service-ca.crt",
        &[("service-ca.crt", "UPDATED")],
    ));
    let outcome = reconcile(&cluster, CM, "openshift-service-ca.crt");
    assert!(outcome.deleted("Secret", "storage-config"));
    apply(&mut cluster, &outcome);
    assert_eq!(storage_config_entries(&cluster), None);
    // The delete event of storage-config reaches the Secret controller.
    let outcome = reconcile(&cluster, SEC, "storage-config");
    apply(&mut cluster, &outcome);
    assert_eq!(storage_config_entries(&cluster), expected);
}

/// X-7: an https endpoint without a bundle, or with an empty one → no `cabundle_configmap`.
#[test]
fn x_7_no_bundle_or_an_empty_one_names_no_ca() {
    for bundle_held in [
        None,
        Some(bundle("")),
        Some(config_map("odh-kserve-custom-ca-bundle", &[])),
    ] {
        let mut cluster = with_connections();
        if let Some(b) = bundle_held.clone() {
            cluster.insert(b);
        }
        let outcome = reconcile(&cluster, SEC, HTTPS);
        apply(&mut cluster, &outcome);
        assert_eq!(
            storage_config_entries(&cluster),
            entries(&[(HTTP, NO_CA_HTTP), (HTTPS, NO_CA_HTTPS)]),
            "{bundle_held:?}"
        );
    }
}

/// The `https://` test is on the raw endpoint, case-sensitive.
#[test]
fn only_a_lowercase_https_prefix_names_the_ca() {
    let document = |endpoint: &str| {
        connection_document(&Object(data_connection("c", endpoint)), true).unwrap()
    };
    assert!(
        document("https://x").contains(r#""cabundle_configmap":"odh-kserve-custom-ca-bundle""#)
    );
    for endpoint in ["HTTPS://x", " https://x", "http://x", "", "https:/x"] {
        assert!(
            !document(endpoint).contains("cabundle_configmap"),
            "{endpoint:?}"
        );
    }
    assert!(
        !connection_document(&Object(data_connection("c", "https://x")), false)
            .unwrap()
            .contains("cabundle_configmap")
    );
}

/// X-8: missing keys are written empty; no annotation → `"type":""`. The connection type is
/// not filtered.
#[test]
fn x_8_missing_fields_are_empty_strings() {
    let bare = secret("bare")
        .managed()
        .label("opendatahub.io/dashboard", "true")
        .data("AWS_S3_BUCKET", "b")
        .build();
    assert_eq!(
        connection_document(&Object(bare), true).unwrap(),
        r#"{"access_key_id":"","bucket":"b","endpoint_url":"","region":"","secret_access_key":"","type":""}"#
    );
    let mut uri = data_connection("u", "http://x");
    uri["metadata"]["annotations"]["opendatahub.io/connection-type"] = "uri-v1".into();
    assert!(
        connection_document(&Object(uri), false)
            .unwrap()
            .ends_with(r#""type":"uri-v1"}"#)
    );
}

/// Values with characters Go escapes, and bytes that are not UTF-8, come out as Go writes them.
#[test]
fn values_are_escaped_as_go_escapes_them() {
    let mut odd = data_connection("odd", "http://a?x=1&y=<2>");
    odd["data"]["AWS_SECRET_ACCESS_KEY"] =
        odh_plugin_sdk::base64::encode(b"p\"w\\d\n\xff\xe2\x80\xa8").into();
    assert_eq!(
        connection_document(&Object(odd), true).unwrap(),
        r#"{"access_key_id":"admin","bucket":"test-example-models","endpoint_url":"http://a?x=1\u0026y=\u003c2\u003e","region":"us-south","secret_access_key":"p\"w\\d\n\ufffd\u2028","type":"s3"}"#
    );
}

/// Only Secrets carrying both labels are data connections; the Ray TLS Secrets and unmanaged
/// Secrets do not trigger.
#[test]
fn data_connections_and_the_filter() {
    let mut cluster = with_connections();
    cluster.insert(
        secret("managed-only")
            .managed()
            .data("AWS_S3_BUCKET", "x")
            .build(),
    );
    cluster.insert(
        secret("dashboard-only")
            .label("opendatahub.io/dashboard", "true")
            .build(),
    );
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    let keys: Vec<String> = storage_config_entries(&cluster)
        .unwrap()
        .into_keys()
        .collect();
    assert_eq!(keys, [HTTP, HTTPS]);

    let ray = Object(secret("ray-tls").managed().build());
    assert!(!concerns("ray-tls", Some(&ray)));
    assert!(!concerns("ray-ca-tls", None));
    let unmanaged = Object(secret("x").label("opendatahub.io/managed", "false").build());
    assert!(!concerns("x", Some(&unmanaged)));
    assert!(concerns("x", None), "a Secret gone (or unlabelled) passes");
    let mut fresh = with_connections();
    fresh.insert(secret("ray-tls").managed().build());
    assert_eq!(
        reconcile(&fresh, SEC, "ray-tls"),
        odh_plugin_sdk::Outcome::default()
    );
}

/// A removed connection leaves storage-config; a changed one rewrites its entry.
#[test]
fn connection_changes_rewrite_storage_config() {
    let mut cluster = with_connections();
    let outcome = reconcile(&cluster, SEC, HTTP);
    apply(&mut cluster, &outcome);
    cluster.remove(&gvk::secret(), Some(NS), HTTPS);
    let outcome = reconcile(&cluster, SEC, HTTPS);
    let data = outcome.applied_object("Secret", "storage-config");
    let keys: Vec<&String> = data
        .at(&["data"])
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        [HTTP],
        "the whole data map is declared: the removed key goes"
    );
}

/// Bad input fails the reconcile with a clear error and writes nothing.
#[test]
fn malformed_secret_data_is_an_error() {
    let mut bad = data_connection("bad", "http://x");
    bad["data"]["AWS_S3_BUCKET"] = "!!not base64".into();
    let cluster = with_connections().with(bad);
    let request = odh_plugin_sdk::ReconcileRequest::new(SEC, Some(NS), "bad");
    let result = <storage::Storage as odh_plugin_sdk::Plugin>::reconcile(
        &request,
        &odh_plugin_sdk::Ctx::new(&odh_plugin_sdk::NoSettings, &cluster),
    );
    assert_eq!(
        result.unwrap_err(),
        odh_plugin_sdk::Error::Invalid(
            "Secret bad: Secret data key \"AWS_S3_BUCKET\" is not valid base64".into()
        )
    );
}

/// Upstream's controller names; Secrets cached and watched only when managed, as upstream's
/// cache filter (what keeps an unmanaged `storage-config` out of the primary's events).
#[test]
fn manifest_names_both_controllers_and_the_secret_cache_filter() {
    use odh_plugin_sdk::Plugin;
    let manifest = storage::Storage::manifest();
    let controllers: Vec<(&str, &str, Option<&str>)> = manifest
        .controllers
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.primary.kind.as_str(),
                c.primary_label_selector.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        controllers,
        [
            ("core-configmap", "ConfigMap", None),
            ("secret", "Secret", Some("opendatahub.io/managed=true")),
        ]
    );
    assert!(manifest.webhooks.is_empty() && manifest.http_hosts.is_empty());
}
