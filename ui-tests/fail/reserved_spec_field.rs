use service_provider::prelude::*;

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub status: String,
    pub kind: String,
    pub api_version: String,
    #[serde(rename = "metadata")]
    pub meta: String,
}

fn main() {}
