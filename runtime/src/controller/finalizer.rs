//! The finalizer protocol, as kube-runtime's `finalizer` has it: an object the runtime serves
//! carries `<group>/finalizer` from before anything is installed for it until everything is given
//! back, so it cannot vanish while the tenant still holds access.
//!
//! Both patches carry the object's `resourceVersion`, so a write from a stale cache fails with a
//! conflict (and a retry) instead of dropping a finalizer someone else added meanwhile.

use kube::api::ObjectMeta;
use serde_json::{Value, json};

/// What the protocol asks of a reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The object is live: install or update (after adding the finalizer when `add`).
    Apply {
        /// The finalizer is missing and must be added before anything is installed.
        add: bool,
    },
    /// The object is being deleted and holds the finalizer: clean up, then remove it.
    Cleanup,
    /// The object is being deleted and does not hold the finalizer: not ours (or released
    /// already), nothing to clean up.
    Done,
}

/// The protocol's step for an object with `meta`.
pub(crate) fn event(meta: &ObjectMeta, finalizer: &str) -> Event {
    let holds = holds(meta, finalizer);
    match (meta.deletion_timestamp.is_some(), holds) {
        (false, holds) => Event::Apply { add: !holds },
        (true, true) => Event::Cleanup,
        (true, false) => Event::Done,
    }
}

/// Whether `meta` carries `finalizer`.
fn holds(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// The merge patch that adds `finalizer`, keeping every other one.
pub(crate) fn add(meta: &ObjectMeta, finalizer: &str) -> Value {
    let mut finalizers: Vec<&str> = meta
        .finalizers
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if !finalizers.contains(&finalizer) {
        finalizers.push(finalizer);
    }
    patch(meta, finalizers)
}

/// The merge patch that removes `finalizer`, keeping every other one.
pub(crate) fn remove(meta: &ObjectMeta, finalizer: &str) -> Value {
    let finalizers: Vec<&str> = meta
        .finalizers
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|f| *f != finalizer)
        .collect();
    patch(meta, finalizers)
}

fn patch(meta: &ObjectMeta, finalizers: Vec<&str>) -> Value {
    json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": meta.resource_version,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const OURS: &str = "velero.services.open-control-plane.io/finalizer";

    fn meta(deleting: bool, finalizers: &[&str]) -> ObjectMeta {
        ObjectMeta {
            resource_version: Some("42".into()),
            deletion_timestamp: deleting.then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| (*f).to_owned()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_object_gets_the_finalizer_before_anything_is_installed() {
        assert_eq!(event(&meta(false, &[]), OURS), Event::Apply { add: true });
        assert_eq!(
            event(&meta(false, &["other.io/keep"]), OURS),
            Event::Apply { add: true }
        );
        assert_eq!(
            event(&meta(false, &[OURS]), OURS),
            Event::Apply { add: false }
        );
    }

    #[test]
    fn a_deleting_object_is_cleaned_up_only_while_it_holds_ours() {
        assert_eq!(event(&meta(true, &[OURS]), OURS), Event::Cleanup);
        assert_eq!(event(&meta(true, &["other.io/keep"]), OURS), Event::Done);
        assert_eq!(event(&meta(true, &[]), OURS), Event::Done);
    }

    #[test]
    fn adding_keeps_the_others_and_is_guarded_by_the_resource_version() {
        let patch = add(&meta(false, &["other.io/keep"]), OURS);
        assert_eq!(
            patch,
            json!({ "metadata": { "finalizers": ["other.io/keep", OURS], "resourceVersion": "42" } })
        );
        // Adding twice is adding once.
        let patch = add(&meta(false, &[OURS]), OURS);
        assert_eq!(patch["metadata"]["finalizers"], json!([OURS]));
    }

    #[test]
    fn removing_keeps_the_others_and_is_guarded_by_the_resource_version() {
        let patch = remove(&meta(true, &["a.io/x", OURS, "b.io/y"]), OURS);
        assert_eq!(
            patch,
            json!({ "metadata": { "finalizers": ["a.io/x", "b.io/y"], "resourceVersion": "42" } })
        );
        let patch = remove(&meta(true, &[OURS]), OURS);
        assert_eq!(patch["metadata"]["finalizers"], json!([]));
    }
}
