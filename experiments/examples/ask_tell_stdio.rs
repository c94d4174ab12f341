//! Drives one of yamor's optimizer plugins over JSON lines on stdin/stdout,
//! with the organizer's budget rule (proposals beyond the budget are never
//! evaluated; results are told in proposal order). A development tool for
//! tuning optimizers against Python test suites (cocoex, scipy) without a
//! cluster; benchmarks that count go through hosts (bench/bbob).
//!
//! Protocol, one JSON value per line:
//! - in, first: `{"optimizer": "powell", "settings": {"variant": "classic"},
//!   "bounds": [[lo, hi], ...], "start": [...], "seed": 1, "budget": 2000}`
//!   (`start` optional: the box centre);
//! - out: `{"ask": [[x...], ...]}`; in: `[fitness, ...]` (maximised; `null`
//!   for a failed evaluation);
//! - out, last: `{"done": evaluations, "finished": true|false}`.
//!
//! `cargo run --release -p yamor-experiments --example ask_tell_stdio`

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use yamor_optimizer_api::{Bound, Fitness, Settings, Space, Step};

fn main() -> Result<()> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout().lock();
    let header: Value = serde_json::from_str(&lines.next().context("no header line")??)?;
    let name = header["optimizer"].as_str().context("optimizer")?;
    let plugin = yamor_local::optimizers()
        .into_iter()
        .find(|p| p.info().name == name)
        .with_context(|| format!("unknown optimizer {name}"))?;
    let bounds: Vec<Bound> = header["bounds"]
        .as_array()
        .context("bounds")?
        .iter()
        .enumerate()
        .map(|(i, b)| {
            Bound::new(
                format!("x{i}"),
                b[0].as_f64().unwrap_or(f64::NAN),
                b[1].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    let start = match header["start"].as_array() {
        Some(s) => s.iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect(),
        None => bounds.iter().map(|b| 0.5 * (b.min + b.max)).collect(),
    };
    let space = Space::new(bounds, start)?;
    let specs = plugin.info().settings;
    let mut given = BTreeMap::new();
    if let Some(map) = header["settings"].as_object() {
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let spec = specs
                .iter()
                .find(|s| &s.name == k)
                .with_context(|| format!("unknown setting {k}"))?;
            given.insert(k.clone(), spec.parse(&text)?);
        }
    }
    let settings = Settings::resolve(&specs, &given)?;
    let seed = header["seed"].as_u64().unwrap_or(1);
    let budget = header["budget"].as_u64().context("budget")?;
    let mut optimizer = plugin.create(&space, &settings, seed, Some(budget))?;
    let (mut done, mut finished) = (0u64, false);
    while done < budget {
        let candidates = match optimizer.ask() {
            Step::Finished => {
                finished = true;
                break;
            }
            Step::Wait => bail!("{name} waits with nothing outstanding"),
            Step::Evaluate(c) => c,
        };
        let take = candidates.len().min((budget - done) as usize);
        let batch = &candidates[..take];
        let xs: Vec<&Vec<f64>> = batch.iter().map(|c| &c.x).collect();
        writeln!(out, "{}", json!({ "ask": xs }))?;
        out.flush()?;
        let reply: Vec<Option<f64>> =
            serde_json::from_str(&lines.next().context("stdin closed")??)?;
        if reply.len() != take {
            bail!("asked {take} values, got {}", reply.len());
        }
        for (c, v) in batch.iter().zip(reply) {
            optimizer.tell(c.tag, v.map_or(Fitness::Failed, Fitness::Value));
        }
        done += take as u64;
    }
    writeln!(out, "{}", json!({ "done": done, "finished": finished }))?;
    Ok(())
}
