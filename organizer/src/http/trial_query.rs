//! What the trials table asks of a run's evaluations: a filter such as
//! `velocity > 10, amplitude_0 <= 0.5, state = done`, a column to sort by
//! and a page, answered on the server so a run of thousands of walks sends
//! one page of rows ([`PAGE_ROWS`]).
//!
//! A filter is conditions joined by `,` or `and`, all of which a row must
//! meet. A condition is `column op value`: numeric columns (the value, each
//! parameter, `evaluation`, `seconds`) take `<`, `<=`, `>`, `>=`, `=`,
//! `!=` against a number in the units the table shows (cm/s for a
//! velocity); text columns (`host`, `state`, `error`) take `=`, `!=` and
//! `~` (contains). A condition without an operator is text the row must
//! contain anywhere, as the old page's filter box was.

/// Rows the table serves per page.
pub(super) const PAGE_ROWS: usize = 100;

/// A column of the trials table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Column {
    /// The evaluation's number (held-out re-walks after the run's own).
    Evaluation,
    /// Its value: a gait's velocity, a bare problem's objective.
    Value,
    /// The free parameter at this index.
    Parameter(usize),
    Host,
    Seconds,
    State,
    Error,
}

impl Column {
    fn numeric(self) -> bool {
        matches!(
            self,
            Column::Evaluation | Column::Value | Column::Parameter(_) | Column::Seconds
        )
    }

    /// The name a query and a sort link use.
    pub(super) fn name(self, parameters: &[String]) -> String {
        match self {
            Column::Evaluation => "evaluation".into(),
            Column::Value => "value".into(),
            Column::Parameter(i) => parameters[i].clone(),
            Column::Host => "host".into(),
            Column::Seconds => "seconds".into(),
            Column::State => "state".into(),
            Column::Error => "error".into(),
        }
    }

    /// The column called `name`: a parameter by its own name, the value as
    /// `value`, `velocity` or `fitness`.
    pub(super) fn named(name: &str, parameters: &[String]) -> Option<Column> {
        if let Some(i) = parameters.iter().position(|p| p == name) {
            return Some(Column::Parameter(i));
        }
        Some(match name.to_ascii_lowercase().as_str() {
            "evaluation" => Column::Evaluation,
            "value" | "velocity" | "fitness" => Column::Value,
            "host" => Column::Host,
            "seconds" => Column::Seconds,
            "state" => Column::State,
            "error" => Column::Error,
            _ => return None,
        })
    }
}

/// One row as the query sees it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    /// The evaluation's number from 1 (held-out re-walks after).
    pub evaluation: f64,
    /// In the table's units; `None` before the job is done or when it failed.
    pub value: Option<f64>,
    pub parameters: Vec<f64>,
    pub host: String,
    pub seconds: Option<f64>,
    pub state: String,
    pub error: String,
    /// Everything the row shows, for a condition without an operator.
    pub text: String,
}

impl Row {
    fn number(&self, column: Column) -> Option<f64> {
        match column {
            Column::Evaluation => Some(self.evaluation),
            Column::Value => self.value,
            Column::Parameter(i) => self.parameters.get(i).copied(),
            Column::Seconds => self.seconds,
            Column::Host | Column::State | Column::Error => None,
        }
    }

