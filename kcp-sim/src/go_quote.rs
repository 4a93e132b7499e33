//! Strings quoted as Go's `strconv.Quote` (and so `%q`) writes them, for messages that the
//! real servers format with `%q`.

use std::fmt::Write;

/// `text` between double quotes, escaped as Go's `strconv.Quote` escapes it: `\"` and `\\`,
/// the C escapes `\a \b \f \n \r \t \v`, other ASCII control bytes as `\xHH`, and any other
/// rune that is not printable as `\uHHHH` or `\UHHHHHHHH`. A printable rune is a graphic one or
/// the ASCII space, as Go's `unicode.IsPrint`; here graphic is "neither a control character nor
/// whitespace", which is Go's rule for every rune kube's messages carry.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            ' ' => out.push(' '),
            c if !c.is_control() && !c.is_whitespace() => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn plain_text_is_only_wrapped_in_quotes() {
        assert_eq!(quoted("etcd readiness"), "\"etcd readiness\"");
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[test]
    fn c_escapes_are_used_where_go_has_them() {
        assert_eq!(quoted("\u{7}\u{8}\u{c}\n\r\t\u{b}"), r#""\a\b\f\n\r\t\v""#);
    }

    #[test]
    fn other_ascii_controls_are_hex_bytes() {
        assert_eq!(quoted("\u{1}\u{7f}"), r#""\x01\x7f""#);
    }

    #[test]
    fn unprintable_runes_beyond_ascii_are_unicode_escapes() {
        assert_eq!(quoted("\u{a0}\u{85}"), r#""\u00a0\u0085""#);
    }

    #[test]
    fn printable_runes_beyond_ascii_stay_as_they_are() {
        assert_eq!(quoted("héllo ✓ 𝄞"), "\"héllo ✓ 𝄞\"");
    }
}
