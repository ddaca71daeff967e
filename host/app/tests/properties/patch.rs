//! The JSON patch a mutating webhook answers with, derived from the mutated object a plugin
//! returns: applied to the request's object, as the API server applies it, it must give
//! exactly the mutated object, for any pair of documents.

use base64::Engine as _;
use odh_model_controller::plugin::wire::{AdmissionDecision, WebhookType};
use odh_model_controller::webhook::review_response;
use odh_model_controller::webhook::verdict::{Verdict, patch_for};
use proptest::prelude::*;
use serde_json::Value;

use crate::json::{any_json, any_object, edited};

/// `patch` (a JSON value) applied to `doc` by an RFC 6902 implementation.
fn applied(doc: &Value, patch: Value) -> Result<Value, TestCaseError> {
    let patch: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| TestCaseError::fail(format!("not an RFC 6902 patch: {e}: {patch}")))?;
    let mut out = doc.clone();
    json_patch::patch(&mut out, &patch)
        .map_err(|e| TestCaseError::fail(format!("patch does not apply: {e}")))?;
    Ok(out)
}

fn check_derived(original: &Value, mutated: &Value) -> Result<(), TestCaseError> {
    let patch = patch_for(None, Some(mutated.clone()), Some(original)).expect("a patch");
    prop_assert_eq!(&applied(original, patch)?, mutated);
    Ok(())
}

/// What the webhook sends for a mutating plugin that returned `mutated` for `original`.
fn answer(original: &Value, mutated: &Value) -> Value {
    let decision = AdmissionDecision {
        allowed: true,
        message: None,
        code: None,
        mutated: Some(mutated.clone()),
        patch: None,
        warnings: vec![],
        side_effects: vec![],
        reason: None,
    };
    let verdict = Verdict::from_decision(WebhookType::Mutating, decision, Some(original));
    review_response("uid-1", &verdict)
}

fn original_and_edit() -> impl Strategy<Value = (Value, Value)> {
    any_object().prop_flat_map(|o| (Just(o.clone()), edited(o)))
}

proptest! {
    #[test]
    fn a_derived_patch_turns_any_document_into_any_other(
        original in any_json(),
        mutated in any_json(),
    ) {
        check_derived(&original, &mutated)?;
    }

    #[test]
    fn a_derived_patch_reproduces_small_edits((original, mutated) in original_and_edit()) {
        check_derived(&original, &mutated)?;
    }

    #[test]
    fn without_an_original_the_patch_builds_the_mutated_object(mutated in any_object()) {
        let patch = patch_for(None, Some(mutated.clone()), None).expect("a patch");
        prop_assert_eq!(applied(&Value::Null, patch)?, mutated);
    }

    #[test]
    fn the_webhook_answer_carries_exactly_the_change((original, mutated) in original_and_edit()) {
        let review = answer(&original, &mutated);
        let response = &review["response"];
        prop_assert_eq!(&response["uid"], "uid-1");
        prop_assert_eq!(&response["allowed"], true);
        if original == mutated {
            // Nothing changed: no patch at all, not an empty one.
            prop_assert!(response.get("patch").is_none(), "{}", response);
            prop_assert!(response.get("patchType").is_none(), "{}", response);
        } else {
            prop_assert_eq!(&response["patchType"], "JSONPatch");
            let encoded = response["patch"].as_str().expect("base64 text");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| TestCaseError::fail(format!("not base64: {e}")))?;
            let patch: Value = serde_json::from_slice(&bytes)
                .map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
            prop_assert_eq!(applied(&original, patch)?, mutated);
        }
    }
}
