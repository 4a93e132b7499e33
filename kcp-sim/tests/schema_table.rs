//! The structural schema of a CRD applied to custom resources, case by case: valid objects,
//! invalid ones with kube-apiserver's field path and message, defaulted and pruned ones, and
//! `x-kubernetes-validations` CEL rules (transition rules, `messageExpression`, `fieldPath`,
//! `reason`). Each case compiles a CRD whose `spec` has the given schema and writes an object
//! through [`kcp_sim::schema::admit`], the function every create, update, patch and apply of a
//! custom resource goes through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kcp_sim::resource::type_of_crd;
use kcp_sim::schema::{self, Part};
use serde_json::{Value, json};

/// What a case expects.
enum Expect {
    /// Accepted, stored as written.
    Valid,
    /// Accepted, with this `spec` (defaulted or pruned).
    Spec(Value),
    /// Refused: `(field, message)` of every cause, in order.
    Invalid(&'static [(&'static str, &'static str)]),
}

struct Case {
    name: &'static str,
    schema: Value,
    spec: Value,
    /// The stored `spec` for an update (transition rules, ratcheting).
    old: Option<Value>,
    expect: Expect,
}

fn case(name: &'static str, schema: Value, spec: Value, expect: Expect) -> Case {
    Case {
        name,
        schema,
        spec,
        old: None,
        expect,
    }
}

fn update(name: &'static str, schema: Value, old: Value, spec: Value, expect: Expect) -> Case {
    Case {
        name,
        schema,
        spec,
        old: Some(old),
        expect,
    }
}

fn crd(spec_schema: &Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io", "uid": "u1", "generation": 1},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": spec_schema}}}}]}})
}

