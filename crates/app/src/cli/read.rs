//! `zhiku read DOC[#SECTION]`: a document, or one section of it with its subsections, in
//! reading order, as the local user may see it (the configuration's trusted scopes).

use anyhow::{Result, anyhow};
use zhiku_app::wiring;

use super::args::{Output, Refresh};
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::open_for_query;
use super::render::{escape, escape_lines};

/// `DOC#SECTION` split at its last `#` when what follows has the shape of a section ID (a
/// document ID may hold `#` itself).
fn target(arg: &str) -> (&str, Option<&str>) {
    match arg.rsplit_once('#') {
        Some((doc, section))
            if !doc.is_empty() && zhiku_domain::SectionId::parse(section).is_ok() =>
        {
            (doc, Some(section))
        }
        _ => (arg, None),
    }
}

/// Refreshes the store (unless told not to), reads, prints the text (or the JSON view).
pub(crate) fn run(ctx: &Ctx, what: &str, output: Output, refresh: Refresh) -> Result<Exit> {
    let (doc, section) = target(what);
    let (store, skipped) = open_for_query(ctx, refresh)?;
    let (kb, _) = wiring::open_service(store, None)?;
    let read = kb
        .read_document(&kb.local_caller(), doc, section)
        .map_err(|e| anyhow!(e.public_message()))?;
    if output == Output::Json {
        println!("{}", serde_json::to_string(&read)?);
    } else {
        let place = if read.heading_path.is_empty() {
            "the whole document".to_string()
        } else {
            read.heading_path.join(" › ")
        };
        // A document's ID, title, headings and text are its author's: control characters
        // (escape sequences, bidi overrides) are shown, never sent to the terminal.
        ctx.note(&format!(
            "{} — {} · {} · revision {} · {} characters",
            escape(read.doc_id.as_str()),
            escape(read.title.as_str()),
            escape(&place),
            read.revision,
            read.chars
        ));
        println!("{}", escape_lines(read.text.trim_end()));
        if read.outline.len() > 1 {
            ctx.note("sections:");
            for s in &read.outline {
                ctx.note(&format!(
                    "  {}#{}  {}  ({} characters)",
                    escape(read.doc_id.as_str()),
                    s.section,
                    escape(&s.heading_path.join(" › ")),
                    s.chars
                ));
            }
        }
    }
    Ok(Exit::unless_skipped(skipped))
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn a_section_follows_the_last_hash_only_when_it_is_a_section_id() {
        assert_eq!(
            target("guide.md#0123456789abcdef"),
            ("guide.md", Some("0123456789abcdef"))
        );
        assert_eq!(target("c#sharp.md"), ("c#sharp.md", None));
        assert_eq!(target("guide.md"), ("guide.md", None));
        assert_eq!(target("#0123456789abcdef"), ("#0123456789abcdef", None));
    }
}
