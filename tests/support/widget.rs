//! A Service API served at three versions, for the tests of versions and conversion: the hub
//! `v1` the reconciler sees, `v1beta1` with the same schema (converted by the API server,
//! `None`) and `v1alpha1`, stored, with a spec of its own (converted in Rust, by the author's
//! `From`/`TryFrom`, through the provider's conversion webhook).

use service_provider::prelude::*;

/// A widget.
#[service_provider(
    group = "widgets.versions.test",
    version = "v1",
    kind = "Widget",
    served_version(
        name = "v1beta1",
        deprecated = "widgets.versions.test/v1beta1 is deprecated; use widgets.versions.test/v1"
    ),
    served_version(name = "v1alpha1", spec = WidgetSpecV1alpha1, storage, deprecated)
)]
pub struct WidgetSpec {
    /// How big.
    pub size: Size,
    /// Its colour.
    pub colour: String,
}

/// A length.
#[api_type]
pub struct Size {
    /// In millimetres.
    pub millimetres: i64,
}

/// A widget as `v1alpha1` has it: a flat size in millimetres and an optional colour.
#[api_type]
pub struct WidgetSpecV1alpha1 {
    /// How big, in millimetres.
    pub size_mm: i64,
    /// Its colour; black when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

impl TryFrom<WidgetSpecV1alpha1> for WidgetSpec {
    type Error = String;

    fn try_from(old: WidgetSpecV1alpha1) -> Result<Self, String> {
        if old.size_mm < 0 {
            return Err(format!("sizeMm {} is negative", old.size_mm));
        }
        Ok(WidgetSpec {
            size: Size {
                millimetres: old.size_mm,
            },
            colour: old.color.unwrap_or_else(|| "black".into()),
        })
    }
}

impl From<WidgetSpec> for WidgetSpecV1alpha1 {
    fn from(hub: WidgetSpec) -> Self {
        WidgetSpecV1alpha1 {
            size_mm: hub.size.millimetres,
            color: Some(hub.colour),
        }
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