fn object(spec: &Value) -> Value {
    json!({"apiVersion": "example.io/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

fn obj(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn int() -> Value {
    json!({"type": "integer"})
}

fn run(c: &Case) {
    let crd = crd(&c.schema);
    let schemas = schema::compile_crd(&crd)
        .unwrap_or_else(|e| panic!("case {:?}: the CRD is refused: {}", c.name, e.message));
    let rt = type_of_crd(&crd).unwrap();
    let mut written = object(&c.spec);
    let old = c.old.as_ref().map(object);
    let result = schema::admit(&schemas, &rt, &mut written, old.as_ref(), Part::Main);
    match (&c.expect, result) {
        (Expect::Valid, Ok(())) => assert_eq!(written["spec"], c.spec, "case {:?}", c.name),
        (Expect::Spec(want), Ok(())) => assert_eq!(&written["spec"], want, "case {:?}", c.name),
        (Expect::Invalid(want), Err(e)) => {
            assert_eq!((e.code, e.reason), (422, "Invalid"), "case {:?}", c.name);
            let got: Vec<(String, String)> = e
                .causes()
                .iter()
                .map(|c| (c.field.clone(), c.message.clone()))
                .collect();
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(f, m)| (f.to_string(), m.to_string()))
                .collect();
            assert_eq!(got, want, "case {:?}: {}", c.name, e.message);
        }
        (Expect::Invalid(_), Ok(())) => panic!("case {:?}: accepted {written}", c.name),
        (_, Err(e)) => panic!("case {:?}: refused: {}", c.name, e.message),
    }
}

fn schema_cases() -> Vec<Case> {
    use Expect::*;
    vec![
        // types
        case(
            "a string is a string",
            obj(json!({"a": string()})),
            json!({"a": "x"}),
            Valid,
        ),
        case(
            "a number is not a string",
            obj(json!({"a": string()})),
            json!({"a": 1}),
            Invalid(&[(
                "spec.a",
                "Invalid value: \"integer\": spec.a in body must be of type string: \"integer\"",
            )]),
        ),
        case(
            "an integer accepts 1",
            obj(json!({"n": int()})),
            json!({"n": 1}),
            Valid,
        ),
        case(
            "an integer accepts 1.0",
            obj(json!({"n": int()})),
            json!({"n": 1.0}),
            Valid,
        ),
        case(
            "an integer refuses 1.5",
            obj(json!({"n": int()})),
            json!({"n": 1.5}),
            Invalid(&[(
                "spec.n",
                "Invalid value: \"number\": spec.n in body must be of type integer: \"number\"",
            )]),
        ),
        case(
            "a number accepts an integer",
            obj(json!({"f": {"type": "number"}})),
            json!({"f": 2}),
            Valid,
        ),
        case(
            "a boolean refuses a string",
            obj(json!({"b": {"type": "boolean"}})),
            json!({"b": "true"}),
            Invalid(&[(
                "spec.b",
                "Invalid value: \"string\": spec.b in body must be of type boolean: \"string\"",
            )]),
        ),
        case(
            "an array refuses an object",
            obj(json!({"l": {"type": "array", "items": string()}})),
            json!({"l": {}}),
            Invalid(&[(
                "spec.l",
                "Invalid value: \"object\": spec.l in body must be of type array: \"object\"",
            )]),
        ),
        case(
            "an object refuses a list",
            obj(json!({"o": obj(json!({}))})),
            json!({"o": []}),
            Invalid(&[(
                "spec.o",
                "Invalid value: \"array\": spec.o in body must be of type object: \"array\"",
            )]),
        ),
        case(
            "array items are typed",
            obj(json!({"l": {"type": "array", "items": int()}})),
            json!({"l": [1, "two"]}),
            Invalid(&[(
                "spec.l[1]",
                "Invalid value: \"string\": spec.l[1] in body must be of type integer: \"string\"",
            )]),
        ),
        // required
        case(
            "a required field present",
            json!({"type": "object", "required": ["a"], "properties": {"a": string()}}),
            json!({"a": "x"}),
            Valid,
        ),
        case(
            "a required field missing",
            json!({"type": "object", "required": ["a"], "properties": {"a": string()}}),
            json!({}),
            Invalid(&[("spec.a", "Required value")]),
        ),
        case(
            "nested required fields are named by path",
            obj(
                json!({"o": {"type": "object", "required": ["x", "y"], "properties": {"x": int(), "y": int()}}}),
            ),
            json!({"o": {"x": 1}}),
            Invalid(&[("spec.o.y", "Required value")]),
        ),
        // enum
        case(
            "an enum value",
            obj(json!({"m": {"type": "string", "enum": ["a", "b"]}})),
            json!({"m": "a"}),
            Valid,
        ),
        case(
            "a value outside the enum",
            obj(json!({"m": {"type": "string", "enum": ["a", "b"]}})),
            json!({"m": "x"}),
            Invalid(&[(
                "spec.m",
                "Unsupported value: \"x\": supported values: \"a\", \"b\"",
            )]),
        ),
        case(
            "an integer enum quotes its values",
            obj(json!({"n": {"type": "integer", "enum": [1, 2]}})),
            json!({"n": 3}),
            Invalid(&[(
                "spec.n",
                "Unsupported value: 3: supported values: \"1\", \"2\"",
            )]),
        ),
        // strings
        case(
            "maxLength counts characters",
            obj(json!({"s": {"type": "string", "maxLength": 3}})),
            json!({"s": "äöü"}),
            Valid,
        ),
        case(
            "a string over maxLength",
            obj(json!({"s": {"type": "string", "maxLength": 64}})),
            json!({"s": "x".repeat(65)}),
            Invalid(&[("spec.s", "Too long: may not be more than 64 bytes")]),
        ),
        case(
            "maxLength of one says byte",
            obj(json!({"s": {"type": "string", "maxLength": 1}})),
            json!({"s": "xy"}),
            Invalid(&[("spec.s", "Too long: may not be more than 1 byte")]),
        ),
        case(
            "a string under minLength",
            obj(json!({"s": {"type": "string", "minLength": 3}})),
            json!({"s": "ab"}),
            Invalid(&[(
                "spec.s",
                "Invalid value: \"ab\": spec.s in body should be at least 3 chars long",
            )]),
        ),
        case(
            "a string matching its pattern",
            obj(json!({"s": {"type": "string", "pattern": "^[a-z]+$"}})),
            json!({"s": "abc"}),
            Valid,
        ),
        case(
            "a string not matching its pattern",
            obj(json!({"s": {"type": "string", "pattern": "^[a-z]+$"}})),
            json!({"s": "ABC"}),
            Invalid(&[(
                "spec.s",
                "Invalid value: \"ABC\": spec.s in body should match '^[a-z]+$'",
            )]),
        ),
        // formats
        case(
            "a valid date",
            obj(json!({"d": {"type": "string", "format": "date"}})),
            json!({"d": "2024-01-31"}),
            Valid,
        ),
        case(
            "an invalid date",
            obj(json!({"d": {"type": "string", "format": "date"}})),
            json!({"d": "31.01.2024"}),
            Invalid(&[(
                "spec.d",
                "Invalid value: \"31.01.2024\": spec.d in body must be of type date: \"31.01.2024\"",
            )]),
        ),
        case(
            "an invalid date-time",
            obj(json!({"t": {"type": "string", "format": "date-time"}})),
            json!({"t": "noon"}),
            Invalid(&[(
                "spec.t",
                "Invalid value: \"noon\": spec.t in body must be of type date-time: \"noon\"",
            )]),
        ),
        case(
            "an invalid uuid",
            obj(json!({"u": {"type": "string", "format": "uuid"}})),
            json!({"u": "not-a-uuid"}),
            Invalid(&[(
                "spec.u",
                "Invalid value: \"not-a-uuid\": spec.u in body must be of type uuid: \"not-a-uuid\"",
            )]),
        ),
        case(
            "an invalid ipv4",
            obj(json!({"ip": {"type": "string", "format": "ipv4"}})),
            json!({"ip": "10.0.0.300"}),
            Invalid(&[(
                "spec.ip",
                "Invalid value: \"10.0.0.300\": spec.ip in body must be of type ipv4: \"10.0.0.300\"",
            )]),
        ),
        case(
            "int32 is not checked beyond the type",
            obj(json!({"n": {"type": "integer", "format": "int32"}})),
            json!({"n": 5_000_000_000_i64}),
            Valid,
        ),
        case(
            "an unknown format accepts any string",
            obj(json!({"s": {"type": "string", "format": "color"}})),
            json!({"s": "blue-ish"}),
            Valid,
        ),
        // numbers
        case(
            "a number at its maximum",
            obj(json!({"n": {"type": "integer", "maximum": 10}})),
            json!({"n": 10}),
            Valid,
        ),
        case(
            "a number above its maximum",
            obj(json!({"n": {"type": "integer", "maximum": 10}})),
            json!({"n": 11}),
            Invalid(&[(
                "spec.n",
                "Invalid value: 11: spec.n in body should be less than or equal to 10",
            )]),
        ),
        case(
            "a number at an exclusive maximum",
            obj(json!({"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}})),
            json!({"n": 10}),
            Invalid(&[(
                "spec.n",
                "Invalid value: 10: spec.n in body should be less than 10",
            )]),
        ),
        case(
            "a number below its minimum",
            obj(json!({"n": {"type": "integer", "minimum": 1}})),
            json!({"n": 0}),
            Invalid(&[(
                "spec.n",
                "Invalid value: 0: spec.n in body should be greater than or equal to 1",
            )]),
        ),
        case(
            "a number at an exclusive minimum",
            obj(json!({"n": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true}})),
            json!({"n": 0.5}),
            Invalid(&[(
                "spec.n",
                "Invalid value: 0.5: spec.n in body should be greater than 0.5",
            )]),
        ),
        case(
            "a multiple of its factor",
            obj(json!({"n": {"type": "integer", "multipleOf": 5}})),
            json!({"n": 15}),
            Valid,
        ),
        case(
            "not a multiple of its factor",
            obj(json!({"n": {"type": "integer", "multipleOf": 5}})),
            json!({"n": 7}),
            Invalid(&[(
                "spec.n",
                "Invalid value: 7: spec.n in body should be a multiple of 5",
            )]),
        ),
        // arrays
        case(
            "too many items",
            obj(json!({"l": {"type": "array", "maxItems": 2, "items": int()}})),
            json!({"l": [1, 2, 3]}),
            Invalid(&[("spec.l", "Too many: 3: must have at most 2 items")]),
        ),
        case(
            "too few items",
            obj(json!({"l": {"type": "array", "minItems": 2, "items": int()}})),
            json!({"l": [1]}),
            Invalid(&[(
                "spec.l",
                "Invalid value: 1: spec.l in body should have at least 2 items",
            )]),
        ),
        case(
            "a set without repeats",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "set", "items": string()}}),
            ),
            json!({"l": ["a", "b"]}),
            Valid,
        ),
        case(
            "a set with a repeat",
            obj(
                json!({"l": {"type": "array", "x-kubernetes-list-type": "set", "items": string()}}),
            ),
            json!({"l": ["a", "b", "a"]}),
            Invalid(&[("spec.l[2]", "Duplicate value: \"a\"")]),
        ),
        case(
            "a list map with distinct keys",
            obj(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                "items": obj(json!({"port": int(), "name": string()}))}}),
            ),
            json!({"ports": [{"port": 80}, {"port": 443}]}),
            Valid,
        ),
        case(
            "a list map with a repeated key",
            obj(
                json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                "items": obj(json!({"port": int(), "name": string()}))}}),
            ),
            json!({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]}),
            Invalid(&[("spec.ports[1]", "Duplicate value: {\"port\":80}")]),
        ),
        // objects and maps
        case(
            "too many properties",
            obj(
                json!({"m": {"type": "object", "maxProperties": 1, "additionalProperties": string()}}),
            ),
            json!({"m": {"a": "1", "b": "2"}}),
            Invalid(&[("spec.m", "Too many: 2: must have at most 1 item")]),
        ),
        case(
            "too few properties",
            obj(
                json!({"m": {"type": "object", "minProperties": 1, "additionalProperties": string()}}),
            ),
            json!({"m": {}}),
            Invalid(&[(
                "spec.m",
                "Invalid value: 0: spec.m in body should have at least 1 properties",
            )]),
        ),
        case(
            "map values are validated",
            obj(json!({"m": {"type": "object", "additionalProperties": int()}})),
            json!({"m": {"a": 1, "b": "x"}}),
            Invalid(&[(
                "spec.m.b",
                "Invalid value: \"string\": spec.m.b in body must be of type integer: \"string\"",
            )]),
        ),
        case(
            "map keys are kept",
            obj(json!({"m": {"type": "object", "additionalProperties": string()}})),
            json!({"m": {"any": "x"}}),
            Valid,
        ),
        // nullable
        case(
            "null in a nullable field is kept",
            obj(json!({"s": {"type": "string", "nullable": true}})),
            json!({"s": null}),
            Valid,
        ),
        case(
            "null in a non-nullable field is dropped",
            obj(json!({"s": string(), "t": string()})),
            json!({"s": null, "t": "x"}),
            Spec(json!({"t": "x"})),
        ),
        case(
            "null in a list of non-nullable items is refused",
            obj(json!({"l": {"type": "array", "items": string()}})),
            json!({"l": [null]}),
            Invalid(&[(
                "spec.l[0]",
                "Invalid value: \"null\": spec.l[0] in body must be of type string: \"null\"",
            )]),
        ),
        // int-or-string
        case(
            "int-or-string takes an integer",
            obj(json!({"p": {"x-kubernetes-int-or-string": true}})),
            json!({"p": 8080}),
            Valid,
        ),
        case(
            "int-or-string takes a string",
            obj(json!({"p": {"x-kubernetes-int-or-string": true}})),
            json!({"p": "http"}),
            Valid,
        ),
        case(
            "int-or-string refuses a boolean",
            obj(json!({"p": {"x-kubernetes-int-or-string": true}})),
            json!({"p": true}),
            Invalid(&[(
                "spec.p",
                "Invalid value: \"boolean\": spec.p in body must be of type integer,string: \"boolean\"",
            )]),
        ),
        // embedded resources
        case(
            "an embedded resource with apiVersion and kind",
            obj(
                json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            json!({"t": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}}),
            Valid,
        ),
        case(
            "an embedded resource needs a kind and apiVersion",
            obj(
                json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
            ),
            json!({"t": {"data": {}}}),
            Invalid(&[
                ("spec.t.kind", "Required value: must not be empty"),
                ("spec.t.apiVersion", "Required value: must not be empty"),
            ]),
        ),
        case(
            "an embedded resource's metadata is cut to ObjectMeta",
            obj(
                json!({"t": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"data": {"type": "object", "additionalProperties": string()}}}}),
            ),
            json!({"t": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "junk": 1}, "data": {"a": "b"}, "extra": 1}}),
            Spec(
                json!({"t": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}}),
            ),
        ),
        // defaulting
        case(
            "an absent field gets its default",
            obj(json!({"r": {"type": "integer", "default": 1}})),
            json!({}),
            Spec(json!({"r": 1})),
        ),
        case(
            "a present field keeps its value",
            obj(json!({"r": {"type": "integer", "default": 1}})),
            json!({"r": 3}),
            Valid,
        ),
        case(
            "null in a non-nullable defaulted field is defaulted",
            obj(json!({"r": {"type": "integer", "default": 1}})),
            json!({"r": null}),
            Spec(json!({"r": 1})),
        ),
        case(
            "null in a nullable defaulted field stays null",
            obj(json!({"r": {"type": "integer", "nullable": true, "default": 1}})),
            json!({"r": null}),
            Valid,
        ),
        case(
            "defaults apply inside objects that are present",
            obj(json!({"o": obj(json!({"a": {"type": "string", "default": "x"}}))})),
            json!({"o": {}}),
            Spec(json!({"o": {"a": "x"}})),
        ),
        case(
            "defaults do not create absent objects",
            obj(json!({"o": obj(json!({"a": {"type": "string", "default": "x"}}))})),
            json!({}),
            Valid,
        ),
        case(
            "a defaulted object gets the defaults inside it",
            obj(
                json!({"o": {"type": "object", "default": {}, "properties": {"a": {"type": "string", "default": "x"}}}}),
            ),
            json!({}),
            Spec(json!({"o": {"a": "x"}})),
        ),
        case(
            "list items get defaults",
            obj(
                json!({"l": {"type": "array", "items": obj(json!({"p": {"type": "string", "default": "TCP"}}))}}),
            ),
            json!({"l": [{}, {"p": "UDP"}]}),
            Spec(json!({"l": [{"p": "TCP"}, {"p": "UDP"}]})),
        ),
        case(
            "a default is validated like a written value",
            obj(json!({"m": {"type": "string", "default": "a", "enum": ["a", "b"]}})),
            json!({}),
            Spec(json!({"m": "a"})),
        ),
        // pruning
        case(
            "unknown fields are pruned",
            obj(json!({"a": string()})),
            json!({"a": "x", "b": "y"}),
            Spec(json!({"a": "x"})),
        ),
        case(
            "unknown nested fields are pruned",
            obj(json!({"o": obj(json!({"a": string()}))})),
            json!({"o": {"a": "x", "zz": 1}}),
            Spec(json!({"o": {"a": "x"}})),
        ),
        case(
            "preserve-unknown-fields keeps unknown fields",
            obj(json!({"o": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})),
            json!({"o": {"anything": [1, {"deep": true}]}}),
            Valid,
        ),
        case(
            "preserve-unknown-fields still prunes inside known fields",
            obj(
                json!({"o": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"k": obj(json!({"a": string()}))}}}),
            ),
            json!({"o": {"free": 1, "k": {"a": "x", "b": "y"}}}),
            Spec(json!({"o": {"free": 1, "k": {"a": "x"}}})),
        ),
        case(
            "pruned fields are not validated",
            obj(json!({"a": string()})),
            json!({"a": "x", "n": "not a number"}),
            Spec(json!({"a": "x"})),
        ),
        // several errors at once
        case(
            "every error is reported",
            json!({"type": "object", "required": ["name"], "properties": {"name": string(), "size": {"type": "integer", "maximum": 3}}}),
            json!({"size": 4}),
            Invalid(&[
                (
                    "spec.size",
                    "Invalid value: 4: spec.size in body should be less than or equal to 3",
                ),
                ("spec.name", "Required value"),
            ]),
        ),
        // ratcheting
        update(
            "an unchanged invalid value is not re-validated on update",
            obj(json!({"s": {"type": "string", "maxLength": 2}, "t": string()})),
            json!({"s": "long", "t": "a"}),
            json!({"s": "long", "t": "b"}),
            Valid,
        ),
        update(
            "a changed invalid value is refused on update",
            obj(json!({"s": {"type": "string", "maxLength": 2}})),
            json!({"s": "ab"}),
            json!({"s": "abc"}),
            Invalid(&[("spec.s", "Too long: may not be more than 2 bytes")]),
        ),
    ]
}

