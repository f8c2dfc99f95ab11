//! The layer rule of the crate (docs/architecture.md, "Layers"): every
//! top-level module has a rank, and a module uses only itself and modules of
//! lower rank, so data flows one way and no two stages import each other.
//! The test reads the sources, so a new upward `crate::` path fails it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of host/src and its rank. A module may use
/// `crate::<m>` only for itself and modules of strictly lower rank.
const RANKS: &[(&str, u32)] = &[
    ("limits", 0),
    ("stats", 0),
    ("machine", 1),
    ("target", 2),
    ("plugin", 3),
    ("plan", 4),
    ("run", 5),
    ("report", 6),
    ("calibrate", 7),
    ("serve", 8),
    ("cli", 9),
    // This check itself: test-only, uses no module.
    ("layers", 10),
];

/// Every .rs file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `src` belongs to (`None` for the crate
/// roots lib.rs and main.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?;
    let name = name.strip_suffix(".rs").unwrap_or(name);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading identifier of `s` (after whitespace).
fn ident(s: &str) -> &str {
    let s = s.trim_start();
    &s[..s.find(|c| !is_ident(c)).unwrap_or(s.len())]
}

/// The top-level modules `text` names through `crate::` (or `$crate::`),
/// with the 1-based line of each, comments left out: `crate::a::b` gives
/// `a`; `crate::{a, b::c}` gives `a` and `b`.
fn references(text: &str) -> Vec<(usize, String)> {
    // Comments are dropped line by line so doc links are not counted as
    // imports; the offsets of each line are kept to report line numbers.
    let mut code = String::new();
    let mut line_of = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.find("//").map_or(line, |i| &line[..i]);
        code.push_str(line);
        code.push('\n');
        line_of.extend(std::iter::repeat_n(n + 1, line.len() + 1));
    }
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::") {
        let at = from + i;
        from = at + "crate::".len();
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // A `use crate::{...}` group: the first name of each item at
            // depth one.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    _ if item_start && depth == 0 && is_ident(c) => {
                        item_start = false;
                        out.push((line_of[from + 1 + j], ident(&group[j..]).to_owned()));
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.push((line_of[at], name.to_owned()));
            }
        }
    }
    out
}

#[test]
fn layers_every_crate_path_goes_to_a_lower_rank() {
    let ranks: BTreeMap<&str, u32> = RANKS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);

    let mut problems = Vec::new();
    let modules: std::collections::BTreeSet<String> =
        files.iter().filter_map(|f| module_of(&src, f)).collect();
    for m in &modules {
        if !ranks.contains_key(m.as_str()) {
            problems.push(format!(
                "host/src has a top-level module `{m}` without a rank: add it to RANKS in host/src/layers.rs and to the layer table in docs/architecture.md"
            ));
        }
    }
    for (m, _) in RANKS {
        if !modules.contains(*m) {
            problems.push(format!(
                "RANKS in host/src/layers.rs names `{m}`, which is not a module under host/src: remove it (and from docs/architecture.md)"
            ));
        }
    }

    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(&rank) = ranks.get(module.as_str()) else {
            continue;
        };
        // This file's strings and examples name modules without using them.
        if module == "layers" {
            continue;
        }
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let shown = file.strip_prefix(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or(&src),
        );
        let shown = shown.map_or_else(|_| file.display().to_string(), |p| p.display().to_string());
        for (line, target) in references(&text) {
            if target == module {
                continue;
            }
            match ranks.get(target.as_str()) {
                Some(&to) if to < rank => {}
                Some(&to) => problems.push(format!(
                    "{shown}:{line}: `{module}` (rank {rank}) uses `crate::{target}` (rank {to}), which is not below it; move the shared item down into `{module}` or a module of lower rank (or into `machine`), then import it from there"
                )),
                None => problems.push(format!(
                    "{shown}:{line}: `{module}` uses `crate::{target}`, which has no rank in host/src/layers.rs"
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the layer rule (docs/architecture.md, \"Layers\") is broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn layers_references_reads_paths_groups_and_skips_comments() {
    let text = "use crate::stats::{self, Method};\n\
                use crate::{plan, run::worker::{self, RunSpec}};\n\
                /// see [`crate::serve`]\n\
                let x = crate::machine::cpu::affinity(); // crate::cli\n\
                let y = $crate::limits::X;\n\
                let z = blocklab_crate::nothing;\n";
    let got = references(text);
    let want: Vec<(usize, String)> = [
        (1, "stats"),
        (2, "plan"),
        (2, "run"),
        (4, "machine"),
        (5, "limits"),
    ]
    .into_iter()
    .map(|(l, m)| (l, m.to_owned()))
    .collect();
    assert_eq!(got, want);
}
