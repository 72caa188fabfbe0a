//! The runtime is a house of floors (README "Layout"): a file uses what is on its own floor or
//! below, never above. This test reads every `crate::…` path in the runtime's sources and
//! fails on one that points upward, naming the file and line; it also keeps `unsafe` blocks
//! and the driver's raw API (`sys::`, NVRTC) inside `ffi/`.

use std::fs;
use std::path::{Path, PathBuf};

/// The floors, from the ground up: which module (the first segment after `crate::`) or file
/// lives on each.
const FLOORS: &[(&str, u8)] = &[
    ("program", 1),
    ("operand", 1),
    ("error", 2),
    ("ffi", 3),
    ("device", 4),
    ("stream", 4),
    ("event", 4),
    ("module", 4),
    ("memory", 4),
    ("comm", 4),
    ("trace", 4),
    ("issue", 5),
    ("plan", 6),
    ("exec", 7),
    ("graph", 8),
    ("testing", 9),
];

fn floor_of_module(name: &str) -> Option<u8> {
    FLOORS.iter().find(|(m, _)| *m == name).map(|&(_, f)| f)
}

/// The floor of a source file, from its path under `runtime/src`; `None` for `lib.rs`, which
/// only declares modules and re-exports items at the root.
fn floor_of_file(relative: &Path) -> Option<u8> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    floor_of_module(first.trim_end_matches(".rs"))
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

/// The code of a line without its comment (`//` to the end; strings holding `//` are rare
/// enough in this crate's `use` lines not to matter).
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// The modules a line of code names through `crate::`: `crate::plan::…` and each name of
/// `crate::{plan, graph}`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// Every violation of the floors in the runtime's sources, as `file:line: why`.
fn violations(root: &Path) -> Vec<String> {
    let src = root.join("runtime/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under runtime/src");
        let shown = Path::new("runtime/src").join(relative);
        let text = fs::read_to_string(&file).expect("sources are UTF-8");
        let in_ffi = relative.starts_with("ffi");
        let own = floor_of_file(relative);
        for (n, line) in text.lines().enumerate() {
            let at = format!("{}:{}", shown.display(), n + 1);
            let code = code(line);
            if !in_ffi {
                if code.contains("sys::") || code.contains("nvrtc::") {
                    out.push(format!("{at}: names the driver's raw API outside ffi/"));
                }
                if code.contains("unsafe {") {
                    out.push(format!("{at}: an `unsafe` block outside ffi/"));
                }
            }
            let Some(own) = own else { continue };
            for name in crate_paths(code) {
                match floor_of_module(&name) {
                    Some(floor) if floor > own => out.push(format!(
                        "{at}: floor {own} imports `crate::{name}` from floor {floor}"
                    )),
                    Some(_) => {}
                    None if name.starts_with(char::is_uppercase) || name == "__private" => {
                        out.push(format!(
                            "{at}: `crate::{name}` goes through the root re-exports; import it from its module"
                        ))
                    }
                    None => out.push(format!("{at}: `crate::{name}` is on no floor")),
                }
            }
        }
    }
    out
}

#[test]
fn the_runtime_imports_only_from_its_floor_or_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = violations(root);
    assert!(
        found.is_empty(),
        "{} floor violation(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn paths_are_read_from_code_not_comments() {
    assert_eq!(
        crate_paths("use crate::plan::Plan; let x = crate::graph::f();"),
        ["plan", "graph"]
    );
    assert_eq!(crate_paths("use crate::{error, ffi::x};"), ["error", "ffi"]);
    assert_eq!(code("/// see [`crate::graph::Graph`]"), "");
    assert_eq!(floor_of_file(Path::new("exec/eager.rs")), Some(7));
    assert_eq!(floor_of_file(Path::new("lib.rs")), None);
}
