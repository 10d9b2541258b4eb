use service_provider::prelude::*;

/// The old shape: a flat size.
#[api_type]
pub struct WidgetSpecV1 {
    pub size_mm: i64,
}

#[service_provider(
    group = "widgets.example.io",
    version = "v2",
    kind = "Widget",
    kcp,
    served_version(name = "v1", spec = WidgetSpecV1),
)]
pub struct WidgetSpec {
    pub millimetres: i64,
}

impl From<WidgetSpecV1> for WidgetSpec {
    fn from(old: WidgetSpecV1) -> Self {
        WidgetSpec { millimetres: old.size_mm }
    }
}

impl From<WidgetSpec> for WidgetSpecV1 {
    fn from(hub: WidgetSpec) -> Self {
        WidgetSpecV1 { size_mm: hub.millimetres }
    }
}

fn main() {}
