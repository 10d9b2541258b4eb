//! Applying `default` values the way kube-apiserver defaults custom resources on create, on
//! update and when reading from storage (`structuraldefaulting.PruneNonNullableNullsWithoutDefaults`
//! followed by `structuraldefaulting.Default`).

use serde_json::Value;

use super::structural::{Additional, NodeId, Structural};

impl Structural {
    /// Defaults `obj` in place: a missing property with a `default` gets a copy of it, and so
    /// does a `null` in a field that is not `nullable`; a `null` in a non-nullable field without
    /// a default is removed. Defaults apply at every level, including inside values just
    /// defaulted (a defaulted `{}` gets its own properties' defaults).
    pub fn default(&self, obj: &mut Value) {
        self.default_at(self.root, obj);
    }

    fn default_at(&self, id: NodeId, v: &mut Value) {
        let node = self.node(id);
        match v {
            Value::Object(obj) => {
                // PruneNonNullableNullsWithoutDefaults, then Default, for this level.
                obj.retain(|k, x| {
                    !(x.is_null()
                        && node.field(k).is_some_and(|c| {
                            let c = self.node(c);
                            !c.nullable && c.default.is_none()
                        }))
                });
                for (k, c) in node.properties.iter() {
                    let c = self.node(*c);
                    let Some(d) = &c.default else { continue };
                    match obj.get_mut(&**k) {
                        None => {
                            obj.insert(k.to_string(), d.clone());
                        }
                        Some(x) if x.is_null() && !c.nullable => *x = d.clone(),
                        Some(_) => {}
                    }
                }
                for (k, x) in obj.iter_mut() {
                    if let Some(c) = node.property(k) {
                        self.default_at(c, x);
                    } else if let Additional::Schema(c) = node.additional {
                        let cn = self.node(c);
                        if x.is_null()
                            && !cn.nullable
                            && let Some(d) = &cn.default
                        {
                            *x = d.clone();
                        }
                        self.default_at(c, x);
                    }
                }
            }
            Value::Array(items) => {
                let Some(item) = node.items else { return };
                let cn = self.node(item);
                for x in items.iter_mut() {
                    if x.is_null()
                        && !cn.nullable
                        && let Some(d) = &cn.default
                    {
                        *x = d.clone();
                    }
                    self.default_at(item, x);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s() -> Structural {
        Structural::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "mode": {"type": "string", "default": "auto"},
                        "note": {"type": "string"},
                        "opt": {"type": "string", "nullable": true, "default": "x"},
                        "nested": {"type": "object", "properties": {"a": {"type": "string", "default": "A"}}},
                        "list": {"type": "array", "items": {"type": "object", "default": {"k": "v"}, "properties": {"k": {"type": "string"}, "n": {"type": "integer", "default": 7}}}},
                        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"z": {"type": "integer", "default": 0}}}}
                    }
                }
            }
        }))
        .unwrap()
    }

    #[test]
    fn defaults_missing_fields_at_every_level() {
        let mut obj = json!({});
        s().default(&mut obj);
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 1, "mode": "auto", "opt": "x"}})
        );
    }

    #[test]
    fn keeps_given_values_and_defaults_below_them() {
        let mut obj = json!({"spec": {"replicas": 3, "nested": {}, "list": [{"k": "a"}, null], "map": {"m": {}}}});
        s().default(&mut obj);
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 3, "mode": "auto", "opt": "x", "nested": {"a": "A"},
                "list": [{"k": "a", "n": 7}, {"k": "v", "n": 7}], "map": {"m": {"z": 0}}}})
        );
    }

    #[test]
    fn nulls_are_defaulted_or_removed() {
        let mut obj = json!({"spec": {"replicas": null, "note": null, "opt": null}});
        s().default(&mut obj);
        assert_eq!(
            obj["spec"]["replicas"], 1,
            "non-nullable null with a default is defaulted"
        );
        assert!(
            obj["spec"].get("note").is_none(),
            "non-nullable null without default is removed"
        );
        assert_eq!(obj["spec"]["opt"], Value::Null, "nullable null stays");
    }
}
