//! Each expectation was printed by Go 1.26's `json.Unmarshal` for the same bytes (kcp-testbed's
//! `real_go_json` holds the two to each other on many more inputs).

use super::syntax_error;

#[track_caller]
fn says(input: &[u8], expected: &str) {
    assert_eq!(syntax_error(input).as_deref(), Some(expected), "{input:?}");
}

#[test]
fn one_value_with_white_space_around_it_is_valid() {
    for input in [
        &b"{\"a\":1} "[..],
        b" [1, 2.5e-3, -0, true, false, null, \"\\u00e9\\n\"] ",
        b"{}",
        b"[]",
        b"\"\xff\"",
    ] {
        assert_eq!(syntax_error(input), None, "{input:?}");
    }
}

#[test]
fn nothing_or_an_unclosed_container_is_an_unexpected_end() {
    for input in [&b""[..], b" ", b"\n", b"{", b"[", b"[1,", b"\"abc"] {
        says(input, "unexpected end of JSON input");
    }
}

#[test]
fn a_number_or_literal_cut_short_names_the_space_go_reads_at_the_end() {
    says(b"-", "invalid character ' ' in numeric literal");
    says(
        b"1.",
        "invalid character ' ' after decimal point in numeric literal",
    );
    says(
        b"1e+",
        "invalid character ' ' in exponent of numeric literal",
    );
    says(
        b"tru",
        "invalid character ' ' in literal true (expecting 'e')",
    );
    says(
        b"nul",
        "invalid character ' ' in literal null (expecting 'l')",
    );
}

#[test]
fn a_byte_is_named_with_what_was_expected_where_it_stands() {
    says(
        b"{not json",
        "invalid character 'n' looking for beginning of object key string",
    );
    says(b"[1 2]", "invalid character '2' after array element");
    says(b"{\"a\" 1}", "invalid character '1' after object key");
    says(
        b"{\"a\":1 \"b\":2}",
        "invalid character '\"' after object key:value pair",
    );
    says(b"{\"a\":1}x", "invalid character 'x' after top-level value");
    says(b"01", "invalid character '1' after top-level value");
    says(
        b"{\"a\":}",
        "invalid character '}' looking for beginning of value",
    );
    says(
        b"{\"a\":1,}",
        "invalid character '}' looking for beginning of object key string",
    );
    says(
        b"[1,]",
        "invalid character ']' looking for beginning of value",
    );
    says(
        b"1.e5",
        "invalid character 'e' after decimal point in numeric literal",
    );
    says(
        b"fxlse",
        "invalid character 'x' in literal false (expecting 'a')",
    );
    says(b"\"a\\qb\"", "invalid character 'q' in string escape code");
    says(
        b"\"a\\u12g4\"",
        "invalid character 'g' in \\u hexadecimal character escape",
    );
    says(b"\"a\x01b\"", "invalid character '\\x01' in string literal");
}

#[test]
fn a_byte_is_quoted_as_go_quotes_it_as_a_rune() {
    says(
        b"'a'",
        "invalid character '\\'' looking for beginning of value",
    );
    says(
        b"\\",
        "invalid character '\\\\' looking for beginning of value",
    );
    says(
        b"\x81abc",
        "invalid character '\\u0081' looking for beginning of value",
    );
    says(
        b"\xa0",
        "invalid character '\\u00a0' looking for beginning of value",
    );
    says(
        b"\xe9",
        "invalid character '\u{e9}' looking for beginning of value",
    );
    says(
        b"\x7f",
        "invalid character '\\x7f' looking for beginning of value",
    );
}
