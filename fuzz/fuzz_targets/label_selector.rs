//! kcp-core's label selectors, as a list's `labelSelector`, a PublishedResource selector or an
//! agent label selector is read: any string is parsed (nothing may panic), and a selector that
//! parses is written back in the string syntax, which must parse to the same selector and
//! select the same labels.
#![no_main]

use kcp_core::selector::LabelSelector;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fuzz_target!(|input: (&str, Vec<(String, String)>)| {
    let (text, labels) = input;
    let Ok(selector) = LabelSelector::parse(text) else {
        return;
    };
    let written = selector.to_string();
    let again = LabelSelector::parse(&written)
        .unwrap_or_else(|e| panic!("{text:?} is written {written:?}, which does not parse: {e}"));
    assert_eq!(again, selector, "{text:?} written as {written:?}");
    let labels: Map<String, Value> = labels.into_iter().map(|(k, v)| (k, json!(v))).collect();
    assert_eq!(
        again.matches(Some(&labels)),
        selector.matches(Some(&labels)),
        "{text:?} written as {written:?}"
    );
});
