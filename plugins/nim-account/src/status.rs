//! The Account's status as the controller reads and writes it, with upstream's condition types,
//! reasons and messages (docs/plugins/nim-account.md, "Controller `odh-nim-controller`").

use odh_crd_types::meta::ObjectReference;
use odh_plugin_sdk::Object;
use odh_plugin_sdk::conditions::{Condition, find_condition, set_condition};
use serde::{Deserialize, Serialize};

use crate::names::condition::{ACCOUNT_STATUS, CANONICAL_ORDER};

/// `status` of an Account, with the SDK's conditions (`meta.SetStatusCondition` semantics).
/// The JSON shape of `odh_crd_types::account::AccountStatus`, which this plugin cannot use
/// (see that crate's charter: with feature `crd` its times and conditions change type).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_template: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nim_config: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nim_pull_secret: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_validation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_config_refresh: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_account_check: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl Status {
    /// The Account's status; an unreadable one counts as empty (it is rewritten whole).
    pub fn of(account: &Object) -> Status {
        account
            .at(&["status"])
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default()
    }

    /// Sets a condition for the Account's generation; returns whether it changed.
    pub fn set(
        &mut self,
        generation: Option<i64>,
        type_: &str,
        status: &str,
        reason: &str,
        message: &str,
        now: &str,
    ) -> bool {
        let mut condition = Condition::with_status(type_, status)
            .reason(reason)
            .message(message);
        condition.observed_generation = generation;
        set_condition(&mut self.conditions, condition, now)
    }

    /// Whether the condition of that type is `True`.
    pub fn is_true(&self, type_: &str) -> bool {
        find_condition(&self.conditions, type_).is_some_and(Condition::is_true)
    }

    /// Sets `AccountStatus=False/AccountNotSuccessful/<message>` and the handler's own
    /// failure condition, with `lastAccountCheck = now` (every handler's failure path).
    pub fn handler_failure(
        &mut self,
        generation: Option<i64>,
        type_: &str,
        reason: &str,
        message: &str,
        now: &str,
    ) {
        self.last_account_check = Some(now.to_string());
        self.set(generation, type_, "False", reason, message, now);
        self.set(
            generation,
            ACCOUNT_STATUS,
            "False",
            "AccountNotSuccessful",
            message,
            now,
        );
    }
}

/// Upstream's "clean failure status": references dropped, `lastAccountCheck = now`, the
/// conditions replaced by `explicit` then every missing canonical type filled in
/// (`AccountStatus` False, the others Unknown/NotReconciled), all with `message`.
pub fn clean_failure(
    current: &Status,
    generation: Option<i64>,
    message: &str,
    explicit: &[Condition],
    now: &str,
) -> Status {
    let mut status = Status {
        runtime_template: None,
        nim_config: None,
        nim_pull_secret: None,
        last_account_check: Some(now.to_string()),
        conditions: Vec::new(),
        ..current.clone()
    };
    for condition in explicit {
        let mut condition = condition.clone();
        condition.observed_generation = generation;
        condition.last_transition_time = now.to_string();
        status.conditions.push(condition);
    }
    for type_ in CANONICAL_ORDER {
        if find_condition(&status.conditions, type_).is_some() {
            continue;
        }
        if type_ == ACCOUNT_STATUS {
            status.set(
                generation,
                type_,
                "False",
                "AccountNotSuccessful",
                message,
                now,
            );
        } else {
            status.set(generation, type_, "Unknown", "NotReconciled", message, now);
        }
    }
    status
}

/// The status the NIM-disabled cleanup writes (docs/plugins/nim-account.md,
/// "`NIM_STATE=removed`"): nothing referenced, no timestamps, the
/// five conditions `Unknown` with their `...NotReconciled` reasons.
pub fn disabled(generation: Option<i64>, now: &str) -> Status {
    use crate::names::condition::*;
    let mut status = Status::default();
    for (type_, reason) in [
        (ACCOUNT_STATUS, "AccountNotReconciled"),
        (API_KEY_VALIDATION, "ApiKeyNotReconciled"),
        (CONFIG_MAP_UPDATE, "ConfigMapNotReconciled"),
        (TEMPLATE_UPDATE, "TemplateNotReconciled"),
        (SECRET_UPDATE, "SecretNotReconciled"),
    ] {
        status.set(
            generation,
            type_,
            "Unknown",
            reason,
            crate::names::message::DISABLED,
            now,
        );
    }
    status
}

/// A reference to an object as the cluster holds it (the "get reference" helper's fields).
pub fn reference_to(object: &Object) -> ObjectReference {
    ObjectReference {
        api_version: Some(object.api_version().to_string()),
        kind: Some(object.kind().to_string()),
        name: Some(object.name().to_string()),
        namespace: object.namespace().map(str::to_string),
        uid: object.uid().map(str::to_string),
        resource_version: object.resource_version().map(str::to_string),
        field_path: None,
    }
}

/// upstream's `shouldUpdateReference`: either side missing, or the uids differ.
pub fn should_update_reference(old: Option<&ObjectReference>, new: &ObjectReference) -> bool {
    match old {
        None => true,
        Some(old) => old.uid != new.uid,
    }
}
