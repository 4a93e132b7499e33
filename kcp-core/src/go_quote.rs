//! Go's `strconv.Quote` (and so `%q`): strings quoted as the Go tools and servers quote them in
//! their messages: the template function `quote`, the label selector's errors, and kcp-sim's
//! answers that kube-apiserver words with `%q`.

/// `text` between double quotes, escaped as Go's `strconv.Quote` escapes it: `\"` and `\\`,
/// the C escapes `\a \b \f \n \r \t \v`, other ASCII control bytes as `\xHH`, and runes
/// Go's `unicode.IsPrint` does not print as `\uHHHH` or `\UHHHHHHHH`.
pub fn quote(text: &str) -> String {
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
            c if crate::template::sprig::is_go_print(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn plain_text_is_only_wrapped_in_quotes() {
        assert_eq!(quote("etcd readiness"), "\"etcd readiness\"");
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[test]
    fn c_escapes_are_used_where_go_has_them() {
        assert_eq!(quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"), r#""\a\b\f\n\r\t\v""#);
    }

    #[test]
    fn other_ascii_controls_are_hex_bytes() {
        assert_eq!(quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
    }

    #[test]
    fn unprintable_runes_beyond_ascii_are_unicode_escapes() {
        assert_eq!(quote("\u{a0}\u{85}"), r#""\u00a0\u0085""#);
    }

    #[test]
    fn printable_runes_beyond_ascii_stay_as_they_are() {
        assert_eq!(quote("héllo ✓ 𝄞"), "\"héllo ✓ 𝄞\"");
    }
}
