use service_provider::prelude::*;

/// The old shape: a field the hub renamed.
#[api_type]
pub struct WidgetSpecV1 {
    pub size_mm: i64,
}

#[service_provider(
    group = "widgets.example.io",
    version = "v2",
    kind = "Widget",
    kcp,
    served_version(name = "v1", spec = WidgetSpecV1, additive),
    served_version(name = "v1beta1", additive),
)]
pub struct WidgetSpec {
    pub millimetres: i64,
    #[serde(default)]
    pub colour: Option<String>,
}

impl Reconcile for Widget {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {}
