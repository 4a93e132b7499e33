//! Strings written as Go's `fmt` writes them with `%q`, for messages kube-apiserver builds that
//! way.

/// A string slice as Go's `%q` writes it: `["a" "b"]` (each item a Go-quoted string, one blank
/// between items).
pub fn quoted_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_is_quoted_item_by_item_between_brackets() {
        assert_eq!(
            quoted_list(&["https://kubernetes.default.svc".to_string()]),
            "[\"https://kubernetes.default.svc\"]"
        );
        assert_eq!(quoted_list(&["a".into(), "b".into()]), "[\"a\" \"b\"]");
        assert_eq!(quoted_list(&[]), "[]");
    }
}
