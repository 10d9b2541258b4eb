//! `application/vnd.kubernetes.protobuf`: built-in kinds in kube-apiserver's protobuf encoding.
//!
//! Objects are stored as JSON; this module converts between that JSON and the protobuf messages of
//! Kubernetes' `generated.proto` files, generically, through their descriptors (`kubernetes.fds`,
//! written by `cargo xtask protobuf`) and prost-reflect's dynamic messages — no per-kind code, so
//! every built-in kind the registry serves gets protobuf as long as its message is in the set.
//!
//! The wire format, as kube-apiserver writes it:
//! - a body is the magic `k8s\0` followed by a `runtime.Unknown` whose `typeMeta` names the
//!   `apiVersion`/`kind` and whose `raw` is the encoded object;
//! - a watch stream (`;stream=watch`) is a sequence of frames, each a 4-byte big-endian length and a
//!   `meta.v1.WatchEvent` whose `object.raw` is such a body.
//!
//! Where Go's JSON and protobuf differ (times, int-or-string, quantities, embedded raw JSON, the
//! JSON-schema unions of CRDs), the types are mapped here by their message names.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor,
    Value as PValue,
};
use serde_json::{Map, Value};

/// The media type of protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of protobuf watch streams.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The prefix of every protobuf body.
const MAGIC: &[u8] = b"k8s\0";

/// The descriptors of Kubernetes' `generated.proto` files (see `cargo xtask protobuf`).
static FDS: &[u8] = include_bytes!("kubernetes.fds");

/// Errors converting between JSON and protobuf.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// No protobuf message is known for the kind (custom resources, kinds newer than the descriptors).
    #[error("no protobuf message is known for {api_version}, Kind={kind}")]
    NoMessage {
        /// The `apiVersion`.
        api_version: String,
        /// The `kind`.
        kind: String,
    },
    /// The body lacks the `k8s\0` prefix.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NotProtobuf,
    /// The envelope or message could not be decoded.
    #[error("unable to decode the protobuf body: {0}")]
    Decode(#[from] prost::DecodeError),
    /// A JSON value does not fit the field's protobuf type.
    #[error("{field}: {message}")]
    Value {
        /// The field (JSON name).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The descriptors shipped with this crate could not be loaded (a build defect).
    #[error("the protobuf descriptors could not be loaded: {0}")]
    Descriptors(String),
}

struct Catalog {
    pool: DescriptorPool,
    /// Messages by (version, name): several groups share a version and a kind name.
    by_kind: HashMap<(String, String), Vec<MessageDescriptor>>,
    /// Fields of Go structs embedded with `json:",inline"` (`Probe.handler`, `Volume.volumeSource`),
    /// by message name: their members are the parent's members in JSON.
    inline: HashMap<String, Vec<u32>>,
}

/// The OpenAPI definition of a message (`api.core.v1.Probe` → `io.k8s.api.core.v1.Probe`).
fn definition_name(m: &MessageDescriptor) -> String {
    format!("io.k8s.{}", m.full_name().replace('_', "-"))
}

/// The message-typed fields the OpenAPI definition of `m` does not list as properties: Go inlines
/// them (a protobuf message has no such notion, its OpenAPI definition flattens them).
fn inline_fields(m: &MessageDescriptor, defs: &Map<String, Value>) -> Vec<u32> {
    let Some(props) = defs
        .get(&definition_name(m))
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    m.fields()
        .filter(|f| {
            matches!(f.kind(), Kind::Message(_))
                && !f.is_list()
                && !f.is_map()
                && !props.contains_key(f.name())
        })
        .map(|f| f.number())
        .collect()
}

fn is_inline(desc: &MessageDescriptor, f: &FieldDescriptor) -> bool {
    catalog().is_ok_and(|c| {
        c.inline
            .get(desc.full_name())
            .is_some_and(|n| n.contains(&f.number()))
    })
}

fn catalog() -> Result<&'static Catalog, ProtoError> {
    static CATALOG: OnceLock<Result<Catalog, String>> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            let pool = DescriptorPool::decode(FDS).map_err(|e| e.to_string())?;
            let mut by_kind: HashMap<(String, String), Vec<MessageDescriptor>> = HashMap::new();
            let defs = crate::schema::builtin_definitions();
            let mut inline = HashMap::new();
            for m in pool.all_messages() {
                let fields = inline_fields(&m, defs);
                if !fields.is_empty() {
                    inline.insert(m.full_name().to_string(), fields);
                }
                let version = m.package_name().rsplit('.').next().unwrap_or_default();
                by_kind
                    .entry((version.to_string(), m.name().to_string()))
                    .or_default()
                    .push(m);
            }
            Ok(Catalog {
                pool,
                by_kind,
                inline,
            })
        })
        .as_ref()
        .map_err(|e| ProtoError::Descriptors(e.clone()))
}

