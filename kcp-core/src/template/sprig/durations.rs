//! sprig's clock-free duration helpers: `duration` and `durationRound`.

use gotmpl::Value;

use super::args::{Outcome, want};
use crate::template::go_value::string;

/// `duration seconds`: seconds (an integer or a decimal string) as a Go duration string;
/// anything else is `0s`.
pub(super) fn duration(args: &[Value]) -> Outcome {
    want("duration", args, 1)?;
    let seconds = match &args[0] {
        Value::Int(i) => *i,
        Value::String(s) => s.parse::<i64>().unwrap_or(0),
        _ => 0,
    };
    Ok(string(crate::go_duration::format(i128::from(
        seconds.wrapping_mul(1_000_000_000),
    ))))
}

/// `durationRound d`: a duration (string, or nanoseconds) rounded down to its largest unit:
/// `2h`, `3mo`, `1y`.
pub(super) fn duration_round(args: &[Value]) -> Outcome {
    want("durationRound", args, 1)?;
    let ns: i64 = match &args[0] {
        Value::String(s) => crate::go_duration::parse(s)
            .and_then(|ns| i64::try_from(ns).ok())
            .unwrap_or(0),
        Value::Int(i) => *i,
        _ => 0,
    };
    let u = ns.unsigned_abs();
    const SECOND: u64 = 1_000_000_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const MONTH: u64 = 30 * DAY;
    const YEAR: u64 = 365 * DAY;
    let text = if u > YEAR {
        format!("{}y", u / YEAR)
    } else if u > MONTH {
        format!("{}mo", u / MONTH)
    } else if u > DAY {
        format!("{}d", u / DAY)
    } else if u > HOUR {
        format!("{}h", u / HOUR)
    } else if u > MINUTE {
        format!("{}m", u / MINUTE)
    } else if u > SECOND {
        format!("{}s", u / SECOND)
    } else {
        "0s".to_owned()
    };
    Ok(string(text))
}
