//! The runtime is a house of floors (README "Layout"): a file uses what is on its own floor or
//! below, never above, and no two modules lean on each other (the one allowed pair: a stream
//! records events, an event is recorded on a stream). This test reads every `crate::…` and
//! `super::…` path in the runtime's code (comments left out, `use` groups over several lines
//! followed), and fails on a path that points upward, a file on no floor, a path through the
//! root re-exports, and a circle of files or of modules; it also keeps `unsafe` blocks and the
//! driver's raw API (`sys::`, NVRTC) inside `ffi/`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The floors, from the ground up: which top-level module lives on each. Modules of one
/// floor may use each other only as the circle rule allows; the CUDA objects are ordered
/// among themselves (the memory traits below streams, whose copies take them; a buffer's copies
/// take a stream; a stream's events are events).
const FLOORS: &[(&str, u16)] = &[
    ("program", 10),
    ("operand", 10),
    ("error", 20),
    ("ffi", 30),
    ("access", 40),
    ("device", 40),
    ("trace", 40),
    ("stream", 41),
    ("event", 41),
    ("module", 42),
    ("comm", 42),
    ("memory", 43),
    ("call", 44),
    ("ops", 45),
    ("issue", 50),
    ("plan", 60),
    ("exec", 70),
    ("graph", 80),
    ("testing", 90),
];

/// The circles the house allows, as the set of top-level modules in each.
const ALLOWED_CIRCLES: &[&[&str]] = &[&["event", "stream"]];

fn floor_of_module(name: &str) -> Option<u16> {
    FLOORS.iter().find(|(m, _)| *m == name).map(|&(_, f)| f)
}

/// A source file's module path under `runtime/src`: `exec/eager.rs` is `["exec", "eager"]`,
/// `exec/mod.rs` is `["exec"]`, `lib.rs` is `[]`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir)
        .expect("runtime/src is readable")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file with comments blanked out (line numbers kept): `//` to the end of a
/// line, outside string literals.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut in_string = false;
            let mut prev = ' ';
            let mut out = String::with_capacity(line.len());
            for (i, c) in line.char_indices() {
                if c == '"' && prev != '\\' {
                    in_string = !in_string;
                }
                if !in_string && c == '/' && line[i + 1..].starts_with('/') {
                    break;
                }
                out.push(c);
                prev = c;
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One path a file names: the module path it resolves to (before an item name) and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    path: Vec<String>,
    line: usize,
}

fn ident(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// The paths of a `crate::`/`super::` reference starting at `rest` (just after the prefix),
/// below `base`: `a::b::C`, and each branch of `{a, b::{c, d}}` however it is wrapped.
fn paths_from(base: &[String], rest: &str, line: usize, out: &mut Vec<Named>) {
    let mut path = base.to_vec();
    let mut rest = rest.trim_start();
    if rest.is_empty() {
        return; // the empty branch after a group's trailing comma
    }
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            // Split the group at its top-level commas.
            let mut depth = 0usize;
            let mut start = 0usize;
            let mut line_at = line;
            let mut branch_line = line;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        paths_from(&path, &group[start..i], branch_line, out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        paths_from(&path, &group[start..i], branch_line, out);
                        start = i + 1;
                        branch_line = line_at;
                    }
                    '\n' => {
                        line_at += 1;
                        if group[start..i].trim().is_empty() {
                            branch_line = line_at;
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        let (name, after) = ident(rest);
        if name.is_empty() || name == "self" || name == "*" {
            out.push(Named { path, line });
            return;
        }
        path.push(name.to_owned());
        match after.trim_start().strip_prefix("::") {
            Some(next) => rest = next.trim_start(),
            None => {
                out.push(Named { path, line });
                return;
            }
        }
    }
}

/// Every path `code` names through `crate::` or `super::` (`super::super::` climbs twice),
/// resolved against the file's module `own`.
fn named_paths(own: &[String], is_mod_file: bool, code: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut line = 1;
    let mut i = 0;
    while i < code.len() {
        if bytes[i] == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = &code[i..];
        if boundary && rest.starts_with("crate::") {
            paths_from(&[], &rest["crate::".len()..], line, &mut out);
            i += "crate::".len();
        } else if boundary && rest.starts_with("super::") {
            // `super` of a `mod.rs` file is its folder's parent; of `a/b.rs`, `a`.
            let mut base = own.to_vec();
            let mut rest = rest;
            let mut climbed = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                rest = r;
                climbed += 1;
            }
            let _ = is_mod_file;
            for _ in 0..climbed {
                base.pop();
            }
            paths_from(&base, rest, line, &mut out);
            i += "super::".len() * climbed;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The source file a module path names: the longest prefix of `path` that is a file's module.
fn file_of<'a>(path: &[String], modules: &'a BTreeMap<Vec<String>, String>) -> Option<&'a str> {
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n]).map(String::as_str))
}

