//! The two functions a provider author writes, `create_or_update` and `delete`.

use std::future::Future;

use crate::context::Context;
use crate::error::Error;
use crate::outcome::{Deletion, Outcome};
use crate::provider::ServiceProvider;

/// The two functions a provider author writes.
///
/// Both are ordinary `async fn`s in the impl; the futures they return must be `Send` because the
/// runtime reconciles many objects concurrently on a multi-threaded executor.
///
/// ```text
/// impl Reconcile for Velero {
///     async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> { … }
///     async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> { … }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `impl Reconcile`: the runtime does not know how to install or remove it",
    label = "`Reconcile` is not implemented for `{Self}`",
    note = "add `impl Reconcile for {Self} {{ async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome, Error> {{ … }} async fn delete(&self, cx: &Context<Self>) -> Result<Deletion, Error> {{ … }} }}`"
)]
pub trait Reconcile: ServiceProvider {
    /// Install or update the service for this object. Called whenever the object, its
    /// ProviderConfig or its cluster access changes, and at the ProviderConfig's poll interval.
    /// Must be idempotent.
    fn create_or_update(
        &self,
        cx: &Context<Self>,
    ) -> impl Future<Output = Result<Outcome<Self::ExtraStatus>, Error>> + Send;

    /// Remove everything `create_or_update` installed. Called while the object is being deleted
    /// and its cluster access still exists; the finalizer is removed once this returns
    /// [`Deletion::done`] and the runtime has given the access back.
    fn delete(
        &self,
        cx: &Context<Self>,
    ) -> impl Future<Output = Result<Deletion<Self::ExtraStatus>, Error>> + Send;
}