/// The segment of a proto package that names the API group (`core` for the legacy group):
/// `api.apps.v1` → `apps`, `apiextensions_apiserver.pkg.apis.apiextensions.v1` → `apiextensions`.
fn package_group(m: &MessageDescriptor) -> &str {
    let mut it = m.package_name().rsplit('.');
    it.next();
    it.next().unwrap_or_default()
}

/// The message of a kind, found by its version, name and group (the group's first DNS label is
/// the package's group segment; a kind only one package defines needs no group match, which is how
/// `v1` `Status` finds `meta.v1.Status`).
fn message_for(api_version: &str, kind: &str) -> Result<MessageDescriptor, ProtoError> {
    let cat = catalog()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let label = if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    };
    let none = || ProtoError::NoMessage {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
    };
    let candidates = cat
        .by_kind
        .get(&(version.to_string(), kind.to_string()))
        .ok_or_else(none)?;
    if let Some(m) = candidates.iter().find(|m| package_group(m) == label) {
        return Ok(m.clone());
    }
    match candidates.as_slice() {
        [only] => Ok(only.clone()),
        _ => Err(none()),
    }
}

/// Whether objects of this `apiVersion` and `kind` have a protobuf encoding.
pub fn supports(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_ok()
}

fn meta_message(name: &str) -> Result<MessageDescriptor, ProtoError> {
    catalog()?
        .pool
        .get_message_by_name(name)
        .ok_or_else(|| ProtoError::Descriptors(format!("{name} is missing")))
}

/// Encodes a JSON object (with `apiVersion` and `kind`) as a protobuf body.
pub fn encode(obj: &Value) -> Result<Bytes, ProtoError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let desc = message_for(api_version, kind)?;
    let raw = from_json(&desc, obj, "")?.encode_to_vec();
    let unknown = meta_message("apimachinery.pkg.runtime.Unknown")?;
    let type_meta = meta_message("apimachinery.pkg.runtime.TypeMeta")?;
    let mut tm = DynamicMessage::new(type_meta);
    tm.set_field_by_name("apiVersion", PValue::String(api_version.to_string()));
    tm.set_field_by_name("kind", PValue::String(kind.to_string()));
    let mut u = DynamicMessage::new(unknown);
    u.set_field_by_name("typeMeta", PValue::Message(tm));
    u.set_field_by_name("raw", PValue::Bytes(Bytes::from(raw)));
    let mut out = BytesMut::with_capacity(MAGIC.len() + u.encoded_len());
    out.put_slice(MAGIC);
    u.encode(&mut out)
        .map_err(|e| ProtoError::Descriptors(e.to_string()))?;
    Ok(out.freeze())
}

/// Decodes a protobuf body into a JSON object with `apiVersion` and `kind`.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtoError::NotProtobuf)?;
    let u = DynamicMessage::decode(meta_message("apimachinery.pkg.runtime.Unknown")?, rest)?;
    let (mut api_version, mut kind) = (String::new(), String::new());
    if let Some(tm) = u.get_field_by_name("typeMeta")
        && let PValue::Message(tm) = tm.as_ref()
    {
        api_version = string_field(tm, "apiVersion");
        kind = string_field(tm, "kind");
    }
    let raw = match u.get_field_by_name("raw").as_deref() {
        Some(PValue::Bytes(b)) => b.clone(),
        _ => Bytes::new(),
    };
    let desc = message_for(&api_version, &kind)?;
    let msg = DynamicMessage::decode(desc, raw)?;
    let mut v = to_json(&msg).unwrap_or_else(|| Value::Object(Map::new()));
    if let Value::Object(m) = &mut v {
        m.insert("apiVersion".into(), Value::String(api_version));
        m.insert("kind".into(), Value::String(kind));
    }
    Ok(v)
}

