//! Resource quantities (`resource.Quantity`) as kube-apiserver reads and stores them: parsed
//! as `ParseQuantity` parses them (its errors word for word), and written back in the form Go's
//! `Quantity.String()` gives: the text as written when the parser keeps it (`100M`, `1e3`,
//! `01`), else the canonical form (`1000m` is `1`, `0.5` is `500m`, `1024Mi` is `1Gi`). A
//! `ResourceList` (requests, limits, quota) is also rounded up to milli-units, as core/v1's
//! defaulting does (`1n` is `1m`).
//!
//! Values are exact: a mantissa (`i128`) times a power of ten. A quantity too large for that
//! keeps its text.

/// `ErrFormatWrong`.
pub const FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `ErrSuffix`.
pub const SUFFIX: &str = "unable to parse quantity's suffix";

/// How a quantity's suffix writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `Ki` .. `Ei`.
    BinarySI,
    /// `n` .. `E`, or none.
    DecimalSI,
    /// `e3`, `E-2`.
    DecimalExponent,
}

/// A parsed quantity: `mantissa * 10^scale`, and whether the text is kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
    /// The text as written, when Go's parser keeps it (`Quantity.s`).
    text: Option<String>,
}

impl Quantity {
    /// Parses a quantity's text (surrounding spaces trimmed, as its JSON decoder does).
    pub fn parse(text: &str) -> Result<Quantity, &'static str> {
        let text = text.trim();
        let parts = Parts::of(text)?;
        let (base, exponent, format) = suffix(&parts.suffix).ok_or(SUFFIX)?;
        let mut digits = format!("{}{}", parts.num, parts.denom);
        if digits.is_empty() {
            digits.push('0');
        }
        let unscaled: i128 = match digits.parse() {
            Ok(v) => v,
            // Too many digits for exact arithmetic here: keep the text.
            Err(_) => return Ok(Quantity::kept(text, format)),
        };
        let denom_len = i32::try_from(parts.denom.len()).unwrap_or(i32::MAX);
        let (mut mantissa, scale) = if base == 2 {
            let Some(m) = 2i128
                .checked_pow(exponent.unsigned_abs())
                .and_then(|p| unscaled.checked_mul(p))
            else {
                return Ok(Quantity::kept(text, format));
            };
            (m, -denom_len)
        } else {
            (unscaled, exponent - denom_len)
        };
        if !parts.positive {
            mantissa = -mantissa;
        }
        let keeps_text = keeps_text(&parts, base, exponent, format);
        let mut q = Quantity {
            mantissa,
            scale,
            format,
            text: keeps_text.then(|| text.to_string()),
        };
        if !keeps_text {
            // Below nano precision, the parser rounds up (away from zero).
            q.round_up(-9);
            if q.format == Format::BinarySI && q.mantissa.abs() < pow10(-q.scale.min(0)) {
                q.format = Format::DecimalSI;
            }
        }
        Ok(q)
    }

    fn kept(text: &str, format: Format) -> Quantity {
        Quantity {
            mantissa: 0,
            scale: 0,
            format,
            text: Some(text.to_string()),
        }
    }

    /// Rounds up (away from zero) to `10^scale`, dropping the kept text when that changes the
    /// value's precision (`Quantity.RoundUp`).
    pub fn round_up(&mut self, scale: i32) {
        if self.scale >= scale {
            return;
        }
        self.text = None;
        let divisor = pow10(scale - self.scale);
        let (q, r) = (self.mantissa / divisor, self.mantissa % divisor);
        self.mantissa = if r == 0 {
            q
        } else {
            q + self.mantissa.signum()
        };
        self.scale = scale;
    }

    /// Zero (Go's zero `Quantity` in `DecimalSI`, which a sum starts from).
    pub fn zero() -> Quantity {
        Quantity::count(0)
    }

    /// A whole count (`resource.NewQuantity(n, resource.DecimalSI)`).
    pub fn count(n: i64) -> Quantity {
        Quantity {
            mantissa: i128::from(n),
            scale: 0,
            format: Format::DecimalSI,
            text: None,
        }
    }

    /// Adds `other` (`Quantity.Add`): the text as written is dropped, and a zero takes on
    /// `other`'s format (so a sum of `Mi`s starting from zero is written in `Mi`).
    pub fn add(&mut self, other: &Quantity) {
        self.combine(other, 1);
    }

    /// Subtracts `other` (`Quantity.Sub`), as [`Quantity::add`] adds.
    pub fn sub(&mut self, other: &Quantity) {
        self.combine(other, -1);
    }

    fn combine(&mut self, other: &Quantity, sign: i128) {
        self.text = None;
        if self.mantissa == 0 {
            self.format = other.format;
        }
        let scale = self.scale.min(other.scale);
        let (mine, theirs) = (self.at_scale(scale), other.at_scale(scale));
        self.mantissa = mine.saturating_add(sign.saturating_mul(theirs));
        self.scale = scale;
    }

    /// The mantissa at a smaller (or equal) `scale`.
    fn at_scale(&self, scale: i32) -> i128 {
        self.mantissa.saturating_mul(pow10(self.scale - scale))
    }

    /// Compares the values (`Quantity.Cmp`).
    pub fn compare(&self, other: &Quantity) -> std::cmp::Ordering {
        let scale = self.scale.min(other.scale);
        self.at_scale(scale).cmp(&other.at_scale(scale))
    }

    /// The value in thousandths, rounded up (`Quantity.MilliValue`).
    pub fn milli_value(&self) -> i128 {
        let mut rounded = self.clone();
        rounded.round_up(-3);
        rounded.at_scale(-3)
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// The text Go writes for it.
    pub fn to_text(&self) -> String {
        if let Some(text) = &self.text {
            return text.clone();
        }
        if self.mantissa == 0 {
            return "0".to_string();
        }
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let magnitude = self.mantissa.abs();
        if self.format == Format::BinarySI
            && let Some(text) = binary_text(magnitude, self.scale)
        {
            return format!("{sign}{text}");
        }
        let (number, exponent) = canonical_decimal(magnitude, self.scale);
        let suffix = match (self.format, exponent) {
            (Format::DecimalExponent, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, e) => decimal_suffix(e).map_or_else(|| format!("e{e}"), String::from),
        };
        format!("{sign}{number}{suffix}")
    }
}

