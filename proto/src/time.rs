//! Instants given on the command line: Unix seconds, or an ISO 8601 date or date and time in UTC
//! (or with an offset). Pure: no clock, no time zone database.

/// Seconds since the Unix epoch for `s`, one of:
/// `1798761600`; `2027-01-01`; `2027-01-01T12:30Z`, `2027-01-01T12:30:15Z`; the same with an
/// offset instead of `Z` (`+02:00`, `-0500`) or a space instead of `T`. A date alone is its
/// midnight, UTC. Fractions of a second are refused, as are instants before 1970.
pub fn instant(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| format!("{s:?} is too large"));
    }
    let bad = || {
        format!("{s:?} is neither Unix seconds nor an ISO 8601 date (YYYY-MM-DD, optionally THH:MM[:SS] and Z or ±HH:MM)")
    };
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let days = days_of(date).ok_or_else(bad)?;
    let seconds = match rest {
        None => 0,
        Some(rest) => time_of(rest).ok_or_else(bad)?,
    };
    let total = days * 86_400 + seconds;
    u64::try_from(total).map_err(|_| format!("{s:?} is before 1970"))
}

fn number(s: &str, digits: usize) -> Option<i64> {
    (s.len() == digits && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Days since 1970-01-01 of `YYYY-MM-DD` (proleptic Gregorian calendar).
fn days_of(date: &str) -> Option<i64> {
    let mut parts = date.split('-');
    let (y, m, d) = (
        number(parts.next()?, 4)?,
        number(parts.next()?, 2)?,
        number(parts.next()?, 2)?,
    );
    if parts.next().is_some() || !(1..=12).contains(&m) {
        return None;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Seconds into the (UTC) day of `HH:MM[:SS](Z|±HH:MM|±HHMM)`, the offset applied.
fn time_of(s: &str) -> Option<i64> {
    let (clock, offset) = if let Some(c) = s.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let i = s.rfind(['+', '-'])?;
        let sign = if s.as_bytes()[i] == b'+' { 1 } else { -1 };
        let off = &s[i + 1..];
        let (h, m) = match off.split_once(':') {
            Some((h, m)) => (number(h, 2)?, number(m, 2)?),
            None => (number(off.get(..2)?, 2)?, number(off.get(2..)?, 2)?),
        };
        if h > 23 || m > 59 {
            return None;
        }
        (&s[..i], sign * (h * 3600 + m * 60))
    };
    let fields: Vec<&str> = clock.split(':').collect();
    let (h, m, sec) = match fields.as_slice() {
        [h, m] => (number(h, 2)?, number(m, 2)?, 0),
        [h, m, s] => (number(h, 2)?, number(m, 2)?, number(s, 2)?),
        _ => return None,
    };
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_iso_8601_give_the_same_instants() {
        for (text, want) in [
            ("1798761600", 1_798_761_600),
            ("2027-01-01", 1_798_761_600),
            ("2027-01-01T00:00Z", 1_798_761_600),
            ("2027-01-01T00:00:00Z", 1_798_761_600),
            ("2027-01-01 01:00:00+01:00", 1_798_761_600),
            ("2026-12-31T19:00:00-0500", 1_798_761_600),
            ("1970-01-01", 0),
            ("2000-02-29T12:00:00Z", 951_825_600),
            ("2026-12-02T10:20:30Z", 1_796_206_830),
        ] {
            assert_eq!(instant(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_value() {
        for bad in [
            "",
            "2027-13-01",
            "2027-02-29",
            "2027-1-1",
            "2027-01-01T25:00Z",
            "2027-01-01T10:00",
            "2027-01-01T10:00:00.5Z",
            "1969-12-31",
            "tomorrow",
            "-5",
        ] {
            let e = instant(bad).expect_err(bad);
            assert!(e.contains(&format!("{:?}", bad.trim())), "{e}");
        }
    }
}
