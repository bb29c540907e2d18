//! Wall-clock instants and time-to-live spans, as documents write them.
//!
//! The domain reads no clock: an instant comes from the caller (the `WallClock` port, or a
//! value in a request). [`Timestamp`] is whole seconds since the Unix epoch, UTC, written and
//! read as RFC 3339 (`2026-12-03T14:10:40Z`; an offset such as `+08:00` and fractional seconds
//! are accepted on input, fractions truncated; a bare date `2026-12-03` means its midnight UTC).
//! [`TimeToLive`] is a span written as numbers with units: `7d`, `12h`, `1d12h`, `30m`, `90s`,
//! `2w`.
//!
//! # Contract: every value reads back
//!
//! Both types are stored (in the catalog, in every chunk record, in the audit log) and read
//! back on every start, so a value that could be built but not read back would make the store
//! unreadable. Hence:
//!
//! - a [`Timestamp`] MUST lie within [`Timestamp::MIN`] ..= [`Timestamp::MAX`]
//!   (`0000-01-01T00:00:00Z` ..= `9999-12-31T23:59:59Z`), the instants RFC 3339 writes with its
//!   four-digit year: every constructor keeps it ([`Timestamp::parse`] refuses an instant whose
//!   offset moves it out, [`Timestamp::from_unix`] clamps, [`Timestamp::plus`] saturates), so
//!   `Timestamp::parse(&t.to_string()) == Ok(t)` for every `t`;
//! - a [`TimeToLive`] MUST lie within 1 second ..= [`TimeToLive::MAX_SECS`] (100 years), and
//!   `TimeToLive::parse(&ttl.to_string()) == Ok(ttl)`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::values::InvalidValue;

/// An instant: whole seconds since 1970-01-01T00:00:00Z, within [`Timestamp::MIN`] ..=
/// [`Timestamp::MAX`] (see the module's contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

impl Timestamp {
    /// The earliest instant a timestamp holds: `0000-01-01T00:00:00Z`.
    pub const MIN: Self = Self(-62_167_219_200);

    /// The latest instant a timestamp holds: `9999-12-31T23:59:59Z` (RFC 3339 writes four-digit
    /// years; a later instant could be stored but never read back).
    pub const MAX: Self = Self(253_402_300_799);

    /// The instant `secs` seconds after the epoch, clamped into [`Self::MIN`] ..= [`Self::MAX`]
    /// (a clock or a number outside those years reads as the nearest bound; see
    /// [`Self::try_from_unix`] to refuse instead).
    pub fn from_unix(secs: i64) -> Self {
        Self(secs.clamp(Self::MIN.0, Self::MAX.0))
    }

    /// The instant `secs` seconds after the epoch, refused outside [`Self::MIN`] ..=
    /// [`Self::MAX`].
    pub fn try_from_unix(secs: i64) -> Result<Self, InvalidValue> {
        if (Self::MIN.0..=Self::MAX.0).contains(&secs) {
            Ok(Self(secs))
        } else {
            Err(InvalidValue::new(
                "timestamp",
                &secs.to_string(),
                OUT_OF_RANGE,
            ))
        }
    }

    /// Seconds since the epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// This instant plus `ttl`, saturating at [`Self::MAX`].
    pub fn plus(self, ttl: TimeToLive) -> Self {
        let secs = i64::try_from(ttl.secs()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(secs).min(Self::MAX.0))
    }

