//! What a case's differences mean, and the table a user reads: per area, how many cases are
//! equal, fixed (equal since kcp-sim was mended), listed (every difference known and reasoned)
//! and unlisted (a difference nobody wrote down: the suite fails).

use std::collections::BTreeMap;

use super::compare::{Difference, Listed};

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// kcp-sim answered as the real server.
    Equal,
    /// Equal, after a fix this case showed was needed.
    Fixed,
    /// Every difference is listed.
    Listed,
    /// These differences are listed nowhere.
    Unlisted(Vec<Difference>),
}

impl Verdict {
    /// The verdict on `differences` of case `id` (`fixed`: the case records a fix).
    pub fn of(id: &str, fixed: bool, differences: &[Difference], listed: &[Listed]) -> Verdict {
        let unlisted: Vec<Difference> = differences
            .iter()
            .filter(|d| !listed.iter().any(|l| l.covers(id, d)))
            .cloned()
            .collect();
        match (differences.is_empty(), unlisted.is_empty(), fixed) {
            (true, _, false) => Verdict::Equal,
            (true, _, true) => Verdict::Fixed,
            (false, true, _) => Verdict::Listed,
            (false, false, _) => Verdict::Unlisted(unlisted),
        }
    }
}

/// Listings that cover none of `differences` (case id, its differences): they are stale.
pub fn stale<'a>(
    listed: &'a [Listed],
    differences: &[(String, Vec<Difference>)],
) -> Vec<&'a Listed> {
    listed
        .iter()
        .filter(|l| {
            !differences
                .iter()
                .any(|(id, found)| found.iter().any(|d| l.covers(id, d)))
        })
        .collect()
}

/// One row of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Cases run.
    pub cases: usize,
    /// Equal at once.
    pub equal: usize,
    /// Equal after a fix.
    pub fixed: usize,
    /// Differences all listed.
    pub listed: usize,
    /// Differences not listed.
    pub unlisted: usize,
}

/// The conformance table, by area.
#[derive(Debug, Clone, Default)]
pub struct Table {
    rows: BTreeMap<String, Row>,
}

impl Table {
    /// Counts `verdict` under `area`.
    pub fn add(&mut self, area: &str, verdict: &Verdict) {
        let row = self.rows.entry(area.to_string()).or_default();
        row.cases += 1;
        match verdict {
            Verdict::Equal => row.equal += 1,
            Verdict::Fixed => row.fixed += 1,
            Verdict::Listed => row.listed += 1,
            Verdict::Unlisted(_) => row.unlisted += 1,
        }
    }

    /// The sum of every row.
    pub fn total(&self) -> Row {
        self.rows.values().fold(Row::default(), |t, r| Row {
            cases: t.cases + r.cases,
            equal: t.equal + r.equal,
            fixed: t.fixed + r.fixed,
            listed: t.listed + r.listed,
            unlisted: t.unlisted + r.unlisted,
        })
    }
}

impl std::fmt::Display for Table {
    /// A Markdown table (README's form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "| area | cases | equal | fixed | listed | unlisted |")?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|")?;
        let total = self.total();
        let label = "**total**".to_string();
        let rows = self.rows.iter().chain(std::iter::once((&label, &total)));
        for (area, r) in rows {
            writeln!(
                f,
                "| {area} | {} | {} | {} | {} | {} |",
                r.cases, r.equal, r.fixed, r.listed, r.unlisted
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn difference(path: &str) -> Difference {
        Difference {
            path: path.into(),
            sim: None,
            real: Some(serde_json::json!(1)),
        }
    }

    fn listing(path: &str) -> Listed {
        Listed {
            case: "a/b".into(),
            path: path.into(),
            reason: "because".into(),
        }
    }

    #[test]
    fn a_case_is_listed_only_when_every_difference_is() {
        let found = [difference("/1/status"), difference("/2/body")];
        assert_eq!(
            Verdict::of("a/b", false, &found, &[listing("/1")]),
            Verdict::Unlisted(vec![difference("/2/body")])
        );
        assert_eq!(
            Verdict::of("a/b", false, &found, &[listing("/1"), listing("/2")]),
            Verdict::Listed
        );
        assert_eq!(Verdict::of("a/b", true, &[], &[]), Verdict::Fixed);
        assert_eq!(Verdict::of("a/b", false, &[], &[]), Verdict::Equal);
    }

    #[test]
    fn a_listing_that_covers_nothing_is_stale() {
        let listed = [listing("/1"), listing("/9")];
        let found = vec![("a/b".to_string(), vec![difference("/1/status")])];
        assert_eq!(stale(&listed, &found), vec![&listed[1]]);
    }

    #[test]
    fn the_table_counts_each_area_and_the_total() {
        let mut table = Table::default();
        table.add("CRUD", &Verdict::Equal);
        table.add("CRUD", &Verdict::Listed);
        table.add("watch", &Verdict::Fixed);
        let text = table.to_string();
        assert!(text.contains("| CRUD | 2 | 1 | 0 | 1 | 0 |"), "{text}");
        assert!(text.contains("| **total** | 3 | 1 | 1 | 1 | 0 |"), "{text}");
    }
}
