//! kube-apiserver's checks of literal arguments, run on a rule once it type-checks (cel-go's
//! duration, timestamp and regex literal validators): `duration('…')` of a literal must be a
//! Go duration, `timestamp('…')` an RFC 3339 time or a number of seconds, and the first
//! argument of `matches` a regular expression; each failure is `invalid <function> argument`
//! at the literal.

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue};

/// The literals that fail, as `(node id, message)`.
pub fn invalid_literals(expr: &IdedExpr) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    visit(expr, &mut found);
    found
}

fn visit(e: &IdedExpr, found: &mut Vec<(u64, String)>) {
    match &e.expr {
        Expr::Call(c) => {
            if let Some(IdedExpr {
                id,
                expr: Expr::Literal(literal),
            }) = c.args.first()
                && let Some(valid) = literal_check(&c.func_name)
                && !valid(literal)
            {
                found.push((*id, format!("invalid {} argument", c.func_name)));
            }
            c.target.iter().for_each(|t| visit(t, found));
            c.args.iter().for_each(|a| visit(a, found));
        }
        Expr::Select(s) => visit(&s.operand, found),
        Expr::List(l) => l.elements.iter().for_each(|i| visit(i, found)),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(m) = &entry.expr {
                    visit(&m.key, found);
                    visit(&m.value, found);
                }
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(part, found);
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) | Expr::Struct(_) => {}
    }
}

/// The check of a function's literal first argument, for the functions kube checks.
fn literal_check(function: &str) -> Option<fn(&LiteralValue) -> bool> {
    match function {
        "duration" => Some(|l| match l {
            LiteralValue::String(s) => kcp_core::go_duration::parse(s.inner()).is_some(),
            _ => false,
        }),
        "timestamp" => Some(|l| match l {
            LiteralValue::String(s) => s.inner().parse::<jiff::Timestamp>().is_ok(),
            LiteralValue::Int(_) => true,
            _ => false,
        }),
        "matches" => Some(|l| match l {
            LiteralValue::String(s) => regex::Regex::new(s.inner()).is_ok(),
            _ => true,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(rule: &str) -> Vec<String> {
        let program = cel::Env::stdlib().compile(rule).expect("parses");
        invalid_literals(program.expression())
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    }

    #[test]
    fn literal_durations_timestamps_and_patterns_are_checked() {
        assert_eq!(
            invalid("duration('1d') > duration('1h')"),
            ["invalid duration argument"]
        );
        assert_eq!(
            invalid("timestamp('yesterday') < timestamp(0)"),
            ["invalid timestamp argument"]
        );
        assert_eq!(invalid("'a'.matches('(')"), ["invalid matches argument"]);
        assert!(invalid("self.matches('^a+$') && duration(self.d) > duration('1m30s')").is_empty());
    }
}
