//! `#[api_type]` on enums, generic structs and structs that already derive some of the traits;
//! spec fields with `#[serde(flatten)]` and existing derives on the spec.

use std::collections::BTreeMap;

use service_provider::prelude::*;

/// Shapes.
#[service_provider(
    group = "shapes.services.example.io",
    version = "v1",
    kind = "Shape",
    printcolumn(name = "Color", type = "string", json_path = ".spec.color"),
)]
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeSpec {
    /// Which kind of shape.
    pub form: Form,
    /// Named sizes.
    pub sizes: Pair<u32>,
    /// Presentation, flattened into the spec.
    #[serde(flatten)]
    pub style: Style,
}

/// A form.
#[api_type]
#[derive(Clone, Debug, PartialEq)]
pub enum Form {
    /// Round.
    Circle,
    /// Angular.
    Square,
}

/// Two values.
#[api_type]
#[derive(PartialEq)]
pub struct Pair<T> {
    /// First.
    pub left: T,
    /// Second.
    pub right: T,
}

/// Presentation.
#[api_type]
#[derive(PartialEq)]
pub struct Style {
    /// A color.
    pub color: String,
    /// Extra attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

fn main() {
    use service_provider::__private::runtime::JsonFields;
    assert_eq!(<Pair<u8> as JsonFields>::FIELDS, ["left", "right"]);
    assert_eq!(<Style as JsonFields>::FIELDS, ["color", "attributes"]);
    let spec = ShapeSpec { form: Form::Circle, sizes: Pair { left: 1, right: 2 }, style: Style { color: "red".into(), attributes: BTreeMap::new() } };
    let json = service_provider::serde_json::to_value(&spec).unwrap();
    assert_eq!(json["color"], "red");
    assert_eq!(json["form"], "Circle");
}