fn string_field(m: &DynamicMessage, name: &str) -> String {
    match m.get_field_by_name(name).as_deref() {
        Some(PValue::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// One frame of a protobuf watch stream: a `WatchEvent` of `event_type` carrying `obj`.
pub fn watch_frame(event_type: &str, obj: &Value) -> Result<Bytes, ProtoError> {
    let inner = encode(obj)?;
    let raw_ext = meta_message("apimachinery.pkg.runtime.RawExtension")?;
    let mut re = DynamicMessage::new(raw_ext);
    re.set_field_by_name("raw", PValue::Bytes(inner));
    let mut ev = DynamicMessage::new(meta_message("apimachinery.pkg.apis.meta.v1.WatchEvent")?);
    ev.set_field_by_name("type", PValue::String(event_type.to_string()));
    ev.set_field_by_name("object", PValue::Message(re));
    let len = ev.encoded_len();
    let mut out = BytesMut::with_capacity(4 + len);
    out.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    ev.encode(&mut out)
        .map_err(|e| ProtoError::Descriptors(e.to_string()))?;
    Ok(out.freeze())
}

/// A decoded watch event: its type, its object, and the bytes after its frame.
pub type WatchEvent<'a> = (String, Value, &'a [u8]);

/// Splits the first frame off a protobuf watch stream: `(event type, object, rest)`, or `None`
/// while the buffer holds no complete frame.
pub fn next_watch_event(buf: &[u8]) -> Result<Option<WatchEvent<'_>>, ProtoError> {
    let Some((len, rest)) = buf.split_first_chunk::<4>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(*len) as usize;
    if rest.len() < len {
        return Ok(None);
    }
    let (frame, rest) = rest.split_at(len);
    let ev = DynamicMessage::decode(
        meta_message("apimachinery.pkg.apis.meta.v1.WatchEvent")?,
        frame,
    )?;
    let event_type = string_field(&ev, "type");
    let raw = match ev.get_field_by_name("object").as_deref() {
        Some(PValue::Message(o)) => match o.get_field_by_name("raw").as_deref() {
            Some(PValue::Bytes(b)) => b.clone(),
            _ => Bytes::new(),
        },
        _ => Bytes::new(),
    };
    Ok(Some((event_type, decode(&raw)?, rest)))
}

// --- Types whose JSON is not the plain mapping of their message -------------------------------

const TIME: &str = "apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "apimachinery.pkg.apis.meta.v1.MicroTime";
const DURATION: &str = "apimachinery.pkg.apis.meta.v1.Duration";
const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";

/// How a message appears in JSON.
enum Shape {
    /// A plain object of its fields.
    Object,
    /// An RFC 3339 string (`metav1.Time`, seconds; `MicroTime`, microseconds).
    Time { micros: bool },
    /// A Go duration string (`metav1.Duration`).
    Duration,
    /// A number or a string.
    IntOrString,
    /// A string (`resource.Quantity`).
    Quantity,
    /// Any JSON value held as its serialized bytes in the message's single bytes field
    /// (`runtime.RawExtension`, `metav1.FieldsV1`, apiextensions' `JSON`).
    RawJson(FieldDescriptor),
    /// An array held in the single repeated `items` field (Go named slices: `ExtraValue`, …).
    Items(FieldDescriptor),
    /// apiextensions' `JSONSchemaPropsOrBool`, `…OrArray`, `…OrStringArray`.
    SchemaUnion,
}

fn shape(desc: &MessageDescriptor) -> Shape {
    match desc.full_name() {
        TIME => return Shape::Time { micros: false },
        MICRO_TIME => return Shape::Time { micros: true },
        DURATION => return Shape::Duration,
        INT_OR_STRING => return Shape::IntOrString,
        QUANTITY => return Shape::Quantity,
        _ => {}
    }
    if desc.name().starts_with("JSONSchemaPropsOr") {
        return Shape::SchemaUnion;
    }
    let mut fields = desc.fields();
    if let (Some(f), None) = (fields.next(), fields.next()) {
        if matches!(f.kind(), Kind::Bytes) && f.name().eq_ignore_ascii_case("raw") && !f.is_list() {
            return Shape::RawJson(f);
        }
        if f.name() == "items" && f.is_list() {
            return Shape::Items(f);
        }
    }
    Shape::Object
}

/// The JSON key of a field: the proto name, except for `JSONSchemaProps`, whose JSON keys
/// (`$ref`, `$schema`, `x-kubernetes-…`) are not valid proto names.
fn json_key(desc: &MessageDescriptor, f: &FieldDescriptor) -> String {
    let name = f.name();
    if desc.name() == "JSONSchemaProps" {
        match name {
            "ref" => return "$ref".into(),
            "schema" => return "$schema".into(),
            _ => {}
        }
        if let Some(rest) = name.strip_prefix("xKubernetes") {
            let mut s = String::from("x-kubernetes");
            for c in rest.chars() {
                if c.is_ascii_uppercase() {
                    s.push('-');
                    s.push(c.to_ascii_lowercase());
                } else {
                    s.push(c);
                }
            }
            return s;
        }
    }
    name.to_string()
}

/// The field of a JSON key (the inverse of [`json_key`]).
fn field_of_key(desc: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    if let Some(f) = desc.get_field_by_name(key) {
        return Some(f);
    }
    if desc.name() != "JSONSchemaProps" {
        return None;
    }
    let key = key.trim_start_matches('$');
    let mut name = String::new();
    let mut upper = false;
    for c in key.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            name.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            name.push(c);
        }
    }
    desc.get_field_by_name(&name)
}