    /// Reads an RFC 3339 date-time (or a bare date, its midnight UTC). An instant outside
    /// [`Self::MIN`] ..= [`Self::MAX`] once its offset is applied is refused
    /// (`9999-12-31T23:59:59-23:59` is in the year 10000).
    pub fn parse(text: &str) -> Result<Self, InvalidValue> {
        let bad = |why: &str| InvalidValue::new("timestamp", text, why);
        let t = text.trim();
        let num = |s: &str, what: &str| -> Result<i64, InvalidValue> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!(
                    "is not RFC 3339 (YYYY-MM-DDTHH:MM:SSZ): bad {what}"
                )));
            }
            s.parse().map_err(|_| bad(&format!("bad {what}")))
        };
        let (date, time) = match t.find(['T', 't', ' ']) {
            Some(i) => (&t[..i], Some(&t[i + 1..])),
            None => (t, None),
        };
        let parts: Vec<&str> = date.split('-').collect();
        if parts.len() != 3 || parts[0].len() != 4 || parts[1].len() != 2 || parts[2].len() != 2 {
            return Err(bad("is not RFC 3339 (YYYY-MM-DDTHH:MM:SSZ)"));
        }
        let (y, m, d) = (
            num(parts[0], "year")?,
            num(parts[1], "month")?,
            num(parts[2], "day")?,
        );
        if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
            return Err(bad("names no calendar day"));
        }
        let mut secs = days_from_civil(y, m, d) * 86_400;
        if let Some(time) = time {
            let (clock, offset) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
                (clock, 0)
            } else if let Some(i) = time.rfind(['+', '-']) {
                let (clock, off) = time.split_at(i);
                let sign = if off.starts_with('-') { -1 } else { 1 };
                let hm: Vec<&str> = off[1..].split(':').collect();
                if hm.len() != 2 || hm[0].len() != 2 || hm[1].len() != 2 {
                    return Err(bad("has a bad offset (write Z or ±HH:MM)"));
                }
                let (oh, om) = (num(hm[0], "offset")?, num(hm[1], "offset")?);
                if oh > 23 || om > 59 {
                    return Err(bad("has a bad offset (write Z or ±HH:MM)"));
                }
                (clock, sign * (oh * 3600 + om * 60))
            } else {
                return Err(bad("has no time zone (end it with Z or ±HH:MM)"));
            };
            let (clock, fraction) = match clock.split_once('.') {
                Some((clock, fraction)) => (clock, Some(fraction)),
                None => (clock, None),
            };
            if fraction.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
                return Err(bad(
                    "is not RFC 3339 (YYYY-MM-DDTHH:MM:SSZ): bad fraction of a second",
                ));
            }
            let hms: Vec<&str> = clock.split(':').collect();
            if hms.len() != 3 || hms.iter().any(|p| p.len() != 2) {
                return Err(bad("is not RFC 3339 (YYYY-MM-DDTHH:MM:SSZ): bad time"));
            }
            let (h, mi, s) = (
                num(hms[0], "hour")?,
                num(hms[1], "minute")?,
                num(hms[2], "second")?,
            );
            if h > 23 || mi > 59 || s > 60 {
                return Err(bad("names no time of day"));
            }
            secs += h * 3600 + mi * 60 + s.min(59) - offset;
        }
        Self::try_from_unix(secs).map_err(|_| bad(OUT_OF_RANGE))
    }
}

/// Why an instant outside [`Timestamp::MIN`] ..= [`Timestamp::MAX`] is refused.
const OUT_OF_RANGE: &str = "lies outside 0000-01-01T00:00:00Z ..= 9999-12-31T23:59:59Z once its \
                            offset is applied (a stored time is written with a four-digit year)";

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400);
        let rest = self.0.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A span of time a document stays valid after it was indexed: 1 second ..=
/// [`Self::MAX_SECS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeToLive(u64);

impl TimeToLive {
    /// The longest span accepted: 100 years (36,525 days). A document that means to live
    /// longer means "forever" and says nothing; a bound keeps every `indexed_at + ttl` a
    /// writable instant for millennia of indexing times (and [`Timestamp::plus`] saturates
    /// beyond), and refuses a typo such as `10000000d` (27,000 years) where it is written, with
    /// a reason, rather than storing an instant no reader can parse.
    pub const MAX_SECS: u64 = 36_525 * 86_400;

    /// A span of `secs` seconds (at least one, at most [`Self::MAX_SECS`]).
    pub fn from_secs(secs: u64) -> Result<Self, InvalidValue> {
        if secs == 0 {
            return Err(InvalidValue::new("ttl", "0", "must be longer than zero"));
        }
        if secs > Self::MAX_SECS {
            return Err(InvalidValue::new("ttl", &format!("{secs}s"), TOO_LONG));
        }
        Ok(Self(secs))
    }

    /// Its length in seconds.
    pub fn secs(self) -> u64 {
        self.0
    }

    /// Reads `7d`, `12h`, `1d12h`, `30m`, `90s`, `2w` (units: w, d, h, m, s); refuses zero and
    /// anything longer than [`Self::MAX_SECS`].
    pub fn parse(text: &str) -> Result<Self, InvalidValue> {
        let bad = || {
            InvalidValue::new(
                "ttl",
                text,
                "must be numbers with units w, d, h, m or s, such as 7d, 12h or 1d12h",
            )
        };
        let too_long = || InvalidValue::new("ttl", text, TOO_LONG);
        let t = text.trim();
        if t.is_empty() {
            return Err(bad());
        }
        let mut total: u64 = 0;
        // The number being read, `None` before its first digit.
        let mut number: Option<u64> = None;
        for c in t.chars() {
            if let Some(d) = c.to_digit(10) {
                number = Some(
                    number
                        .unwrap_or(0)
                        .checked_mul(10)
                        .and_then(|n| n.checked_add(u64::from(d)))
                        .ok_or_else(too_long)?,
                );
                continue;
            }
            let unit: u64 = match c.to_ascii_lowercase() {
                'w' => 7 * 86_400,
                'd' => 86_400,
                'h' => 3600,
                'm' => 60,
                's' => 1,
                _ => return Err(bad()),
            };
            let n = number.take().ok_or_else(bad)?;
            total = n
                .checked_mul(unit)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(too_long)?;
        }
        if number.is_some() {
            return Err(bad());
        }
        match Self::from_secs(total) {
            Ok(ttl) => Ok(ttl),
            Err(_) if total == 0 => Err(InvalidValue::new("ttl", text, "must be longer than zero")),
            Err(_) => Err(too_long()),
        }
    }
}

