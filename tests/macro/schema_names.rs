//! The kcp APIResourceSchema name is content-addressed: any change to the spec gives a new name,
//! the same spec always the same one.

use std::collections::BTreeMap;

use service_provider::ServiceProvider;
use service_provider::manifests::api_resource_schema;

macro_rules! variant {
    ($module:ident { $($field:tt)* }) => {
        mod $module {
            use service_provider::prelude::*;

            /// A thing.
            #[service_provider(group = "names.example.io", version = "v1", kind = "Thing", kcp)]
            pub(crate) struct ThingSpec {
                $($field)*
            }
        }
    };
}

variant!(base {
    /// A.
    pub a: String,
    /// B.
    pub b: u32,
});
variant!(field_added {
    /// A.
    pub a: String,
    /// B.
    pub b: u32,
    /// C.
    pub c: bool,
});
variant!(field_removed {
    /// A.
    pub a: String,
});
variant!(field_renamed {
    /// A.
    pub a: String,
    /// B.
    pub bee: u32,
});
variant!(field_retyped {
    /// A.
    pub a: String,
    /// B.
    pub b: String,
});
variant!(field_optional {
    /// A.
    pub a: String,
    /// B.
    pub b: Option<u32>,
});
variant!(field_documented {
    /// A.
    pub a: String,
    /// B, now explained.
    pub b: u32,
});
variant!(field_serde_renamed {
    /// A.
    pub a: String,
    /// B.
    #[serde(rename = "beta")]
    pub b: u32,
});

fn name<P: ServiceProvider>() -> String {
    api_resource_schema::<P>().metadata.name.unwrap()
}

#[test]
fn every_spec_change_renames_the_schema_and_regenerating_keeps_it() {
    let names = [
        ("base", name::<base::Thing>()),
        ("field_added", name::<field_added::Thing>()),
        ("field_removed", name::<field_removed::Thing>()),
        ("field_renamed", name::<field_renamed::Thing>()),
        ("field_retyped", name::<field_retyped::Thing>()),
        ("field_optional", name::<field_optional::Thing>()),
        ("field_documented", name::<field_documented::Thing>()),
        ("field_serde_renamed", name::<field_serde_renamed::Thing>()),
    ];
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (variant, name) in &names {
        let (prefix, rest) = name.split_once('.').unwrap();
        assert_eq!(rest, "things.names.example.io", "{variant}: {name}");
        assert!(
            prefix.len() == 9
                && prefix.starts_with('v')
                && prefix[1..].bytes().all(|b| b.is_ascii_hexdigit()),
            "{variant}: prefix {prefix} is not v<8 hex>"
        );
        if let Some(other) = seen.insert(name, variant) {
            panic!("{variant} and {other} got the same schema name {name}");
        }
    }
    assert_eq!(
        name::<base::Thing>(),
        names[0].1,
        "generating twice gives the same name"
    );
    assert_eq!(name::<field_added::Thing>(), names[1].1);
}
