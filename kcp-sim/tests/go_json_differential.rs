//! kcp-sim words a body or a continue token that Go cannot read as Go's own decoders word it.
//! Held to Go itself: the oracle of kcp-core's differential tests (`decode_hex`) decodes the
//! same bytes with encoding/json and encoding/base64, for thousands of inputs made by cutting,
//! changing and growing valid JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../kcp-core/tests/go_oracle/mod.rs"]
mod go_oracle;

use base64::Engine as _;
use kcp_sim::continue_token::ContinueToken;
use kcp_sim::go_json_syntax::syntax_error;
use serde_json::{Value, json};

const SEEDS: &[&str] = &[
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v\n\u00e9"}}"#,
    r#"[1,-2.5e+3,0,true,false,null,"s",{},[ ]]"#,
    r#"{"v":"meta.k8s.io/v1","rv":5,"start":"c\u0000k"}"#,
    r#" "text with \\ escapes \" and \/" "#,
    "-0.0E-7",
];

/// Bytes that steer a JSON scanner: structure, numbers, literals, controls and Latin-1.
const STEERING: &[u8] = &[
    b'{', b'}', b'[', b']', b'"', b'\\', b',', b':', b' ', b'\n', b'0', b'9', b'-', b'+', b'.',
    b'e', b't', b'n', b'x', b'\'', b'/', b'u', 0x00, 0x01, 0x7f, 0x81, 0xa0, 0xe9,
];

/// Every seed cut short at each byte, and with each steering byte put in place of, and in
/// front of, each of its bytes.
fn inputs() -> Vec<Vec<u8>> {
    let mut inputs = Vec::new();
    for seed in SEEDS.iter().map(|s| s.as_bytes()) {
        for at in 0..=seed.len() {
            inputs.push(seed[..at].to_vec());
            if at == seed.len() {
                break;
            }
            for &b in STEERING {
                let mut changed = seed.to_vec();
                changed[at] = b;
                inputs.push(changed);
                let mut grown = seed.to_vec();
                grown.insert(at, b);
                inputs.push(grown);
            }
        }
    }
    inputs
}

fn ask(inputs: &[Vec<u8>]) -> Option<Vec<Value>> {
    let oracle = go_oracle::built_or_skip()?;
    let requests: Vec<Value> = inputs
        .iter()
        .map(|i| json!({"decode_hex": hex::encode(i)}))
        .collect();
    Some(go_oracle::ask(&oracle, &requests))
}

#[track_caller]
fn assert_none_differ(differ: &[String], of: usize) {
    assert!(
        differ.is_empty(),
        "{} of {of} inputs differ from Go, first:\n{}",
        differ.len(),
        differ
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_json_syntax_check_names_what_gos_decoder_names() {
    let inputs = inputs();
    let Some(answers) = ask(&inputs) else { return };
    let differ: Vec<String> = inputs
        .iter()
        .zip(&answers)
        .filter_map(|(input, go)| {
            let go_says = go["syntax"]
                .as_bool()
                .unwrap_or(false)
                .then(|| go["error"].as_str().unwrap().to_string());
            let we_say = syntax_error(input);
            (we_say != go_says).then(|| format!("{input:?}: kcp-sim {we_say:?}, Go {go_says:?}"))
        })
        .collect();
    assert_none_differ(&differ, inputs.len());
}

/// What kube-apiserver answers for a continue token Go's decoders refuse with `why`.
fn refusal(why: &str) -> String {
    format!("invalid continue token: continue key is not valid: {why}")
}

fn kcp_sim_refusal(token: &str) -> Option<String> {
    ContinueToken::decode(token).err().map(|e| e.message)
}

#[test]
fn a_continue_token_of_json_go_cannot_read_is_refused_in_gos_words() {
    let inputs = inputs();
    let Some(answers) = ask(&inputs) else { return };
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let differ: Vec<String> = inputs
        .iter()
        .zip(&answers)
        .filter_map(|(input, go)| {
            let why = go["token_error"].as_str()?;
            let token = engine.encode(input);
            let we_say = kcp_sim_refusal(&token);
            (we_say.as_deref() != Some(refusal(why).as_str()))
                .then(|| format!("{input:?}: kcp-sim {we_say:?}, Go {why:?}"))
        })
        .collect();
    assert_none_differ(&differ, inputs.len());
}

#[test]
fn a_continue_token_that_is_not_base64_is_refused_at_the_byte_go_names() {
    let inputs: Vec<Vec<u8>> = inputs()
        .into_iter()
        .filter(|i| std::str::from_utf8(i).is_ok())
        .collect();
    let Some(answers) = ask(&inputs) else { return };
    let differ: Vec<String> = inputs
        .iter()
        .zip(&answers)
        .filter_map(|(input, go)| {
            let why = go["base64_error"].as_str()?;
            let token = std::str::from_utf8(input).unwrap();
            let we_say = kcp_sim_refusal(token);
            (we_say.as_deref() != Some(refusal(why).as_str()))
                .then(|| format!("{token:?}: kcp-sim {we_say:?}, Go {why:?}"))
        })
        .collect();
    assert_none_differ(&differ, inputs.len());
}
