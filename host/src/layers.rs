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
    ("statistic", 0),
    ("machine", 1),
    ("target", 2),
    ("plugin", 3),
    ("plan", 4),
    ("record", 5),
    ("analysis", 6),
    ("run", 7),
    ("report", 8),
    ("calibrate", 9),
    ("serve", 10),
    ("cli", 11),
    // This check itself: test-only, uses no module.
    ("layers", 12),
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

/// The longest a non-test function in host/src or store/src may be, in
/// lines from its `fn` line to its closing brace (issue 14, item 3; issue
/// 29 widened it from the orchestration stages to both crates): past this,
/// name the phases as types and small functions.
const MAX_FN_LINES: usize = 80;

/// The source trees the length check reads, relative to the workspace
/// root: this crate and the store, whose parser this one test shares
/// rather than the store keeping a copy.
const CHECKED_TREES: &[&str] = &["host/src", "store/src"];

/// A product source file of [`CHECKED_TREES`]: its tree, its path inside
/// it, and its text.
struct Source {
    tree: &'static str,
    rel: PathBuf,
    text: String,
}

impl Source {
    /// `host/src/run/worker/mod.rs`, for messages.
    fn shown(&self) -> String {
        format!("{}/{}", self.tree, self.rel.display())
    }
}

/// Every .rs file of the checked trees but the test-only ones: `tests.rs`
/// files (`#[cfg(test)] mod tests;`) and this file, test code that names
/// what it checks.
fn checked_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ sits in the workspace");
    let mut out = Vec::new();
    for tree in CHECKED_TREES {
        let src = root.join(tree);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let rel = file.strip_prefix(&src).unwrap_or(&file).to_path_buf();
            if rel.file_stem().is_some_and(|s| s == "tests") || rel == Path::new("layers.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            out.push(Source { tree, rel, text });
        }
    }
    out
}

/// `text` with comments, string and char literals blanked to spaces, so
/// braces inside them are not counted; newlines are kept so lines stay.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match literal_end(text, i) {
            Some(end) => {
                out.extend(
                    b[i..end]
                        .iter()
                        .map(|&c| if c == b'\n' { b'\n' } else { b' ' }),
                );
                i = end;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    // Blanking replaced whole bytes of multi-byte chars only inside
    // literals and comments, with ASCII spaces, so this stays UTF-8.
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the comment or literal that starts at `i` ends (exclusive), if
/// one starts there.
fn literal_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let next = b.get(i + 1).copied();
    let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    match b[i] {
        b'/' if next == Some(b'/') => Some(
            b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p),
        ),
        b'/' if next == Some(b'*') => Some(block_comment_end(b, i)),
        b'r' if !prev_ident && matches!(next, Some(b'#') | Some(b'"')) => raw_string_end(b, i),
        b'"' => Some(string_end(b, i)),
        b'\'' => char_end(text, i),
        _ => None,
    }
}

/// The end of the (nested) block comment opening at `i`.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The end of a raw string r"..." or r#"..."# at `i`: a quote followed by
/// as many hashes as it opened with; `None` when `r` opens no string.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let hashes = j - i - 1;
    let mut k = j + 1;
    while k < b.len() {
        if b[k] == b'"'
            && b[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
        {
            k += 1 + hashes;
            break;
        }
        k += 1;
    }
    Some(k.min(b.len()))
}

/// The end of the string literal opening at `i`, escapes skipped.
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() && b[i] != b'"' {
        if b[i] == b'\\' {
            i += 1;
        }
        if i < b.len() {
            i += 1;
        }
    }
    (i + 1).min(b.len())
}

/// The end of a char literal ('x', '\n', '\u{..}') at `i`; `None` for a
/// lifetime ('a), which has no closing quote right after its first char.
fn char_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let end = if b.get(i + 1) == Some(&b'\\') {
        b[i + 2..]
            .iter()
            .position(|&x| x == b'\'')
            .map(|p| i + 2 + p)
    } else {
        // One char, possibly multi-byte UTF-8.
        let len = text[i + 1..].chars().next().map_or(0, char::len_utf8);
        (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
    };
    end.map(|e| e + 1)
}

/// The index of the brace closing the one opened at `open`.
fn closing_brace(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The byte ranges of test code in `code` (as [`code_only`] gives it):
/// from a `#[cfg(test)]` or `#[test]` attribute to the end of the item
/// after it.
fn test_regions(code: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut skip: Vec<(usize, usize)> = Vec::new();
    for attr in ["#[cfg(test)]", "#[test]"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(attr) {
            let at = from + p;
            from = at + attr.len();
            let rest = &code[from..];
            let item_end = match (rest.find('{'), rest.find(';')) {
                (Some(o), Some(s)) if s < o => from + s,
                (Some(o), _) => closing_brace(b, from + o).unwrap_or(b.len()),
                (None, Some(s)) => from + s,
                (None, None) => b.len(),
            };
            skip.push((at, item_end));
        }
    }
    skip
}

/// Every function with a body in `text` outside test code (`#[cfg(test)]`
/// items, `#[test]` functions): its name and its length in lines.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let code = code_only(text);
    let b = code.as_bytes();
    let line_at = |i: usize| b[..i].iter().filter(|&&c| c == b'\n').count();
    let skip = test_regions(&code);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        if skip.iter().any(|&(s, e)| s <= at && at <= e) {
            continue;
        }
        let name = ident(&code[from..]);
        if name.is_empty() {
            continue; // a `fn(..)` pointer type
        }
        let rest = &code[from..];
        let Some(open) = rest.find('{') else { continue };
        if rest.find(';').is_some_and(|s| s < open) {
            continue; // a declaration without a body
        }
        let Some(close) = closing_brace(b, from + open) else {
            continue;
        };
        out.push((name.to_owned(), line_at(close) - line_at(at) + 1));
    }
    out
}

