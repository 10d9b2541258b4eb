//! Fault injection: tests make a cluster fail requests, slow down, or lose its watches on demand.

use std::time::Duration;

use parking_lot::Mutex;

use crate::error::ApiError;

/// A rule that fails matching requests with a chosen status code.
///
/// Rates are applied deterministically (a rate of 0.5 fails every second matching request), so tests
/// that inject faults are reproducible.
#[derive(Debug, Clone)]
pub struct FaultRule {
    verb: Option<String>,
    resource: Option<String>,
    code: u16,
    rate: f64,
    retry_after: Option<u32>,
    remaining: Option<u64>,
    acc: f64,
}

impl FaultRule {
    /// Fails every request with `code` (kube-apiserver's reason for it: 409 Conflict, 429
    /// TooManyRequests, 500 InternalError, 503 ServiceUnavailable, …).
    pub fn new(code: u16) -> Self {
        FaultRule {
            verb: None,
            resource: None,
            code,
            rate: 1.0,
            retry_after: None,
            remaining: None,
            acc: 0.0,
        }
    }
    /// Only requests with this verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`).
    pub fn verb(mut self, verb: impl Into<String>) -> Self {
        self.verb = Some(verb.into());
        self
    }
    /// Only requests for this resource (plural, e.g. `configmaps`; with a subresource `deployments/status`).
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }
    /// The fraction of matching requests that fail (0.0–1.0).
    pub fn rate(mut self, rate: f64) -> Self {
        self.rate = rate.clamp(0.0, 1.0);
        self
    }
    /// The `Retry-After` seconds to send (429 defaults to 1).
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }
    /// Stop after failing this many requests.
    pub fn times(mut self, n: u64) -> Self {
        self.remaining = Some(n);
        self
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// The faults configured for one cluster (shard).
#[derive(Debug, Default)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
    latency: Mutex<Duration>,
}

impl Faults {
    /// Adds a failure rule.
    pub fn inject(&self, rule: FaultRule) {
        self.rules.lock().push(rule);
    }

    /// Removes every failure rule and the added latency.
    pub fn clear(&self) {
        self.rules.lock().clear();
        *self.latency.lock() = Duration::ZERO;
    }

    /// Delays every request by this much before it is handled.
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock() = latency;
    }

    /// The configured latency.
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }

    /// The error to answer instead of handling the request, if a rule fires.
    pub(crate) fn check(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        name: &str,
    ) -> Option<ApiError> {
        let mut rules = self.rules.lock();
        if rules.is_empty() {
            return None;
        }
        let mut fired = None;
        for r in rules.iter_mut() {
            if !r.matches(verb, resource) || r.remaining == Some(0) {
                continue;
            }
            r.acc += r.rate;
            if r.acc >= 1.0 - 1e-9 {
                r.acc -= 1.0;
                if let Some(n) = r.remaining.as_mut() {
                    *n -= 1;
                }
                let plain = resource.split('/').next().unwrap_or(resource);
                let mut e = ApiError::for_code(r.code, group, plain, name);
                if let Some(s) = r.retry_after {
                    e.retry_after = Some(s);
                    if let Some(d) = e.details.as_mut() {
                        d["retryAfterSeconds"] = s.into();
                    } else {
                        e.details = Some(serde_json::json!({ "retryAfterSeconds": s }));
                    }
                }
                fired = Some(e);
                break;
            }
        }
        rules.retain(|r| r.remaining != Some(0));
        fired
    }
}