    fn text(&self, column: Column) -> &str {
        match column {
            Column::Host => &self.host,
            Column::State => &self.state,
            Column::Error => &self.error,
            _ => "",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Contains,
}

impl Op {
    /// Longest first, so `<=` is not read as `<`.
    const SPELLINGS: [(&'static str, Op); 8] = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
        ("~", Op::Contains),
    ];
}

#[derive(Debug, Clone, PartialEq)]
enum Condition {
    Number {
        column: Column,
        op: Op,
        value: f64,
    },
    Text {
        column: Column,
        op: Op,
        value: String,
    },
    Anywhere(String),
}

impl Condition {
    fn holds(&self, row: &Row) -> bool {
        match self {
            Condition::Number { column, op, value } => {
                // A row without the number (a walk still queued) meets no
                // numeric condition.
                row.number(*column).is_some_and(|x| match op {
                    Op::Lt => x < *value,
                    Op::Le => x <= *value,
                    Op::Gt => x > *value,
                    Op::Ge => x >= *value,
                    Op::Eq => x == *value,
                    Op::Ne => x != *value,
                    Op::Contains => false,
                })
            }
            Condition::Text { column, op, value } => {
                let text = row.text(*column).to_lowercase();
                match op {
                    Op::Eq => text == *value,
                    Op::Ne => text != *value,
                    _ => text.contains(value.as_str()),
                }
            }
            Condition::Anywhere(text) => row.text.to_lowercase().contains(text.as_str()),
        }
    }
}

/// A filter the table could not read, said so the user can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum QueryError {
    #[error("`{condition}`: no column `{column}` (columns: {known})")]
    UnknownColumn {
        condition: String,
        column: String,
        known: String,
    },
    #[error("`{condition}`: `{value}` is not a number")]
    NotANumber { condition: String, value: String },
    #[error("`{condition}`: {column} is text: compare it with =, != or ~ (contains)")]
    TextOrder { condition: String, column: String },
    #[error("`{condition}`: nothing to compare with")]
    NoValue { condition: String },
    #[error("sort: no column `{0}`")]
    UnknownSort(String),
}

/// A parsed filter: every condition must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Filter(Vec<Condition>);

impl Filter {
    /// Reads `text` against a table whose parameters are `parameters`.
    pub(super) fn parse(text: &str, parameters: &[String]) -> Result<Filter, QueryError> {
        let mut conditions = Vec::new();
        for part in split_conditions(text) {
            conditions.push(condition(part, parameters)?);
        }
        Ok(Filter(conditions))
    }

    pub(super) fn holds(&self, row: &Row) -> bool {
        self.0.iter().all(|c| c.holds(row))
    }
}

/// The conditions of `text`: split at commas and at the word `and`.
fn split_conditions(text: &str) -> Vec<&str> {
    text.split(',')
        .flat_map(|part| split_word(part, "and"))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// `text` split at `word` standing alone (case-insensitive).
fn split_word<'a>(text: &'a str, word: &str) -> Vec<&'a str> {
    let lower = text.to_ascii_lowercase();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find(word) {
        let at = from + found;
        let end = at + word.len();
        let alone = (at == 0 || lower.as_bytes()[at - 1].is_ascii_whitespace())
            && (end == lower.len() || lower.as_bytes()[end].is_ascii_whitespace());
        if alone {
            parts.push(&text[start..at]);
            start = end;
        }
        from = end;
    }
    parts.push(&text[start..]);
    parts
}

fn condition(text: &str, parameters: &[String]) -> Result<Condition, QueryError> {
    let Some((at, spelling, op)) = Op::SPELLINGS
        .iter()
        .filter_map(|&(spelling, op)| text.find(spelling).map(|at| (at, spelling, op)))
        // The leftmost operator; at one place the longest spelling.
        .min_by_key(|&(at, spelling, _)| (at, std::cmp::Reverse(spelling.len())))
    else {
        return Ok(Condition::Anywhere(text.to_lowercase()));
    };
    let name = text[..at].trim();
    let value = text[at + spelling.len()..].trim();
    let column = Column::named(name, parameters).ok_or_else(|| {
        let mut known = vec![
            "evaluation",
            "value (velocity)",
            "host",
            "seconds",
            "state",
            "error",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        known.extend(parameters.iter().cloned());
        QueryError::UnknownColumn {
            condition: text.to_owned(),
            column: name.to_owned(),
            known: known.join(", "),
        }
    })?;
    if value.is_empty() {
        return Err(QueryError::NoValue {
            condition: text.to_owned(),
        });
    }
    if column.numeric() {
        let number: f64 = value.parse().map_err(|_| QueryError::NotANumber {
            condition: text.to_owned(),
            value: value.to_owned(),
        })?;
        if op == Op::Contains || !number.is_finite() {
            return Err(QueryError::NotANumber {
                condition: text.to_owned(),
                value: value.to_owned(),
            });
        }
        return Ok(Condition::Number {
            column,
            op,
            value: number,
        });
    }
    if !matches!(op, Op::Eq | Op::Ne | Op::Contains) {
        return Err(QueryError::TextOrder {
            condition: text.to_owned(),
            column: column.name(parameters),
        });
    }
    Ok(Condition::Text {
        column,
        op,
        value: value.to_lowercase(),
    })
}

/// A sort: by which column, best (largest) first or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sort {
    pub column: Column,
    pub descending: bool,
}

impl Sort {
    /// By evaluation, first to last: the order the run walked them.
    pub(super) const WALKED: Sort = Sort {
        column: Column::Evaluation,
        descending: false,
    };

