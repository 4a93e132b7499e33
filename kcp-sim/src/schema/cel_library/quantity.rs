//! Kubernetes' CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`):
//! `quantity(string)`, `isQuantity(string)` and the methods of a quantity (`sign`, `isInteger`,
//! `asInteger`, `asApproximateFloat`, `add`, `sub`, `compareTo`, `isLessThan`,
//! `isGreaterThan`), over `resource.Quantity`'s text form: a decimal number followed by a
//! binary (`Ki`..`Ei`), decimal SI (`n`..`E`) or exponent (`e3`, `E-2`) suffix.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::objects::Opaque;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive as _;

/// A parsed quantity: its exact value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity(pub Decimal);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

impl Quantity {
    /// Parses the text form, or says why it is not a quantity.
    pub fn parse(text: &str) -> Result<Self, String> {
        // resource.ParseQuantity's error, which names no value.
        let invalid = || {
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                .to_string()
        };
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(text.len());
        let (number, suffix) = text.split_at(split);
        let value = parse_number(number).ok_or_else(invalid)?;
        let scaled = apply_suffix(value, suffix).ok_or_else(invalid)?;
        Ok(Quantity(scaled))
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        match self.0.cmp(&Decimal::ZERO) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// The value as an `int`, when it is whole and fits.
    pub fn as_integer(&self) -> Option<i64> {
        if self.0.fract().is_zero() {
            self.0.to_i64()
        } else {
            None
        }
    }

    /// The nearest `double`.
    pub fn as_float(&self) -> f64 {
        self.0.to_f64().unwrap_or(f64::NAN)
    }

    /// `self + other`, unless it overflows.
    pub fn add(&self, other: Quantity) -> Option<Quantity> {
        self.0.checked_add(other.0).map(Quantity)
    }

    /// `self - other`, unless it overflows.
    pub fn sub(&self, other: Quantity) -> Option<Quantity> {
        self.0.checked_sub(other.0).map(Quantity)
    }

    /// The quantity as a CEL value.
    pub fn into_cel(self) -> cel::Value {
        cel::Value::Opaque(Arc::new(self))
    }
}

fn parse_number(number: &str) -> Option<Decimal> {
    let (negative, digits) = match number.as_bytes().first()? {
        b'-' => (true, &number[1..]),
        b'+' => (false, &number[1..]),
        _ => (false, number),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let text = format!(
        "{}.{}",
        if whole.is_empty() { "0" } else { whole },
        if fraction.is_empty() { "0" } else { fraction }
    );
    let value: Decimal = text.parse().ok()?;
    Some(if negative { -value } else { value })
}

fn apply_suffix(value: Decimal, suffix: &str) -> Option<Decimal> {
    let binary = |power: u32| value.checked_mul(Decimal::from(1u64 << power));
    let decimal = |exponent: i32| scale(value, exponent);
    match suffix {
        "" => Some(value),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?.parse::<i32>().ok()?;
            decimal(exponent)
        }
    }
}

/// `value * 10^exponent`, unless it leaves rust_decimal's range.
fn scale(value: Decimal, exponent: i32) -> Option<Decimal> {
    let mut out = value;
    let ten = Decimal::TEN;
    for _ in 0..exponent.unsigned_abs() {
        out = if exponent > 0 {
            out.checked_mul(ten)?
        } else {
            out.checked_div(ten)?
        };
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn q(text: &str) -> Decimal {
        Quantity::parse(text).unwrap().0
    }

    #[test]
    fn suffixes_scale_the_number() {
        assert_eq!(q("1Ki"), Decimal::from(1024));
        assert_eq!(q("1.5Gi"), Decimal::from(1_610_612_736u64));
        assert_eq!(q("500m"), "0.5".parse().unwrap());
        assert_eq!(q("2k"), Decimal::from(2000));
        assert_eq!(q("1e3"), Decimal::from(1000));
        assert_eq!(q("1E-2"), "0.01".parse().unwrap());
        assert_eq!(q("-.5"), "-0.5".parse().unwrap());
        assert_eq!(q("+3"), Decimal::from(3));
    }

    #[test]
    fn malformed_text_is_not_a_quantity() {
        for bad in ["", "Ki", "1K", "1.2.3", "1 Gi", "abc", "1e", "--1", "1iB"] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_whole_values_in_range_are_integers() {
        assert_eq!(Quantity::parse("1k").unwrap().as_integer(), Some(1000));
        assert_eq!(Quantity::parse("1500m").unwrap().as_integer(), None);
        assert_eq!(Quantity::parse("16Ei").unwrap().as_integer(), None);
    }
}
