//! Powell's direction-set method (thesis 6.2.2, after Numerical Recipes'
//! `powell`/`linmin`/`brent`) and the thesis' bounded variants, as a yamor
//! optimizer plugin. Fitness is maximised; internally the classic minimiser
//! works on its negation g = −fitness.
//!
//! Every line search is bounded: it can reach any point of the valid segment
//! of the line (as scipy's bounded Brent does), so an optimum on a wall or in
//! a corner is found. The `variant` setting chooses how points outside the
//! box are valued, and which line search is used:
//! - `classic`: an outside point (the extrapolated point of the direction
//!   test) is *bad*: ranked worse than every real value (the thesis'
//!   constant bad value, Fig 6.4, made problem-independent). The line search
//!   is Brent over the valid segment, started at the current point with the
//!   thesis' random factor on the first step;
//! - `stadium` (6.2.3): outside, the value at the border (the nearest valid
//!   point, simulated) plus a malus growing with the distance to the box
//!   (Fig 6.11); the line search may probe a little beyond the box, where the
//!   stadium slope guides it back;
//! - `clamp` (6.2.4, easy direction change): an outside point is evaluated at
//!   the nearest valid point, so the line search slides along the walls and
//!   the direction test is never refused for leaving the box. Every asked and
//!   accepted point is clamped, so no arithmetic sees an outside or
//!   non-finite value (the thesis' NaN bug, tested);
//! - `interval` (6.2.5): the golden-section bracketing and Brent search are
//!   replaced by points at regular intervals over the whole valid segment of
//!   the line (ten by default), then rounds of five points around the best
//!   (the vertex of the parabola through the best and its neighbours, two
//!   points close around it and the middles of the gaps to the neighbours;
//!   without a vertex, the gaps split in thirds), each batch evaluated in
//!   parallel, until a round brings nothing and the parabola promises
//!   nothing. Its direction test treats outside points as `classic` does.
//!
//! A line search is resolved to `step_tolerance` (default 1e-3) times the
//! length of the Powell iteration's previous move, never finer than
//! `line_tolerance`: the thesis resolved every line to `line_tolerance`,
//! which far from the optimum buys nothing and on plateaus costs about 40
//! golden steps a line. `step_tolerance` = 0 is the thesis' resolution; a
//! search that re-evaluates keeps it (see [`DEFAULT_STEP_TOLERANCE`]).
//!
//! Bad values (outside points of `classic`/`interval`, failed evaluations)
//! are `+inf` in g: they rank below every real value, and the parabolic
//! steps only ever use finite values, so the line-search arithmetic stays
//! finite. A Powell run stops when an iteration improves by less than `ftol`
//! relative to the values; it then restarts from the best point found with a
//! fresh, random orthonormal direction set, while the run's budget remains
//! (or `restarts` times when the run has no budget).
//!
//! # Noise
//! A gait's fitness is noisy: every evaluation walks from a fresh random
//! start, so the same point gives a different value each time. The
//! thesis' Powell moves on single values: the best point of a line search
//! is the luckiest of many walks, and once it is the current point every
//! later point is compared with that lucky value. One lucky walk steers
//! the search and is what the run reports (the winner's curse).
//!
//! With `reevaluate` = k > 0 the line searches still run on single values
//! (a point they revisit costs nothing and is worth the mean of its
//! evaluations), but a new incumbent must earn its place. When a line
//! search ends on a point x that looks better than the incumbent p (x's
//! value against the mean of p's evaluations), x and p are both proposed
//! k more times, as one parallel batch with fresh tags, and x replaces p
//! only if the mean of *all* x's evaluations beats the mean of all p's.
//! Otherwise p stays, its mean now over more walks: an incumbent accepted
//! on luck is found out as it is challenged. A line search whose best
//! point does not even look better costs nothing extra; nor does one that
//! ends when the budget is spent (its point, unconfirmed, is refused). The
//! iteration's bookkeeping (the gains that pick the direction to replace,
//! the `ftol` test) and the restarts use these means, and
//! [`PowellSearch::best`] reports the incumbent with its mean and how many
//! evaluations it is over ([`Optimizer::recommendation`]: its point, the
//! search's guess for the runtime's re-walk of finalists). A point with any failed evaluation is failed
//! for good (ranked worst, as one failed value always was); the failure
//! is a flag beside the sum, so no `inf` or NaN enters a mean, and a
//! failed incumbent is not evaluated again: any real value replaces it.
//! `reevaluate` = 0 with `step_tolerance` = 0 is the thesis' Powell,
//! proposal for proposal.
//!
//! The default is 2. With 1, the candidate's own lucky value (the one that
//! made it the best of its line) is still half of its mean; with 2 the
//! fresh walks outweigh it two to one. On the trap of `tests/noise.rs`
//! (−‖x‖², and in x0 > 0.5 half a unit worse on average but with noise of
//! standard deviation 3; classic, 300 evaluations, 20 seeds) the incumbent
//! ends outside the trap in 11, 18, 19 and 18 runs for k = 0, 1, 2, 3, and
//! its reported fitness is off its true one by 3.4, 0.60, 0.12 and 0.25
//! on average.
//!
//! On a noise-free objective (a test function, a simulation from a fixed
//! start) the confirmations are pure cost, so the search detects one, as
//! the CMA-ES plugin does: when its first [`EXACT_ROUNDS`] (3)
//! confirmations reproduce every re-evaluated value bit for bit (the
//! candidate's and the incumbent's extra values equal their first ones
//! exactly, or both failed) and no disagreement was ever seen, it stops
//! re-evaluating for the rest of the run and is the thesis' Powell
//! (`reevaluate` = 0) from then on, its incumbent the best single value
//! seen over the whole run. Any disagreement, in any of those rounds,
//! keeps the confirmations for good. A noise-free objective thus pays
//! 3·2k evaluations (12 with the default): on every deterministic
//! objective tested the proposals are then exactly the thesis' Powell's
//! with those three batches in between (at `step_tolerance` = 0: the
//! resolution follows the moves only once re-evaluation stops). To reach 1e-8 on a 10-D rotated
//! ellipsoid (condition 1e3, box [-5, 5]¹⁰) the default took about 1.5
//! times the evaluations of `reevaluate` = 0 before the detection (3426
//! against 2218 for `classic`, mean of 5 seeds), and 12 more now (2230). The detection
//! compares values only where a confirmation happens; noise that only
//! shows after the third round (or an objective that is deterministic at
//! the points compared but not elsewhere) is not seen. While the values
//! of a point all agree, its value is the first one exactly, not a mean
//! that could round off it.
//!
//! Limit: a line search picks its candidate on single values. Where one
//! region is much noisier than the rest, a line search that probes many of
//! its points (the `interval` variant's scans and refinements) ends on the
//! luckiest of them, and 1/(1+k) of that luck stays in its mean; on the
//! trap above `interval` ends outside it in 2, 1, 4 and 8 runs for k = 0 to
//! 3 (`classic`, `stadium` and `clamp` in 15 to 19 for k ≥ 2).
//!
//! # Layout
//! - [`Powell`]: the plugin (settings, factory); [`PowellConfig`], its
//!   typed settings.
//! - [`PowellSearch`]: the optimizer it makes, which also tells its
//!   [`Incumbent`].
//! - [`driver`]: runs the sequential algorithm on a thread behind ask/tell.

