//! The refusals' texts are kube-apiserver's (storage.DecodeContinue and ValidateListOptions);
//! Go's words inside them were printed by Go 1.26's base64 and JSON decoders for the same
//! input.

use super::*;

fn refusal(token: &str) -> String {
    match ContinueToken::decode(token) {
        Ok(token) => panic!("{token:?} was read"),
        Err(e) => e.message,
    }
}

fn encoded(json: &str) -> String {
    RAW_URL.encode(json)
}

/// The token of `json` is refused, kube-apiserver's message ending in `why`.
#[track_caller]
fn refused_as(json: &str, why: &str) {
    assert_eq!(
        refusal(&encoded(json)),
        format!("invalid continue token: continue key is not valid: {why}"),
        "{json}"
    );
}

#[test]
fn a_token_reads_back_as_written() {
    let token = ContinueToken {
        revision: Some(42),
        cluster: "root:org".into(),
        key: "default/web".into(),
    };
    assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
}

#[test]
fn a_token_is_kube_apiservers_json_in_unpadded_url_safe_base64() {
    let token = ContinueToken {
        revision: Some(7),
        cluster: "c".into(),
        key: "k".into(),
    };
    let json = RAW_URL.decode(token.encode()).unwrap();
    assert_eq!(json, br#"{"v":"meta.k8s.io/v1","rv":7,"start":"c\u0000k"}"#);
}

#[test]
fn a_negative_revision_asks_for_the_latest() {
    let token = ContinueToken::decode(&encoded(
        r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"c\u0000k"}"#,
    ));
    assert_eq!(token.unwrap().revision, None);
}

#[test]
fn garbage_is_refused_with_gos_json_error_on_its_decoded_bytes() {
    // As kube-apiserver v1.34.2 answered (the conformance case lists/a-bad-continue-token-is-refused).
    assert_eq!(
        refusal("garbage"),
        "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value"
    );
}

#[test]
fn a_byte_outside_the_alphabet_or_a_lone_last_character_is_named_by_its_offset() {
    for (token, at) in [
        ("ab=", 2),
        ("a b", 1),
        ("abcde", 4),
        ("abcdef$", 6),
        ("a", 0),
    ] {
        assert_eq!(
            refusal(token),
            format!(
                "invalid continue token: continue key is not valid: illegal base64 data at input byte {at}"
            ),
            "{token}"
        );
    }
}

#[test]
fn a_field_of_the_wrong_type_is_named_as_go_names_it() {
    let cases = [
        (
            "[1]",
            "json: cannot unmarshal array into Go value of type storage.continueToken",
        ),
        (
            r#"{"v":1}"#,
            "json: cannot unmarshal number into Go struct field continueToken.v of type string",
        ),
        (
            r#"{"rv":"1"}"#,
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
        (
            r#"{"rv":1.5}"#,
            "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64",
        ),
        (
            r#"{"start":2}"#,
            "json: cannot unmarshal number into Go struct field continueToken.start of type string",
        ),
    ];
    for (json, why) in cases {
        refused_as(json, why);
    }
}

#[test]
fn a_token_of_another_version_or_without_revision_or_start_is_refused() {
    let cases = [
        (
            r#"{"v":"x","rv":1,"start":"a"}"#,
            "server does not recognize this encoded version x",
        ),
        (
            r#"{"v":"meta.k8s.io/v1","start":"a"}"#,
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            r#"{"V":"meta.k8s.io/v1","RV":3}"#,
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
    ];
    for (json, why) in cases {
        refused_as(json, why);
    }
}
