//! Each message was printed by apimachinery v0.34.2's `labels.Parse` for the same selector
//! (kcp-core's `selector_differential` test holds the two to each other on many more).

use super::parse;

#[track_caller]
fn refused(selector: &str, message: &str) {
    assert_eq!(
        parse(selector).map(|_| ()),
        Err(message.to_string()),
        "{selector}"
    );
}

#[test]
fn a_set_without_its_parenthesis_names_what_follows_the_operator() {
    // As kube-apiserver v1.34.2 answered (the conformance case lists/a-bad-label-selector-is-refused).
    refused(
        "a in b",
        "unable to parse requirement: found 'b' expected: '('",
    );
}

#[test]
fn an_operator_that_is_none_lists_the_operators() {
    refused(
        "a b",
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    );
    refused(
        "a=(b)",
        "unable to parse requirement: found '(', expected: identifier",
    );
}

#[test]
fn an_empty_requirement_between_commas_is_refused() {
    refused("a,,b", "found ',', expected: identifier after ','");
}

#[test]
fn a_key_that_is_no_qualified_name_is_an_invalid_value_without_a_path() {
    refused(
        "K$=1",
        "unable to parse requirement: <nil>: Invalid value: \"K$\": name part must consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
         character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
}

#[test]
fn a_bad_value_is_named_by_its_index_and_key() {
    refused(
        "a=b$",
        "unable to parse requirement: values[0][a]: Invalid value: \"b$\": a valid label must be \
         an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start \
         and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
         regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
    refused(
        "a>x",
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, \
         the value must be an integer",
    );
}

#[test]
fn a_bound_is_also_a_label_value() {
    refused(
        "f<-2",
        "unable to parse requirement: values[0][f]: Invalid value: \"-2\": a valid label must be \
         an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start \
         and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
         regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
}

#[test]
fn every_operator_and_the_empty_value_parse() {
    for selector in [
        "a in (b,c),!d,e==f",
        "x in (in)",
        "a in ()",
        "a=",
        "a in (,b)",
        "a notin (b),c!=d,e>1,f<2",
    ] {
        assert!(parse(selector).is_ok(), "{selector}");
    }
}
