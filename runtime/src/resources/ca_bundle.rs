//! The CA bundle a platform operator names in the ProviderConfig (`caBundleRef`, a ConfigMap key
//! in the provider's namespace on the platform cluster, as the flux and landscaper providers
//! take it): copied into a tenant's namespace as a member of a resource set, and handed to the
//! author as PEM for chart values or a volume.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

use crate::context::Context;
use crate::error::Error;
use crate::provider::ServiceProvider;
use crate::resources::apply::{ApplySet, MemberRef};
use crate::status::resources::Location;

/// The copy a [`Context::copy_ca_bundle`] added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaBundle {
    /// The copy's name ([provider-prefixed](Context::provider_prefixed_name)).
    pub name: String,
    /// The key holding the bundle, the same in the copy as in the source.
    pub key: String,
    /// The bundle, PEM: for chart values that take it inline.
    pub pem: String,
    /// The copy as a set member, for [`depends_on`](crate::resources::apply::Entry::depends_on).
    pub member: MemberRef,
}

impl<P: ServiceProvider> Context<P> {
    /// Copies the ProviderConfig's `caBundleRef` into `namespace` of the cluster at `location`,
    /// as a ConfigMap member of `set` under its [provider-prefixed name](Self::provider_prefixed_name),
    /// holding the bundle under the source's key. `None` when the ProviderConfig names no bundle,
    /// or names an `optional` one that does not exist. Each reconcile reads the source again,
    /// and a change to it re-enqueues every object (the platform watches the ConfigMaps the
    /// ProviderConfig names), so the copy follows it; when the ProviderConfig stops naming it,
    /// the copy leaves the set and its apply deletes it.
    ///
    /// A missing ConfigMap or key that is not `optional` is an error that names it; the object
    /// is retried, and reconciled again as soon as the operator creates it.
    pub async fn copy_ca_bundle(
        &self,
        set: &mut ApplySet,
        location: Location,
        namespace: &str,
    ) -> Result<Option<CaBundle>, Error> {
        let Some(reference) = self.common().ca_bundle_ref.clone() else {
            return Ok(None);
        };
        let optional = reference.optional.unwrap_or(false);
        let where_ = || {
            format!(
                "the ProviderConfig's caBundleRef: key {:?} of ConfigMap {} in namespace {} of the platform cluster",
                reference.key,
                reference.name,
                self.provider_namespace()
            )
        };
        let source: Option<ConfigMap> = self.provider_namespace_object(&reference.name).await?;
        let pem = match source {
            Some(source) => source
                .data
                .and_then(|mut data| data.remove(&reference.key))
                .filter(|pem| !pem.trim().is_empty()),
            None => None,
        };
        let Some(pem) = pem else {
            if optional {
                return Ok(None);
            }
            return Err(Error::transient_msg(format!(
                "{} does not exist or is empty; create it, or mark the reference `optional: true`",
                where_()
            )));
        };
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::invalid_input(format!(
                "{} holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line); put the CA \
                 certificates there in PEM",
                where_()
            )));
        }
        let name = self.provider_prefixed_name(&reference.name)?;
        let copy = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.to_owned()),
                ..Default::default()
            },
            data: Some([(reference.key.clone(), pem.clone())].into()),
            ..Default::default()
        };
        let member = set.add_to(location, &copy)?.key();
        Ok(Some(CaBundle {
            name,
            key: reference.key,
            pem,
            member,
        }))
    }
}