    pub(super) fn parse(
        column: &str,
        descending: bool,
        parameters: &[String],
    ) -> Result<Sort, QueryError> {
        if column.is_empty() {
            return Ok(Sort::WALKED);
        }
        let column = Column::named(column, parameters)
            .ok_or_else(|| QueryError::UnknownSort(column.to_owned()))?;
        Ok(Sort { column, descending })
    }

    /// Sorts `rows`; rows without the number go last either way, ties keep
    /// the walked order.
    pub(super) fn apply<T>(self, rows: &mut [T], row: impl Fn(&T) -> &Row) {
        rows.sort_by(|a, b| {
            let (a, b) = (row(a), row(b));
            let order = if self.column.numeric() {
                match (a.number(self.column), b.number(self.column)) {
                    (Some(x), Some(y)) => {
                        let o = x.total_cmp(&y);
                        if self.descending { o.reverse() } else { o }
                    }
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
            } else {
                let o = a.text(self.column).cmp(b.text(self.column));
                if self.descending { o.reverse() } else { o }
            };
            order.then(a.evaluation.total_cmp(&b.evaluation))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["amplitude_0".into(), "phase_0_1".into()]
    }

    fn row(evaluation: f64, value: Option<f64>, amplitude: f64, state: &str) -> Row {
        Row {
            evaluation,
            value,
            parameters: vec![amplitude, 0.5],
            host: "sim-1".into(),
            seconds: Some(1.5),
            state: state.into(),
            error: String::new(),
            text: format!("{evaluation} {state} held-out"),
        }
    }

    #[test]
    fn numbers_compare_as_numbers_and_every_condition_must_hold() {
        let filter = Filter::parse("velocity > 10, amplitude_0<=0.5", &names()).unwrap();
        assert!(filter.holds(&row(1.0, Some(12.0), 0.5, "done")));
        // 9.5 > 10 is false although "9.5" > "10" as text.
        assert!(!filter.holds(&row(2.0, Some(9.5), 0.1, "done")));
        assert!(!filter.holds(&row(3.0, Some(12.0), 0.7, "done")));
        assert!(
            !filter.holds(&row(4.0, None, 0.1, "queued")),
            "no value meets no condition"
        );
        let both = Filter::parse("value >= 10 and state = done", &names()).unwrap();
        assert!(both.holds(&row(1.0, Some(10.0), 0.0, "Done")));
        assert!(!both.holds(&row(1.0, Some(10.0), 0.0, "failed")));
        let bare = Filter::parse("held-out", &names()).unwrap();
        assert!(bare.holds(&row(1.0, None, 0.0, "done")));
        assert!(
            Filter::parse("", &names())
                .unwrap()
                .holds(&row(1.0, None, 0.0, "x"))
        );
    }

    #[test]
    fn a_filter_that_cannot_be_read_says_why() {
        let err = |q: &str| Filter::parse(q, &names()).unwrap_err().to_string();
        assert!(
            err("speed > 3").contains("no column `speed`"),
            "{}",
            err("speed > 3")
        );
        assert!(err("speed > 3").contains("amplitude_0"));
        assert_eq!(
            err("velocity > fast"),
            "`velocity > fast`: `fast` is not a number"
        );
        assert!(err("state < done").contains("state is text"));
        assert!(err("velocity >").contains("nothing to compare with"));
    }

    #[test]
    fn sorting_puts_numbers_in_order_and_missing_values_last() {
        let mut rows = vec![
            row(1.0, Some(2.0), 0.0, "done"),
            row(2.0, None, 0.0, "queued"),
            row(3.0, Some(10.0), 0.0, "done"),
            row(4.0, Some(9.0), 0.0, "done"),
        ];
        let best_first = Sort::parse("velocity", true, &names()).unwrap();
        best_first.apply(&mut rows, |r| r);
        let order: Vec<f64> = rows.iter().map(|r| r.evaluation).collect();
        assert_eq!(order, [3.0, 4.0, 1.0, 2.0]);
        Sort::parse("velocity", false, &names())
            .unwrap()
            .apply(&mut rows, |r| r);
        let order: Vec<f64> = rows.iter().map(|r| r.evaluation).collect();
        assert_eq!(order, [1.0, 4.0, 3.0, 2.0]);
        assert!(Sort::parse("nope", false, &names()).is_err());
    }

    #[test]
    fn and_inside_a_word_does_not_split() {
        let filter = Filter::parse("host ~ sandbox", &names()).unwrap();
        let mut r = row(1.0, None, 0.0, "done");
        r.host = "sandbox-2".into();
        assert!(filter.holds(&r));
    }
}
