//! Waiting for a condition on an object, with a timeout (tests never sleep a fixed time).

use std::fmt::Debug;
use std::time::Duration;

use kube::runtime::wait::{Condition, await_condition};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// Why [`wait_for`] gave up.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The condition did not hold within the timeout.
    #[error("timed out after {timeout:?} waiting for {what} {name:?}; last seen: {last}")]
    Timeout {
        /// The kind waited on.
        what: String,
        /// The object name.
        name: String,
        /// The timeout.
        timeout: Duration,
        /// The object as last read (or `absent`).
        last: String,
    },
    /// The watch behind the wait failed.
    #[error("waiting for {name:?} failed: {source}")]
    Watch {
        /// The object name.
        name: String,
        /// The underlying error.
        #[source]
        source: kube::runtime::wait::Error,
    },
}

/// Waits until `cond` holds for the object `name` (it receives `None` while the object does not
/// exist, so deletion can be awaited too). Returns the object as it was when the condition held.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    cond: impl Condition<K>,
) -> Result<Option<K>, WaitError>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default,
{
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(o)) => Ok(o),
        Ok(Err(source)) => Err(WaitError::Watch {
            name: name.to_string(),
            source,
        }),
        Err(_) => {
            let last = match api.get_opt(name).await {
                Ok(Some(o)) => format!("{o:?}"),
                Ok(None) => "absent".to_string(),
                Err(e) => format!("error reading it: {e}"),
            };
            Err(WaitError::Timeout {
                what: K::kind(&K::DynamicType::default()).to_string(),
                name: name.to_string(),
                timeout,
                last,
            })
        }
    }
}

/// Conditions for [`wait_for`].
pub mod conditions {
    use kube::ResourceExt;
    use kube::api::DynamicObject;

    pub use kube::runtime::wait::conditions::*;

    /// True when the object has `status.conditions[type=<type_>].status == <status>` (for any type
    /// whose JSON carries conditions the standard way).
    pub fn has_condition<K: serde::Serialize + ResourceExt>(
        type_: &str,
        status: &str,
    ) -> impl Fn(Option<&K>) -> bool + use<K> {
        let (t, s) = (type_.to_string(), status.to_string());
        move |o: Option<&K>| {
            o.and_then(|o| serde_json::to_value(o).ok())
                .and_then(|v| {
                    v.pointer("/status/conditions")
                        .and_then(|c| c.as_array())
                        .cloned()
                })
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(|x| x.as_str()) == Some(&t)
                            && c.get("status").and_then(|x| x.as_str()) == Some(&s)
                    })
                })
        }
    }

    /// True once the object exists.
    pub fn exists<K>() -> impl Fn(Option<&K>) -> bool {
        |o: Option<&K>| o.is_some()
    }

    /// True once the object is gone.
    pub fn gone<K>() -> impl Fn(Option<&K>) -> bool {
        |o: Option<&K>| o.is_none()
    }

    #[doc(hidden)]
    pub fn _dynamic_object_is_supported(o: Option<&DynamicObject>) -> bool {
        o.is_some()
    }
}
