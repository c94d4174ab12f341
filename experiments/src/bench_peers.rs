//! `yamor bench-peers`: our optimizers on standard test functions through
//! expression hosts, for `bench/peers/run.py` to compare with scipy's Powell
//! and a PyPI PSO (issue 4, "Against peers").
//!
//! Every run goes the whole way a robot run goes (organizer, scheduler,
//! gRPC to expression hosts, SQLite), with the function negated because
//! yamor maximises. One CSV row per run: the evaluations it took to come
//! within the tolerance of the minimum, and the best value within the budget.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use yamor_core::evaluation::Objective;

use anyhow::{Result, bail};
use clap::Args;
use yamor_host_agent::expr::ExprBackend;
use yamor_organizer::model::{ParameterBound, Problem, RunSpec};

use yamor_local::{LocalCluster, evaluations};

#[derive(Args)]
pub struct BenchPeersArgs {
    /// Functions: sphere, rosenbrock, rastrigin.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "sphere,rosenbrock,rastrigin"
    )]
    functions: Vec<String>,
    /// Dimensions of each test function (repeatable).
    #[arg(long, value_delimiter = ',', default_value = "2,5,10")]
    dims: Vec<usize>,
    /// Methods: powell-classic, powell-interval, pso.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "powell-classic,powell-interval,pso"
    )]
    methods: Vec<String>,
    /// Evaluations per run.
    #[arg(long, default_value_t = 2000)]
    budget: u64,
    /// Seeds 1..=N per method.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// f − f* at which a run counts as solved.
    #[arg(long, default_value_t = 1e-3)]
    tolerance: f64,
    /// Expression hosts serving the evaluations.
    #[arg(long, default_value_t = 4)]
    hosts: usize,
    /// CSV output (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A bounded test function in `d` dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Function {
    Sphere,
    Rosenbrock,
    Rastrigin,
}

impl Function {
    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "sphere" => Function::Sphere,
            "rosenbrock" => Function::Rosenbrock,
            "rastrigin" => Function::Rastrigin,
            other => bail!("unknown function {other:?}: sphere, rosenbrock or rastrigin"),
        })
    }

    /// The usual bounds: ±5.12 (sphere, Rastrigin), ±2.048 (Rosenbrock).
    #[must_use]
    pub fn bound(self) -> f64 {
        match self {
            Function::Rosenbrock => 2.048,
            _ => 5.12,
        }
    }

    /// The fixed start of every method that takes one: −0.6 of the bound in
    /// every coordinate, off the optimum and off the centre.
    #[must_use]
    pub fn start(self) -> f64 {
        -0.6 * self.bound()
    }

    /// The function as MathEval text of `x0 … x{d−1}` (to minimise).
    #[must_use]
    pub fn expression(self, d: usize) -> String {
        let terms: Vec<String> = match self {
            Function::Sphere => (0..d).map(|i| format!("x{i}^2")).collect(),
            Function::Rosenbrock => (0..d.saturating_sub(1))
                .map(|i| format!("100*(x{j}-x{i}^2)^2+(1-x{i})^2", j = i + 1))
                .collect(),
            Function::Rastrigin => (0..d)
                .map(|i| format!("x{i}^2-10*cos(6.283185307179586*x{i})"))
                .chain(std::iter::once(format!("{}", 10 * d)))
                .collect(),
        };
        terms.join("+")
    }

    /// Reference values, for testing the expression.
    #[cfg(test)]
    fn value(self, x: &[f64]) -> f64 {
        match self {
            Function::Sphere => x.iter().map(|v| v * v).sum(),
            Function::Rosenbrock => x
                .windows(2)
                .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2))
                .sum(),
            Function::Rastrigin => {
                10.0 * x.len() as f64
                    + x.iter()
                        .map(|v| v * v - 10.0 * (std::f64::consts::TAU * v).cos())
                        .sum::<f64>()
            }
        }
    }
}

