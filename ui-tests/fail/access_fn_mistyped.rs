use service_provider::prelude::*;

// The grant function must return the token request.
#[service_provider(
    group = "velero.services.example.io",
    version = "v1",
    kind = "Velero",
    mcp_access = grant,
)]
pub struct VeleroSpec {
    pub version: String,
}

fn grant() -> Vec<String> {
    vec!["cluster-admin".into()]
}

fn main() {}