pub mod driver;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue, Settings,
    SettingsError, Space, Step,
};

use driver::{Evaluator, Stopped, Threaded};

/// How the bounded domain is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Classic,
    Stadium,
    Clamp,
    Interval,
}

impl Variant {
    pub const NAMES: [&'static str; 4] = ["classic", "stadium", "clamp", "interval"];

    /// The variant a setting's text names.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "classic" => Variant::Classic,
            "stadium" => Variant::Stadium,
            "clamp" => Variant::Clamp,
            "interval" => Variant::Interval,
            _ => return None,
        })
    }

    /// The variant the setting `variant` names.
    pub fn from_setting(s: &Settings) -> Result<Self, SettingsError> {
        let text = s.text("variant")?;
        Variant::parse(text).ok_or_else(|| SettingsError::Invalid {
            name: "variant".to_owned(),
            why: format!("{text:?} is not one of {}", Variant::NAMES.join(", ")),
        })
    }
}

/// Resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PowellConfig {
    pub variant: Variant,
    /// A Powell run ends (and restarts) when an iteration improves g by less
    /// than this, relative to |g| (NR `ftol`).
    pub ftol: f64,
    /// Line-search resolution, as a fraction of the parameter ranges.
    pub line_tolerance: f64,
    /// A line search's resolution is at least this fraction of the length
    /// of the Powell iteration's previous move (of the whole range in a
    /// run's first iteration); `line_tolerance` is its floor. 0: always
    /// `line_tolerance` (the thesis' Powell).
    pub step_tolerance: f64,
    /// Powell iterations per run (one line search per direction each).
    pub max_iterations: u32,
    /// Restarts from the best point when the run has no budget; with a
    /// budget, restarts go on while it remains.
    pub restarts: u32,
    /// `interval`: points over the valid segment of each line.
    pub interval_points: u32,
    /// `interval`: points per refinement round around the best.
    pub refine_points: u32,
    /// `stadium`: malus per range outside the box, in units of the spread of
    /// the values seen so far.
    pub malus: f64,
    /// Noisy objectives: before a line search's best point replaces the
    /// incumbent, both are evaluated this many more times and compared by
    /// the mean of all their evaluations (0: on one value, the thesis'
    /// Powell). See the crate docs.
    pub reevaluate: u32,
}

pub struct Powell;

impl Plugin for Powell {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: "powell".into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Powell's direction-set method with the thesis' bounded variants (classic, stadium, clamp, interval); bounded line searches over the whole valid segment, restarts from the best point with fresh directions while the budget remains".into(),
            settings: vec![
                SettingSpec {
                    name: "variant".into(),
                    description: "bounded-domain handling: classic (outside ranks worst), stadium (border value plus malus), clamp (easy direction change: evaluate the nearest valid point) or interval (regular-interval line search, batches in parallel)".into(),
                    kind: SettingKind::Choice {
                        options: Variant::NAMES.iter().map(|s| (*s).to_owned()).collect(),
                    },
                    default: SettingValue::Text("classic".into()),
                },
                SettingSpec::float("ftol", "a Powell run restarts when an iteration improves the fitness by less than this, relative to its magnitude", 1e-15, 0.1, 1e-9),
                SettingSpec::float("line_tolerance", "line-search resolution, fraction of the parameter range", 1e-12, 0.1, 1e-8),
                SettingSpec::float("step_tolerance", "line-search resolution as a fraction of the previous Powell iteration's move (line_tolerance is its floor); 0 always searches to line_tolerance, as the thesis' Powell", 0.0, 0.1, DEFAULT_STEP_TOLERANCE),
                SettingSpec::int("max_iterations", "maximum Powell iterations per run (one line search per direction each)", 1, 1_000_000, 10_000),
                SettingSpec::int("restarts", "restarts from the best point with fresh directions when the run has no evaluation budget (with a budget, restarts go on while it remains)", 0, 10_000, 10),
                SettingSpec::int("interval_points", "interval: points at regular intervals over the valid segment of a line", 3, 1_000, 10),
                SettingSpec::int("refine_points", "interval: points per refinement round around the best", 2, 100, 5),
                SettingSpec::float("malus", "stadium: malus per range outside the box, in units of the spread of the values seen", 1e-6, 1e6, 1.0),
                SettingSpec::int("reevaluate", "noisy fitness: before a line search's best point replaces the current point, both are evaluated this many more times (in parallel) and compared by the mean of all their evaluations; 0 accepts on a single value (the thesis' Powell)", 0, 16, i64::from(DEFAULT_REEVALUATE)),
            ],
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = PowellConfig::try_from(settings)?;
        Powell::optimizer(space, config, seed, budget)
    }
}

