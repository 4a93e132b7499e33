//! The CEL type a schema node has in its rules, as apiserver's `SchemaDeclType` derives it:
//! objects with properties are objects with those (escaped) fields, objects with an
//! `additionalProperties` schema are `map(string, V)`, arrays are `list(T)`, strings of the
//! formats `byte`, `duration`, `date` and `date-time` are `bytes`, `duration` and `timestamp`,
//! `x-kubernetes-int-or-string` is `dyn`, and the root of a resource (and of an embedded one)
//! always has `apiVersion`, `kind` and `metadata.name`/`metadata.generateName`.
//!
//! The checker of rules ([`super::cel_check`]) reads these types; they are written as cel-go's
//! `FormatCELType` writes them in its messages.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::structural::{Additional, Node, Type};

/// A CEL type, as far as the checker tells types apart; `Dyn` is anything (never refused).
#[derive(Debug, Clone, PartialEq)]
pub enum CelType {
    /// `dyn`: a value whose type is known only when the rule runs.
    Dyn,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `duration`.
    Duration,
    /// `timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<CelType>),
    /// `map(K, V)`.
    Map(Box<CelType>, Box<CelType>),
    /// An object of the schema: its type name and its fields by their escaped names.
    Object(Arc<Object>),
    /// `type(T)`: the value of a type name (`int`, `string`, ...) or of `type(x)`.
    Type(Box<CelType>),
    /// `!error!`: what a part of the rule that did not check has; like `dyn`, it passes every
    /// check.
    Error,
    /// The result of a function whose overloads the checker does not resolve: like `dyn`,
    /// but taken for whatever the rule needs it to be.
    Unknown,
    /// A library's own type (`kubernetes.Quantity`, `net.IP`, ...), by its name.
    Opaque(&'static str),
    /// `optional_type(T)`.
    Optional(Box<CelType>),
}

/// An object type of a schema.
#[derive(Debug, PartialEq)]
pub struct Object {
    /// Its name: the rule's node is `selfType<n>`, a field below it `<parent>.<field>`, a
    /// list's items `<list>.@idx` and a map's values `<map>.@elem`, as kube names them.
    pub name: String,
    /// Its fields by their escaped names.
    pub fields: BTreeMap<String, CelType>,
}

impl CelType {
    /// `list(T)`.
    pub fn list(t: CelType) -> Self {
        Self::List(Box::new(t))
    }

    /// `map(K, V)`.
    pub fn map(k: CelType, v: CelType) -> Self {
        Self::Map(Box::new(k), Box::new(v))
    }

    /// The type of a schema node in rules, named `name` if it is an object; `None` where kube
    /// declares no type (a node without `type` that is not `x-kubernetes-int-or-string`, an
    /// array without items).
    pub fn of_node(node: &Node, resource_root: bool, name: &str) -> Option<CelType> {
        if node.int_or_string {
            return Some(Self::Dyn);
        }
        match node.type_? {
            Type::Array => {
                let items = node.items.as_deref()?;
                let item = Self::of_node(items, items.embedded, &format!("{name}.@idx"))?;
                Some(Self::list(item))
            }
            Type::Object => Self::of_object(node, resource_root, name),
            Type::String => Some(match node.checks.format.as_deref() {
                Some("byte") => Self::Bytes,
                Some("duration") => Self::Duration,
                Some("date" | "date-time") => Self::Timestamp,
                _ => Self::String,
            }),
            Type::Integer => Some(Self::Int),
            Type::Number => Some(Self::Double),
            Type::Boolean => Some(Self::Bool),
        }
    }

    fn of_object(node: &Node, resource_root: bool, name: &str) -> Option<CelType> {
        if let Some(Additional::Schema(values)) = &node.additional {
            let values = Self::of_node(values, values.embedded, &format!("{name}.@elem"))?;
            return Some(Self::map(Self::String, values));
        }
        let mut fields = BTreeMap::new();
        for (property_name, property) in &node.properties {
            let Some(escaped) = escape_field_name(property_name) else {
                continue;
            };
            let field_name = format!("{name}.{escaped}");
            if let Some(t) = Self::of_node(property, property.embedded, &field_name) {
                fields.insert(escaped, t);
            }
        }
        if resource_root {
            fields.insert("apiVersion".into(), Self::String);
            fields.insert("kind".into(), Self::String);
            let meta = ["name", "generateName"].map(|f| (f.to_string(), Self::String));
            let metadata = Object {
                name: format!("{name}.metadata"),
                fields: meta.into(),
            };
            fields.insert("metadata".into(), Self::Object(Arc::new(metadata)));
        }
        let object = Object {
            name: name.to_string(),
            fields,
        };
        Some(Self::Object(Arc::new(object)))
    }

    /// Whether the type is known only at run time (`dyn`), or is that of a part that did not
    /// check: either passes every check.
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Dyn | Self::Error | Self::Unknown)
    }
}

impl fmt::Display for CelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dyn => f.write_str("dyn"),
            Self::Null => f.write_str("null"),
            Self::Bool => f.write_str("bool"),
            Self::Int => f.write_str("int"),
            Self::Uint => f.write_str("uint"),
            Self::Double => f.write_str("double"),
            Self::String => f.write_str("string"),
            Self::Bytes => f.write_str("bytes"),
            Self::Duration => f.write_str("duration"),
            Self::Timestamp => f.write_str("timestamp"),
            Self::List(t) => write!(f, "list({t})"),
            Self::Map(k, v) => write!(f, "map({k}, {v})"),
            Self::Object(o) => f.write_str(&o.name),
            Self::Type(t) => write!(f, "type({t})"),
            Self::Error => f.write_str("!error!"),
            Self::Unknown => f.write_str("dyn"),
            Self::Opaque(name) => f.write_str(name),
            Self::Optional(t) => write!(f, "optional_type({t})"),
        }
    }
}

/// The words CEL reserves; a property of that name is a field named `__word__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as a CEL field name (apiserver's `Escape`): reserved words in double
/// underscores, `__`, `.`, `-` and `/` spelt `__underscores__`, `__dot__`, `__dash__` and
/// `__slash__`; `None` for a name no field can have (empty, starting with a digit, or with
/// another character outside `[a-zA-Z0-9_]`).
pub fn escape_field_name(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_kube_escapes_them() {
        assert_eq!(
            escape_field_name("namespace").as_deref(),
            Some("__namespace__")
        );
        assert_eq!(
            escape_field_name("a-b.c/d").as_deref(),
            Some("a__dash__b__dot__c__slash__d")
        );
        assert_eq!(
            escape_field_name("a__b").as_deref(),
            Some("a__underscores__b")
        );
        assert_eq!(
            escape_field_name("a___b").as_deref(),
            Some("a__underscores___b")
        );
        assert_eq!(escape_field_name("1a"), None);
        assert_eq!(escape_field_name("a b"), None);
    }

    #[test]
    fn types_are_written_as_cel_go_writes_them() {
        let t = CelType::map(CelType::String, CelType::list(CelType::Timestamp));
        assert_eq!(t.to_string(), "map(string, list(timestamp))");
        assert_eq!(
            CelType::Type(Box::new(CelType::Int)).to_string(),
            "type(int)"
        );
    }
}
