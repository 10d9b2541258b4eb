//! Kubernetes Events about Service API objects, from the runtime (on status transitions) and from
//! the author (through [`Context::events`](crate::Context::events)).
//!
//! A thin layer over kube-runtime's `Recorder` (`events.k8s.io/v1`, with series deduplication):
//! it fixes the reporter to the provider, binds the object, and never fails a reconcile because an
//! Event could not be written.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// Writes Events with one client as one reporting controller. Cheap to clone.
///
/// Each [`ObjectEvents`] gets a `Recorder` of its own, so series deduplication spans what one
/// reconcile records. One `Recorder` shared by every object would keep every Event written in the
/// last six minutes in memory and scan them all, under one lock, on each publish: with thousands of
/// tenants waiting for access at once that is megabytes and a quadratic slowdown, for deduplicating
/// Events that, recorded on transitions only, rarely repeat within a reconcile's reach anyway.
#[derive(Clone)]
pub struct EventRecorder {
    recorder: Option<(kube::Client, Reporter)>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder").finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// Events written with `client`, reported by `controller` (the provider name) from
    /// `instance` (the pod name, when known).
    pub fn new(client: kube::Client, controller: &str, instance: Option<String>) -> Self {
        EventRecorder {
            recorder: Some((
                client,
                Reporter {
                    controller: controller.to_owned(),
                    instance,
                },
            )),
        }
    }

    /// A recorder that writes nothing, for objects the runtime can no longer reach.
    pub fn disabled() -> Self {
        EventRecorder { recorder: None }
    }

    /// Events about `object`.
    pub fn for_object(&self, object: ObjectReference) -> ObjectEvents {
        ObjectEvents {
            recorder: self
                .recorder
                .as_ref()
                .map(|(client, reporter)| Recorder::new(client.clone(), reporter.clone())),
            object,
        }
    }
}

/// Events about one object.
#[derive(Clone)]
pub struct ObjectEvents {
    recorder: Option<Recorder>,
    object: ObjectReference,
}

impl std::fmt::Debug for ObjectEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectEvents")
            .field("kind", &self.object.kind)
            .field("namespace", &self.object.namespace)
            .field("name", &self.object.name)
            .finish()
    }
}

impl ObjectEvents {
    /// Events that go nowhere, e.g. in a [`Context`](crate::Context) built by hand in a test.
    pub fn disabled() -> Self {
        ObjectEvents {
            recorder: None,
            object: ObjectReference::default(),
        }
    }

    /// A `Normal` Event: `reason` in UpperCamelCase, `note` for people.
    pub async fn normal(&self, reason: &str, note: impl Into<String>) {
        self.publish(EventType::Normal, reason, note.into()).await;
    }

    /// A `Warning` Event.
    pub async fn warning(&self, reason: &str, note: impl Into<String>) {
        self.publish(EventType::Warning, reason, note.into()).await;
    }

    async fn publish(&self, type_: EventType, reason: &str, note: String) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        // The API limits a note to 1 kB.
        let note = truncate(note, 1024);
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(note),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(err) = recorder.publish(&event, &self.object).await {
            // An Event is a courtesy: failing to write one must not fail the reconcile.
            tracing::debug!(error = %err, reason, "could not write Event");
        }
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max - 3;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn truncates_on_a_char_boundary() {
        let long = "ä".repeat(600);
        let short = super::truncate(long, 1024);
        assert!(short.len() <= 1024);
        assert!(short.ends_with("..."));
    }
}