impl Powell {
    /// A Powell search with a typed configuration (what [`Plugin::create`]
    /// makes after converting the settings; the portfolio chains these).
    pub fn optimizer(
        space: &Space,
        config: PowellConfig,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        Ok(Box::new(Powell::search(space, config, seed, budget)?))
    }

    /// The same search as [`Powell::optimizer`], as its concrete type, which
    /// also tells its incumbent ([`PowellSearch::best`]).
    pub fn search(
        space: &Space,
        config: PowellConfig,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<PowellSearch, SettingsError> {
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        let best = Arc::new(Mutex::new(None));
        let report = Arc::clone(&best);
        let threaded = Threaded::spawn(move |evaluator| {
            Search::new(space, config, seed, budget, evaluator, report).run()
        });
        Ok(PowellSearch { threaded, best })
    }
}

/// The point a Powell search stands on (and restarts from): with
/// `reevaluate` > 0 its incumbent, judged by the mean of all its
/// evaluations; with `reevaluate` = 0 the best single value seen (the
/// thesis' rule).
#[derive(Debug, Clone, PartialEq)]
pub struct Incumbent {
    pub x: Vec<f64>,
    /// The mean fitness of all its evaluations; `-inf` when any of them
    /// failed.
    pub fitness: f64,
    /// How many evaluations the mean is over.
    pub evaluations: u32,
}

/// A Powell search (an [`Optimizer`]) that also tells its incumbent.
pub struct PowellSearch {
    threaded: Threaded,
    best: Arc<Mutex<Option<Incumbent>>>,
}

impl PowellSearch {
    /// The incumbent as of the last [`Optimizer::ask`]: what the search
    /// knew when it made its latest proposals (or finished), so it is as
    /// deterministic as the proposals. `None` before anything was told.
    #[must_use]
    pub fn best(&self) -> Option<Incumbent> {
        self.best
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Optimizer for PowellSearch {
    fn ask(&mut self) -> Step {
        self.threaded.ask()
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        self.threaded.tell(tag, outcome);
    }

    /// The incumbent ([`PowellSearch::best`]'s point): while re-evaluating,
    /// the point with the best mean that passed its confirmation, not the
    /// luckiest single value; otherwise (`reevaluate` = 0, or a
    /// deterministic objective) the best value seen.
    fn recommendation(&self) -> Option<Vec<f64>> {
        self.best().map(|incumbent| incumbent.x)
    }
}

impl Default for PowellConfig {
    /// The declared setting defaults.
    fn default() -> Self {
        PowellConfig::try_from(&Settings::defaults(&Powell.info().settings))
            .expect("the declared defaults convert")
    }
}

impl TryFrom<&Settings> for PowellConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        Ok(PowellConfig {
            variant: Variant::from_setting(s)?,
            ftol: s.float("ftol")?,
            line_tolerance: s.float("line_tolerance")?,
            step_tolerance: s.float("step_tolerance")?,
            max_iterations: s.count("max_iterations")?,
            restarts: s.count("restarts")?,
            interval_points: s.count("interval_points")?,
            refine_points: s.count("refine_points")?,
            malus: s.float("malus")?,
            reevaluate: s.count("reevaluate")?,
        })
    }
}

/// g of a bad point (outside for classic/interval, failed): worse than any
/// real value. Parabolic steps use finite values only.
const BAD: f64 = f64::INFINITY;
const TINY: f64 = 1e-20;
const CGOLD: f64 = 0.381_966_0;
/// Relative part of Brent's tolerance (NR: about the square root of the
/// machine precision).
const RELTOL: f64 = 1.5e-8;
/// The `reevaluate` default: each accepted point stands on three
/// evaluations, two of them fresh (crate docs, "Noise").
pub const DEFAULT_REEVALUATE: u32 = 2;
/// The `step_tolerance` default: a line search far from the optimum needs
/// no more resolution than a thousandth of the move it is part of
/// (docs/benchmarks.md, "Shifted and rotated functions").
pub const DEFAULT_STEP_TOLERANCE: f64 = 1e-3;
/// Confirmation rounds that must reproduce every re-evaluated value bit for
/// bit, before any disagreement was seen, for the search to call the
/// objective deterministic and stop re-evaluating (crate docs, "Noise"; the
/// CMA-ES plugin's rule).
pub const EXACT_ROUNDS: u32 = 3;

fn key(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// g of one evaluation: failures and non-finite values are [`BAD`].
fn g_of(outcome: Fitness) -> f64 {
    match outcome {
        Fitness::Value(v) if v.is_finite() => -v,
        _ => BAD,
    }
}

/// Every evaluation of one point. Its value is the mean of them all, or
/// [`BAD`] once any failed: a failure is kept as a flag, never summed, so
/// no `inf` or NaN enters the arithmetic. While every evaluation
/// reproduced the first bit for bit, the value is that first value exactly
/// (a mean of equal values can round off it by an ulp).
#[derive(Debug, Clone, Copy)]
struct Samples {
    /// Sum of the finite g values (meaningless once `failed`).
    sum: f64,
    count: u32,
    failed: bool,
    /// The first evaluation's g.
    first: f64,
    /// Whether every evaluation gave `first`'s bits (both failed counts).
    exact: bool,
}

impl Samples {
    fn first(g: f64) -> Self {
        // The sum starts at the value itself (not 0 + g), so a point with
        // one evaluation is worth exactly that value, sign of zero and all.
        Samples {
            sum: if g.is_finite() { g } else { 0.0 },
            count: 1,
            failed: !g.is_finite(),
            first: g,
            exact: true,
        }
    }

    /// Takes one more evaluation in; returns whether it reproduced the
    /// first bit for bit (g of a failure is always [`BAD`]).
    fn add(&mut self, g: f64) -> bool {
        self.count += 1;
        if g.is_finite() {
            self.sum += g;
        } else {
            self.failed = true;
        }
        let same = g.to_bits() == self.first.to_bits();
        self.exact &= same;
        same
    }

    fn g(&self) -> f64 {
        if self.failed {
            BAD
        } else if self.exact {
            self.first
        } else {
            self.sum / f64::from(self.count)
        }
    }
}

/// The vertex of the parabola through three points, if it is a minimum
/// strictly between the outer two.
fn parabola_vertex((a, fa): (f64, f64), (b, fb): (f64, f64), (c, fc): (f64, f64)) -> Option<f64> {
    if !(fa.is_finite() && fb.is_finite() && fc.is_finite()) {
        return None;
    }
    let r = (b - a) * (fb - fc);
    let q = (b - c) * (fb - fa);
    let denom = 2.0 * (q - r);
    if denom.abs() < TINY {
        return None;
    }
    let u = b - ((b - c) * q - (b - a) * r) / denom;
    // A minimum needs positive curvature: the middle value below the chord.
    let chord = fa + (fc - fa) * (b - a) / (c - a);
    (u.is_finite() && u > a.min(c) && u < a.max(c) && fb < chord).then_some(u)
}

/// How much lower than `b` the parabola through the three points is at `u`.
fn parabola_gain((a, fa): (f64, f64), (b, fb): (f64, f64), (c, fc): (f64, f64), u: f64) -> f64 {
    // Lagrange form.
    let la = (u - b) * (u - c) / ((a - b) * (a - c));
    let lb = (u - a) * (u - c) / ((b - a) * (b - c));
    let lc = (u - a) * (u - b) / ((c - a) * (c - b));
    fb - (fa * la + fb * lb + fc * lc)
}

/// The algorithm's state on its thread. Minimises g = −fitness.
struct Search<'e> {
    space: Space,
    config: PowellConfig,
    rng: ChaCha8Rng,
    budget: Option<u64>,
    evaluator: &'e mut Evaluator,
    /// Every evaluation of every point, by point. Simulations are expensive
    /// and the line searches revisit points: a revisit costs nothing and
    /// reads the mean. Only looked up, never iterated (determinism).
    cache: HashMap<Vec<u64>, Samples>,
    evaluations: u64,
    /// Not re-evaluating (`reevaluate` = 0, or the objective proved
    /// deterministic): the best single value seen, as `lowest`; otherwise
    /// the incumbent (its value here is stale: read [`Search::best_now`]).
    best: (Vec<f64>, f64),
    /// The best single value seen and its point (the thesis' incumbent,
    /// what `best` is once the search no longer re-evaluates).
    lowest: (Vec<f64>, f64),
    /// Where [`PowellSearch::best`] reads the incumbent.
    report: Arc<Mutex<Option<Incumbent>>>,
    /// Smallest and largest finite g seen (the problem's scale).
    low: f64,
    high: f64,
    /// Confirmation rounds that reproduced every re-evaluated value.
    exact_rounds: u32,
    /// Whether a re-evaluation ever disagreed with its point's first value.
    noise_seen: bool,
    /// The resolution of the line searches of the current Powell iteration,
    /// in ranges.
    line_tol: f64,
}

impl<'e> Search<'e> {
    fn new(
        space: Space,
        config: PowellConfig,
        seed: u64,
        budget: Option<u64>,
        evaluator: &'e mut Evaluator,
        report: Arc<Mutex<Option<Incumbent>>>,
    ) -> Self {
        let start = space.start.clone();
        Search {
            space,
            rng: ChaCha8Rng::seed_from_u64(seed),
            budget,
            evaluator,
            cache: HashMap::new(),
            evaluations: 0,
            best: (start.clone(), BAD),
            lowest: (start, BAD),
            report,
            low: f64::INFINITY,
            high: f64::NEG_INFINITY,
            exact_rounds: 0,
            noise_seen: false,
            line_tol: config.line_tolerance,
            config,
        }
    }