fn rule(r: &str) -> Value {
    json!({"rule": r})
}

fn with_rules(mut schema: Value, rules: Value) -> Value {
    schema["x-kubernetes-validations"] = rules;
    schema
}

fn cel_cases() -> Vec<Case> {
    use Expect::*;
    // Bounded, as kube wants a schema whose rules read lists and strings to be (its cost
    // budget refuses rules over unbounded ones).
    let short = || json!({"type": "string", "maxLength": 64});
    let counts = || {
        obj(
            json!({"min": int(), "max": int(), "name": short(), "tags": {"type": "array", "maxItems": 16, "items": short()}}),
        )
    };
    vec![
        case(
            "a rule that holds",
            with_rules(counts(), json!([rule("self.min <= self.max")])),
            json!({"min": 1, "max": 2}),
            Valid,
        ),
        case(
            "a date-time, a duration and a byte field are a timestamp, a duration and bytes",
            with_rules(
                obj(json!({
                    "when": {"type": "string", "format": "date-time"},
                    "span": {"type": "string", "format": "duration"},
                    "raw": {"type": "string", "format": "byte"}})),
                json!([rule(
                    "self.when + self.span > timestamp('2024-01-01T00:00:00Z') && self.raw == b'abc'"
                )]),
            ),
            json!({"when": "2024-01-01T00:00:00Z", "span": "1m30s", "raw": "YWJj"}),
            Valid,
        ),
        case(
            "a rule reads fields under their escaped names",
            with_rules(
                obj(json!({"namespace": string(), "my-field": string()})),
                json!([rule("self.__namespace__ == self.my__dash__field")]),
            ),
            json!({"namespace": "a", "my-field": "b"}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": failed rule: self.__namespace__ == self.my__dash__field",
            )]),
        ),
        case(
            "a rule that fails names the rule",
            with_rules(counts(), json!([rule("self.min <= self.max")])),
            json!({"min": 3, "max": 2}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": failed rule: self.min <= self.max",
            )]),
        ),
        case(
            "a rule's message replaces the rule",
            with_rules(
                counts(),
                json!([{"rule": "self.min <= self.max", "message": "min must not exceed max"}]),
            ),
            json!({"min": 3, "max": 2}),
            Invalid(&[("spec", "Invalid value: \"object\": min must not exceed max")]),
        ),
        case(
            "messageExpression builds the message",
            with_rules(
                counts(),
                json!([{"rule": "self.min <= self.max", "messageExpression": "'min %d exceeds max %d'.format([self.min, self.max])"}]),
            ),
            json!({"min": 3, "max": 2}),
            Invalid(&[("spec", "Invalid value: \"object\": min 3 exceeds max 2")]),
        ),
        case(
            "a messageExpression that fails falls back to the message",
            with_rules(
                counts(),
                json!([{"rule": "self.min <= self.max", "message": "bad range", "messageExpression": "string(self.min / (self.max - self.max))"}]),
            ),
            json!({"min": 3, "max": 2}),
            Invalid(&[("spec", "Invalid value: \"object\": bad range")]),
        ),
        case(
            "fieldPath moves the error to the field",
            with_rules(
                counts(),
                json!([{"rule": "self.min <= self.max", "fieldPath": ".max", "message": "too small"}]),
            ),
            json!({"min": 3, "max": 2}),
            Invalid(&[("spec.max", "Invalid value: \"object\": too small")]),
        ),
        case(
            "reason Forbidden makes a forbidden error",
            with_rules(
                counts(),
                json!([{"rule": "!has(self.name)", "reason": "FieldValueForbidden", "message": "name may not be set"}]),
            ),
            json!({"name": "x"}),
            Invalid(&[("spec", "Forbidden: name may not be set")]),
        ),
        case(
            "reason Required makes a required error",
            with_rules(
                counts(),
                json!([{"rule": "has(self.name)", "reason": "FieldValueRequired", "message": "name is required", "fieldPath": ".name"}]),
            ),
            json!({}),
            Invalid(&[("spec.name", "Required value: name is required")]),
        ),
        case(
            "has() sees a present field",
            with_rules(counts(), json!([rule("has(self.name)")])),
            json!({"name": "x"}),
            Valid,
        ),
        case(
            "a rule on a scalar shows its schema type (as kube-apiserver does)",
            obj(json!({"name": with_rules(string(), json!([rule("self.startsWith('app-')")]))})),
            json!({"name": "web"}),
            Invalid(&[(
                "spec.name",
                "Invalid value: \"string\": failed rule: self.startsWith('app-')",
            )]),
        ),
        case(
            "size() counts a string",
            obj(json!({"name": with_rules(string(), json!([rule("size(self) <= 5")]))})),
            json!({"name": "abcdef"}),
            Invalid(&[(
                "spec.name",
                "Invalid value: \"string\": failed rule: size(self) <= 5",
            )]),
        ),
        case(
            "all() over a list",
            with_rules(
                counts(),
                json!([rule("self.tags.all(t, t.matches('^[a-z]+$'))")]),
            ),
            json!({"tags": ["a", "b"]}),
            Valid,
        ),
        case(
            "all() over a list that fails",
            with_rules(
                counts(),
                json!([rule("self.tags.all(t, t.matches('^[a-z]+$'))")]),
            ),
            json!({"tags": ["a", "B"]}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": failed rule: self.tags.all(t, t.matches('^[a-z]+$'))",
            )]),
        ),
        case(
            "exists() over a list",
            with_rules(counts(), json!([rule("self.tags.exists(t, t == 'x')")])),
            json!({"tags": ["a", "x"]}),
            Valid,
        ),
        case(
            "exists_one() over a list",
            with_rules(counts(), json!([rule("self.tags.exists_one(t, t == 'x')")])),
            json!({"tags": ["x", "x"]}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": failed rule: self.tags.exists_one(t, t == 'x')",
            )]),
        ),
        case(
            "lowerAscii() and endsWith()",
            obj(
                json!({"name": with_rules(string(), json!([rule("self.lowerAscii().endsWith('-prod')")]))}),
            ),
            json!({"name": "WEB-PROD"}),
            Valid,
        ),
        case(
            "isSorted() of the Kubernetes list library",
            with_rules(counts(), json!([rule("self.tags.isSorted()")])),
            json!({"tags": ["b", "a"]}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": failed rule: self.tags.isSorted()",
            )]),
        ),
        case(
            "rules of list items run per item",
            obj(
                json!({"tags": {"type": "array", "items": with_rules(string(), json!([rule("self != 'bad'")]))}}),
            ),
            json!({"tags": ["ok", "bad"]}),
            Invalid(&[(
                "spec.tags[1]",
                "Invalid value: \"string\": failed rule: self != 'bad'",
            )]),
        ),
        case(
            "rules of map values name the key",
            obj(
                json!({"m": {"type": "object", "additionalProperties": with_rules(int(), json!([rule("self >= 0")]))}}),
            ),
            json!({"m": {"a": -1}}),
            Invalid(&[(
                "spec.m[a]",
                "Invalid value: \"integer\": failed rule: self >= 0",
            )]),
        ),
        case(
            "rules of absent fields do not run",
            obj(json!({"name": with_rules(string(), json!([rule("self == 'never'")]))})),
            json!({}),
            Valid,
        ),
        case(
            "a transition rule does not run on create",
            obj(
                json!({"name": with_rules(string(), json!([{"rule": "self == oldSelf", "message": "name is immutable"}]))}),
            ),
            json!({"name": "a"}),
            Valid,
        ),
        update(
            "a transition rule holds when the value is kept",
            obj(
                json!({"name": with_rules(string(), json!([{"rule": "self == oldSelf", "message": "name is immutable"}]))}),
            ),
            json!({"name": "a"}),
            json!({"name": "a"}),
            Valid,
        ),
        update(
            "a transition rule refuses a change",
            obj(
                json!({"name": with_rules(string(), json!([{"rule": "self == oldSelf", "message": "name is immutable"}]))}),
            ),
            json!({"name": "a"}),
            json!({"name": "b"}),
            Invalid(&[("spec.name", "Invalid value: \"string\": name is immutable")]),
        ),
        update(
            "a transition rule compares old and new numbers",
            with_rules(
                counts(),
                json!([{"rule": "self.max >= oldSelf.max", "messageExpression": "'max may only grow, was %d'.format([oldSelf.max])"}]),
            ),
            json!({"max": 5}),
            json!({"max": 4}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": max may only grow, was 5",
            )]),
        ),
        update(
            "a transition rule on a field added by the update does not run",
            obj(json!({"name": with_rules(string(), json!([rule("self == oldSelf")]))})),
            json!({}),
            json!({"name": "new"}),
            Valid,
        ),
        update(
            "a rule without oldSelf is ratcheted on an unchanged value",
            obj(
                json!({"name": with_rules(string(), json!([rule("self.size() < 3")])), "other": string()}),
            ),
            json!({"name": "long", "other": "a"}),
            json!({"name": "long", "other": "b"}),
            Valid,
        ),
        case(
            "a rule that errors reports the error",
            with_rules(counts(), json!([rule("self.min / self.max > 0")])),
            json!({"min": 1, "max": 0}),
            Invalid(&[(
                "spec",
                "Invalid value: \"object\": division by zero evaluating rule: self.min / self.max > 0",
            )]),
        ),
    ]
}

