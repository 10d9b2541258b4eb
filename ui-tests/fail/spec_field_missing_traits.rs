use service_provider::prelude::*;

pub struct Schedule {
    pub cron: String,
}

#[service_provider(group = "velero.services.example.io", version = "v1", kind = "Velero")]
pub struct VeleroSpec {
    pub version: String,
    pub schedule: Schedule,
}

fn main() {}