/// `run::worker` for host/src/run/worker.rs, `run::slurm` for .../slurm/mod.rs.
fn module_path(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(str::to_owned))
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

#[test]
fn layers_no_long_functions() {
    let mut problems = Vec::new();
    for source in checked_sources() {
        let module = module_path(Path::new(""), &source.rel);
        for (name, lines) in function_lengths(&source.text) {
            if lines > MAX_FN_LINES {
                problems.push(format!(
                    "`{module}::{name}` is {lines} lines ({}); the limit is {MAX_FN_LINES}: name its phases as types or small functions",
                    source.shown()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "functions over {MAX_FN_LINES} lines in {CHECKED_TREES:?}:\n{}",
        problems.join("\n")
    );
}

/// Words that are types in the code (issue 29, point 4): each may stand as
/// a string literal at most once outside tests, in its one definition (the
/// plugin reference, the embedded target's kind, the store blob keys; the
/// resumed attempt's reason is a longer sentence, `record::result`'s
/// RESUMED); everywhere else the typed name is used.
const ONE_DEFINITION_WORDS: &[&str] = &[
    "\"builtin\"",
    "\"embedded\"",
    "\"resumed\"",
    "\"environment\"",
    "\"placement\"",
];

/// The string literals in `text` outside comments and test code, with
/// their byte offsets, quotes included.
fn string_literals(text: &str) -> Vec<(usize, &str)> {
    let skip = test_regions(&code_only(text));
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match literal_end(text, i) {
            Some(end) => {
                let is_string = b[i] == b'"' || b[i] == b'r';
                if is_string && !skip.iter().any(|&(s, e)| s <= i && i <= e) {
                    out.push((i, &text[i..end]));
                }
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

#[test]
fn layers_typed_words_are_literals_at_most_once() {
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for source in checked_sources() {
        for (at, literal) in string_literals(&source.text) {
            if let Some(word) = ONE_DEFINITION_WORDS.iter().find(|w| **w == literal) {
                let line = source.text[..at].lines().count().max(1);
                found
                    .entry(word)
                    .or_default()
                    .push(format!("{}:{line}", source.shown()));
            }
        }
    }
    let problems: Vec<String> = ONE_DEFINITION_WORDS
        .iter()
        .filter_map(|w| {
            let places = found.get(w).map_or(&[][..], Vec::as_slice);
            (places.len() > 1).then(|| {
                format!(
                    "{w} stands as a literal in {} places outside tests ({}); keep the one definition and use its typed name elsewhere",
                    places.len(),
                    places.join(", ")
                )
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn layers_string_literals_skip_comments_and_tests() {
    let text = "const A: &str = \"builtin\"; // \"builtin\"\n\
                /// `\"builtin\"`\n\
                let r = r#\"raw\"#;\n\
                #[cfg(test)]\nmod tests {\n    const B: &str = \"builtin\";\n}\n";
    let got: Vec<&str> = string_literals(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(got, vec!["\"builtin\"", "r#\"raw\"#"]);
}

/// The longest a source file of host/src or store/src may be, in lines
/// (issue 29): past this, split it by what its parts own. Test-only
/// `tests.rs` files are exempt.
const MAX_FILE_LINES: usize = 900;

#[test]
fn layers_no_long_files() {
    let problems: Vec<String> = checked_sources()
        .iter()
        .filter(|source| source.text.lines().count() > MAX_FILE_LINES)
        .map(|source| {
            format!(
                "{} is {} lines; the limit is {MAX_FILE_LINES}: split it by what its parts own",
                source.shown(),
                source.text.lines().count()
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn layers_function_lengths_skips_tests_literals_and_comments() {
    let text = "fn short() {\n    let s = \"}}}\"; // }\n    let c = '}';\n}\n\
                fn f<'a>(x: &'a str) -> fn(u8) -> u8 {\n    let r = r#\"{\"#;\n    g\n}\n\
                trait T { fn decl(&self); }\n\
                #[cfg(test)]\nmod tests {\n    fn helper() {\n    }\n}\n\
                #[test]\nfn case() {\n}\n";
    let got = function_lengths(text);
    let want: Vec<(String, usize)> = vec![("short".into(), 4), ("f".into(), 4)];
    assert_eq!(got, want);
}
