//! Reading a plan: the TOML text, `--set path=value` overrides applied to
//! its table first, and the refusal of non-finite numbers.

use crate::limits;
use anyhow::{Context, bail};
use std::path::Path;

use super::*;

impl PlanSpec {
    /// Reads (at most [`limits::PLAN_BYTES`]) and parses the plan at `path`,
    /// applying `overrides` (`path=value` each).
    pub fn load(path: &Path, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        let bytes = limits::read_plan(path)?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("plan `{}` is not UTF-8 text", path.display()))?;
        Self::parse(text, overrides).with_context(|| format!("in plan `{}`", path.display()))
    }

    /// Parses plan text, applying `overrides` first. Every error is clipped
    /// ([`limits::clipped`]): parsers quote the input they stumble on.
    pub fn parse(text: &str, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        Self::parse_unclipped(text, overrides).map_err(limits::clipped)
    }

    fn parse_unclipped(text: &str, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        if text.len() as u64 > limits::PLAN_BYTES {
            bail!(
                "the plan is {} bytes, more than the cap of {} bytes on plans (plans are a few KiB)",
                text.len(),
                limits::PLAN_BYTES
            );
        }
        // The parser quotes the offending line: cut it to the echo cap.
        let toml_error = |e: toml::de::Error| {
            anyhow::anyhow!("{}", limits::clip_lines(e.to_string().trim_end()))
        };
        let mut table: toml::Table = toml::from_str(text).map_err(toml_error)?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        refuse_non_finite(&table, "")?;
        let spec: PlanSpec = if overrides.is_empty() {
            // Parsing the text directly keeps line numbers in errors.
            toml::from_str(text).map_err(toml_error)?
        } else {
            table.try_into().map_err(|e: toml::de::Error| {
                anyhow::anyhow!(
                    "after --set: {}",
                    limits::clip_lines(e.to_string().trim_end())
                )
            })?
        };
        let mut spec = spec;
        spec.expand_rates()?;
        spec.expand_counted();
        spec.validate()?;
        Ok(spec)
    }
}

/// Refuses `nan` and `inf` anywhere in the plan, naming the key: no plan
/// field means them, and JSON (the store) cannot hold them.
fn refuse_non_finite(table: &toml::Table, prefix: &str) -> anyhow::Result<()> {
    fn walk(value: &toml::Value, path: &str) -> anyhow::Result<()> {
        match value {
            toml::Value::Float(x) if !x.is_finite() => bail!(
                "`{path} = {}` is not a finite number; give a number (`nan` and `inf` are not accepted)",
                limits::show(*x)
            ),
            toml::Value::Table(t) => refuse_non_finite(t, path),
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| walk(v, &format!("{path}.{i}"))),
            _ => Ok(()),
        }
    }
    for (key, value) in table {
        let path = if prefix.is_empty() {
            limits::clip(key).into_owned()
        } else {
            format!("{prefix}.{}", limits::clip(key))
        };
        walk(value, &path)?;
    }
    Ok(())
}

/// The deepest `--set` path: plan keys nest a few levels (`arms.target.kind`).
const MAX_SET_DEPTH: usize = 8;

/// Sets one dotted path (`measure.measured=500`, `arms.1.plugin=builtin`) in
/// the plan's table; the value is read as TOML, or as a string if it is not.
fn apply_override(table: &mut toml::Table, text: &str) -> anyhow::Result<()> {
    if text.len() as u64 > limits::PLAN_BYTES {
        bail!(
            "`--set {}` is {} bytes, more than the cap of {} bytes on plans",
            limits::clip(text),
            text.len(),
            limits::PLAN_BYTES
        );
    }
    let shown = limits::clip(text);
    let (path, raw) = text.split_once('=').with_context(|| {
        format!("`--set {shown}` is not PATH=VALUE, e.g. `--set measure.measured=500`")
    })?;
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.len() > MAX_SET_DEPTH {
        bail!(
            "`--set {shown}`: the path has {} parts; plan keys are at most {MAX_SET_DEPTH} deep",
            keys.len()
        );
    }
    let (last, parents) = keys.split_last().context("`--set` needs a path")?;
    let mut node = table;
    for key in parents {
        let key = limits::clip(key);
        let key = key.as_ref();
        node = match node
            .entry(key)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => {
                bail!(
                    "`--set {shown}`: `{key}` is a list of {} entries; lists are set whole, e.g. `--set 'arms=[...]'`",
                    items.len()
                )
            }
            _ => bail!("`--set {shown}`: `{key}` is a value, not a table"),
        };
    }
    node.insert((*last).to_owned(), value);
    Ok(())
}