    /// Whether new incumbents are still confirmed: `reevaluate` > 0 and the
    /// objective not (yet) shown deterministic. Once false, the search is
    /// the thesis' Powell (`reevaluate` = 0) for the rest of the run.
    fn reevaluating(&self) -> bool {
        self.config.reevaluate > 0 && (self.noise_seen || self.exact_rounds < EXACT_ROUNDS)
    }

    /// Proposes `points` as one batch; first publishes the incumbent, so
    /// [`PowellSearch::best`] is current whenever the search waits.
    fn evaluate(&mut self, points: Vec<Vec<f64>>) -> Result<Vec<Fitness>, Stopped> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        self.publish();
        self.evaluations += points.len() as u64;
        self.evaluator.evaluate(points)
    }

    /// The value of a point evaluated before: the mean of its evaluations.
    fn value(&self, p: &[f64]) -> f64 {
        self.cache[&key(p)].g()
    }

    /// The incumbent and its value now.
    fn best_now(&self) -> (Vec<f64>, f64) {
        if !self.reevaluating() {
            self.best.clone()
        } else {
            let x = self.best.0.clone();
            let g = self.value(&x);
            (x, g)
        }
    }

    fn publish(&self) {
        let x = &self.best.0;
        let incumbent = self.cache.get(&key(x)).map(|s| Incumbent {
            x: x.clone(),
            fitness: -s.g(),
            evaluations: s.count,
        });
        *self
            .report
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = incumbent;
    }

