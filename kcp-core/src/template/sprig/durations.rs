//! sprig's clock-free duration helpers: `duration` and `durationRound`.

use gotmpl::Value;

use super::args::{Outcome, want};
use crate::template::go_value::string;

/// Go's `time.Duration.String` for a number of nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn go_duration_string(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_owned();
    }
    let negative = ns < 0;
    let u = ns.unsigned_abs();
    let sign = if negative { "-" } else { "" };
    if u < 1_000_000_000 {
        let (unit, scale) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fraction(u, scale));
    }
    let seconds_part = fraction(u % 60_000_000_000, 1_000_000_000);
    let total_minutes = u / 60_000_000_000;
    let mut out = String::from(sign);
    if total_minutes > 0 {
        let hours = total_minutes / 60;
        if hours > 0 {
            out.push_str(&format!("{hours}h"));
        }
        out.push_str(&format!("{}m", total_minutes % 60));
    }
    out.push_str(&format!("{seconds_part}s"));
    out
}

/// `value / scale` with the fractional digits Go prints (trailing zeros dropped).
fn fraction(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let digits = scale.to_string().len() - 1;
    let frac = format!("{rest:0digits$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// `duration seconds`: seconds (an integer or a decimal string) as a Go duration string;
/// anything else is `0s`.
pub(super) fn duration(args: &[Value]) -> Outcome {
    want("duration", args, 1)?;
    let seconds = match &args[0] {
        Value::Int(i) => *i,
        Value::String(s) => s.parse::<i64>().unwrap_or(0),
        _ => 0,
    };
    Ok(string(go_duration_string(
        seconds.wrapping_mul(1_000_000_000),
    )))
}

/// `durationRound d`: a duration (string, or nanoseconds) rounded down to its largest unit:
/// `2h`, `3mo`, `1y`.
pub(super) fn duration_round(args: &[Value]) -> Outcome {
    want("durationRound", args, 1)?;
    let ns: i64 = match &args[0] {
        Value::String(s) => crate::go_duration::parse(s).unwrap_or(0),
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
