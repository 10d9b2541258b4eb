//! A mistake in the attribute is the only error: the resource type is still generated (with the
//! options that could be read), so the `impl Reconcile`, `Context`'s accessors, the spec's fields
//! and `run` below compile as they will once the option is fixed, instead of adding "cannot find
//! type `Velero`" and its cascade to the one error that matters.

use service_provider::prelude::*;

#[service_provider(
    group = "velero",
    version = "v1alpha1",
    kind = "Velero",
    config = VeleroConfig,
    status = VeleroStatus,
    workload_cluster = required,
)]
pub struct VeleroSpec {
    pub version: String,
}

#[api_type]
pub struct VeleroConfig {
    pub image_repository: String,
}

#[api_type]
#[derive(Default, PartialEq)]
pub struct VeleroStatus {
    pub installed_version: Option<String>,
}

impl Reconcile for Velero {
    async fn create_or_update(&self, cx: &Context<Self>) -> Result<Outcome<VeleroStatus>, Error> {
        let _repository = &cx.config().image_repository;
        let _workload = cx.workload();
        Ok(Outcome::ready().with_status(VeleroStatus {
            installed_version: Some(self.spec.version.clone()),
        }))
    }
    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion<VeleroStatus>, Error> {
        Ok(Deletion::done())
    }
}

fn main() -> std::process::ExitCode {
    service_provider::run::<Velero>()
}