// --- JSON → protobuf -----------------------------------------------------------------------------

fn bad(field: &str, message: impl Into<String>) -> ProtoError {
    ProtoError::Value {
        field: field.to_string(),
        message: message.into(),
    }
}

fn from_json(
    desc: &MessageDescriptor,
    v: &Value,
    path: &str,
) -> Result<DynamicMessage, ProtoError> {
    let mut m = DynamicMessage::new(desc.clone());
    match shape(desc) {
        Shape::Time { micros } => {
            let s = v
                .as_str()
                .ok_or_else(|| bad(path, "expected a time string"))?;
            let ts: jiff::Timestamp = s
                .parse()
                .map_err(|e| bad(path, format!("invalid time {s:?}: {e}")))?;
            m.set_field_by_name("seconds", PValue::I64(ts.as_second()));
            let nanos = ts.subsec_nanosecond();
            let nanos = if micros { nanos / 1000 * 1000 } else { nanos };
            if nanos != 0 {
                m.set_field_by_name("nanos", PValue::I32(nanos));
            }
        }
        Shape::Duration => {
            let s = v
                .as_str()
                .ok_or_else(|| bad(path, "expected a duration string"))?;
            let ns =
                go_duration_nanos(s).ok_or_else(|| bad(path, format!("invalid duration {s:?}")))?;
            m.set_field_by_name("duration", PValue::I64(ns));
        }
        Shape::IntOrString => match v {
            Value::String(s) => {
                m.set_field_by_name("type", PValue::I64(1));
                m.set_field_by_name("strVal", PValue::String(s.clone()));
            }
            Value::Number(n) => {
                let i = n
                    .as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(|| bad(path, format!("{n} is not a 32-bit integer")))?;
                m.set_field_by_name("type", PValue::I64(0));
                m.set_field_by_name("intVal", PValue::I32(i));
            }
            _ => return Err(bad(path, "expected an integer or a string")),
        },
        Shape::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(bad(path, "expected a quantity")),
            };
            m.set_field_by_name("string", PValue::String(s));
        }
        Shape::RawJson(f) => {
            let raw = serde_json::to_vec(v).map_err(|e| bad(path, e.to_string()))?;
            m.set_field(&f, PValue::Bytes(Bytes::from(raw)));
        }
        Shape::Items(f) => {
            let Value::Array(a) = v else {
                return Err(bad(path, "expected an array"));
            };
            let items = a
                .iter()
                .map(|x| single_from_json(&f, x, path))
                .collect::<Result<Vec<_>, _>>()?;
            m.set_field(&f, PValue::List(items));
        }
        Shape::SchemaUnion => schema_union_from_json(&mut m, v, path)?,
        Shape::Object => {
            let Value::Object(obj) = v else {
                return Err(bad(path, "expected an object"));
            };
            let inline: Vec<FieldDescriptor> =
                desc.fields().filter(|f| is_inline(desc, f)).collect();
            // The members of inlined structs, gathered from this level.
            let mut inlined: Vec<Map<String, Value>> = vec![Map::new(); inline.len()];
            for (k, x) in obj {
                if x.is_null() {
                    continue;
                }
                let f = field_of_key(desc, k).filter(|f| !is_inline(desc, f));
                let Some(f) = f else {
                    for (i, inl) in inline.iter().enumerate() {
                        if let Kind::Message(d) = inl.kind()
                            && field_of_key(&d, k).is_some()
                        {
                            inlined[i].insert(k.clone(), x.clone());
                            break;
                        }
                    }
                    // Keys without a field (`apiVersion`, `kind` of the top level) are not encoded.
                    continue;
                };
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let pv = if f.is_map() {
                    map_from_json(&f, x, &p)?
                } else if f.is_list() {
                    let Value::Array(a) = x else {
                        return Err(bad(&p, "expected an array"));
                    };
                    PValue::List(
                        a.iter()
                            .map(|e| single_from_json(&f, e, &p))
                            .collect::<Result<_, _>>()?,
                    )
                } else {
                    single_from_json(&f, x, &p)?
                };
                m.set_field(&f, pv);
            }
            for (f, members) in inline.iter().zip(inlined) {
                if let Kind::Message(d) = f.kind()
                    && !members.is_empty()
                {
                    let inner = from_json(&d, &Value::Object(members), path)?;
                    m.set_field(f, PValue::Message(inner));
                }
            }
        }
    }
    Ok(m)
}

