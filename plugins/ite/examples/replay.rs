//! Offline replays of an adaptation: `ite` over a map (`map.json` of a
//! map-elites run), each walk of an elite drawn from a table of that
//! elite's walks on the damaged robot (bench/adapt/truth.py), many seeds
//! in milliseconds. For choosing settings and seeing a map's ceiling; the
//! bench's figures come from real runs with held-out starts.
//!
//!     cargo run --release -p yamor-ite --example replay -- \
//!         --map map.json --truth truth.json --damage stuck:5 --seeds 20 \
//!         --set length=0.2 --set stop=0.9
//!
//! Per damage: the map's ceiling there (its elite with the best mean over
//! the table's walks), and over the seeds the answer's table mean as a
//! share of the ceiling (median and worst), the walks used, and the walk
//! that first walked the answer.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Parser;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_ite::ItePlugin;
use yamor_optimizer_api::map::{Grid, Prior, PriorElite};
use yamor_optimizer_api::{Bound, Fitness, Plugin, Settings, Space, Step};

#[derive(Parser)]
struct Args {
    /// map.json of a map-elites run.
    #[arg(long)]
    map: PathBuf,
    /// truth.json of bench/adapt/truth.py over the same map.
    #[arg(long)]
    truth: PathBuf,
    /// Damages of the table (default: every one).
    #[arg(long)]
    damage: Vec<String>,
    /// Seeds replayed per damage.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Walks per adaptation.
    #[arg(long, default_value_t = 20)]
    budget: u64,
    /// ite settings, name=value.
    #[arg(long = "set")]
    set: Vec<String>,
}

fn prior_of(map: &serde_json::Value) -> anyhow::Result<(Prior, Vec<String>)> {
    let grid = Grid::parse(map["grid"].as_str().unwrap_or_default())?;
    let mut names = Vec::new();
    let mut elites = Vec::new();
    for c in map["cells"].as_array().into_iter().flatten() {
        let x: Vec<f64> = c["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p["value"].as_f64().unwrap_or(f64::NAN))
            .collect();
        if names.is_empty() {
            names = c["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
                .collect();
        }
        let value = c["held_out"]["mean"]
            .as_f64()
            .or_else(|| c["fitness"].as_f64())
            .unwrap_or(f64::NAN);
        elites.push(PriorElite {
            cell: c["cell"].as_u64().unwrap_or_default() as usize,
            x,
            descriptors: serde_json::from_value(c["descriptors"].clone())?,
            value,
        });
    }
    Ok((
        Prior {
            run: map["run"].as_u64().unwrap_or_default(),
            axes: grid.axes().to_vec(),
            elites,
        },
        names,
    ))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let map: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args.map)?)?;
    let truth: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args.truth)?)?;
    let (prior, names) = prior_of(&map)?;
    let bounds: Vec<Bound> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (lo, hi) = prior
                .elites
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), e| {
                    (lo.min(e.x[i]), hi.max(e.x[i]))
                });
            Bound::new(n.clone(), lo, hi.max(lo + 1e-9))
        })
        .collect();
    let start = bounds.iter().map(|b| b.min).collect();
    let space = Space::new(bounds, start)?;
    let plugin = ItePlugin;
    let settings = Settings::parse(
        &plugin.info().settings,
        args.set
            .iter()
            .map(|kv| kv.split_once('=').unwrap_or((kv, ""))),
    )?;
    let damages: Vec<String> = if args.damage.is_empty() {
        truth["damages"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    } else {
        args.damage.clone()
    };
    println!(
        "{:<14} {:>9} {:>8} {:>8} {:>7} {:>7} {:>8}",
        "damage", "ceiling", "median%", "worst%", "≥90%", "walks", "answer@"
    );
    for damage in &damages {
        let table = &truth["damages"][damage];
        // Each elite's walks there, by its place in the prior.
        let walks: Vec<Vec<f64>> = prior
            .elites
            .iter()
            .map(|e| {
                table[e.cell.to_string()]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.as_f64().unwrap_or(0.0))
                    .collect()
            })
            .collect();
        let mean = |i: usize| walks[i].iter().sum::<f64>() / walks[i].len().max(1) as f64;
        let ceiling = (0..walks.len()).map(mean).fold(f64::MIN, f64::max);
        let by_x: HashMap<Vec<u64>, usize> = prior
            .elites
            .iter()
            .enumerate()
            .map(|(i, e)| (space.clamp(&e.x).iter().map(|v| v.to_bits()).collect(), i))
            .collect();
        let (mut shares, mut used, mut first) = (Vec::new(), Vec::new(), Vec::new());
        for seed in 1..=args.seeds {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut ite =
                plugin.create_from(&space, &settings, seed, Some(args.budget), Some(&prior))?;
            let mut walked = Vec::new();
            while (walked.len() as u64) < args.budget {
                let Step::Evaluate(batch) = ite.ask() else {
                    break;
                };
                for c in batch {
                    let bits: Vec<u64> = c.x.iter().map(|v| v.to_bits()).collect();
                    let i = *by_x.get(&bits).ok_or_else(|| {
                        anyhow::anyhow!("ite proposed a point that is no elite of the map")
                    })?;
                    let w = &walks[i];
                    let v = if w.is_empty() {
                        0.0
                    } else {
                        w[rng.random_range(0..w.len())]
                    };
                    walked.push(i);
                    ite.tell(c.tag, Fitness::Value(v));
                }
            }
            let answer = ite
                .recommendation()
                .and_then(|x| by_x.get(&x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()))
                .copied();
            let share = answer.map_or(0.0, |i| mean(i) / ceiling);
            shares.push(share);
            used.push(walked.len() as f64);
            first.push(
                answer
                    .and_then(|a| walked.iter().position(|w| *w == a))
                    .map_or(f64::NAN, |p| p as f64 + 1.0),
            );
        }
        let worst = shares.iter().copied().fold(f64::MAX, f64::min);
        let hits = shares.iter().filter(|s| **s >= 0.9).count();
        println!(
            "{:<14} {:>7.2}cm {:>7.0}% {:>7.0}% {:>4}/{:<2} {:>7.1} {:>8.1}",
            damage,
            ceiling * 100.0,
            median(&mut shares) * 100.0,
            worst * 100.0,
            hits,
            args.seeds,
            median(&mut used),
            median(&mut first)
        );
    }
    Ok(())
}
