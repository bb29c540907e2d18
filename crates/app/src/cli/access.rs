//! `zhiku access`: who may read a document and why (which rule gave its readers), or what one
//! person may read. Read from the catalog as last indexed; a document whose recorded readers
//! the current rules (`access_rules`, `scope_readers`) would change is marked, with what they
//! would give (the next `zhiku index` applies it).
//!
//! Document IDs and reader names come from files and writers, so the text output escapes them
//! ([`escape`]).

use anyhow::{Result, bail};
use serde_json::json;
use zhiku_domain::{DocAbout, DocId, Principal, Scope};

use super::args::Output;
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::done_with;
use super::render::escape;

/// What `zhiku access` is asked about.
pub(crate) struct Question<'a> {
    /// A document ID.
    pub(crate) doc: Option<&'a str>,
    /// A person's user name.
    pub(crate) user: Option<&'a str>,
    /// The person's groups.
    pub(crate) groups: &'a [String],
    /// The scopes the person may read (empty: every scope).
    pub(crate) scopes: &'a [String],
}

/// Prints the readers of one document, or the documents one person may read.
pub(crate) fn run(ctx: &Ctx, q: &Question<'_>, output: Output) -> Result<Exit> {
    let kb = ctx.global.kb.clone();
    let store = ctx.open_read_only(kb.as_deref())?;
    let policy = &store.settings.access;
    let line = |id: &DocId, about: &DocAbout| {
        let access = &about.access;
        let now = (policy.is_stale(about)).then(|| policy.readers_for(&about.source, &about.scope));
        match output {
            Output::Json => println!(
                "{}",
                json!({
                    "id": id,
                    "scope": about.scope,
                    "readers": access.terms(),
                    "rule": access.rule(),
                    "why": access.rule().describe(),
                    "rules_now_give": now.as_ref().map(|a| json!({"readers": a.terms(), "rule": a.rule()})),
                })
            ),
            Output::Text => {
                let readers = access.terms().join(" ");
                let mut text = format!(
                    "{}\tscope {}\treaders {}\t({})",
                    escape(id.as_str()),
                    escape(about.scope.as_str()),
                    escape(if readers.is_empty() {
                        "(no person)"
                    } else {
                        &readers
                    }),
                    escape(&access.rule().describe()),
                );
                if let Some(now) = now {
                    text.push_str(&format!(
                        "\tthe rules now give: {} ({}); run zhiku index",
                        escape(&now.terms().join(" ")),
                        escape(&now.rule().describe())
                    ));
                }
                println!("{text}");
            }
        }
    };
    let docs = &store.recorded.catalog.docs;
    match (q.doc, q.user) {
        (Some(doc), None) => {
            let id = DocId::new(doc)?;
            let Some(about) = docs.get(&id).and_then(|e| e.about.as_ref()) else {
                done_with(store);
                bail!("no indexed document {doc:?}");
            };
            line(&id, about);
        }
        (None, Some(user)) => {
            let person = Principal::new(user, q.groups)?;
            let scopes = q
                .scopes
                .iter()
                .map(Scope::new)
                .collect::<Result<Vec<_>, _>>()?;
            for (id, entry) in docs {
                let Some(about) = entry.about.as_ref() else {
                    continue;
                };
                let in_scope = scopes.is_empty() || scopes.contains(&about.scope);
                if in_scope && about.access.admits(&person) {
                    line(id, about);
                }
            }
        }
        _ => bail!("give a document ID, or --user NAME (with --group and --scope)"),
    }
    done_with(store);
    Ok(Exit::Success)
}