#[test]
fn the_schema_table_holds() {
    let cases = schema_cases();
    assert!(cases.len() >= 60, "only {} schema cases", cases.len());
    for c in &cases {
        run(c);
    }
}

#[test]
fn the_cel_rule_table_holds() {
    let cases = cel_cases();
    assert!(cases.len() >= 20, "only {} CEL cases", cases.len());
    for c in &cases {
        run(c);
    }
}

fn refusal(schema: Value) -> Vec<(String, String)> {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}});
    let e = schema::compile_crd(&crd).expect_err("the CRD should be refused");
    assert_eq!(e.code, 422);
    e.causes()
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

const ROOT: &str = "spec.validation.openAPIV3Schema";

#[test]
fn a_field_without_a_type_is_not_structural() {
    let causes = refusal(json!({"type": "object", "properties": {"spec": {"properties": {}}}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.properties[spec].type"),
            "Required value: must not be empty for specified object fields".to_string()
        )]
    );
}

#[test]
fn a_root_without_a_type_is_not_structural() {
    let causes = refusal(json!({"properties": {}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.type"),
            "Required value: must not be empty at the root".to_string()
        )]
    );
}

#[test]
fn an_array_without_items_is_not_structural() {
    let causes = refusal(json!({"type": "object", "properties": {"l": {"type": "array"}}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.properties[l].items"),
            "Required value: must be specified".to_string()
        )]
    );
}