    fn observe(&mut self, g: f64) {
        if g.is_finite() {
            self.low = self.low.min(g);
            self.high = self.high.max(g);
        }
    }

    /// g at valid points, simulated in one batch (cached points are free).
    fn g_valid(&mut self, points: &[Vec<f64>]) -> Result<Vec<f64>, Stopped> {
        let mut missing: Vec<Vec<f64>> = Vec::new();
        for p in points {
            if !self.cache.contains_key(&key(p)) && !missing.contains(p) {
                missing.push(p.clone());
            }
        }
        let outcomes = self.evaluate(missing.clone())?;
        for (p, o) in missing.into_iter().zip(outcomes) {
            let g = g_of(o);
            self.observe(g);
            if g < self.lowest.1 {
                self.lowest = (p.clone(), g);
                if !self.reevaluating() {
                    self.best = self.lowest.clone();
                }
            }
            self.cache.insert(key(&p), Samples::first(g));
        }
        Ok(points.iter().map(|p| self.value(p)).collect())
    }

    /// Evaluates points seen before once more each (a point may be listed
    /// several times), in one batch; their means take the new values in.
    /// Returns whether every new value reproduced its point's first value
    /// bit for bit (or both failed).
    fn reevaluate(&mut self, points: &[Vec<f64>]) -> Result<bool, Stopped> {
        let outcomes = self.evaluate(points.to_vec())?;
        let mut exact = true;
        for (p, o) in points.iter().zip(outcomes) {
            let g = g_of(o);
            self.observe(g);
            if let Some(samples) = self.cache.get_mut(&key(p)) {
                exact &= samples.add(g);
            }
        }
        Ok(exact)
    }

    /// `reevaluate` > 0: whether `x` (a line search's best point, worth
    /// `fx` so far) replaces the incumbent `p`. A point that does not look
    /// better on what is known is refused at no cost; one that does is
    /// evaluated `reevaluate` more times, and so is the incumbent (unless
    /// it failed: it stays failed), in one parallel batch, and `x` is
    /// accepted only if the mean of all its evaluations beats the
    /// incumbent's. Returns the point that stands and its mean.
    fn challenge(&mut self, p: &[f64], x: Vec<f64>, fx: f64) -> Result<(Vec<f64>, f64), Stopped> {
        let fp = self.value(p);
        if key(&x) == key(p) || fx >= fp || !self.budget_left() {
            return Ok((p.to_vec(), fp));
        }
        let k = self.config.reevaluate as usize;
        let mut batch = vec![x.clone(); k];
        if fp.is_finite() {
            batch.extend(std::iter::repeat_n(p.to_vec(), k));
        }
        if self.reevaluate(&batch)? {
            self.exact_rounds += 1;
        } else {
            self.noise_seen = true;
        }
        let (fx, fp) = (self.value(&x), self.value(p));
        let stands = if fx < fp {
            self.best = (x.clone(), fx);
            (x, fx)
        } else {
            (p.to_vec(), fp)
        };
        if !self.reevaluating() {
            // Deterministic: from here on the thesis' rule, the best single
            // value seen (over the whole run, as if it had always been).
            self.best = self.lowest.clone();
        }
        Ok(stands)
    }

    /// The stadium's malus slope: the spread of the values seen per range.
    fn malus_scale(&self) -> f64 {
        let spread = if self.high > self.low {
            self.high - self.low
        } else {
            self.low.abs().max(1.0)
        };
        self.config.malus * spread
    }

    /// g anywhere, with the variant's rule for points outside the box.
    fn g_many(&mut self, points: &[Vec<f64>]) -> Result<Vec<f64>, Stopped> {
        let simulated: Vec<Vec<f64>> = points
            .iter()
            .filter(|p| {
                self.space.contains(p)
                    || matches!(self.config.variant, Variant::Stadium | Variant::Clamp)
            })
            .map(|p| self.space.clamp(p))
            .collect();
        self.g_valid(&simulated)?;
        let scale = self.malus_scale();
        Ok(points
            .iter()
            .map(|p| {
                if self.space.contains(p) {
                    return self.value(p);
                }
                let border = self.space.clamp(p);
                match self.config.variant {
                    Variant::Classic | Variant::Interval => BAD,
                    // Border value plus a malus growing with the distance.
                    Variant::Stadium => {
                        self.value(&border) + scale * self.normalised_distance(p, &border)
                    }
                    Variant::Clamp => self.value(&border),
                }
            })
            .collect())
    }