/// The circles of a directed graph: its strongly connected components of more than one node.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // Nodes in a circle reach themselves; group nodes that reach each other.
    let nodes: BTreeSet<&String> = edges
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a).chain(bs.iter()))
        .collect();
    let reach = |from: &String| {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in &nodes {
        if !reached[n].contains(*n) || out.iter().any(|c| c.contains(*n)) {
            continue;
        }
        let circle: BTreeSet<String> = nodes
            .iter()
            .filter(|m| reached[n].contains(**m) && reached[**m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        out.push(circle);
    }
    out
}

/// Every violation of the floors in the sources under `src` (shown as under `shown`).
fn violations(src: &Path, shown: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let modules: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|f| {
            let relative = f.strip_prefix(src).expect("under src");
            (
                module_of(relative),
                shown.join(relative).display().to_string(),
            )
        })
        .collect();
    let mut out = Vec::new();
    let mut file_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut module_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(src).expect("under src");
        let name = shown.join(relative).display().to_string();
        let own = module_of(relative);
        let text = code(&fs::read_to_string(file).expect("sources are UTF-8"));
        let in_ffi = own.first().is_some_and(|m| m == "ffi");
        for (n, line) in text.lines().enumerate() {
            if !in_ffi {
                let at = format!("{name}:{}", n + 1);
                if line.contains("sys::") || line.contains("nvrtc::") {
                    out.push(format!("{at}: names the driver's raw API outside ffi/"));
                }
                if line.contains("unsafe {") {
                    out.push(format!("{at}: an `unsafe` block outside ffi/"));
                }
            }
        }
        let Some(top) = own.first() else {
            continue; // lib.rs: declares the modules and re-exports items at the root
        };
        let Some(floor) = floor_of_module(top) else {
            out.push(format!(
                "{name}: module `{top}` is on no floor; give it one in tests/floors.rs"
            ));
            continue;
        };
        let is_mod = relative.file_name().is_some_and(|f| f == "mod.rs");
        for named in named_paths(&own, is_mod, &text) {
            let at = format!("{name}:{}", named.line);
            let Some(target_top) = named.path.first() else {
                continue;
            };
            match floor_of_module(target_top) {
                Some(to) if to > floor => out.push(format!(
                    "{at}: `{top}` (floor {floor}) uses `crate::{}` (floor {to}), a floor above",
                    named.path.join("::")
                )),
                Some(_) => {}
                None if target_top.starts_with(char::is_uppercase)
                    || target_top == "__private"
                    || modules.keys().all(|m| m.first() != Some(target_top)) =>
                {
                    out.push(format!(
                        "{at}: `crate::{target_top}` goes through the root re-exports; import it from its module"
                    ))
                }
                None => out.push(format!("{at}: `crate::{target_top}` is on no floor")),
            }
            if let Some(target) = file_of(&named.path, &modules)
                && target != name
            {
                file_edges
                    .entry(name.clone())
                    .or_default()
                    .insert(target.to_owned());
            }
            if target_top != top {
                module_edges
                    .entry(top.clone())
                    .or_default()
                    .insert(target_top.clone());
            }
        }
    }
    let allowed = |circle: &BTreeSet<String>, as_files: bool| {
        ALLOWED_CIRCLES.iter().any(|allowed| {
            let expected: BTreeSet<String> = allowed
                .iter()
                .map(|m| {
                    if as_files {
                        shown.join(format!("{m}.rs")).display().to_string()
                    } else {
                        (*m).to_owned()
                    }
                })
                .collect();
            *circle == expected
        })
    };
    for circle in circles(&file_edges) {
        if !allowed(&circle, true) {
            let list: Vec<&str> = circle.iter().map(String::as_str).collect();
            out.push(format!("a circle of files: {}", list.join(" <-> ")));
        }
    }
    for circle in circles(&module_edges) {
        if !allowed(&circle, false) {
            let list: Vec<&str> = circle.iter().map(String::as_str).collect();
            out.push(format!("a circle of modules: {}", list.join(" <-> ")));
        }
    }
    out
}