fn schema_union_from_json(m: &mut DynamicMessage, v: &Value, path: &str) -> Result<(), ProtoError> {
    let desc = prost_reflect::ReflectMessage::descriptor(&*m);
    let schema_field = desc
        .get_field_by_name("schema")
        .ok_or_else(|| bad(path, "no schema field"))?;
    match v {
        Value::Bool(b) => {
            m.set_field_by_name("allows", PValue::Bool(*b));
        }
        Value::Array(a) => {
            // `…OrArray` holds schemas, `…OrStringArray` property names.
            let list = desc
                .fields()
                .find(|f| f.is_list())
                .ok_or_else(|| bad(path, "no array field"))?;
            let items = a
                .iter()
                .map(|x| single_from_json(&list, x, path))
                .collect::<Result<Vec<_>, _>>()?;
            m.set_field(&list, PValue::List(items));
        }
        other => {
            if desc.get_field_by_name("allows").is_some() {
                m.set_field_by_name("allows", PValue::Bool(true));
            }
            let s = single_from_json(&schema_field, other, path)?;
            m.set_field(&schema_field, s);
        }
    }
    Ok(())
}

fn map_from_json(f: &FieldDescriptor, v: &Value, path: &str) -> Result<PValue, ProtoError> {
    let Value::Object(obj) = v else {
        return Err(bad(path, "expected an object"));
    };
    let Kind::Message(entry) = f.kind() else {
        return Err(bad(path, "not a map"));
    };
    let value_field = entry.map_entry_value_field();
    let mut out = HashMap::with_capacity(obj.len());
    for (k, x) in obj {
        if x.is_null() {
            continue;
        }
        let p = format!("{path}.{k}");
        out.insert(
            MapKey::String(k.clone()),
            single_from_json(&value_field, x, &p)?,
        );
    }
    Ok(PValue::Map(out))
}