/// The text as Go writes it of a quantity's JSON text, rounded up to milli-units when it is a
/// `ResourceList` entry.
pub fn stored_text(text: &str, resource_list: bool) -> Result<String, &'static str> {
    let mut q = Quantity::parse(text)?;
    if resource_list {
        q.round_up(-3);
    }
    Ok(q.to_text())
}

/// The pieces `parseQuantityString` splits a quantity into.
struct Parts {
    positive: bool,
    /// The integer digits, leading zeros stripped.
    num: String,
    /// The fraction digits.
    denom: String,
    suffix: String,
}

impl Parts {
    fn of(text: &str) -> Result<Parts, &'static str> {
        if text.is_empty() {
            return Err(FORMAT);
        }
        let (positive, rest) = match text.as_bytes()[0] {
            b'-' => (false, &text[1..]),
            b'+' => (true, &text[1..]),
            _ => (true, text),
        };
        let rest = rest.trim_start_matches('0');
        let num_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (num, rest) = rest.split_at(num_end);
        let (denom, rest) = match rest.strip_prefix('.') {
            Some(after) => {
                let end = after
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after.len());
                after.split_at(end)
            }
            None => ("", rest),
        };
        let letters = rest
            .find(|c: char| !"eEinumkKMGTP".contains(c))
            .unwrap_or(rest.len());
        let tail = &rest[letters..];
        let digits = tail.strip_prefix(['+', '-']).unwrap_or(tail);
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(FORMAT);
        }
        Ok(Parts {
            positive,
            num: num.to_string(),
            denom: denom.to_string(),
            suffix: rest.to_string(),
        })
    }
}

/// A suffix's base, exponent and format; `None` for a suffix Kubernetes does not know.
fn suffix(s: &str) -> Option<(u32, i32, Format)> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(i) = binary.iter().position(|b| *b == s) {
        return Some((2, 10 * (i32::try_from(i).ok()? + 1), Format::BinarySI));
    }
    let decimal = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    if let Some((_, e)) = decimal.iter().find(|(d, _)| *d == s) {
        return Some((10, *e, Format::DecimalSI));
    }
    let exponent = s.strip_prefix(['e', 'E'])?.parse::<i32>().ok()?;
    Some((10, exponent, Format::DecimalExponent))
}

/// `ParseQuantity`'s fast path keeps the text as written when it is already canonical: a
/// decimal quantity whose scale is a multiple of 3 and whose digits neither start with `0` nor
/// end in `000`; a binary one with a whole number not divisible by 8.
fn keeps_text(parts: &Parts, base: u32, exponent: i32, format: Format) -> bool {
    let num = if parts.num.is_empty() {
        "0"
    } else {
        &parts.num
    };
    let digits = num.len() + parts.denom.len();
    let denom_len = i32::try_from(parts.denom.len()).unwrap_or(i32::MAX);
    match format {
        Format::BinarySI => {
            if !parts.denom.is_empty() || exponent < 0 {
                return false;
            }
            let precision = 15 - num.len() as i64 - i64::from(exponent) * 3 / 10 - 1;
            let value: i64 = num.parse().unwrap_or(0);
            precision >= 0 && base == 2 && exponent % 10 == 0 && value & 0x07 != 0
        }
        _ => {
            let scale = exponent - denom_len;
            let shifted = format!("{num}{}", parts.denom);
            digits <= 18
                && scale >= -9
                && scale % 3 == 0
                && !shifted.ends_with("000")
                && !shifted.starts_with('0')
        }
    }
}

