//! The Powell plugin behind a line protocol on stdin/stdout, so a benchmark
//! script can run it on exactly the functions, starts and budgets it gives a
//! peer in-process (bench/shifted/run.py), with no cluster in between.
//!
//! Per run, the script writes one line
//! `RUN <budget> <seed> <lo_0> <hi_0> <start_0> ... ; name=value ...`
//! (a bound triple per dimension, then the plugin's settings). The example
//! answers `ASK <k>` and k lines of coordinates, the script one line of k
//! fitness values (to be maximised), until the search finishes or `budget`
//! evaluations were asked; then it writes `END`. The pair `told_budget=no`
//! (not a plugin setting) creates the search without a budget, as a
//! runtime that only stops asking would. Numbers are written with
//! Rust's shortest round-trip form, so both sides see the same bits.

use std::io::{self, BufRead, BufWriter, Write};

use yamor_optimizer_api::{Bound, Fitness, Plugin, Settings, Space, Step};
use yamor_powell::Powell;

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = BufWriter::new(io::stdout().lock());
    while let Some(line) = lines.next() {
        let line = line?;
        let Some(rest) = line.strip_prefix("RUN ") else {
            continue;
        };
        let (numbers, pairs) = rest.split_once(';').unwrap_or((rest, ""));
        let numbers: Vec<f64> = numbers
            .split_whitespace()
            .map(|t| t.parse().expect("a number"))
            .collect();
        let (budget, seed) = (numbers[0] as u64, numbers[1] as u64);
        let triples = &numbers[2..];
        let bounds = triples
            .chunks(3)
            .enumerate()
            .map(|(i, c)| Bound::new(format!("x{i}"), c[0], c[1]))
            .collect();
        let start = triples.chunks(3).map(|c| c[2]).collect();
        let space = Space::new(bounds, start).expect("a valid space");
        let specs = Powell.info().settings;
        // `told_budget=no`: the search is not told the budget (a runtime
        // that only stops asking), so it ends after its `restarts`.
        let told = !pairs.split_whitespace().any(|p| p == "told_budget=no");
        let pairs = pairs
            .split_whitespace()
            .filter(|p| !p.starts_with("told_budget="));
        let given = Settings::parse_pairs(&specs, pairs).expect("settings");
        let settings = Settings::resolve(&specs, &given).expect("settings");
        let mut opt = Powell
            .create(&space, &settings, seed, told.then_some(budget))
            .expect("an optimizer");
        let mut asked = 0u64;
        while asked < budget {
            let Step::Evaluate(candidates) = opt.ask() else {
                break;
            };
            writeln!(out, "ASK {}", candidates.len())?;
            for c in &candidates {
                let coords: Vec<String> = c.x.iter().map(|v| format!("{v:?}")).collect();
                writeln!(out, "{}", coords.join(" "))?;
            }
            out.flush()?;
            let answer = lines.next().expect("values")?;
            let values: Vec<f64> = answer
                .split_whitespace()
                .map(|t| t.parse().expect("a value"))
                .collect();
            asked += candidates.len() as u64;
            for (c, v) in candidates.iter().zip(values) {
                opt.tell(c.tag, Fitness::Value(v));
            }
        }
        writeln!(out, "END")?;
        out.flush()?;
    }
    Ok(())
}