    fn g(&mut self, p: &[f64]) -> Result<f64, Stopped> {
        Ok(self.g_many(&[p.to_vec()])?[0])
    }

    fn ranges(&self) -> Vec<f64> {
        self.space
            .bounds
            .iter()
            .map(|b| (b.max - b.min).max(f64::MIN_POSITIVE))
            .collect()
    }

    fn normalised_distance(&self, a: &[f64], b: &[f64]) -> f64 {
        self.ranges()
            .iter()
            .zip(a.iter().zip(b))
            .map(|(range, (x, y))| ((x - y) / range).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    fn along(p: &[f64], d: &[f64], t: f64) -> Vec<f64> {
        p.iter().zip(d).map(|(a, b)| a + t * b).collect()
    }

    fn budget_left(&self) -> bool {
        self.budget.is_none_or(|b| self.evaluations < b)
    }

    /// The coordinate axes, scaled to each range (the thesis' first set).
    fn axes(&self) -> Vec<Vec<f64>> {
        let n = self.space.dim();
        let ranges = self.ranges();
        (0..n)
            .map(|i| {
                let mut d = vec![0.0; n];
                d[i] = ranges[i];
                d
            })
            .collect()
    }

    /// A fresh random orthonormal set (in range units), from the seed.
    fn random_directions(&mut self) -> Vec<Vec<f64>> {
        let n = self.space.dim();
        let mut basis: Vec<Vec<f64>> = Vec::with_capacity(n);
        while basis.len() < n {
            let mut v: Vec<f64> = (0..n).map(|_| self.rng.random_range(-1.0..1.0)).collect();
            for b in &basis {
                let dot: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
                v.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
            }
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-3 {
                basis.push(v.iter().map(|x| x / norm).collect());
            }
        }
        let ranges = self.ranges();
        basis
            .into_iter()
            .map(|v| v.iter().zip(&ranges).map(|(x, r)| x * r).collect())
            .collect()
    }

    /// Powell runs from the best point found, with fresh directions, while
    /// the budget (or the number of restarts) allows.
    fn run(mut self) -> Result<(), Stopped> {
        let result = self.restarts();
        // What the search ends on, for the caller's last look.
        self.publish();
        result
    }

    fn restarts(&mut self) -> Result<(), Stopped> {
        let start = self.space.start.clone();
        let mut fstart = self.g(&start)?;
        let mut p = start;
        let mut directions = self.axes();
        let mut restart = 0u32;
        loop {
            let before = self.evaluations;
            self.powell(p, fstart, directions)?;
            restart += 1;
            let out_of_restarts = match self.budget {
                Some(_) => !self.budget_left(),
                None => restart > self.config.restarts,
            };
            // A run that could not evaluate anything new would repeat forever.
            if out_of_restarts || self.evaluations == before {
                return Ok(());
            }
            (p, fstart) = self.best_now();
            directions = self.random_directions();
        }
    }

    /// The powell loop of Numerical Recipes, on g = −fitness.
    fn powell(
        &mut self,
        start: Vec<f64>,
        fstart: f64,
        mut xi: Vec<Vec<f64>>,
    ) -> Result<(), Stopped> {
        let n = self.space.dim();
        let mut p = start;
        let mut fret = fstart;
        let mut pt = p.clone();
        let mut last_move = 1.0;
        for _ in 0..self.config.max_iterations {
            // Under noise the moves measure the noise as much as the
            // distance to the optimum, and on the trap of tests/noise.rs a
            // resolution tied to them let more lucky values through (mean
            // reported error 0.47 against 0.12): re-evaluating searches keep
            // the fixed resolution.
            self.line_tol = if self.reevaluating() {
                self.config.line_tolerance
            } else {
                self.config
                    .line_tolerance
                    .max(self.config.step_tolerance * last_move)
            };
            if !self.budget_left() {
                return Ok(());
            }
            let first = p.clone();
            let mut fp = fret;
            let mut ibig = 0;
            let mut del = 0.0;
            for (i, d) in xi.iter().enumerate() {
                let mut fptt = fret;
                let (np, nf) = self.linmin(&p, d, fret)?;
                // (Once the objective proved deterministic, a point's value
                // is its one value and these reduce to the thesis' rule.)
                if self.reevaluating() {
                    // The gain over what the point it left is worth now
                    // (the challenge evaluated it again); none if it stayed.
                    fptt = if key(&np) == key(&p) {
                        nf
                    } else {
                        self.value(&p)
                    };
                }
                p = np;
                fret = nf;
                let gain = fptt - fret;
                if gain.is_finite() && gain > del {
                    del = gain;
                    ibig = i;
                }
            }
            let noisy = self.reevaluating();
            if noisy {
                // The iteration's start as it is worth now; every move
                // since was accepted on means.
                fp = self.value(&first);
            }
            let improved = fret < fp && (!noisy || key(&p) != key(&first));
            if !improved
                || (fp.is_finite()
                    && 2.0 * (fp - fret) <= self.config.ftol * (fp.abs() + fret.abs()) + TINY)
            {
                return Ok(());
            }
            last_move = self.normalised_distance(&p, &first);
            let ptt: Vec<f64> = p.iter().zip(&pt).map(|(a, b)| 2.0 * a - b).collect();
            let xit: Vec<f64> = p.iter().zip(&pt).map(|(a, b)| a - b).collect();
            pt = p.clone();
            let fptt = self.g(&ptt)?;
            if fp.is_finite() && fptt < fp {
                let t = 2.0 * (fp - 2.0 * fret + fptt) * (fp - fret - del).powi(2)
                    - del * (fp - fptt).powi(2);
                if t < 0.0 && xit.iter().any(|v| *v != 0.0) {
                    let (np, nf) = self.linmin(&p, &xit, fret)?;
                    p = np;
                    fret = nf;
                    xi[ibig] = xi[n - 1].clone();
                    xi[n - 1] = xit;
                }
            }
        }
        Ok(())
    }

    /// The t-range of the line p + t·d inside the box (`inside`), or over
    /// which its clamped image still moves (`!inside`).
    fn segment(&self, p: &[f64], d: &[f64], inside: bool) -> (f64, f64) {
        let (mut lo, mut hi) = if inside {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            (0.0, 0.0)
        };
        for ((x, dx), b) in p.iter().zip(d).zip(&self.space.bounds) {
            if *dx != 0.0 {
                let (t1, t2) = ((b.min - x) / dx, (b.max - x) / dx);
                let (t1, t2) = (t1.min(t2).min(0.0), t1.max(t2).max(0.0));
                if inside {
                    lo = lo.max(t1);
                    hi = hi.min(t2);
                } else {
                    lo = lo.min(t1);
                    hi = hi.max(t2);
                }
            }
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return (0.0, 0.0);
        }
        (lo, hi)
    }

    /// The best point along `d` from `p`; never returns a point outside the
    /// box nor a worse one than `p` (with `reevaluate` > 0: nor one that
    /// did not beat `p` on means, [`Search::challenge`]).
    fn linmin(&mut self, p: &[f64], d: &[f64], fp: f64) -> Result<(Vec<f64>, f64), Stopped> {
        // Unit length in range units, so t and the tolerance are in ranges.
        let norm = d
            .iter()
            .zip(self.ranges())
            .map(|(x, r)| (x / r).powi(2))
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 || !norm.is_finite() || !self.budget_left() {
            return Ok((p.to_vec(), fp));
        }
        let d: Vec<f64> = d.iter().map(|x| x / norm).collect();
        let (lo, hi) = self.segment(p, &d, true);
        let t = match self.config.variant {
            Variant::Interval => self.interval_search(p, &d, fp, lo, hi)?,
            Variant::Classic => self.brent(p, &d, fp, lo, hi)?,
            Variant::Stadium => {
                // A little beyond the walls, where the stadium slope leads back.
                let margin = 0.1 * (hi - lo);
                self.brent(p, &d, fp, lo - margin, hi + margin)?
            }
            Variant::Clamp => {
                let (lo, hi) = self.segment(p, &d, false);
                self.brent(p, &d, fp, lo, hi)?
            }
        };
        let mut x = self.space.clamp(&Self::along(p, &d, t));
        // The value of the clamped point, which is what was simulated.
        let mut fx = self.g_valid(std::slice::from_ref(&x))?[0];
        // A search that converged onto a wall within its tolerance: the
        // wall itself (an optimum on the boundary is common and exact).
        let near = 2.0 * self.line_tol;
        for end in [lo, hi] {
            if end != t && (end - t).abs() <= near && self.budget_left() {
                let y = self.space.clamp(&Self::along(p, &d, end));
                let fy = self.g_valid(std::slice::from_ref(&y))?[0];
                if fy < fx {
                    (x, fx) = (y, fy);
                }
            }
        }
        if self.reevaluating() {
            return self.challenge(p, x, fx);
        }
        if fx < fp {
            Ok((x, fx))
        } else {
            Ok((p.to_vec(), fp))
        }
    }

    /// g at p + t·d; points of the valid segment that round outside the box
    /// by an ulp are clamped.
    fn on_line(&mut self, p: &[f64], d: &[f64], t: f64, lo: f64, hi: f64) -> Result<f64, Stopped> {
        let x = Self::along(p, d, t);
        if t >= lo && t <= hi && self.config.variant == Variant::Classic {
            return Ok(self.g_valid(&[self.space.clamp(&x)])?[0]);
        }
        self.g(&x)
    }

    /// Brent's method (NR `brent`) on [a, b] ∋ 0, started at the current
    /// point (t = 0, value `fp`), so the whole segment can be reached. The
    /// first step carries the thesis' random factor.
    fn brent(&mut self, p: &[f64], d: &[f64], fp: f64, a: f64, b: f64) -> Result<f64, Stopped> {
        let (seg_lo, seg_hi) = self.segment(p, d, true);
        let (mut a, mut b) = (a.min(0.0), b.max(0.0));
        if b - a <= 0.0 {
            return Ok(0.0);
        }
        let abstol = self.line_tol;
        let jitter = self.rng.random_range(0.5..1.5);
        let (mut x, mut w, mut v) = (0.0f64, 0.0f64, 0.0f64);
        let (mut fx, mut fw, mut fv) = (fp, fp, fp);
        let mut e: f64 = 0.0;
        let mut dd: f64 = 0.0;
        let mut first = true;
        for _ in 0..200 {
            if !self.budget_left() {
                break;
            }
            let xm = 0.5 * (a + b);
            let tol1 = RELTOL * x.abs() + abstol / 3.0;
            let tol2 = 2.0 * tol1;
            if (x - xm).abs() <= tol2 - 0.5 * (b - a) {
                break;
            }
            let mut golden = true;
            if e.abs() > tol1 && fx.is_finite() && fw.is_finite() && fv.is_finite() {
                let r = (x - w) * (fx - fv);
                let mut q = (x - v) * (fx - fw);
                let mut pp = (x - v) * q - (x - w) * r;
                q = 2.0 * (q - r);
                if q > 0.0 {
                    pp = -pp;
                }
                q = q.abs();
                let etemp = e;
                e = dd;
                if !(pp.abs() >= (0.5 * q * etemp).abs() || pp <= q * (a - x) || pp >= q * (b - x))
                {
                    golden = false;
                    dd = pp / q;
                    let u = x + dd;
                    if u - a < tol2 || b - u < tol2 {
                        dd = tol1.copysign(xm - x);
                    }
                }
            }
            if golden {
                e = if x >= xm { a - x } else { b - x };
                dd = CGOLD * e;
                if first {
                    dd *= jitter;
                }
            }
            first = false;
            let u = if dd.abs() >= tol1 {
                x + dd
            } else {
                x + tol1.copysign(dd)
            };
            let fu = self.on_line(p, d, u, seg_lo, seg_hi)?;
            if fu <= fx {
                if u >= x {
                    a = x;
                } else {
                    b = x;
                }
                (v, w, x) = (w, x, u);
                (fv, fw, fx) = (fw, fx, fu);
            } else {
                if u < x {
                    a = u;
                } else {
                    b = u;
                }
                if fu <= fw || w == x {
                    (v, w) = (w, u);
                    (fv, fw) = (fw, fu);
                } else if fu <= fv || v == x || v == w {
                    v = u;
                    fv = fu;
                }
            }
        }
        Ok(x)
    }

    /// 6.2.5: regular intervals over the valid segment [lo, hi], then rounds
    /// of `refine_points` around the best, each round one parallel batch:
    /// the vertex of the parabola through the best and its nearest
    /// neighbours with two points close around it, and the middles of the
    /// gaps to the neighbours (without a vertex, the gaps split in thirds).
    /// It ends when a round gains less than `ftol` (relative) and the
    /// parabola promises no more, or the bracket is below the tolerance.
    fn interval_search(
        &mut self,
        p: &[f64],
        d: &[f64],
        fp: f64,
        lo: f64,
        hi: f64,
    ) -> Result<f64, Stopped> {
        if hi - lo <= 0.0 {
            return Ok(0.0);
        }
        let count = self.config.interval_points as usize;
        let refine = self.config.refine_points as usize;
        let tol = self.line_tol;
        let mut known: Vec<(f64, f64)> = vec![(0.0, fp)];
        let mut best = (0.0, fp);
        let mut ts: Vec<f64> = (0..count)
            .map(|i| lo + (hi - lo) * i as f64 / (count - 1) as f64)
            .collect();
        for _ in 0..200 {
            ts.retain(|t| *t >= lo && *t <= hi && !known.iter().any(|(k, _)| k == t));
            ts.dedup();
            if ts.is_empty() || !self.budget_left() {
                break;
            }
            let points: Vec<Vec<f64>> = ts
                .iter()
                .map(|t| self.space.clamp(&Self::along(p, d, *t)))
                .collect();
            let values = self.g_valid(&points)?;
            let before = best.1;
            for (t, f) in ts.iter().zip(values) {
                known.push((*t, f));
                if f < best.1 {
                    best = (*t, f);
                }
            }
            let centre = best.0;
            let left = known
                .iter()
                .filter(|(t, _)| *t < centre)
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .copied();
            let right = known
                .iter()
                .filter(|(t, _)| *t > centre)
                .min_by(|x, y| x.0.total_cmp(&y.0))
                .copied();
            let (l, r) = (left.map_or(centre, |x| x.0), right.map_or(centre, |x| x.0));
            if r - l <= 2.0 * tol {
                break;
            }
            let enough = 1e-12 * best.1.abs() + TINY;
            let vertex = match (left, right) {
                (Some(a), Some(c)) => parabola_vertex(a, best, c)
                    .filter(|u| !known.iter().any(|(k, _)| k == u))
                    .filter(|u| parabola_gain(a, best, c, *u) > enough),
                _ => None,
            };
            // NaN (nothing real yet) counts as no gain.
            let gained = (before - best.1) > enough;
            let first_round = known.len() <= count + 1;
            if !first_round && !gained && vertex.is_none() {
                break;
            }
            // The next round.
            ts = Vec::with_capacity(refine);
            if let Some(u) = vertex {
                let delta = (0.25 * (u - centre).abs()).max(tol);
                ts.extend([u, u - delta, u + delta]);
                ts.extend([0.5 * (l + centre), 0.5 * (centre + r)]);
            } else {
                for k in [1.0, 2.0] {
                    ts.extend([
                        centre - (centre - l) * k / 3.0,
                        centre + (r - centre) * k / 3.0,
                    ]);
                }
            }
            ts.retain(|t| *t > l && *t < r);
            ts.truncate(refine);
        }
        Ok(best.0)
    }
}
