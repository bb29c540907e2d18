//! What sitemaps and WebDAV replies share of XML: an element's text across the events it comes
//! in (text, CDATA, character and predefined entity references).

use quick_xml::events::Event;

/// The text `event` adds to the content of the element it is in, if any.
pub(crate) fn text_of(event: &Event<'_>) -> Option<String> {
    match event {
        Event::Text(t) => t.decode().ok().map(|c| c.into_owned()),
        Event::CData(c) => Some(String::from_utf8_lossy(c).into_owned()),
        Event::GeneralRef(r) => match r.resolve_char_ref() {
            Ok(Some(ch)) => Some(ch.to_string()),
            _ => r
                .decode()
                .ok()
                .and_then(|name| quick_xml::escape::resolve_predefined_entity(&name))
                .map(str::to_string),
        },
        _ => None,
    }
}