fn single_from_json(f: &FieldDescriptor, v: &Value, path: &str) -> Result<PValue, ProtoError> {
    let int = |v: &Value| -> Result<i64, ProtoError> {
        v.as_i64()
            .or_else(|| v.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
            .ok_or_else(|| bad(path, format!("expected an integer, got {v}")))
    };
    Ok(match f.kind() {
        Kind::Message(d) => PValue::Message(from_json(&d, v, path)?),
        Kind::String => PValue::String(match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            _ => return Err(bad(path, "expected a string")),
        }),
        Kind::Bool => PValue::Bool(
            v.as_bool()
                .ok_or_else(|| bad(path, format!("expected a boolean, got {v}")))?,
        ),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => PValue::I32(
            i32::try_from(int(v)?).map_err(|_| bad(path, format!("{v} is out of range")))?,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => PValue::I64(int(v)?),
        Kind::Uint32 | Kind::Fixed32 => PValue::U32(
            u32::try_from(int(v)?).map_err(|_| bad(path, format!("{v} is out of range")))?,
        ),
        Kind::Uint64 | Kind::Fixed64 => PValue::U64(
            u64::try_from(int(v)?).map_err(|_| bad(path, format!("{v} is out of range")))?,
        ),
        Kind::Double => PValue::F64(
            v.as_f64()
                .ok_or_else(|| bad(path, format!("expected a number, got {v}")))?,
        ),
        Kind::Float => PValue::F32(
            v.as_f64()
                .ok_or_else(|| bad(path, format!("expected a number, got {v}")))?
                as f32,
        ),
        Kind::Bytes => {
            let s = v
                .as_str()
                .ok_or_else(|| bad(path, "expected base64 data"))?;
            PValue::Bytes(Bytes::from(
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| bad(path, format!("illegal base64 data: {e}")))?,
            ))
        }
        Kind::Enum(_) => PValue::EnumNumber(i32::try_from(int(v)?).unwrap_or_default()),
    })
}

// --- protobuf → JSON -----------------------------------------------------------------------------

/// A message as Go's JSON writes it; `None` for a zero time (Go omits it or writes `null`).
fn to_json(m: &DynamicMessage) -> Option<Value> {
    let desc = prost_reflect::ReflectMessage::descriptor(m);
    let i64_of = |name: &str| match m.get_field_by_name(name).as_deref() {
        Some(PValue::I64(i)) => *i,
        Some(PValue::I32(i)) => i64::from(*i),
        _ => 0,
    };
    match shape(&desc) {
        Shape::Time { micros } => {
            let (secs, nanos) = (i64_of("seconds"), i64_of("nanos"));
            if secs == 0 && nanos == 0 {
                return None;
            }
            let ts = jiff::Timestamp::new(secs, i32::try_from(nanos).unwrap_or(0)).ok()?;
            let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            Some(Value::String(if micros {
                format!("{base}.{:06}Z", nanos / 1000)
            } else {
                format!("{base}Z")
            }))
        }
        Shape::Duration => Some(Value::String(format_duration(i64_of("duration")))),
        Shape::IntOrString => Some(if i64_of("type") == 1 {
            Value::String(string_field(m, "strVal"))
        } else {
            Value::from(i64_of("intVal"))
        }),
        Shape::Quantity => Some(Value::String(string_field(m, "string"))),
        Shape::RawJson(f) => match m.get_field(&f).as_ref() {
            PValue::Bytes(b) if !b.is_empty() => serde_json::from_slice(b).ok(),
            _ => None,
        },
        Shape::Items(f) => Some(value_to_json(&m.get_field(&f), true).unwrap_or(Value::Null)),
        Shape::SchemaUnion => {
            for (f, v) in m.fields() {
                match f.name() {
                    "allows"
                        if !desc
                            .fields()
                            .any(|g| g.name() == "schema" && m.has_field(&g)) =>
                    {
                        return value_to_json(v, true);
                    }
                    "allows" => {}
                    _ => return value_to_json(v, true),
                }
            }
            None
        }
        Shape::Object => {
            let mut obj = Map::new();
            for (f, v) in m.fields() {
                let Some(j) = value_to_json(v, f.is_list() || f.is_map()) else {
                    continue;
                };
                match j {
                    Value::Object(members) if is_inline(&desc, &f) => obj.extend(members),
                    j => {
                        obj.insert(json_key(&desc, &f), j);
                    }
                }
            }
            Some(Value::Object(obj))
        }
    }
}