/// Why a span longer than [`TimeToLive::MAX_SECS`] is refused.
const TOO_LONG: &str = "must be at most 100 years (36525d); leave ttl out for a document that \
                        does not expire";

impl fmt::Display for TimeToLive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_and_offsets_are_applied() {
        let t = Timestamp::parse("2026-12-03T14:10:40Z").unwrap();
        assert_eq!(t.to_string(), "2026-12-03T14:10:40Z");
        assert_eq!(Timestamp::from_unix(0).to_string(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp::parse("2026-12-03T22:10:40.123+08:00").unwrap(),
            t
        );
        assert_eq!(
            Timestamp::parse("2024-02-29").unwrap().to_string(),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(Timestamp::parse("1969-12-31T23:59:59Z").unwrap().unix(), -1);
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2025-02-29",
            "2026-12-03T14:10:40",
            "2026-12-03T25:00:00Z",
            "2026-12-03T14:10Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
        }
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-12-03T14:10:40Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
    }

    #[test]
    fn ttls_are_numbers_with_units() {
        assert_eq!(TimeToLive::parse("7d").unwrap().secs(), 7 * 86_400);
        assert_eq!(TimeToLive::parse("12h").unwrap().secs(), 12 * 3600);
        assert_eq!(TimeToLive::parse("1d12h").unwrap().secs(), 36 * 3600);
        assert_eq!(TimeToLive::parse("2w").unwrap().secs(), 14 * 86_400);
        assert_eq!(TimeToLive::parse("90s").unwrap().secs(), 90);
        for bad in [
            "",
            "7",
            "d",
            "7x",
            "0d",
            "-1d",
            "1d2",
            "99999999999999999999d",
        ] {
            assert!(TimeToLive::parse(bad).is_err(), "{bad:?}");
        }
        let t = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            t.plus(TimeToLive::parse("7d").unwrap()).to_string(),
            "2026-01-08T00:00:00Z"
        );
    }

    #[test]
    fn the_bounds_are_the_four_digit_years() {
        assert_eq!(Timestamp::MIN.to_string(), "0000-01-01T00:00:00Z");
        assert_eq!(Timestamp::MAX.to_string(), "9999-12-31T23:59:59Z");
        for t in [Timestamp::MIN, Timestamp::MAX] {
            assert_eq!(Timestamp::parse(&t.to_string()).unwrap(), t);
        }
        assert_eq!(Timestamp::from_unix(i64::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::from_unix(i64::MIN), Timestamp::MIN);
        assert!(Timestamp::try_from_unix(Timestamp::MAX.unix() + 1).is_err());
        assert!(Timestamp::try_from_unix(Timestamp::MIN.unix() - 1).is_err());
        assert_eq!(
            Timestamp::try_from_unix(0).unwrap(),
            Timestamp::from_unix(0)
        );
    }

    #[test]
    fn an_offset_that_leaves_the_four_digit_years_is_refused_with_its_reason() {
        for text in ["9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+00:01"] {
            let err = Timestamp::parse(text).unwrap_err();
            assert!(
                err.reason.contains("9999-12-31T23:59:59Z") && err.reason.contains("four-digit"),
                "{err}"
            );
        }
        // The same instants without the offset are the bounds themselves.
        assert_eq!(
            Timestamp::parse("9999-12-31T23:59:59Z").unwrap(),
            Timestamp::MAX
        );
        assert_eq!(
            Timestamp::parse("9999-12-31T23:59:59+23:59")
                .unwrap()
                .to_string(),
            "9999-12-31T00:00:59Z"
        );
        assert_eq!(Timestamp::parse("0000-01-01").unwrap(), Timestamp::MIN);
        for bad in ["2026-12-03T14:10:40.Z", "2026-12-03T14:10:40.1x2Z"] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plus_saturates_at_the_latest_instant() {
        let longest = TimeToLive::from_secs(TimeToLive::MAX_SECS).unwrap();
        assert_eq!(Timestamp::MAX.plus(longest), Timestamp::MAX);
        let late = Timestamp::parse("9950-01-01T00:00:00Z").unwrap();
        let t = late.plus(longest);
        assert_eq!(t, Timestamp::MAX);
        assert_eq!(Timestamp::parse(&t.to_string()).unwrap(), t);
    }

    #[test]
    fn a_ttl_longer_than_a_hundred_years_is_refused_with_its_reason() {
        assert_eq!(
            TimeToLive::parse("36525d").unwrap().secs(),
            TimeToLive::MAX_SECS
        );
        for text in [
            "10000000d",
            "36525d1s",
            "5218w",
            "99999999999999999999d",
            "1d99999999999999999999s",
        ] {
            let err = TimeToLive::parse(text).unwrap_err();
            assert!(err.reason.contains("at most 100 years"), "{text}: {err}");
        }
        assert!(TimeToLive::from_secs(TimeToLive::MAX_SECS + 1).is_err());
        let ttl = TimeToLive::from_secs(TimeToLive::MAX_SECS).unwrap();
        assert_eq!(TimeToLive::parse(&ttl.to_string()).unwrap(), ttl);
    }
}
