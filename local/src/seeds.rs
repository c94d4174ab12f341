//! [`SeedSpread`]: how far a robot's answer depends on the run's seed,
//! from runs that differ only in their seed (`yamor run --seeds K`).
//!
//! The bench of morphologies (docs/benchmarks.md) saw the default's
//! held-out figure swing by up to a quarter of its median between seeds on
//! some robots and by nothing on others; a single run cannot see which
//! kind of robot it is on, several seeds can.

use yamor_organizer::model::Run;

/// The spread (best − worst over the median) above which one run's answer
/// is not an answer: the bench's goal for the default's worst seed.
pub const SEED_SPREAD_LIMIT: f64 = 0.10;

/// The held-out figures of runs that differ only in their seed.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedSpread {
    /// (seed, held-out mean) in the runs' order, in the unit people read
    /// (cm/s for a gait).
    figures: Vec<(u64, f64)>,
    unit: &'static str,
}

impl SeedSpread {
    /// The spread of `runs`' held-out figures; `None` unless at least two
    /// runs earned one (a run stopped early, or one with `--held-out 0`,
    /// has no figure to compare).
    #[must_use]
    pub fn of(runs: &[Run]) -> Option<Self> {
        let gait = runs.iter().all(|r| r.gait);
        let scale = if gait { 100.0 } else { 1.0 };
        let figures: Vec<(u64, f64)> = runs
            .iter()
            .filter_map(|r| Some((r.seed, r.held_out?.mean * scale)))
            .collect();
        (figures.len() >= 2).then_some(SeedSpread {
            figures,
            unit: if gait { " cm/s" } else { "" },
        })
    }

    #[must_use]
    pub fn median(&self) -> f64 {
        let mut values: Vec<f64> = self.figures.iter().map(|f| f.1).collect();
        values.sort_by(f64::total_cmp);
        yamor_core::starts::percentile_linear(&values, 0.5)
    }

    /// The seed whose run found the best figure, and that figure.
    #[must_use]
    pub fn best(&self) -> (u64, f64) {
        *self
            .figures
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a spread holds at least two figures")
    }

    /// The seed whose run found the worst figure, and that figure.
    #[must_use]
    pub fn worst(&self) -> (u64, f64) {
        *self
            .figures
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a spread holds at least two figures")
    }

    /// (best − worst) / |median|; infinite when the median is 0 and the
    /// seeds differ.
    #[must_use]
    pub fn spread(&self) -> f64 {
        let gap = self.best().1 - self.worst().1;
        if gap == 0.0 {
            0.0
        } else {
            gap / self.median().abs()
        }
    }

    /// Whether the seeds disagree by more than [`SEED_SPREAD_LIMIT`].
    #[must_use]
    pub fn depends_on_seed(&self) -> bool {
        self.spread() > SEED_SPREAD_LIMIT
    }
}

impl std::fmt::Display for SeedSpread {
    /// Two lines: the figures, then what they mean for a run of this robot.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = self.unit;
        let values: Vec<String> = self.figures.iter().map(|f| format!("{:.2}", f.1)).collect();
        let seeds: Vec<String> = self.figures.iter().map(|f| f.0.to_string()).collect();
        let (best_seed, best) = self.best();
        let (worst_seed, worst) = self.worst();
        writeln!(
            f,
            "{} seeds ({}): held-out means {}{unit}; median {:.2}, worst {worst:.2} (seed {worst_seed}), best {best:.2} (seed {best_seed}); spread {:.0} % of the median",
            self.figures.len(),
            seeds.join(", "),
            values.join(", "),
            self.median(),
            self.spread() * 100.0,
        )?;
        let limit = SEED_SPREAD_LIMIT * 100.0;
        if self.depends_on_seed() {
            write!(
                f,
                "the answer depends on the seed by more than {limit:.0} %: one run of this robot is not an answer; give each run more walks (--budget) or keep the best of several seeds (here seed {best_seed}'s)"
            )
        } else {
            write!(
                f,
                "the seeds agree within {limit:.0} % of the median: one run of this robot is an answer"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yamor_core::starts::Spread;

    fn run(seed: u64, held_out: Option<f64>) -> Run {
        Run {
            seed,
            gait: true,
            held_out: held_out.map(|mean| Spread {
                n: 20,
                mean,
                se: 0.001,
                p10: mean,
                min: mean,
                max: mean,
            }),
            id: seed,
            name: format!("hexapod-seed-{seed}"),
            robot: "hexapod".into(),
            optimizer: "cmaes".into(),
            settings: Default::default(),
            state: yamor_organizer::model::RunState::Finished,
            evaluations: 2400,
            max_evaluations: 2400,
            max_seconds: 0.0,
            best_velocity: held_out,
            best_parameters: Vec::new(),
            best_gait_xml: String::new(),
            error: String::new(),
            started_ms: 0,
            finished_ms: 0,
            elapsed_s: 1.0,
            reference: None,
            recommendation: None,
            prior: None,
            direction: Default::default(),
        }
    }

    #[test]
    fn seeds_that_disagree_are_said_to_and_the_best_is_named() {
        let runs = [
            run(1, Some(0.1391)),
            run(2, Some(0.1210)),
            run(3, Some(0.1389)),
            run(4, None),
        ];
        let spread = SeedSpread::of(&runs).unwrap();
        assert!((spread.median() - 13.89).abs() < 1e-9);
        assert_eq!(spread.worst().0, 2);
        assert_eq!(spread.best().0, 1);
        assert!((spread.spread() - (13.91 - 12.10) / 13.89).abs() < 1e-9);
        assert!(spread.depends_on_seed());
        let said = spread.to_string();
        assert!(said.starts_with("3 seeds (1, 2, 3): held-out means 13.91, 12.10, 13.89 cm/s; median 13.89, worst 12.10 (seed 2), best 13.91 (seed 1); spread 13 % of the median\n"), "{said}");
        assert!(said.contains("depends on the seed"), "{said}");
    }

    #[test]
    fn seeds_that_agree_say_one_run_is_an_answer() {
        let spread = SeedSpread::of(&[run(1, Some(0.200)), run(2, Some(0.195))]).unwrap();
        assert!((spread.median() - 19.75).abs() < 1e-9);
        assert!(!spread.depends_on_seed());
        assert!(spread.to_string().contains("agree within 10 %"));
    }

    #[test]
    fn fewer_than_two_figures_are_no_spread() {
        assert_eq!(SeedSpread::of(&[run(1, Some(0.2)), run(2, None)]), None);
    }
}
