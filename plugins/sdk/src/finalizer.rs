//! Cleanup before deletion, in the shape of kube-runtime's `finalizer()`.
//!
//! A controller that must undo something when its primary goes (delete a cluster-scoped
//! object, release a shared one, tell an external system) declares a finalizer in its
//! manifest and routes the reconcile through [`finalizer()`]:
//!
//! ```
//! use odh_plugin_sdk::finalizer::{Event, Release, finalizer};
//! use odh_plugin_sdk::{Object, Plan, json};
//!
//! const FINALIZER: &str = "example.opendatahub.io/cleanup";
//!
//! let live = Object(json!({"metadata": {"name": "a", "namespace": "ns"}}));
//! let mut plan = Plan::new();
//! finalizer(&mut plan, &live, FINALIZER, Release::OnSuccess, |event, plan| match event {
//!     Event::Apply(object) => Ok(()),   // decide the world around `object`
//!     Event::Cleanup(object) => Ok(()), // undo it
//! });
//! assert_eq!(plan.into_outcome().finalizer, odh_plugin_sdk::FinalizerAction::Add);
//! ```
//!
//! # Guarantees
//!
//! * [`Event::Apply`] is given for an object that is not being deleted, and the outcome asks
//!   for the finalizer: the host puts it on the object *before* it applies anything the
//!   `Apply` decided, so nothing is created that a deletion could leave behind.
//! * [`Event::Cleanup`] is given only for an object that is being deleted *and* still carries
//!   the finalizer, so cleanup runs once per deletion (again only after a failure).
//! * An object being deleted without the finalizer gets no event and the outcome leaves the
//!   finalizers alone: someone else holds the deletion, there is nothing of ours to undo.
//! * After a successful `Cleanup` the outcome removes the finalizer; the host does that last,
//!   after the deletions the cleanup asked for. Cleanup failed when the closure returned an
//!   error or recorded one in the plan (a failed [`Plan::step`]): with [`Release::OnSuccess`]
//!   the finalizer then stays and the host retries; with [`Release::Always`] (what upstream
//!   ODH controllers do) it is removed anyway. Either way the error is reported and retried.
//! * A gone object (`None` in the request) never reaches this function: nothing is held.

use crate::{Error, Object, Plan};

/// What the reconcile should do with the object.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// The object is live: make the world around it what it should be.
    Apply(&'a Object),
    /// The object is being deleted and carries our finalizer: undo what `Apply` did.
    Cleanup(&'a Object),
}

/// When the finalizer is released after a cleanup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Only when the cleanup succeeded (kube-runtime's rule): a failure keeps the object
    /// until a retry succeeds.
    OnSuccess,
    /// Even when the cleanup failed, the error still reported (upstream ODH's rule: deletion
    /// is never blocked by a failing cleanup).
    Always,
}

/// Triages `object` into an [`Event`] for `reconcile`, and asks for the finalizer `name` to
/// be added or removed as the module's guarantees say. An error `reconcile` returns is
/// recorded in the plan.
pub fn finalizer(
    plan: &mut Plan,
    object: &Object,
    name: &str,
    release: Release,
    reconcile: impl FnOnce(Event<'_>, &mut Plan) -> Result<(), Error>,
) {
    if !object.is_deleting() {
        plan.add_finalizer();
        plan.step(|plan| reconcile(Event::Apply(object), plan));
        return;
    }
    if !object.has_finalizer(name) {
        return;
    }
    let failed_before = plan.error().cloned();
    plan.step(|plan| reconcile(Event::Cleanup(object), plan));
    let cleanup_failed = plan.error() != failed_before.as_ref();
    if !cleanup_failed || release == Release::Always {
        plan.remove_finalizer();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FinalizerAction, json};

    const F: &str = "x.io/f";

    fn object(deleting: bool, finalizers: &[&str]) -> Object {
        let mut o = Object(json!({"metadata": {"name": "a", "finalizers": finalizers}}));
        if deleting {
            o.set(&["metadata", "deletionTimestamp"], "2026-01-01T00:00:00Z");
        }
        o
    }

    /// Runs the helper; the closure records which event it saw and fails when told to.
    fn run(o: &Object, release: Release, fail: bool) -> (Option<&'static str>, crate::Outcome) {
        let mut plan = Plan::new();
        let mut seen = None;
        finalizer(&mut plan, o, F, release, |event, plan| {
            seen = Some(match event {
                Event::Apply(_) => "apply",
                Event::Cleanup(_) => "cleanup",
            });
            if fail {
                plan.step(|_| Err(Error::transient("step failed")));
            }
            Ok(())
        });
        (seen, plan.into_outcome())
    }

    #[test]
    fn a_live_object_is_applied_and_gets_the_finalizer() {
        let (seen, o) = run(&object(false, &[]), Release::OnSuccess, false);
        assert_eq!((seen, o.finalizer), (Some("apply"), FinalizerAction::Add));
        let (_, o) = run(&object(false, &[F]), Release::OnSuccess, true);
        assert_eq!(
            o.finalizer,
            FinalizerAction::Add,
            "added even when apply fails"
        );
        assert!(o.error.is_some());
    }

    #[test]
    fn a_deleting_object_with_our_finalizer_is_cleaned_up_then_released() {
        let (seen, o) = run(&object(true, &["other", F]), Release::OnSuccess, false);
        assert_eq!(
            (seen, o.finalizer),
            (Some("cleanup"), FinalizerAction::Remove)
        );
        assert_eq!(o.error, None);
    }

    #[test]
    fn a_failed_cleanup_keeps_or_releases_the_finalizer_by_rule() {
        let (_, kept) = run(&object(true, &[F]), Release::OnSuccess, true);
        assert_eq!(kept.finalizer, FinalizerAction::Keep);
        assert_eq!(kept.error, Some(Error::Transient("step failed".into())));
        let (_, released) = run(&object(true, &[F]), Release::Always, true);
        assert_eq!(released.finalizer, FinalizerAction::Remove);
        assert_eq!(released.error, Some(Error::Transient("step failed".into())));
        // An error returned by the closure counts as a failure too.
        let mut plan = Plan::new();
        finalizer(
            &mut plan,
            &object(true, &[F]),
            F,
            Release::OnSuccess,
            |_, _| Err(Error::internal("bug")),
        );
        let o = plan.into_outcome();
        assert_eq!(
            (o.finalizer, o.error),
            (FinalizerAction::Keep, Some(Error::Internal("bug".into())))
        );
    }

    #[test]
    fn an_earlier_failure_does_not_count_against_the_cleanup() {
        let mut plan = Plan::new();
        plan.fail(Error::transient("earlier"));
        finalizer(
            &mut plan,
            &object(true, &[F]),
            F,
            Release::OnSuccess,
            |_, _| Ok(()),
        );
        assert_eq!(plan.into_outcome().finalizer, FinalizerAction::Remove);
    }

    #[test]
    fn a_deleting_object_without_our_finalizer_is_left_alone() {
        let (seen, o) = run(&object(true, &["someone-else"]), Release::Always, false);
        assert_eq!((seen, o.finalizer), (None, FinalizerAction::Keep));
        assert!(o.apply.is_empty() && o.delete.is_empty());
    }
}