fn settings(method: &str, budget: u64) -> Result<Vec<(String, String)>> {
    Ok(match method {
        "powell-classic" => vec![("variant".into(), "classic".into())],
        "powell-interval" => vec![("variant".into(), "interval".into())],
        "pso" => vec![
            ("particles".into(), "20".into()),
            ("iterations".into(), (budget / 20).max(1).to_string()),
            ("include_start".into(), "false".into()),
        ],
        other => bail!("unknown method {other:?}: powell-classic, powell-interval or pso"),
    })
}

pub async fn bench_peers(args: BenchPeersArgs) -> Result<()> {
    let mut out: Box<dyn std::io::Write> = match &args.out {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p)?)),
        None => Box::new(std::io::stdout()),
    };
    writeln!(
        out,
        "function,dim,method,seed,evaluations,evals_to_tol,best"
    )?;
    let dir = std::env::temp_dir().join(format!("yamor-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for name in &args.functions {
        let function = Function::parse(name)?;
        for &d in &args.dims {
            let text = format!("-({})", function.expression(d));
            let db = dir.join(format!("{name}-{d}.db"));
            let _ = std::fs::remove_file(&db);
            let cluster = LocalCluster::start_with(args.hosts, &db, |_| {
                Ok(Arc::new(ExprBackend::new(&text, Duration::ZERO)?)
                    as Arc<dyn yamor_host_agent::Backend>)
            })
            .await?;
            for method in &args.methods {
                let method_settings = settings(method, args.budget)?;
                for seed in 1..=args.seeds {
                    let bounds = (0..d)
                        .map(|i| ParameterBound {
                            name: format!("x{i}"),
                            min: -function.bound(),
                            max: function.bound(),
                            start: function.start(),
                        })
                        .collect();
                    let optimizer = if method == "pso" { "pso" } else { "powell" };
                    let request = RunSpec {
                        settings: method_settings.iter().cloned().collect(),
                        seed,
                        max_evaluations: args.budget,
                        objective: Objective::Expression(text.clone()),
                        ..RunSpec::new(optimizer, Problem::Space(bounds))
                    };
                    let run = cluster.organizer.runs.start(request).await?;
                    let done = cluster.follow_quietly(run.id).await?;
                    if !done.error.is_empty() {
                        bail!("{name} {d}-D {method} seed {seed}: {}", done.error);
                    }
                    let mut best = f64::INFINITY;
                    let mut reached = None;
                    let all = evaluations(&cluster.organizer, run.id)?;
                    for (i, e) in all.iter().enumerate() {
                        if let Some(v) = e.velocity {
                            best = best.min(-v);
                        }
                        if reached.is_none() && best <= args.tolerance {
                            reached = Some(i + 1);
                        }
                    }
                    writeln!(
                        out,
                        "{name},{d},{method},{seed},{},{},{best}",
                        all.len(),
                        reached.map_or(String::new(), |n| n.to_string())
                    )?;
                }
            }
            cluster.shutdown().await;
        }
    }
    out.flush()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expressions_are_the_functions() {
        for function in [Function::Sphere, Function::Rosenbrock, Function::Rastrigin] {
            for d in [2, 5] {
                let backend = ExprBackend::new(&function.expression(d), Duration::ZERO).unwrap();
                for point in [vec![0.3; d], (0..d).map(|i| i as f64 * 0.7 - 1.1).collect()] {
                    let named: Vec<(String, f64)> = point
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("x{i}"), *v))
                        .collect();
                    let got = backend.value(&named).unwrap();
                    let want = function.value(&point);
                    assert!(
                        (got - want).abs() < 1e-9 * want.abs().max(1.0),
                        "{function:?} {d}: {got} vs {want}"
                    );
                }
            }
        }
        assert_eq!(Function::Rosenbrock.value(&[1.0; 5]), 0.0);
        assert!(Function::Rastrigin.value(&[0.0; 3]).abs() < 1e-12);
    }
}
