use service_provider::prelude::*;

/// The old shape: a flat size. Only one direction is written.
#[api_type]
pub struct WidgetSpecV1 {
    pub size_mm: i64,
}

#[service_provider(
    group = "widgets.example.io",
    version = "v2",
    kind = "Widget",
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

impl Reconcile for Widget {
    async fn create_or_update(&self, _cx: &Context<Self>) -> Result<Outcome, Error> {
        Ok(Outcome::ready())
    }

    async fn delete(&self, _cx: &Context<Self>) -> Result<Deletion, Error> {
        Ok(Deletion::done())
    }
}

fn main() {}
