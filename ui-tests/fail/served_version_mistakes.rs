use service_provider::prelude::*;

#[api_type]
pub struct WidgetSpecV1 {
    pub size: i64,
}

#[service_provider(
    group = "widgets.example.io",
    version = "v2",
    kind = "Widget",
    served_version(spec = WidgetSpecV1),
    served_version(name = "v2"),
    served_version(name = "2"),
    served_version(name = "v1", storag),
    served_version(name = "v1beta1", storage),
    served_version(name = "v1beta1"),
    served_version(name = "v1alpha1", storage, deprecated = true),
    served_version = "v1",
)]
pub struct WidgetSpec {
    pub size: i64,
}

fn main() {}
