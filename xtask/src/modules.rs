//! `cargo xtask modules`: the runtime's module graph, and the import circles in it.
//!
//! Every file of `runtime/src` is a module; a path into another module (`crate::a::b`, `super::c`)
//! is an edge. Edges are compared between siblings: a file in `modes/kcp` that names
//! `crate::controller::source` makes `modes → controller` at the top level, and a file in
//! `dev/flux.rs` that names `super::operator` makes `flux → operator` inside `dev`. A circle among
//! siblings is a knot a reader cannot untie one module at a time, so `--check` fails on any.
//! Unit-test modules at the end of a file (`#[cfg(test)] mod tests`) are not counted: tests may
//! reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};

/// A module path below the crate root, e.g. `["modes", "kcp", "source"]`.
type ModPath = Vec<String>;

/// Prints the graph of `crate_dir/src` and its circles; with `check`, fails when there is one.
pub(crate) fn run(root: &Path, crate_dir: &str, check: bool) -> Result<ExitCode> {
    let (report, circles) = graph(root, crate_dir)?;
    print!("{report}");
    if circles.is_empty() {
        println!("no import circles in {crate_dir}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("import circles in {crate_dir}:");
    for circle in &circles {
        println!("  {circle}");
    }
    Ok(if check {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The module graph of `crate_dir/src`, printed, and its circles, one line each.
fn graph(root: &Path, crate_dir: &str) -> Result<(String, Vec<String>)> {
    let src = root.join(crate_dir).join("src");
    let files = module_files(&src)?;
    let modules: BTreeSet<ModPath> = files.iter().map(|(path, _)| path.clone()).collect();

    // parent module -> (child -> children it names)
    let mut edges: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, file) in &files {
        let text =
            fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        for to in references(from, without_unit_tests(&text), &modules) {
            if let Some((parent, a, b)) = sibling_edge(from, &to) {
                edges
                    .entry(parent)
                    .or_default()
                    .entry(a)
                    .or_default()
                    .insert(b);
            }
        }
    }

    let mut report = String::new();
    let mut circles = Vec::new();
    for (parent, graph) in &edges {
        let scope = if parent.is_empty() {
            "crate".to_owned()
        } else {
            parent.join("::")
        };
        let _ = writeln!(report, "{scope}:");
        for (from, tos) in graph {
            let list: Vec<&str> = tos.iter().map(String::as_str).collect();
            let _ = writeln!(report, "  {from} -> {}", list.join(", "));
        }
        for component in strongly_connected(graph) {
            circles.push(format!("{scope}: {}", component.join(" <-> ")));
        }
    }
    Ok((report, circles))
}

/// Every `.rs` file below `src` with its module path (`lib.rs` and `mod.rs` stand for their folder).
fn module_files(src: &Path) -> Result<Vec<(ModPath, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap_or(&path);
            let mut module: ModPath = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            out.push((module, path));
        }
    }
    out.sort();
    Ok(out)
}

/// The text of a file before its trailing `#[cfg(test)]` unit-test module.
fn without_unit_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// The modules a file's code names, resolved to the longest known module path.
fn references(from: &ModPath, text: &str, modules: &BTreeSet<ModPath>) -> BTreeSet<ModPath> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (start, _) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            // Part of a longer name (`my_crate::`), not a path of this crate.
            if start > 0 && code[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let (base, rest) = if code[start..].starts_with("crate::") {
                (Vec::new(), &code[start + "crate::".len()..])
            } else {
                let mut base = from.clone();
                let mut rest = &code[start..];
                while let Some(after) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = after;
                }
                (base, rest)
            };
            for path in expand(rest) {
                let mut candidate = base.clone();
                candidate.extend(path);
                while !candidate.is_empty() && !modules.contains(&candidate) {
                    candidate.pop();
                }
                if !candidate.is_empty() && candidate != *from {
                    found.insert(candidate);
                }
            }
        }
    }
    found
}

/// The paths a `use` tail names: `a::b::C` is one path, `{a::X, b}` two (one level of braces).
fn expand(rest: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|seg| {
                seg.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|seg| !seg.is_empty())
            .collect()
    };
    if let Some(inner) = rest.strip_prefix('{') {
        let inner = inner.split('}').next().unwrap_or("");
        return inner.split(',').map(|part| ident(part.trim())).collect();
    }
    // `a::{b, c}`: the common prefix `a` is what matters at the level of modules.
    vec![ident(rest)]
}

/// The edge between the two siblings under the common parent of `from` and `to`, if they differ
/// there (a module naming its own descendant or ancestor is no edge between siblings).
fn sibling_edge(from: &ModPath, to: &ModPath) -> Option<(ModPath, String, String)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let a = from.get(common)?;
    let b = to.get(common)?;
    Some((from[..common].to_vec(), a.clone(), b.clone()))
}

/// The strongly connected components with more than one member (Tarjan), each sorted.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(tos) = s.graph.get(v) {
            for w in tos {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: Vec<&str> = graph
        .iter()
        .flat_map(|(k, vs)| std::iter::once(k.as_str()).chain(vs.iter().map(String::as_str)))
        .collect();
    for node in nodes {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> ModPath {
        s.split("::").map(str::to_owned).collect()
    }

    #[test]
    fn the_runtime_has_no_import_circles() {
        let (report, circles) =
            graph(&crate::workspace_root(), "runtime").expect("runtime/src reads");
        assert!(report.contains("controller"), "{report}");
        assert!(circles.is_empty(), "import circles: {circles:#?}\n{report}");
    }

    #[test]
    fn finds_a_circle_between_siblings_and_none_in_a_chain() {
        let graph: BTreeMap<String, BTreeSet<String>> = [
            ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
            ("b".to_owned(), BTreeSet::from(["c".to_owned()])),
            ("c".to_owned(), BTreeSet::from(["a".to_owned()])),
            ("d".to_owned(), BTreeSet::from(["a".to_owned()])),
        ]
        .into();
        assert_eq!(strongly_connected(&graph), vec![vec!["a", "b", "c"]]);
        let chain: BTreeMap<String, BTreeSet<String>> =
            [("a".to_owned(), BTreeSet::from(["b".to_owned()]))].into();
        assert!(strongly_connected(&chain).is_empty());
    }

    #[test]
    fn resolves_crate_super_and_grouped_paths_to_known_modules() {
        let modules: BTreeSet<ModPath> = ["dev", "dev::flux", "dev::operator", "tenant", "queue"]
            .into_iter()
            .map(path)
            .collect();
        let text = "use crate::{tenant::Identity, queue::Queue};\nuse super::operator::Operator;\n";
        let found = references(&path("dev::flux"), text, &modules);
        assert_eq!(
            found,
            BTreeSet::from([path("tenant"), path("queue"), path("dev::operator")])
        );
        assert_eq!(
            sibling_edge(&path("dev::flux"), &path("dev::operator")),
            Some((path("dev"), "flux".to_owned(), "operator".to_owned()))
        );
        assert_eq!(sibling_edge(&path("dev"), &path("dev::flux")), None);
    }
}
