//! Powell's direction-set method (thesis 6.2.2, after Numerical Recipes'
//! `powell`/`linmin`/`mnbrak`/`brent`) and the thesis' bounded variants, as a
//! yamor optimizer plugin. Fitness is maximised; internally the classic
//! minimiser works on its negation.
//!
//! The `variant` setting chooses how the bounded domain is handled:
//! - `classic`: points outside the box get the constant `bad_value` without a
//!   simulation (the thesis' original, Fig 6.4);
//! - `stadium` (6.2.3): outside, the value at the border minus a malus
//!   growing with the distance to the box (Fig 6.11);
//! - `clamp` (6.2.4, easy direction change): an outside point is evaluated at
//!   the nearest valid point. The thesis reported NaN results for it; here
//!   every point asked is clamped *and* every accepted point is clamped, so no
//!   arithmetic ever sees an outside or non-finite value (tested);
//! - `interval` (6.2.5): the golden-section bracketing and Brent search are
//!   replaced by ten points at regular intervals over the whole valid segment
//!   of the line, then five points around the best, each batch evaluated in
//!   parallel.
//!
//! # Layout
//! - [`Powell`]: the plugin (settings, factory).
//! - [`driver`]: runs the sequential algorithm on a thread behind ask/tell.

pub mod driver;

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Optimizer, Outcome, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue, Settings,
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

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "classic" => Variant::Classic,
            "stadium" => Variant::Stadium,
            "clamp" => Variant::Clamp,
            "interval" => Variant::Interval,
            _ => return None,
        })
    }
}

/// Resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PowellConfig {
    pub variant: Variant,
    /// Fitness returned for points outside the box (classic) and for failed
    /// evaluations.
    pub bad_value: f64,
    /// Stop when an iteration improves by less than this (relative, NR `ftol`).
    pub ftol: f64,
    /// Line-search tolerance in units of the parameter range.
    pub line_tolerance: f64,
    pub max_iterations: u32,
    /// Initial bracketing step as a fraction of each range; jittered by ±50%
    /// from the seed (the thesis' "random factor" of the bracketing).
    pub initial_step: f64,
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
        PluginInfo {
            name: "powell".into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Powell's direction-set method with the thesis' bounded variants (classic, stadium, clamp, interval)".into(),
            settings: vec![
                SettingSpec {
                    name: "variant".into(),
                    description: "bounded-domain handling: classic (bad value), stadium, clamp (easy direction change) or interval (regular-interval line search)".into(),
                    kind: SettingKind::Choice {
                        options: Variant::NAMES.iter().map(|s| (*s).to_owned()).collect(),
                    },
                    default: SettingValue::Text("classic".into()),
                },
                float("bad_value", "fitness of points outside the domain and of failed evaluations", -1e6, 1e6, -1.0),
                float("ftol", "relative improvement per iteration below which Powell stops", 1e-9, 1.0, 1e-3),
                float("line_tolerance", "line-search tolerance, fraction of the parameter range", 1e-6, 0.5, 1e-2),
                SettingSpec {
                    name: "max_iterations".into(),
                    description: "maximum Powell iterations (one line search per direction each)".into(),
                    kind: SettingKind::Integer { min: 1, max: 10_000 },
                    default: SettingValue::Int(20),
                },
                float("initial_step", "first bracketing step, fraction of the range", 1e-4, 1.0, 0.1),
            ],
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let settings = Settings::resolve(&self.info().settings, &settings.0)?;
        let config = PowellConfig {
            variant: Variant::parse(settings.text("variant")).expect("choice was validated"),
            bad_value: settings.float("bad_value"),
            ftol: settings.float("ftol"),
            line_tolerance: settings.float("line_tolerance"),
            max_iterations: settings.int("max_iterations") as u32,
            initial_step: settings.float("initial_step"),
        };
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        Ok(Box::new(Threaded::spawn(move |evaluator| {
            Search::new(space, config, seed, evaluator).run()
        })))
    }
}

/// The algorithm's state on its thread. Minimises g = −fitness.
struct Search<'e> {
    space: Space,
    config: PowellConfig,
    rng: ChaCha8Rng,
    evaluator: &'e mut Evaluator,
    /// Simulations are expensive and the line searches revisit points.
    cache: HashMap<Vec<u64>, f64>,
}

const GOLD: f64 = 1.618_034;
const GLIMIT: f64 = 100.0;
const TINY: f64 = 1e-20;
const CGOLD: f64 = 0.381_966_0;
const ZEPS: f64 = 1e-10;