/// A whole number of bytes in the largest binary suffix that divides it; `None` when it is
/// below 1024 or not whole (then it is written as a decimal).
fn binary_text(magnitude: i128, scale: i32) -> Option<String> {
    let whole = if scale >= 0 {
        magnitude.checked_mul(pow10(scale))?
    } else {
        let d = pow10(-scale);
        if magnitude % d != 0 {
            return None;
        }
        magnitude / d
    };
    if whole < 1024 {
        return None;
    }
    let suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut k = 0;
    let mut value = whole;
    while k < 6 && value % 1024 == 0 {
        value /= 1024;
        k += 1;
    }
    Some(format!("{value}{}", suffixes[k]))
}

/// The mantissa and exponent (a multiple of 3, as large as it can be) of a decimal value.
fn canonical_decimal(mut magnitude: i128, mut exponent: i32) -> (i128, i32) {
    while magnitude % 10 == 0 {
        magnitude /= 10;
        exponent += 1;
    }
    let r = exponent.rem_euclid(3);
    (magnitude * pow10(r), exponent - r)
}

fn decimal_suffix(exponent: i32) -> Option<&'static str> {
    Some(match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

fn pow10(n: i32) -> i128 {
    10i128.checked_pow(n.unsigned_abs()).unwrap_or(i128::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(texts: &[&str]) -> String {
        let mut total = Quantity::zero();
        for text in texts {
            total.add(&Quantity::parse(text).unwrap());
        }
        total.to_text()
    }

    /// Sums as kube-apiserver v1.34.2's quota admission wrote them in a ResourceQuota's
    /// `status.used` (recorded in the conformance case
    /// `a-pod-is-charged-its-containers-sum-or-its-largest-init-container`).
    #[test]
    fn sums_are_written_as_go_writes_them() {
        assert_eq!(sum(&["500m", "1"]), "1500m");
        assert_eq!(sum(&["100Mi", "200Mi"]), "300Mi");
        assert_eq!(sum(&["250m", "750m"]), "1");
        assert_eq!(sum(&[]), "0");
    }

    #[test]
    fn a_difference_can_reach_zero_and_below() {
        let mut q = Quantity::parse("300m").unwrap();
        q.sub(&Quantity::parse("300m").unwrap());
        assert!(q.is_zero());
        q.sub(&Quantity::count(1));
        assert_eq!(q.to_text(), "-1");
    }

    #[test]
    fn values_compare_across_suffixes() {
        let q = |t: &str| Quantity::parse(t).unwrap();
        assert_eq!(q("1").compare(&q("1000m")), std::cmp::Ordering::Equal);
        assert_eq!(q("1Gi").compare(&q("1G")), std::cmp::Ordering::Greater);
        assert_eq!(q("300m").compare(&q("0.5")), std::cmp::Ordering::Less);
    }

    /// Each pair: a ResourceQuota's `spec.hard.cpu` as written, and as kube-apiserver v1.34.2
    /// stored it.
    #[test]
    fn a_resource_list_entry_is_stored_as_kube_stores_it() {
        for (written, stored) in [
            ("1e3", "1e3"),
            ("+1", "+1"),
            (" 1", "1"),
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("100M", "100M"),
            ("1.0", "1"),
            ("01", "01"),
            ("1e-3", "1e-3"),
            ("0", "0"),
            ("12e6", "12e6"),
            ("1.5Gi", "1536Mi"),
            ("0.1m", "1m"),
            ("1n", "1m"),
            ("2000000k", "2G"),
            ("1500m", "1500m"),
            ("1E3", "1E3"),
        ] {
            assert_eq!(stored_text(written, true).unwrap(), stored, "{written:?}");
        }
    }

    #[test]
    fn malformed_quantities_fail_with_parse_quantitys_words() {
        for (written, error) in [
            ("1.5.5", FORMAT),
            ("1Zi", FORMAT),
            ("", FORMAT),
            ("1ii", SUFFIX),
            ("1Ki2", SUFFIX),
            ("1mi", SUFFIX),
            ("5e", SUFFIX),
        ] {
            assert_eq!(
                stored_text(written, false).unwrap_err(),
                error,
                "{written:?}"
            );
        }
    }

    #[test]
    fn outside_a_resource_list_nano_units_stay() {
        assert_eq!(stored_text("1n", false).unwrap(), "1n");
        assert_eq!(stored_text("0.5", false).unwrap(), "500m");
    }
}
