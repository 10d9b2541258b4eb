//! Pull secrets: the ProviderConfig's Secrets (in the provider's namespace on the platform
//! cluster) copied into a tenant's namespace as members of a resource set, so a copy follows its
//! source and goes when the ProviderConfig stops listing it.

use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;

use crate::context::Context;
use crate::error::Error;
use crate::provider::ServiceProvider;
use crate::resources::apply::{ApplySet, MemberRef};
use crate::status::resources::Location;

/// Secret type of a registry credential.
const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";

/// The copies a [`Context::copy_pull_secrets`] added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullSecrets {
    /// The copies' names, in the order of the sources, for `imagePullSecrets` in pod specs or
    /// Helm values.
    pub names: Vec<String>,
    /// The copies as set members, for [`depends_on`](crate::resources::apply::Entry::depends_on).
    pub members: Vec<MemberRef>,
}

impl<P: ServiceProvider> Context<P> {
    /// The name of the copy of the Secret `source`: its
    /// [provider-prefixed name](Self::provider_prefixed_name).
    pub fn pull_secret_name(&self, source: &str) -> Result<String, Error> {
        self.provider_prefixed_name(source)
    }

    /// Copies the Secrets named `sources` from the provider's namespace on the platform cluster
    /// into `namespace` of the cluster at `location`, as members of `set` under
    /// [provider-prefixed names](Self::pull_secret_name). The sources are read once per version
    /// (the runtime's watch tells when one changed), so a changed source is copied again (the ProviderConfig watch re-enqueues every object
    /// when a Secret it names changes), and a copy whose source is no longer listed leaves the
    /// set and is deleted by its apply. A missing source is an error naming it.
    pub async fn copy_pull_secrets(
        &self,
        set: &mut ApplySet,
        location: Location,
        namespace: &str,
        sources: &[String],
    ) -> Result<PullSecrets, Error> {
        let mut copies = PullSecrets::default();
        for source in sources {
            let secret: Secret = self.provider_namespace_object(source).await?.ok_or_else(
                || {
                    Error::transient_msg(format!(
                        "pull secret {source} not found in namespace {} of the platform cluster",
                        self.provider_namespace()
                    ))
                },
            )?;
            let name = self.pull_secret_name(source)?;
            let copy = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.to_owned()),
                    ..Default::default()
                },
                type_: Some(
                    secret
                        .type_
                        .unwrap_or_else(|| DOCKER_CONFIG_JSON.to_owned()),
                ),
                data: secret.data,
                ..Default::default()
            };
            copies.members.push(set.add_to(location, &copy)?.key());
            copies.names.push(name);
        }
        Ok(copies)
    }

    /// [`copy_pull_secrets`](Self::copy_pull_secrets) of the ProviderConfig's
    /// `imagePullSecrets`.
    pub async fn image_pull_secrets(
        &self,
        set: &mut ApplySet,
        location: Location,
        namespace: &str,
    ) -> Result<PullSecrets, Error> {
        let sources: Vec<String> = self
            .common()
            .image_pull_secrets
            .iter()
            .map(|r| r.name.clone())
            .collect();
        self.copy_pull_secrets(set, location, namespace, &sources)
            .await
    }
}
