//! Round trip of the stored time types (`contracts::time`): whatever parses must display and
//! parse back to the same value, and whatever a constructor builds must too (issue 35, High 1:
//! a far-future expiry was stored with a five-digit year that `Timestamp::parse` refused, and
//! every later read of the store failed).
//!
//! The input is read three ways: as text for `Timestamp::parse` and `TimeToLive::parse`, and
//! its first 16 bytes as two integers for `Timestamp::from_unix`, `try_from_unix`,
//! `TimeToLive::from_secs` and `Timestamp::plus` (the expiry `indexed_at + ttl` the indexer
//! stores), and through `Retention::expiry` for `expires_at`/`ttl` written as metadata.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zhiku_domain::rules::retention::Retention;
use zhiku_domain::{Metadata, TimeToLive, Timestamp};

/// `t` displays, parses back to itself, and survives serde (the catalog and chunk records are
/// JSON); it lies within `MIN ..= MAX`.
fn check_timestamp(t: Timestamp, how: &str) {
    let text = t.to_string();
    assert_eq!(
        Timestamp::parse(&text),
        Ok(t),
        "{how}: {t:?} displays as {text:?}, which does not parse back to it"
    );
    let json = serde_json::to_string(&t).unwrap();
    let back: Result<Timestamp, _> = serde_json::from_str(&json);
    assert_eq!(
        back.ok(),
        Some(t),
        "{how}: {json} does not deserialise back"
    );
    assert!(
        Timestamp::MIN <= t && t <= Timestamp::MAX,
        "{how}: {t:?} out of range"
    );
}

fn check_ttl(ttl: TimeToLive, how: &str) {
    let text = ttl.to_string();
    assert_eq!(
        TimeToLive::parse(&text),
        Ok(ttl),
        "{how}: {ttl:?} displays as {text:?}, which does not parse back to it"
    );
    assert!(
        (1..=TimeToLive::MAX_SECS).contains(&ttl.secs()),
        "{how}: {ttl:?} out of range"
    );
}

fuzz_target!(|data: &[u8]| {
    let mut words = [0u8; 16];
    let n = data.len().min(16);
    words[..n].copy_from_slice(&data[..n]);
    let a = i64::from_le_bytes(words[..8].try_into().unwrap());
    let b = u64::from_le_bytes(words[8..].try_into().unwrap());

    check_timestamp(Timestamp::from_unix(a), "from_unix");
    if let Ok(t) = Timestamp::try_from_unix(a) {
        check_timestamp(t, "try_from_unix");
    }
    if let Ok(ttl) = TimeToLive::from_secs(b) {
        check_ttl(ttl, "from_secs");
        check_timestamp(Timestamp::from_unix(a).plus(ttl), "from_unix + ttl");
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed_t = Timestamp::parse(text);
    if let Ok(t) = parsed_t {
        check_timestamp(t, "parse");
    }
    let parsed_ttl = TimeToLive::parse(text);
    if let Ok(ttl) = parsed_ttl {
        check_ttl(ttl, "parse");
        check_timestamp(Timestamp::MAX.plus(ttl), "MAX + parsed ttl");
    }

    // The same text as metadata `expires_at` and `ttl`, resolved as the indexer does.
    let mut metadata = Metadata::new();
    metadata.insert("expires_at", text.into()).unwrap();
    metadata.insert("ttl", text.into()).unwrap();
    if let Ok(retention) = Retention::of_metadata("doc", &metadata) {
        for indexed_at in [Timestamp::from_unix(a), Timestamp::MAX] {
            if let Some(expiry) = retention.expiry(Some(indexed_at)) {
                check_timestamp(expiry, "retention expiry");
            }
        }
    }
});
