//! The ConfigMap controller (docs/plugins/storage.md, "Controller `core-configmap`"; scenarios
//! CM-1..CM-3, X-5, X-6).

mod common;

use common::*;
use odh_plugin_sdk::json;
use odh_plugin_sdk::testing::FakeCluster;
use storage::ca_bundle::{Delta, bundle_data, concerns, delta, desired};

const BUNDLE: &str = "odh-kserve-custom-ca-bundle";
const TRUSTED: &str = "odh-trusted-ca-bundle";
const SERVICE: &str = "openshift-service-ca.crt";

fn bundle_of(cluster: &FakeCluster) -> Option<String> {
    cluster
        .objects()
        .iter()
        .find(|o| o.kind() == "ConfigMap" && o.name() == BUNDLE)
        .map(|o| {
            o.str_at(&["data", "cabundle.crt"])
                .unwrap_or_default()
                .to_string()
        })
}

fn sources(cluster: &mut FakeCluster, clusterwide: &str, custom: &str, serving: &str) {
    cluster.insert(config_map(
        TRUSTED,
        &[
            ("ca-bundle.crt", clusterwide),
            ("odh-ca-bundle.crt", custom),
        ],
    ));
    cluster.insert(config_map(SERVICE, &[("service-ca.crt", serving)]));
}

/// CM-1: the three trimmed blocks, joined by one blank line, no trailing newline.
#[test]
fn cm_1_sources_make_the_bundle() {
    let mut cluster = cluster();
    sources(&mut cluster, CLUSTERWIDE, CUSTOM, SERVING);
    let outcome = reconcile(&cluster, CM, SERVICE);
    let applied = outcome.applied_object("ConfigMap", BUNDLE);
    let expected = format!(
        "{}\n\n{}\n\n{}",
        CLUSTERWIDE.trim(),
        CUSTOM.trim(),
        SERVING.trim()
    );
    assert_eq!(
        applied.0,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": BUNDLE, "namespace": NS,
                            "labels": {"opendatahub.io/managed": "true"}},
               "data": {"cabundle.crt": expected}})
    );
    assert_eq!(
        outcome.applied("ConfigMap", BUNDLE).unwrap().ownership,
        odh_plugin_sdk::Ownership::None,
        "the bundle belongs to the namespace, not to the source that triggered"
    );
    apply(&mut cluster, &outcome);
    assert!(
        reconcile(&cluster, CM, BUNDLE).apply.is_empty(),
        "nothing to do once it is in place"
    );
}

/// CM-2: updating both sources rewrites the bundle with the updated blocks in order.
#[test]
fn cm_2_updated_sources_rewrite_the_bundle() {
    let mut cluster = cluster();
    sources(&mut cluster, CLUSTERWIDE, CUSTOM, SERVING);
    let outcome = reconcile(&cluster, CM, TRUSTED);
    apply(&mut cluster, &outcome);
    sources(&mut cluster, "UPDATED-1\n", "UPDATED-2", " UPDATED-3 ");
    let outcome = reconcile(&cluster, CM, TRUSTED);
    apply(&mut cluster, &outcome);
    assert_eq!(
        bundle_of(&cluster).as_deref(),
        Some("UPDATED-1\n\nUPDATED-2\n\nUPDATED-3")
    );
}

/// CM-3: with both sources deleted, the bundle is deleted; each source's own delete event
/// sees the other still there, the second sees none.
#[test]
fn cm_3_no_sources_delete_the_bundle() {
    let mut cluster = cluster();
    sources(&mut cluster, CLUSTERWIDE, CUSTOM, SERVING);
    let outcome = reconcile(&cluster, CM, TRUSTED);
    apply(&mut cluster, &outcome);
    cluster.remove(&odh_kinds::gvk::config_map(), Some(NS), TRUSTED);
    let outcome = reconcile(&cluster, CM, TRUSTED);
    apply(&mut cluster, &outcome);
    assert_eq!(bundle_of(&cluster).as_deref(), Some(SERVING.trim()));
    cluster.remove(&odh_kinds::gvk::config_map(), Some(NS), SERVICE);
    let outcome = reconcile(&cluster, CM, SERVICE);
    assert!(outcome.deleted("ConfigMap", BUNDLE));
    apply(&mut cluster, &outcome);
    assert_eq!(bundle_of(&cluster), None);
}