fn key(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

impl<'e> Search<'e> {
    fn new(space: Space, config: PowellConfig, seed: u64, evaluator: &'e mut Evaluator) -> Self {
        Search {
            space,
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            evaluator,
            cache: HashMap::new(),
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
        for (p, o) in missing.iter().zip(outcomes) {
            let fitness = match o {
                Outcome::Fitness(v) if v.is_finite() => v,
                _ => self.config.bad_value,
            };
            self.cache.insert(key(p), -fitness);
        }
        Ok(points.iter().map(|p| self.cache[&key(p)]).collect())
    }

    /// g anywhere, with the variant's rule for points outside the box.
    fn g_many(&mut self, points: &[Vec<f64>]) -> Result<Vec<f64>, Stopped> {
        let mut valid = Vec::new();
        for p in points {
            match self.config.variant {
                Variant::Classic | Variant::Interval if !self.space.contains(p) => {}
                Variant::Stadium if !self.space.contains(p) => valid.push(self.space.clamp(p)),
                _ => valid.push(self.space.clamp(p)),
            }
        }
        self.g_valid(&valid)?;
        Ok(points
            .iter()
            .map(|p| {
                if self.space.contains(p) {
                    return self.cache[&key(p)];
                }
                match self.config.variant {
                    Variant::Classic | Variant::Interval => -self.config.bad_value,
                    // Border value plus a malus of one unit per range outside.
                    Variant::Stadium => {
                        let border = self.space.clamp(p);
                        let outside = self.normalised_distance(p, &border);
                        self.cache[&key(&border)] + outside
                    }
                    Variant::Clamp => self.cache[&key(&self.space.clamp(p))],
                }
            })
            .collect())
    }

    fn g(&mut self, p: &[f64]) -> Result<f64, Stopped> {
        Ok(self.g_many(&[p.to_vec()])?[0])
    }

    fn normalised_distance(&self, a: &[f64], b: &[f64]) -> f64 {
        self.space
            .bounds
            .iter()
            .zip(a.iter().zip(b))
            .map(|(bound, (x, y))| {
                let range = (bound.max - bound.min).max(f64::MIN_POSITIVE);
                ((x - y) / range).powi(2)
            })
            .sum::<f64>()
            .sqrt()
    }

    fn along(p: &[f64], d: &[f64], t: f64) -> Vec<f64> {
        p.iter().zip(d).map(|(a, b)| a + t * b).collect()
    }

    /// The powell loop of Numerical Recipes, on g = −fitness.
    fn run(mut self) -> Result<(), Stopped> {
        let n = self.space.dim();
        let mut p = self.space.start.clone();
        // Directions scaled to each range, so t is in "ranges".
        let mut xi: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let mut d = vec![0.0; n];
                d[i] = (self.space.bounds[i].max - self.space.bounds[i].min).max(f64::MIN_POSITIVE);
                d
            })
            .collect();
        let mut fret = self.g(&p)?;
        let mut pt = p.clone();
        for _ in 0..self.config.max_iterations {
            let fp = fret;
            let mut ibig = 0;
            let mut del = 0.0;
            for (i, d) in xi.iter().enumerate() {
                let fptt = fret;
                let (np, nf) = self.linmin(&p, d, fret)?;
                p = np;
                fret = nf;
                if fptt - fret > del {
                    del = fptt - fret;
                    ibig = i;
                }
            }
            if 2.0 * (fp - fret) <= self.config.ftol * (fp.abs() + fret.abs()) + TINY {
                return Ok(());
            }
            let ptt: Vec<f64> = p.iter().zip(&pt).map(|(a, b)| 2.0 * a - b).collect();
            let xit: Vec<f64> = p.iter().zip(&pt).map(|(a, b)| a - b).collect();
            pt = p.clone();
            let fptt = self.g(&ptt)?;
            if fptt < fp {
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

    /// The best point along `d` from `p`; never returns a point outside the box.
    fn linmin(&mut self, p: &[f64], d: &[f64], fp: f64) -> Result<(Vec<f64>, f64), Stopped> {
        let (t, f) = match self.config.variant {
            Variant::Interval => self.interval_search(p, d, fp)?,
            _ => self.brent_search(p, d, fp)?,
        };
        let x = self.space.clamp(&Self::along(p, d, t));
        if f < fp {
            // The value of the clamped point, which is what was (or will be) simulated.
            let fx = self.g_valid(std::slice::from_ref(&x))?[0];
            if fx <= fp {
                return Ok((x, fx));
            }
        }
        Ok((p.to_vec(), fp))
    }

    /// mnbrak + brent (Numerical Recipes), t in units of `d`.
    fn brent_search(&mut self, p: &[f64], d: &[f64], fp: f64) -> Result<(f64, f64), Stopped> {
        let jitter = self.rng.random_range(0.5..1.5);
        let step = self.config.initial_step * jitter;
        let h = |s: &mut Self, t: f64| -> Result<f64, Stopped> {
            if t == 0.0 {
                Ok(fp)
            } else {
                s.g(&Self::along(p, d, t))
            }
        };
        // Bracketing.
        let (mut ax, mut bx) = (0.0, step);
        let (mut fa, mut fb) = (fp, h(self, bx)?);
        if fb > fa {
            std::mem::swap(&mut ax, &mut bx);
            std::mem::swap(&mut fa, &mut fb);
        }
        let mut cx = bx + GOLD * (bx - ax);
        let mut fc = h(self, cx)?;
        let mut guard = 0;
        while fb > fc && guard < 50 {
            guard += 1;
            let r = (bx - ax) * (fb - fc);
            let q = (bx - cx) * (fb - fa);
            let denom = 2.0 * (q - r).abs().max(TINY).copysign(q - r);
            let mut u = bx - ((bx - cx) * q - (bx - ax) * r) / denom;
            let ulim = bx + GLIMIT * (cx - bx);
            let mut fu;
            if (bx - u) * (u - cx) > 0.0 {
                fu = h(self, u)?;
                if fu < fc {
                    ax = bx;
                    bx = u;
                    fa = fb;
                    fb = fu;
                    break;
                } else if fu > fb {
                    cx = u;
                    break;
                }
                u = cx + GOLD * (cx - bx);
                fu = h(self, u)?;
            } else if (cx - u) * (u - ulim) > 0.0 {
                fu = h(self, u)?;
                if fu < fc {
                    bx = cx;
                    cx = u;
                    u = cx + GOLD * (cx - bx);
                    fb = fc;
                    fc = fu;
                    fu = h(self, u)?;
                }
            } else if (u - ulim) * (ulim - cx) >= 0.0 {
                u = ulim;
                fu = h(self, u)?;
            } else {
                u = cx + GOLD * (cx - bx);
                fu = h(self, u)?;
            }
            ax = bx;
            bx = cx;
            cx = u;
            fa = fb;
            fb = fc;
            fc = fu;
        }
        let _ = fa;
        // Brent.
        let tol = self.config.line_tolerance;
        let (mut a, mut b) = if ax < cx { (ax, cx) } else { (cx, ax) };
        let (mut x, mut w, mut v) = (bx, bx, bx);
        let (mut fx, mut fw, mut fv) = (fb, fb, fb);
        let mut e: f64 = 0.0;
        let mut dd: f64 = 0.0;
        for _ in 0..100 {
            let xm = 0.5 * (a + b);
            let tol1 = tol * x.abs() + ZEPS;
            let tol2 = 2.0 * tol1;
            if (x - xm).abs() <= tol2 - 0.5 * (b - a) {
                break;
            }
            if e.abs() > tol1 {
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
                if pp.abs() >= (0.5 * q * etemp).abs() || pp <= q * (a - x) || pp >= q * (b - x) {
                    e = if x >= xm { a - x } else { b - x };
                    dd = CGOLD * e;
                } else {
                    dd = pp / q;
                    let u = x + dd;
                    if u - a < tol2 || b - u < tol2 {
                        dd = tol1.copysign(xm - x);
                    }
                }
            } else {
                e = if x >= xm { a - x } else { b - x };
                dd = CGOLD * e;
            }
            let u = if dd.abs() >= tol1 {
                x + dd
            } else {
                x + tol1.copysign(dd)
            };
            let fu = h(self, u)?;
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
        Ok((x, fx))
    }

    /// 6.2.5: ten points over the valid segment, then five around the best.
    fn interval_search(&mut self, p: &[f64], d: &[f64], fp: f64) -> Result<(f64, f64), Stopped> {
        // The segment of the line inside the box.
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        for ((x, dx), b) in p.iter().zip(d).zip(&self.space.bounds) {
            if *dx != 0.0 {
                let (t1, t2) = ((b.min - x) / dx, (b.max - x) / dx);
                lo = lo.max(t1.min(t2));
                hi = hi.min(t1.max(t2));
            }
        }
        if !(lo.is_finite() && hi.is_finite()) || hi - lo <= 0.0 {
            return Ok((0.0, fp));
        }
        let grid = |from: f64, to: f64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| from + (to - from) * i as f64 / (n - 1) as f64)
                .collect()
        };
        let coarse = grid(lo, hi, 10);
        let points: Vec<Vec<f64>> = coarse
            .iter()
            .map(|t| self.space.clamp(&Self::along(p, d, *t)))
            .collect();
        let values = self.g_valid(&points)?;
        let (mut best_t, mut best_f) = (0.0, fp);
        for (t, f) in coarse.iter().zip(&values) {
            if *f < best_f {
                best_t = *t;
                best_f = *f;
            }
        }
        let h = (hi - lo) / 9.0;
        let fine: Vec<f64> = grid((best_t - h / 2.0).max(lo), (best_t + h / 2.0).min(hi), 5);
        let points: Vec<Vec<f64>> = fine
            .iter()
            .map(|t| self.space.clamp(&Self::along(p, d, *t)))
            .collect();
        let values = self.g_valid(&points)?;
        for (t, f) in fine.iter().zip(&values) {
            if *f < best_f {
                best_t = *t;
                best_f = *f;
            }
        }
        Ok((best_t, best_f))
    }
}
