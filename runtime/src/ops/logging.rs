//! Log output of a provider binary: `--verbosity` mapped onto `tracing` filters, and
//! `--log-format` choosing JSON lines (as Go providers log) or text.
//!
//! The runtime never logs a token or a kubeconfig: clusters are described by their Secret's
//! name, `ClusterAccess`'s `Debug` redacts the kubeconfig, and errors about kubeconfigs never
//! quote them. Dependencies log at most `info` (at `DEBUG`) so their request tracing, which
//! shows URLs but never headers, stays out of the way.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// The `--verbosity` levels of the openMCP contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verbosity {
    /// Everything, including each reconcile.
    Debug,
    /// What changed.
    Info,
    /// Errors only.
    Error,
}

/// The filter for a verbosity: the runtime's own crates at that level, dependencies quieter.
pub(crate) fn filter(verbosity: Verbosity) -> EnvFilter {
    let directives = match verbosity {
        Verbosity::Debug => {
            "info,service_provider=debug,service_provider_runtime=debug,kube_runtime=debug,kube_client=info"
        }
        Verbosity::Info => "warn,service_provider=info,service_provider_runtime=info",
        Verbosity::Error => "error",
    };
    EnvFilter::new(directives)
}

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// One JSON object per line with zap's keys (`level`, `ts`, `logger`, `msg`) and every field
    /// of the event and of its spans at the top level — what the openMCP platform's Go providers
    /// write, so the same log pipeline parses both.
    Json,
    /// Human-readable lines, for a terminal.
    Text,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    /// `json` or `text`, in any case (controller-utils' `ParseLogFormat` takes any case too).
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "json" => Ok(LogFormat::Json),
            "text" => Ok(LogFormat::Text),
            _ => Err(format!("unknown log format {value:?}; use json or text")),
        }
    }
}

/// [`filter`], with the provider author's crate (`author_crate`, a log target) at the
/// verbosity as well: an author's `info!` is the provider's own log line, not a dependency's.
pub(crate) fn provider_filter(verbosity: Verbosity, author_crate: &str) -> EnvFilter {
    let level = match verbosity {
        Verbosity::Debug => "debug",
        Verbosity::Info => "info",
        Verbosity::Error => "error",
    };
    let valid = !author_crate.is_empty()
        && author_crate
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    match valid
        .then(|| format!("{author_crate}={level}").parse())
        .and_then(Result::ok)
    {
        Some(directive) => filter(verbosity).add_directive(directive),
        None => filter(verbosity),
    }
}

/// The crate `P` is defined in, as a log target: where the provider author's log lines come
/// from.
pub(crate) fn crate_of<P>() -> &'static str {
    let path = std::any::type_name::<P>();
    path.split("::").next().unwrap_or(path)
}

/// Installs the global subscriber (stderr) for a provider whose code lives in `author_crate`;
/// `RUST_LOG` overrides the verbosity. Does nothing when a subscriber is already installed
/// (e.g. in tests).
pub(crate) fn init(verbosity: Verbosity, format: LogFormat, author_crate: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| provider_filter(verbosity, author_crate));
    let _ = tracing::subscriber::set_global_default(subscriber(filter, format, std::io::stderr));
}

/// The subscriber [`init`] installs, writing to `writer`: for tests that read what a provider
/// logs without running it as a process.
pub(crate) fn subscriber<W>(
    filter: EnvFilter,
    format: LogFormat,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.finish()),
        // Span fields are recorded as JSON objects (`JsonFields`), so each line can merge them.
        LogFormat::Json => Box::new(
            builder
                .fmt_fields(JsonFields::new())
                .event_format(ZapJson)
                .finish(),
        ),
    }
}

/// One JSON object per event, flat as zap writes them: `level`, `ts`, `logger`, `msg`, then the
/// fields of the spans the event is in (outermost first) and of the event itself, a later one
/// winning on a name clash. tracing-subscriber's own JSON format nests the span fields under
/// `span` next to the span's name (so the reconcile span's `name` field would clash with it)
/// and the message under `fields`, which log pipelines built for Go providers do not look at.
struct ZapJson;

impl<S> FormatEvent<S, JsonFields> for ZapJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "level".into(),
            Value::from(meta.level().as_str().to_ascii_lowercase()),
        );
        // zap's ISO8601TimeEncoder: milliseconds.
        let mut ts = String::new();
        write!(ts, "{:.3}", k8s_openapi::jiff::Timestamp::now())?;
        line.insert("ts".into(), Value::from(ts));
        line.insert("logger".into(), Value::from(meta.target()));
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<FormattedFields<JsonFields>>() else {
                    continue;
                };
                if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(fields) {
                    line.extend(fields);
                }
            }
        }
        event.record(&mut Fields(&mut line));
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| std::fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// Collects an event's fields into the line; `message` becomes zap's `msg`.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let key = match field.name() {
            "message" => "msg",
            name => name,
        };
        self.0.insert(key.to_owned(), value);
    }
}

impl Visit for Fields<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_are_flat_with_zaps_keys_and_the_span_fields() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = subscriber(EnvFilter::new("info"), LogFormat::Json, move || {
            writer.clone()
        });
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("reconcile", mode = "standard", name = "tenant-a");
            let _entered = span.enter();
            tracing::info!(count = 3, "installed \"it\"");
            tracing::debug!("filtered out");
        });
        let bytes = buffer.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(line["level"], "info");
        assert_eq!(line["msg"], "installed \"it\"");
        assert_eq!(line["mode"], "standard");
        assert_eq!(line["name"], "tenant-a", "the span's field, not its name");
        assert_eq!(line["count"], 3);
        assert!(line["logger"].as_str().unwrap().contains("logging"));
        let ts = line["ts"].as_str().unwrap();
        assert!(
            ts.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
            "an RFC 3339 time: {ts}"
        );
    }

    #[test]
    fn the_authors_crate_logs_at_the_verbosity() {
        struct Provider;
        assert_eq!(
            crate_of::<Provider>(),
            "service_provider_runtime",
            "the crate, not the module"
        );
        let filter = provider_filter(Verbosity::Info, "velero").to_string();
        assert!(filter.contains("velero=info"), "{filter}");
        let filter = provider_filter(Verbosity::Debug, "velero").to_string();
        assert!(filter.contains("velero=debug"), "{filter}");
        let filter = provider_filter(Verbosity::Info, "not a crate").to_string();
        assert_eq!(filter, super::filter(Verbosity::Info).to_string());
    }

    #[test]
    fn unknown_formats_say_what_to_use() {
        assert_eq!("JSON".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("text".parse::<LogFormat>(), Ok(LogFormat::Text));
        let err = "yaml".parse::<LogFormat>().unwrap_err();
        assert!(
            err.contains("yaml") && err.contains("json or text"),
            "{err}"
        );
    }
}
