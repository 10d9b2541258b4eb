//! `cargo xtask public-items`: how many names the facade, the runtime and the embedded API server
//! make public, read from
//! rustdoc's JSON output.
//!
//! A *name* is what a user can write in a path: a module, type, trait, function, constant, static,
//! type alias or macro reachable from the crate root (through `pub mod` and `pub use`), plus the
//! public methods and associated constants of a reachable type's inherent impls. `#[doc(hidden)]`
//! items are not counted: rustdoc leaves them out, and so does an author's IDE. A re-export of
//! another crate counts as one name, except a re-export out of the runtime, which counts what it
//! brings: `pub use service_provider_runtime::openmcp;` is every name of `openmcp`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

/// The crates counted, with the features their public API is read with.
const CRATES: &[(&str, &str)] = &[
    ("service-provider", "dev"),
    ("service-provider-runtime", "dev"),
    ("service-provider-apiserver", ""),
];

pub(crate) fn run(root: &Path) -> Result<ExitCode> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        // rustdoc's JSON output is unstable (RUSTC_BOOTSTRAP): its own directory keeps the
        // ordinary builds' fingerprints out of it.
        .join("public-items");
    let mut docs = HashMap::new();
    for (package, features) in CRATES {
        let status = crate::cargo()
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_TARGET_DIR", &target)
            // The runtime alone picks no k8s-openapi version; the facade's default is this one.
            .env("K8S_OPENAPI_ENABLED_VERSION", "1.37")
            .args(["rustdoc", "--quiet", "--lib", "-p", package, "--features"])
            .arg(features)
            .args(["--", "-Z", "unstable-options", "--output-format", "json"])
            .status()
            .with_context(|| format!("running cargo rustdoc for {package}"))?;
        if !status.success() {
            bail!("cargo rustdoc for {package} failed ({status})");
        }
        let name = package.replace('-', "_");
        let file = target.join("doc").join(format!("{name}.json"));
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let doc =
            Doc::parse(&name, &text).with_context(|| format!("parsing {}", file.display()))?;
        docs.insert(name, doc);
    }
    for (package, _) in CRATES {
        let counted = docs[&package.replace('-', "_")].count(&docs);
        println!(
            "{package}: {} public names",
            counted.values().sum::<usize>()
        );
        for (module, n) in &counted {
            println!("  {n:>5}  {module}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One crate's rustdoc JSON.
struct Doc {
    /// The crate's name (`service_provider_runtime`).
    name: String,
    index: HashMap<String, Value>,
    /// Item id → where it is defined, for items of every crate this one names.
    paths: HashMap<String, Summary>,
    /// Path → item id, for this crate's own items.
    by_path: HashMap<Vec<String>, String>,
    root: String,
}

/// An item's crate, path and kind (`module`, `struct`, …), from rustdoc's `paths`.
struct Summary {
    krate: String,
    path: Vec<String>,
    kind: String,
}

/// Names counted, by the module of the crate they are reachable in.
type Counted = BTreeMap<String, usize>;

impl Doc {
    fn parse(name: &str, text: &str) -> Result<Doc> {
        let json: Value = serde_json::from_str(text)?;
        let crates: HashMap<String, String> = json["external_crates"]
            .as_object()
            .context("no external_crates")?
            .iter()
            .map(|(id, c)| (id.clone(), c["name"].as_str().unwrap_or("").to_owned()))
            .collect();
        let mut paths = HashMap::new();
        let mut by_path = HashMap::new();
        for (id, summary) in json["paths"].as_object().context("no paths")? {
            let path: Vec<String> = summary["path"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect();
            let krate = summary["crate_id"].as_u64().unwrap_or(0).to_string();
            if krate == "0" {
                by_path.insert(path.clone(), id.clone());
            }
            let summary = Summary {
                krate: crates.get(&krate).cloned().unwrap_or_default(),
                path,
                kind: summary["kind"].as_str().unwrap_or_default().to_owned(),
            };
            paths.insert(id.clone(), summary);
        }
        Ok(Doc {
            name: name.to_owned(),
            index: json["index"]
                .as_object()
                .context("no index")?
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            paths,
            by_path,
            root: json["root"].to_string(),
        })
    }

    /// Whether `id` is a module, or a re-export of one.
    fn is_module(&self, id: &str) -> bool {
        match self.index.get(id) {
            Some(item) => match item["inner"].as_object().and_then(|o| o.iter().next()) {
                Some((kind, _)) if kind == "module" => true,
                Some((kind, inner)) if kind == "use" => inner["id"]
                    .as_u64()
                    .is_some_and(|target| self.is_module(&target.to_string())),
                _ => false,
            },
            None => self.paths.get(id).is_some_and(|s| s.kind == "module"),
        }
    }

    /// Every name reachable from this crate's root.
    fn count(&self, docs: &HashMap<String, Doc>) -> Counted {
        let mut counted = Counted::default();
        let mut seen = BTreeSet::new();
        self.walk(&self.root, "crate", docs, &mut seen, &mut counted);
        counted
    }

    fn walk(
        &self,
        id: &str,
        module: &str,
        docs: &HashMap<String, Doc>,
        seen: &mut BTreeSet<(String, String)>,
        counted: &mut Counted,
    ) {
        if !seen.insert((self.name.clone(), id.to_owned())) {
            return;
        }
        let Some(item) = self.index.get(id) else {
            // Another crate's item: follow it into the runtime, count it once otherwise.
            let summary = self.paths.get(id);
            match summary.and_then(|s| Some((docs.get(&s.krate)?, &s.path))) {
                Some((doc, path)) => {
                    if let Some(local) = doc.by_path.get(path) {
                        doc.walk(local, module, docs, seen, counted);
                    }
                }
                None => *counted.entry(module.to_owned()).or_default() += 1,
            }
            return;
        };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        match kind.as_str() {
            "module" => {
                let name = item["name"].as_str().unwrap_or("crate");
                let here = if id == self.root {
                    "crate".to_owned()
                } else {
                    *counted.entry(module.to_owned()).or_default() += 1;
                    format!("{module}::{name}")
                };
                // A name is counted where it is first reached: the items of a module before its
                // submodules, so a prelude or a nested module does not claim the root's names.
                let (modules, items): (Vec<String>, Vec<String>) = inner["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(Value::to_string)
                    .partition(|child| self.is_module(child));
                for child in items.iter().chain(&modules) {
                    self.walk(child, &here, docs, seen, counted);
                }
            }
            "use" => {
                let Some(target) = inner["id"].as_u64().map(|t| t.to_string()) else {
                    return;
                };
                if inner["is_glob"].as_bool() == Some(true) {
                    // The glob's module itself is not a name here; its items are.
                    if let Some(m) = self.index.get(&target) {
                        for child in m["inner"]["module"]["items"]
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            self.walk(&child.to_string(), module, docs, seen, counted);
                        }
                    }
                } else {
                    self.walk(&target, module, docs, seen, counted);
                }
            }
            "struct" | "enum" | "union" | "trait" | "function" | "constant" | "static"
            | "type_alias" | "macro" | "proc_macro" | "trait_alias" => {
                *counted.entry(module.to_owned()).or_default() += 1;
                for impl_id in inner["impls"].as_array().into_iter().flatten() {
                    let Some(imp) = self.index.get(&impl_id.to_string()) else {
                        continue;
                    };
                    let imp = &imp["inner"]["impl"];
                    if !imp["trait"].is_null() || imp["is_synthetic"].as_bool() == Some(true) {
                        continue;
                    }
                    let public = imp["items"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|i| self.index.get(&i.to_string()))
                        .filter(|i| i["visibility"] == "public")
                        .count();
                    *counted.entry(module.to_owned()).or_default() += public;
                }
            }
            _ => {}
        }
    }
}