#[test]
fn the_runtime_imports_only_from_its_floor_or_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = violations(&root.join("runtime/src"), Path::new("runtime/src"));
    assert!(
        found.is_empty(),
        "{} floor violation(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn paths_are_read_from_code_not_comments() {
    let own = vec!["exec".to_owned(), "eager".to_owned()];
    let tops = |code: &str| -> Vec<String> {
        named_paths(&own, false, code)
            .into_iter()
            .map(|n| n.path.join("::"))
            .collect()
    };
    assert_eq!(
        tops("use crate::plan::Plan; let x = crate::graph::f();"),
        ["plan::Plan", "graph::f"]
    );
    assert_eq!(tops("use crate::{error, ffi::x};"), ["error", "ffi::x"]);
    assert_eq!(
        tops("use crate::{\n    error::Error,\n    ffi::{graph, memory::X},\n};"),
        ["error::Error", "ffi::graph", "ffi::memory::X"]
    );
    assert_eq!(tops("use super::book::NodeBook;"), ["exec::book::NodeBook"]);
    assert_eq!(tops("use super::super::plan::Plan;"), ["plan::Plan"]);
    assert_eq!(code("/// see [`crate::graph::Graph`]"), "");
    assert_eq!(code(r#"let s = "a // b"; // c"#), r#"let s = "a // b"; "#);
    assert_eq!(module_of(Path::new("exec/mod.rs")), ["exec"]);
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
}

/// Writes `files` (path, code) under a fresh folder and returns the violations found there.
fn planted(files: &[(&str, &str)]) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!(
        "streamgraph-floors-{}-{}",
        std::process::id(),
        files.len() * 31 + files.iter().map(|f| f.1.len()).sum::<usize>()
    ));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().expect("a folder")).expect("writable temp dir");
        fs::write(&path, text).expect("writable temp dir");
    }
    let found = violations(&dir, Path::new("src"));
    let _ = fs::remove_dir_all(&dir);
    found
}

#[test]
fn each_kind_of_violation_is_caught() {
    let clean = [
        ("lib.rs", "mod plan; mod exec;"),
        ("plan/mod.rs", "use crate::error::Error;"),
        ("error.rs", ""),
        ("exec/mod.rs", "mod eager;"),
        ("exec/eager.rs", "use crate::plan::Plan;\nuse super::x;"),
    ];
    assert_eq!(planted(&clean), Vec::<String>::new());

    // An upward path through a `use` group wrapped over several lines.
    let found = planted(&[
        (
            "plan/mod.rs",
            "use crate::{\n    error::Error,\n    exec::Eager,\n};",
        ),
        ("exec/mod.rs", ""),
        ("error.rs", ""),
    ]);
    assert!(
        found
            .iter()
            .any(|v| v.contains("src/plan/mod.rs:3") && v.contains("floor above")),
        "{found:?}"
    );

    // An upward path through `super::super::`.
    let found = planted(&[
        ("plan/builder.rs", "use super::super::graph::Graph;"),
        ("graph/mod.rs", ""),
    ]);
    assert!(found.iter().any(|v| v.contains("floor above")), "{found:?}");

    // A file on no floor.
    let found = planted(&[("stray.rs", "use crate::error::Error;"), ("error.rs", "")]);
    assert!(found.iter().any(|v| v.contains("no floor")), "{found:?}");

    // A circle of files inside one module.
    let found = planted(&[
        ("ffi/graph.rs", "use super::memory::Alloc;"),
        ("ffi/memory.rs", "use super::graph::Keep;"),
    ]);
    assert!(
        found.iter().any(|v| v.contains("a circle of files")),
        "{found:?}"
    );

    // A circle of two modules of one floor other than stream and event.
    let found = planted(&[
        ("module.rs", "use crate::comm::Communicator;"),
        ("comm.rs", "use crate::module::Kernel;"),
    ]);
    assert!(
        found.iter().any(|v| v.contains("a circle of modules")),
        "{found:?}"
    );

    // The allowed circle.
    let found = planted(&[
        ("stream.rs", "use crate::event::Event;"),
        ("event.rs", "use crate::stream::Stream;"),
    ]);
    assert_eq!(found, Vec::<String>::new());

    // A path through the root re-exports.
    let found = planted(&[("exec/mod.rs", "use crate::Plan;")]);
    assert!(
        found.iter().any(|v| v.contains("root re-exports")),
        "{found:?}"
    );
}

/// Files of one concept: no source file of the runtime or the macro crate is over 700 lines,
/// test-only files aside (a file whose module is compiled only under `cfg(test)`).
#[test]
fn no_source_file_is_over_700_lines() {
    const TEST_ONLY: &[&str] = &[
        "macros/src/fuzz_tests.rs",
        "macros/src/validate/agree_tests.rs",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["runtime/src", "macros/src"] {
        sources(&root.join(dir), &mut files);
    }
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let shown = f
                .strip_prefix(root)
                .expect("under the root")
                .display()
                .to_string();
            let lines = fs::read_to_string(f)
                .expect("sources are UTF-8")
                .lines()
                .count();
            (lines > 700 && !TEST_ONLY.contains(&shown.as_str()) && !shown.ends_with("tests.rs"))
                .then(|| format!("{shown}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}
