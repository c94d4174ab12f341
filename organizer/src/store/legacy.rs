//! Job results as versions 1 to 4 wrote them, typed: every result was a
//! walk's fields, `velocity` holding a walk's m/s, an expression's value or
//! a plan's fitness, and a plan travelled as its text form. Read once by
//! the migration to version 5, which rewrites each as the kind it was.

use rusqlite::{Transaction, params};
use serde::Deserialize;
use yamor_core::evaluation::{Outcome, PlanResult, Walk};
use yamor_core::plan::LatticePlan;

/// A result as versions 1–4 stored it: a walk's fields, and a plan's
/// figures beside the plan's text.
#[derive(Deserialize)]
struct Stored {
    #[serde(flatten)]
    walk: Walk,
    #[serde(default)]
    plan: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The result `text` stored for a job: a plan when it carries one, a value
/// when the job walked no gait (an expression or named objective), a walk
/// otherwise.
fn typed(text: &str, walked_a_gait: bool) -> Result<Outcome, String> {
    let stored: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(match stored.plan {
        Some(mut figures) => {
            // The figures read as today's; the plan's text into structure.
            let text = match figures.remove("plan") {
                Some(serde_json::Value::String(text)) => text,
                _ => String::new(),
            };
            let mut plan: PlanResult = serde_json::from_value(serde_json::Value::Object(figures))
                .map_err(|e| e.to_string())?;
            if !text.is_empty() {
                plan.plan = LatticePlan::parse(&text).map_err(|e| e.to_string())?;
            }
            plan.wall = stored.walk.wall;
            Outcome::Plan(plan)
        }
        None if !walked_a_gait => Outcome::value(stored.walk.velocity, stored.walk.wall),
        None => Outcome::Walk(stored.walk),
    })
}

/// Rewrites every stored result as its kind and names the fitness column
/// for what it holds. Results already typed (a version-0 file migrates
/// straight to today's form) are left as they are.
// The text becomes `StoreError::Migration { why }`: a String is all it needs.
pub(super) fn type_outcomes(tx: &Transaction<'_>) -> Result<(), String> {
    let sql = |e: rusqlite::Error| e.to_string();
    let has_velocity: bool = tx
        .query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('jobs') WHERE name = 'velocity'",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    if has_velocity {
        tx.execute_batch("ALTER TABLE jobs RENAME COLUMN velocity TO fitness")
            .map_err(sql)?;
    }
    let rows: Vec<(i64, bool, String)> = tx
        .prepare("SELECT id, gait_xml IS NOT NULL, outcome FROM jobs WHERE outcome IS NOT NULL")
        .map_err(sql)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(sql)?
        .collect::<Result<_, _>>()
        .map_err(sql)?;
    let mut update = tx
        .prepare("UPDATE jobs SET outcome = ?2, fitness = ?3 WHERE id = ?1")
        .map_err(sql)?;
    for (id, walked_a_gait, text) in rows {
        if serde_json::from_str::<Outcome>(&text).is_ok() {
            continue;
        }
        let outcome = typed(&text, walked_a_gait).map_err(|e| format!("job {id}'s result: {e}"))?;
        let json = serde_json::to_string(&outcome).map_err(|e| e.to_string())?;
        update
            .execute(params![id, json, outcome.fitness()])
            .map_err(sql)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_old_result_becomes_the_kind_it_was() {
        let walk = r#"{"velocity":0.2,"turn_deg_s":1.5,"engine":"rapier","wall":{"secs":1,"nanos":0},"plan":null}"#;
        let Outcome::Walk(w) = typed(walk, true).unwrap() else {
            panic!("a walk")
        };
        assert_eq!(
            (w.velocity, w.turn_deg_s, w.engine.as_str()),
            (0.2, 1.5, "rapier")
        );

        let value = r#"{"velocity":-3.5,"wall":{"secs":0,"nanos":5}}"#;
        assert_eq!(
            typed(value, false).unwrap(),
            Outcome::value(-3.5, Duration::from_nanos(5))
        );

        let plan = r#"{"velocity":-9,"plan":{"built":true,"moves":9,"rounds":3,"seeds":1,"filled":1,"plan":"world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2 0,0,3\nmove 1 1 step 0,1,0 0,1,1 0,0,1 0,0,0\n"}}"#;
        let Outcome::Plan(p) = typed(plan, false).unwrap() else {
            panic!("a plan")
        };
        assert_eq!(
            (p.moves, p.plan.steps.len(), p.plan.size),
            (9, 1, [5, 5, 5])
        );
        assert_eq!(Outcome::Plan(p).fitness(), -9.0);

        // A plan that cannot be read stops the migration rather than
        // dropping the plan.
        let broken = r#"{"velocity":-9,"plan":{"plan":"teleport"}}"#;
        assert!(typed(broken, false).unwrap_err().contains("line 1"));
    }
}
