//! A workload's parameters: the values a plan passes checked against the
//! workload's specs, with defaults filled in and typed getters (`str`,
//! `u64`, `usize`, `f64`).
//! The host's builtin and the SDK use this one module, so a plugin and a
//! builtin accept the same params and reject bad ones with the same words.

/// The resolved parameters of one workload: every param its specs name,
/// from the plan or else the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    workload: String,
    values: Vec<(String, String)>,
}

impl Params {
    /// Checks `given` against `specs` (`(name, default)` pairs of workload
    /// `workload`): an unknown or repeated name is an error, a missing one
    /// takes its default.
    pub fn resolve<'a>(
        workload: &str,
        specs: impl IntoIterator<Item = (&'a str, &'a str)>,
        given: &[(String, String)],
    ) -> Result<Params, String> {
        let mut values: Vec<(String, String)> = specs
            .into_iter()
            .map(|(name, default)| (name.to_owned(), default.to_owned()))
            .collect();
        let mut seen: Vec<&str> = Vec::with_capacity(given.len());
        for (name, value) in given {
            if seen.contains(&name.as_str()) {
                return Err(format!(
                    "param `{name}` is given twice for workload `{workload}` (give it once)"
                ));
            }
            seen.push(name);
            match values.iter_mut().find(|(known, _)| known == name) {
                Some((_, slot)) => slot.clone_from(value),
                None => {
                    let known = if values.is_empty() {
                        "it takes none".to_owned()
                    } else {
                        let names: Vec<&str> = values.iter().map(|(n, _)| n.as_str()).collect();
                        format!("known: {}", names.join(", "))
                    };
                    return Err(format!(
                        "workload `{workload}` has no param `{name}` ({known})"
                    ));
                }
            }
        }
        Ok(Params {
            workload: workload.to_owned(),
            values,
        })
    }

    /// The workload these params belong to.
    pub fn workload(&self) -> &str {
        &self.workload
    }

    /// Every param with its value, in spec order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The text of param `name`.
    pub fn str(&self, name: &str) -> Result<&str, String> {
        self.values
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.as_str())
            .ok_or_else(|| {
                format!(
                    "workload `{}` asked for param `{name}` that its specs do not declare (add it to the workload's params)",
                    self.workload
                )
            })
    }

    /// Param `name` as a whole number.
    pub fn u64(&self, name: &str) -> Result<u64, String> {
        let text = self.str(name)?;
        let digits = text.trim();
        digits.parse().map_err(|_| {
            let shown = shown(text);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                format!(
                    "param `{name}` = `{shown}` is too large (give at most {}; the workload's own range is smaller)",
                    u64::MAX
                )
            } else {
                format!(
                    "param `{name}` = `{shown}` is not a whole number (give digits only, e.g. `1000`)"
                )
            }
        })
    }

    /// Param `name` as a finite decimal number (`0.99`, `1e-3`, `7`): a
    /// zipfian theta, a ratio.
    pub fn f64(&self, name: &str) -> Result<f64, String> {
        let text = self.str(name)?;
        match text.trim().parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(value),
            _ => Err(format!(
                "param `{name}` = `{}` is not a finite number (give a decimal, e.g. `0.99`)",
                shown(text)
            )),
        }
    }

    /// Param `name` as a whole number that fits this machine's `usize`.
    pub fn usize(&self, name: &str) -> Result<usize, String> {
        let value = self.u64(name)?;
        usize::try_from(value)
            .map_err(|_| format!("param `{name}` = `{value}` is too large (give a smaller number)"))
    }
}

/// A param's text as an error shows it: long input is cut, since a plan may
/// hold any text here.
fn shown(text: &str) -> String {
    let shown: String = text.chars().take(40).collect();
    if shown.len() < text.len() {
        format!("{shown}…")
    } else {
        shown
    }
}

/// The error for a workload name a plugin does not offer.
pub fn unknown_workload<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    format!("unknown workload `{name}` (known: {})", known.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    const SPECS: [(&str, &str); 2] = [("keys", "1000"), ("value-bytes", "100")];

    #[test]
    fn missing_params_take_their_defaults() {
        let params = Params::resolve("get100", SPECS, &given(&[("keys", "7")])).unwrap();
        assert_eq!(params.u64("keys"), Ok(7));
        assert_eq!(params.usize("value-bytes"), Ok(100));
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let error = Params::resolve("get100", SPECS, &given(&[("key", "7")])).unwrap_err();
        assert_eq!(
            error,
            "workload `get100` has no param `key` (known: keys, value-bytes)"
        );
        let error = Params::resolve("grv", [], &given(&[("key", "7")])).unwrap_err();
        assert_eq!(error, "workload `grv` has no param `key` (it takes none)");
    }

    #[test]
    fn a_value_that_is_not_a_number_is_named() {
        let params = Params::resolve("get100", SPECS, &given(&[("keys", "abc")])).unwrap();
        assert_eq!(
            params.u64("keys"),
            Err(
                "param `keys` = `abc` is not a whole number (give digits only, e.g. `1000`)".into()
            )
        );
    }

    #[test]
    fn a_number_too_large_is_called_that() {
        let big = "12345678901234567890123";
        let params = Params::resolve("get100", SPECS, &given(&[("keys", big)])).unwrap();
        assert_eq!(
            params.u64("keys"),
            Err(format!(
                "param `keys` = `{big}` is too large (give at most 18446744073709551615; the workload's own range is smaller)"
            ))
        );
    }

    #[test]
    fn a_decimal_reads_as_a_float_and_anything_else_is_named() {
        let specs = [("theta", "0.99")];
        let params = Params::resolve("zipf", specs, &[]).unwrap();
        assert_eq!(params.f64("theta"), Ok(0.99));
        for (text, value) in [(" 1e-3 ", 1e-3), ("7", 7.0), ("-0.5", -0.5)] {
            let params = Params::resolve("zipf", specs, &given(&[("theta", text)])).unwrap();
            assert_eq!(params.f64("theta"), Ok(value), "{text}");
        }
        for text in ["abc", "", "inf", "NaN", "0,99"] {
            let params = Params::resolve("zipf", specs, &given(&[("theta", text)])).unwrap();
            assert_eq!(
                params.f64("theta"),
                Err(format!(
                    "param `theta` = `{text}` is not a finite number (give a decimal, e.g. `0.99`)"
                )),
                "{text}"
            );
        }
    }

    #[test]
    fn a_repeated_name_is_an_error() {
        let error =
            Params::resolve("get100", SPECS, &given(&[("keys", "1"), ("keys", "2")])).unwrap_err();
        assert!(error.contains("given twice"), "{error}");
    }
}