/// The join rule: blank and whitespace-only blocks are skipped, Unicode whitespace trimmed.
#[test]
fn join_skips_empty_blocks_and_trims_unicode_whitespace() {
    let mut cluster = cluster();
    sources(&mut cluster, "  \n\t", "\u{a0}A\u{2003}\r\n", "");
    assert_eq!(bundle_data(NS, "x", None, &cluster).unwrap(), "A");
    sources(&mut cluster, "", "", "\u{85}B\n");
    assert_eq!(bundle_data(NS, "x", None, &cluster).unwrap(), "B");
    sources(&mut cluster, "A", "", "C");
    assert_eq!(bundle_data(NS, "x", None, &cluster).unwrap(), "A\n\nC");
    // A missing key and a missing source are skipped alike.
    cluster.remove(&odh_kinds::gvk::config_map(), Some(NS), SERVICE);
    cluster.insert(config_map(TRUSTED, &[("odh-ca-bundle.crt", "D")]));
    assert_eq!(bundle_data(NS, "x", None, &cluster).unwrap(), "D");
}

/// The trigger is used as given: a source that is being deleted counts as empty even while
/// the cache still holds it.
#[test]
fn a_deleted_trigger_counts_as_empty() {
    let mut cluster = cluster();
    sources(&mut cluster, "A", "B", "C");
    assert_eq!(bundle_data(NS, TRUSTED, None, &cluster).unwrap(), "C");
    let stale = odh_plugin_sdk::Object(config_map(SERVICE, &[("service-ca.crt", "NEW")]));
    assert_eq!(
        bundle_data(NS, SERVICE, Some(&stale), &cluster).unwrap(),
        "A\n\nB\n\nNEW"
    );
}

#[test]
fn filter_passes_only_the_bundle_and_its_sources() {
    for name in [TRUSTED, BUNDLE, SERVICE] {
        assert!(concerns(name), "{name}");
    }
    for name in [
        "kube-root-ca.crt",
        "odh-trusted-ca-bundle-x",
        "storage-config",
        "",
    ] {
        assert!(!concerns(name), "{name}");
    }
    // Another ConfigMap's reconcile reads nothing and decides nothing.
    let denied = FakeCluster::new()
        .deny(odh_kinds::gvk::config_map())
        .deny(odh_kinds::gvk::secret());
    let request = odh_plugin_sdk::ReconcileRequest::new(CM, Some(NS), "kube-root-ca.crt");
    let outcome = <storage::Storage as odh_plugin_sdk::Plugin>::reconcile(
        &request,
        &odh_plugin_sdk::Ctx::new(&odh_plugin_sdk::NoSettings, &denied),
    )
    .unwrap();
    assert_eq!(outcome, odh_plugin_sdk::Outcome::default());
}

#[test]
fn deltas() {
    let held = |data: odh_plugin_sdk::Value| {
        odh_plugin_sdk::Object(json!({"metadata": {"name": BUNDLE}, "data": data}))
    };
    assert_eq!(delta("", None), None);
    assert_eq!(delta("A", None), Some(Delta::Add));
    assert_eq!(
        delta("", Some(&held(json!({"cabundle.crt": "A"})))),
        Some(Delta::Remove)
    );
    assert_eq!(delta("", Some(&held(json!(null)))), Some(Delta::Remove));
    assert_eq!(
        delta("A", Some(&held(json!({"cabundle.crt": "B"})))),
        Some(Delta::Update)
    );
    assert_eq!(delta("A", Some(&held(json!(null)))), Some(Delta::Update));
    assert_eq!(delta("A", Some(&held(json!({"cabundle.crt": "A"})))), None);
    // Keys other managers added survive server-side apply; they are not a change.
    assert_eq!(
        delta("A", Some(&held(json!({"cabundle.crt": "A", "extra": "x"})))),
        None
    );
}

/// a user-created bundle in a namespace without sources is deleted (claimed first, so
/// the host, which deletes only what it manages, deletes it).
#[test]
fn x_5_a_user_bundle_without_sources_is_deleted() {
    let mut cluster = cluster();
    let mut user = config_map(BUNDLE, &[("cabundle.crt", "mine")]);
    user["metadata"]["annotations"] = json!({"note": "by hand"});
    cluster.insert(user);
    let outcome = reconcile(&cluster, CM, BUNDLE);
    assert!(outcome.deleted("ConfigMap", BUNDLE));
    let claim = outcome.applied_object("ConfigMap", BUNDLE);
    assert_eq!(claim.uid(), Some("uid-odh-kserve-custom-ca-bundle"));
    assert_eq!(claim.at(&["data"]), None, "the claim carries no data");
}

