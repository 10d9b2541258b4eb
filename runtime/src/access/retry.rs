//! Which failed requests the runtime's clients send again by themselves.
//!
//! kube's default policy repeats 429, 503 and 504 (the server did not process the request). The
//! runtime's clients also repeat 500 and 502, and connection failures, for requests that are
//! safe to send twice — reads, deletes, and the updates the runtime and its apply helper send
//! (merge patches, server-side applies, and updates guarded by a resourceVersion) — a few times,
//! quickly. A reconcile touches a dozen objects; without this one flaky response in ten would
//! fail most reconciles and push objects into long backoffs, with it a reconcile fails only when
//! the server fails repeatedly, which is what the per-object backoff is for. Creates are never
//! repeated on an ambiguous error: the next reconcile finds out whether they happened.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use tower::BoxError;
use tower::retry::Policy;

/// The retry policy of the runtime's clients.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    attempt: u32,
    max_server_busy: u32,
    max_server_error: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempt: 0,
            max_server_busy: 10,
            max_server_error: 3,
        }
    }
}

impl RetryPolicy {
    fn idempotent(method: &Method) -> bool {
        matches!(
            *method,
            Method::GET | Method::HEAD | Method::PUT | Method::PATCH | Method::DELETE
        )
    }

    fn delay(&self) -> Duration {
        // 10, 20, 40, 80 ms … up to 1 s.
        Duration::from_millis(10u64 << self.attempt.min(7)).min(Duration::from_secs(1))
    }

    /// Whether a request with `method` that ended in `status` (or, for `None`, in a connection
    /// failure) is sent again, given how many times it was sent already.
    pub fn should_retry(&self, method: &Method, status: Option<StatusCode>) -> bool {
        match status {
            Some(
                StatusCode::TOO_MANY_REQUESTS
                | StatusCode::SERVICE_UNAVAILABLE
                | StatusCode::GATEWAY_TIMEOUT,
            ) => self.attempt < self.max_server_busy,
            Some(StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY) | None => {
                Self::idempotent(method) && self.attempt < self.max_server_error
            }
            Some(_) => false,
        }
    }
}

impl<Res> Policy<Request<Body>, Response<Res>, BoxError> for RetryPolicy {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        let status = match result {
            Ok(response) => Some(response.status()),
            Err(_) => None,
        };
        if !self.should_retry(req.method(), status) {
            return None;
        }
        let delay = self.delay();
        self.attempt += 1;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        // Streaming bodies (none the runtime sends) cannot be repeated.
        let body = req.body().try_clone()?;
        let mut builder = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version());
        if let Some(headers) = builder.headers_mut() {
            headers.extend(req.headers().clone());
        }
        builder.body(body).ok().map(|mut clone| {
            *clone.extensions_mut() = req.extensions().clone();
            clone
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_only_what_is_safe_to_repeat() {
        let fresh = RetryPolicy::default();
        let error = Some(StatusCode::INTERNAL_SERVER_ERROR);
        assert!(fresh.should_retry(&Method::GET, error));
        assert!(fresh.should_retry(&Method::PATCH, error));
        assert!(fresh.should_retry(&Method::DELETE, None));
        assert!(
            !fresh.should_retry(&Method::POST, error),
            "a create may have happened"
        );
        assert!(fresh.should_retry(&Method::POST, Some(StatusCode::SERVICE_UNAVAILABLE)));
        assert!(!fresh.should_retry(&Method::GET, Some(StatusCode::NOT_FOUND)));
        assert!(!fresh.should_retry(&Method::GET, Some(StatusCode::CONFLICT)));
        let tired = RetryPolicy {
            attempt: 3,
            ..RetryPolicy::default()
        };
        assert!(!tired.should_retry(&Method::GET, error));
        assert!(tired.should_retry(&Method::GET, Some(StatusCode::TOO_MANY_REQUESTS)));
    }
}
