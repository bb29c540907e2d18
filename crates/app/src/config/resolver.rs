//! One precedence rule for every key of the configuration, with each value's origin.
//!
//! Lowest first: built-in defaults, the adapters the profile picks, the file's top level, the
//! file's `[profiles.NAME]` table, the `ZHIKU_*` variables. (Command-line flags are applied by
//! the command that takes them, last.) A section (`[qdrant]`, `[serve]`) is merged key by key;
//! an array is replaced whole. The merged section is then deserialised into the type its crate
//! owns, so each crate keeps its keys, defaults and validation.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::de::DeserializeOwned;
use toml::{Table, Value};

/// A variable that overrides one key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnvKey {
    /// The key inside its section.
    pub key: &'static str,
    /// The variable, e.g. `ZHIKU_QDRANT_URL`.
    pub var: &'static str,
    /// A comma-separated list rather than one value.
    pub list: bool,
}

/// A variable for `key`, named `var`.
pub(crate) const fn var(key: &'static str, var: &'static str) -> EnvKey {
    EnvKey {
        key,
        var,
        list: false,
    }
}

/// One source of values, and how its values are shown in `zhiku status`.
#[derive(Debug, Clone)]
struct Layer {
    origin: String,
    /// Top-level keys; sections are tables under their name.
    table: Table,
}

/// The layers of one run, lowest first.
#[derive(Debug, Default)]
pub(crate) struct Resolver {
    layers: Vec<Layer>,
    /// Where each resolved key came from (`key` or `section.key`), in resolution order.
    pub(crate) origins: Vec<(String, String)>,
}

impl Resolver {
    /// Adds a layer above the ones already added.
    pub(crate) fn push(&mut self, origin: impl Into<String>, table: Table) {
        self.layers.push(Layer {
            origin: origin.into(),
            table,
        });
    }

    /// Adds the layer of the `ZHIKU_*` variables of `section` (`None`: the top level), each
    /// value typed as `T` expects it: taken as a string when `T` accepts one, else parsed as a
    /// TOML value (a number, a boolean).
    pub(crate) fn push_env<T: DeserializeOwned>(
        &mut self,
        section: Option<&str>,
        keys: &[EnvKey],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<()> {
        for k in keys {
            let Some(text) = env(k.var).filter(|v| !v.is_empty()) else {
                continue;
            };
            let value = if k.list {
                Value::Array(
                    text.split(',')
                        .map(|s| s.trim())
                        .filter(|s| !s.is_empty())
                        .map(|s| Value::String(s.to_string()))
                        .collect(),
                )
            } else {
                typed::<T>(k.key, &text)
                    .ok_or_else(|| anyhow::anyhow!("{}={text:?} is not a valid value", k.var))?
            };
            let mut table = Table::new();
            table.insert(k.key.to_string(), value);
            let table = match section {
                Some(s) => Table::from_iter([(s.to_string(), Value::Table(table))]),
                None => table,
            };
            self.push(k.var, table);
        }
        Ok(())
    }

    /// The keys of `section` (`None`: the top level, without sections), merged over every
    /// layer, as `T`; records the origin of each of `known` (and of any other key set).
    pub(crate) fn resolve<T: DeserializeOwned>(
        &mut self,
        section: Option<&str>,
        known: &[&str],
    ) -> Result<T> {
        let mut merged = Table::new();
        let mut origin: BTreeMap<String, String> = BTreeMap::new();
        for layer in &self.layers {
            let entries: Vec<(&String, &Value)> = match section {
                Some(s) => match layer.table.get(s) {
                    Some(Value::Table(t)) => t.iter().collect(),
                    Some(_) => bail!("{}: [{s}] must be a table", layer.origin),
                    None => Vec::new(),
                },
                None => layer.table.iter().filter(|(_, v)| !v.is_table()).collect(),
            };
            for (k, v) in entries {
                merged.insert(k.clone(), v.clone());
                origin.insert(k.clone(), layer.origin.clone());
            }
        }
        let name = |k: &str| match section {
            Some(s) => format!("{s}.{k}"),
            None => k.to_string(),
        };
        for k in known {
            let from = origin
                .remove(*k)
                .unwrap_or_else(|| "built-in default".to_string());
            self.origins.push((name(k), from));
        }
        for (k, from) in origin {
            self.origins.push((name(&k), from));
        }
        Ok(Value::Table(merged).try_into()?)
    }
}

/// `text` as the value of `key` that `T` accepts: the string itself, or failing that, the
/// string read as a TOML value.
fn typed<T: DeserializeOwned>(key: &str, text: &str) -> Option<Value> {
    let accepts = |v: &Value| {
        Value::Table(Table::from_iter([(key.to_string(), v.clone())]))
            .try_into::<T>()
            .is_ok()
    };
    let as_string = Value::String(text.to_string());
    if accepts(&as_string) {
        return Some(as_string);
    }
    let parsed: Table = toml::from_str(&format!("v = {}", text.trim())).ok()?;
    let value = parsed.get("v")?.clone();
    accepts(&value).then_some(value)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Keys {
        name: Option<String>,
        count: Option<u32>,
        tags: Option<Vec<String>>,
    }

    #[test]
    fn higher_layers_win_key_by_key_and_say_where_each_value_came_from() {
        let mut r = Resolver::default();
        r.push(
            "defaults",
            toml::from_str("name = \"a\"\ncount = 1").unwrap(),
        );
        r.push(
            "file",
            toml::from_str("count = 2\n[sec]\nname = \"s\"").unwrap(),
        );
        let env = |k: &str| match k {
            "X_COUNT" => Some("3".to_string()),
            "X_TAGS" => Some("p, q,".to_string()),
            _ => None,
        };
        r.push_env::<Keys>(
            None,
            &[
                var("count", "X_COUNT"),
                EnvKey {
                    key: "tags",
                    var: "X_TAGS",
                    list: true,
                },
            ],
            &env,
        )
        .unwrap();
        let top: Keys = r.resolve(None, &["name", "count", "tags"]).unwrap();
        assert_eq!(
            top,
            Keys {
                name: Some("a".into()),
                count: Some(3),
                tags: Some(vec!["p".into(), "q".into()])
            }
        );
        let sec: Keys = r.resolve(Some("sec"), &["name"]).unwrap();
        assert_eq!(sec.name.as_deref(), Some("s"));
        let from = |k: &str| {
            r.origins
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, o)| o.clone())
        };
        assert_eq!(from("name").as_deref(), Some("defaults"));
        assert_eq!(from("count").as_deref(), Some("X_COUNT"));
        assert_eq!(from("sec.name").as_deref(), Some("file"));
        let bad = |k: &str| (k == "X_COUNT").then(|| "many".to_string());
        let err = Resolver::default()
            .push_env::<Keys>(None, &[var("count", "X_COUNT")], &bad)
            .unwrap_err();
        assert!(err.to_string().contains("X_COUNT=\"many\""), "{err}");
    }
}
