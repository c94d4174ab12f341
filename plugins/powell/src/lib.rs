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
//! Bad values (outside points of `classic`/`interval`, failed evaluations)
//! are `+inf` in g: they rank below every real value, and the parabolic
//! steps only ever use finite values, so the line-search arithmetic stays
//! finite. A Powell run stops when an iteration improves by less than `ftol`
//! relative to the values; it then restarts from the best point found with a
//! fresh, random orthonormal direction set, while the run's budget remains
//! (or `restarts` times when the run has no budget).
//!
//! # Layout
//! - [`Powell`]: the plugin (settings, factory).
//! - [`driver`]: runs the sequential algorithm on a thread behind ask/tell.

pub mod driver;

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue, Settings,
    SettingsError, Space,
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
}

pub struct Powell;

impl Plugin for Powell {
    fn info(&self) -> PluginInfo {
        let float = |name: &str, description: &str, min: f64, max: f64, default: f64| SettingSpec {
            name: name.into(),
            description: description.into(),
            kind: SettingKind::Float { min, max },
            default: SettingValue::Float(default),
        };
        let int = |name: &str, description: &str, min: i64, max: i64, default: i64| SettingSpec {
            name: name.into(),
            description: description.into(),
            kind: SettingKind::Integer { min, max },
            default: SettingValue::Int(default),
        };
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
                float("ftol", "a Powell run restarts when an iteration improves the fitness by less than this, relative to its magnitude", 1e-15, 0.1, 1e-9),
                float("line_tolerance", "line-search resolution, fraction of the parameter range", 1e-12, 0.1, 1e-8),
                int("max_iterations", "maximum Powell iterations per run (one line search per direction each)", 1, 1_000_000, 10_000),
                int("restarts", "restarts from the best point with fresh directions when the run has no evaluation budget (with a budget, restarts go on while it remains)", 0, 10_000, 10),
                int("interval_points", "interval: points at regular intervals over the valid segment of a line", 3, 1_000, 10),
                int("refine_points", "interval: points per refinement round around the best", 2, 100, 5),
                float("malus", "stadium: malus per range outside the box, in units of the spread of the values seen", 1e-6, 1e6, 1.0),
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
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        Ok(Box::new(Threaded::spawn(move |evaluator| {
            Search::new(space, config, seed, budget, evaluator).run()
        })))
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
            max_iterations: s.count("max_iterations")?,
            restarts: s.count("restarts")?,
            interval_points: s.count("interval_points")?,
            refine_points: s.count("refine_points")?,
            malus: s.float("malus")?,
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

fn key(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
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
    /// Simulations are expensive and the line searches revisit points.
    /// Only looked up, never iterated (determinism).
    cache: HashMap<Vec<u64>, f64>,
    evaluations: u64,
    best: (Vec<f64>, f64),
    /// Smallest and largest finite g seen (the problem's scale).
    low: f64,
    high: f64,
}

impl<'e> Search<'e> {
    fn new(
        space: Space,
        config: PowellConfig,
        seed: u64,
        budget: Option<u64>,
        evaluator: &'e mut Evaluator,
    ) -> Self {
        let start = space.start.clone();
        Search {
            space,
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            budget,
            evaluator,
            cache: HashMap::new(),
            evaluations: 0,
            best: (start, BAD),
            low: f64::INFINITY,
            high: f64::NEG_INFINITY,
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
        let outcomes = self.evaluator.evaluate(missing.clone())?;
        self.evaluations += missing.len() as u64;
        for (p, o) in missing.into_iter().zip(outcomes) {
            let g = match o {
                Fitness::Value(v) if v.is_finite() => -v,
                _ => BAD,
            };
            if g.is_finite() {
                self.low = self.low.min(g);
                self.high = self.high.max(g);
            }
            if g < self.best.1 {
                self.best = (p.clone(), g);
            }
            self.cache.insert(key(&p), g);
        }
        Ok(points.iter().map(|p| self.cache[&key(p)]).collect())
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
                    return self.cache[&key(p)];
                }
                let border = self.space.clamp(p);
                match self.config.variant {
                    Variant::Classic | Variant::Interval => BAD,
                    // Border value plus a malus growing with the distance.
                    Variant::Stadium => {
                        self.cache[&key(&border)] + scale * self.normalised_distance(p, &border)
                    }
                    Variant::Clamp => self.cache[&key(&border)],
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
            (p, fstart) = self.best.clone();
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
        for _ in 0..self.config.max_iterations {
            if !self.budget_left() {
                return Ok(());
            }
            let fp = fret;
            let mut ibig = 0;
            let mut del = 0.0;
            for (i, d) in xi.iter().enumerate() {
                let fptt = fret;
                let (np, nf) = self.linmin(&p, d, fret)?;
                p = np;
                fret = nf;
                let gain = fptt - fret;
                if gain.is_finite() && gain > del {
                    del = gain;
                    ibig = i;
                }
            }
            let improved = fret < fp;
            if !improved
                || (fp.is_finite()
                    && 2.0 * (fp - fret) <= self.config.ftol * (fp.abs() + fret.abs()) + TINY)
            {
                return Ok(());
            }
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
    /// box nor a worse one than `p`.
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
        let near = 2.0 * self.config.line_tolerance;
        for end in [lo, hi] {
            if end != t && (end - t).abs() <= near && self.budget_left() {
                let y = self.space.clamp(&Self::along(p, &d, end));
                let fy = self.g_valid(std::slice::from_ref(&y))?[0];
                if fy < fx {
                    (x, fx) = (y, fy);
                }
            }
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
        let abstol = self.config.line_tolerance;
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
        let tol = self.config.line_tolerance;
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