/// a manual edit is reverted; the labels the user added are not ours to drop.
#[test]
fn x_5_a_manual_edit_is_reverted() {
    let mut cluster = cluster();
    sources(&mut cluster, "A", "", "C");
    let mut edited = config_map(BUNDLE, &[("cabundle.crt", "edited")]);
    edited["metadata"]["labels"] = json!({"team": "x"});
    cluster.insert(edited);
    let outcome = reconcile(&cluster, CM, BUNDLE);
    assert_eq!(
        outcome.applied_object("ConfigMap", BUNDLE),
        desired(NS, "A\n\nC")
    );
    apply(&mut cluster, &outcome);
    assert_eq!(bundle_of(&cluster).as_deref(), Some("A\n\nC"));
}

fn managed_storage_config(label: &str) -> odh_plugin_sdk::Value {
    odh_test_fixtures::secret("storage-config")
        .label("opendatahub.io/managed", label)
        .uid("sc-uid")
        .data("c", "{}")
        .build()
}

/// a bundle change deletes a managed `storage-config`; an unmanaged one is left alone;
/// no change deletes nothing.
#[test]
fn x_6_a_change_invalidates_only_a_managed_storage_config() {
    let mut cluster = cluster();
    sources(&mut cluster, "A", "", "");
    cluster.insert(managed_storage_config("true"));
    let outcome = reconcile(&cluster, CM, TRUSTED);
    assert!(outcome.deleted("Secret", "storage-config"));
    assert_eq!(
        outcome.applied_object("Secret", "storage-config").uid(),
        Some("sc-uid")
    );
    apply(&mut cluster, &outcome);

    cluster.insert(managed_storage_config("true"));
    let no_change = reconcile(&cluster, CM, TRUSTED);
    assert!(no_change.apply.is_empty() && no_change.delete.is_empty());

    for (label, cert) in [("false", "B"), ("True", "C")] {
        cluster.insert(managed_storage_config(label));
        sources(&mut cluster, cert, "", "");
        let outcome = reconcile(&cluster, CM, TRUSTED);
        assert!(outcome.applied("ConfigMap", BUNDLE).is_some());
        assert!(
            !outcome.deleted("Secret", "storage-config"),
            "label {label}"
        );
        assert!(outcome.applied("Secret", "storage-config").is_none());
        apply(&mut cluster, &outcome);
    }
}

/// A failed read of a source is an error (retried), not an empty source that would delete
/// the bundle; a failed read of `storage-config` is ignored, as upstream ignores it.
#[test]
fn read_errors() {
    let failing = FakeCluster::new().fail(
        odh_kinds::gvk::config_map(),
        odh_plugin_sdk::Error::transient("apiserver down"),
    );
    let request = odh_plugin_sdk::ReconcileRequest::new(CM, Some(NS), TRUSTED);
    let result = <storage::Storage as odh_plugin_sdk::Plugin>::reconcile(
        &request,
        &odh_plugin_sdk::Ctx::new(&odh_plugin_sdk::NoSettings, &failing),
    );
    assert_eq!(
        result.unwrap_err(),
        odh_plugin_sdk::Error::Transient("apiserver down".into())
    );

    let secrets_failing = FakeCluster::new()
        .with(config_map(TRUSTED, &[("ca-bundle.crt", "A")]))
        .fail(
            odh_kinds::gvk::secret(),
            odh_plugin_sdk::Error::transient("down"),
        );
    let request = odh_plugin_sdk::ReconcileRequest::new(CM, Some(NS), SERVICE);
    let outcome = <storage::Storage as odh_plugin_sdk::Plugin>::reconcile(
        &request,
        &odh_plugin_sdk::Ctx::new(&odh_plugin_sdk::NoSettings, &secrets_failing),
    )
    .unwrap();
    assert!(outcome.applied("ConfigMap", BUNDLE).is_some());
    assert_eq!(outcome.error, None);
}