#[test]
fn a_type_inside_any_of_is_not_structural_unless_it_is_int_or_string() {
    let causes = refusal(json!({"type": "object", "properties": {
        "a": {"type": "string", "allOf": [{"type": "string"}]},
        "p": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.properties[a].allOf[0].type"),
            "Forbidden: must be empty to be structural".to_string()
        )]
    );
}

#[test]
fn root_metadata_may_only_constrain_name_and_generate_name() {
    let causes = refusal(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.properties[metadata]"),
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified".to_string()
        )]
    );
}

#[test]
fn a_rule_that_does_not_compile_refuses_the_crd() {
    let causes =
        refusal(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]}));
    assert_eq!(causes.len(), 1);
    assert_eq!(
        causes[0].0,
        format!("{ROOT}.x-kubernetes-validations[0].rule")
    );
    assert!(
        causes[0]
            .1
            .starts_with("Invalid value: {\"Rule\":\"self.a \\u003e\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:9: Syntax error: "),
        "{}",
        causes[0].1
    );
}

#[test]
fn unique_items_are_refused() {
    let causes = refusal(json!({"type": "object", "properties": {
        "l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}));
    assert_eq!(
        causes,
        [(
            format!("{ROOT}.properties[l].uniqueItems"),
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".to_string()
        )]
    );
}

#[test]
fn status_writes_validate_only_the_status() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io", "uid": "u1", "generation": 1},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {"phase": {"type": "string", "enum": ["Ready"]}}}}}}}]}});
    let schemas = schema::compile_crd(&crd).unwrap();
    let rt = type_of_crd(&crd).unwrap();
    // The stored spec misses a required field: a status write does not care.
    let old = json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    let mut ok = old.clone();
    ok["status"] = json!({"phase": "Ready", "junk": 1});
    schema::admit(&schemas, &rt, &mut ok, Some(&old), Part::Status).unwrap();
    assert_eq!(ok["status"], json!({"phase": "Ready"}));
    let mut bad = old.clone();
    bad["status"] = json!({"phase": "Broken"});
    let e = schema::admit(&schemas, &rt, &mut bad, Some(&old), Part::Status).unwrap_err();
    assert_eq!(e.causes()[0].field, "status.phase");
}