/// A field value as JSON. `keep_empty`: an element of a list or map, where `""` is a value;
/// a singular empty string is what Go writes for an unset non-pointer field, so it is left out.
fn value_to_json(v: &PValue, keep_empty: bool) -> Option<Value> {
    Some(match v {
        PValue::Bool(b) => Value::Bool(*b),
        PValue::I32(i) => Value::from(*i),
        PValue::I64(i) => Value::from(*i),
        PValue::U32(i) => Value::from(*i),
        PValue::U64(i) => Value::from(*i),
        PValue::F32(f) => {
            serde_json::Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number)
        }
        PValue::F64(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        PValue::String(s) if s.is_empty() && !keep_empty => return None,
        PValue::String(s) => Value::String(s.clone()),
        PValue::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PValue::EnumNumber(n) => Value::from(*n),
        PValue::Message(m) => to_json(m)?,
        PValue::List(items) => Value::Array(
            items
                .iter()
                .map(|x| value_to_json(x, true).unwrap_or(Value::Null))
                .collect(),
        ),
        PValue::Map(entries) => {
            let mut keys: Vec<(&MapKey, &PValue)> = entries.iter().collect();
            keys.sort_by_key(|(k, _)| map_key_string(k));
            Value::Object(
                keys.into_iter()
                    .map(|(k, x)| {
                        (
                            map_key_string(k),
                            value_to_json(x, true).unwrap_or(Value::Null),
                        )
                    })
                    .collect(),
            )
        }
    })
}

fn map_key_string(k: &MapKey) -> String {
    match k {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(i) => i.to_string(),
        MapKey::I64(i) => i.to_string(),
        MapKey::U32(i) => i.to_string(),
        MapKey::U64(i) => i.to_string(),
    }
}

// --- Go durations --------------------------------------------------------------------------------

/// A Go duration string (`1h2m3.5s`, `300ms`, `-1.5h`) in nanoseconds, as `Duration` carries it.
fn go_duration_nanos(s: &str) -> Option<i64> {
    crate::schema::parse_go_duration(s).and_then(|ns| i64::try_from(ns).ok())
}

/// Formats nanoseconds as Go's `time.Duration.String()` does (`1h2m3.5s`, `300ms`, `0s`).
fn format_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    let frac = |v: u64, div: u64| -> String {
        let whole = v / div;
        let rem = v % div;
        if rem == 0 {
            return whole.to_string();
        }
        let digits = div.to_string().len() - 1;
        let f = format!("{rem:0digits$}");
        format!("{whole}.{}", f.trim_end_matches('0'))
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 1_000));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 1_000_000));
    }
    let secs_total = u / 1_000_000_000;
    let sub = u % 1_000_000_000;
    let h = secs_total / 3600;
    let m = (secs_total % 3600) / 60;
    let s = frac((secs_total % 60) * 1_000_000_000 + sub, 1_000_000_000);
    let mut out = String::from(sign);
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{s}s"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_round_trips() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "default",
                "labels": {"app": "web", "empty": ""},
                "creationTimestamp": "2024-05-01T10:00:00Z",
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {}}}, "time": "2024-05-01T10:00:00Z"}],
            },
            "spec": {
                "containers": [{
                    "name": "c", "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                    "readinessProbe": {"tcpSocket": {"port": 8080}},
                }],
                "automountServiceAccountToken": false,
                "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}],
            },
        });
        let back = decode(&encode(&pod).unwrap()).unwrap();
        assert_eq!(back, pod);
    }

    #[test]
    fn times_durations_and_schema_unions() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"}, "eventTime": "2024-05-01T10:00:00.123456Z",
            "reportingController": "x", "reportingInstance": "y", "action": "A", "reason": "R"});
        assert_eq!(decode(&encode(&ev).unwrap()).unwrap(), ev);
        for d in ["1h0m0s", "1m30s", "1.5s", "300ms", "0s", "-2h3m4s"] {
            assert_eq!(format_duration(go_duration_nanos(d).unwrap()), d);
        }
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "ws.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "ws", "kind": "W"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "additionalProperties": false,
                    "properties": {"spec": {"type": "object", "default": {"a": 1},
                        "additionalProperties": {"type": "string"},
                        "x-kubernetes-validations": [{"rule": "self.a > 0"}]}}}}}]}});
        assert_eq!(decode(&encode(&crd).unwrap()).unwrap(), crd);
    }

    #[test]
    fn custom_kinds_and_bad_bodies_are_refused() {
        assert!(!supports("example.com/v1", "Widget"));
        assert!(supports("apps/v1", "Deployment"));
        assert!(supports("rbac.authorization.k8s.io/v1", "ClusterRole"));
        assert!(supports("v1", "Status"));
        assert!(matches!(decode(b"{}"), Err(ProtoError::NotProtobuf)));
        assert!(matches!(
            decode(b"k8s\0\xff\xff"),
            Err(ProtoError::Decode(_))
        ));
    }
}
