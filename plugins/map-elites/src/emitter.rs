//! The emitters: each proposes a batch in the unit box, is told what each
//! proposal did to the map, and prepares its next batch once all are back.

use std::str::FromStr;

use nalgebra::DVector;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use yamor_cmaes::run::{Run, Tolerances, normals};
use yamor_optimizer_api::map::Insertion;

use crate::MapElitesConfig;

/// How an emitter proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitterKind {
    /// CMA-ME's improvement emitter.
    CmaMe,
    /// iso+line variation between two elites.
    IsoLine,
    /// A Gaussian step from one elite.
    Gaussian,
}

impl EmitterKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EmitterKind::CmaMe => "cma-me",
            EmitterKind::IsoLine => "iso-line",
            EmitterKind::Gaussian => "gaussian",
        }
    }
}

impl FromStr for EmitterKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [
            EmitterKind::CmaMe,
            EmitterKind::IsoLine,
            EmitterKind::Gaussian,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not cma-me, iso-line or gaussian"))
    }
}

/// What one proposal did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Told {
    /// Walked with this fitness and filed (or not) in the map.
    Filed(f64, Insertion),
    /// Failed, or came back without its descriptors.
    Failed,
}

impl Told {
    fn added(self) -> bool {
        matches!(self, Told::Filed(_, i) if i.added())
    }

    /// Two-stage improvement as pyribs' `TwoStageImprovementRanker`: new
    /// cells first (by fitness), then improved cells (by gain), then the
    /// rest (by fitness), failures last. Larger keys rank first.
    fn improvement_key(self) -> (u8, f64) {
        match self {
            Told::Filed(f, Insertion::New) => (3, f),
            Told::Filed(_, Insertion::Improved(by)) => (2, by),
            Told::Filed(f, Insertion::Rejected) => (1, f),
            Told::Failed => (0, 0.0),
        }
    }
}

/// Draws of a CMA-ES sample outside the box before it is clipped.
const RESAMPLES: usize = 10;

/// CMA-ES' termination thresholds for an improvement emitter: pycma's
/// defaults (a restart follows any of them).
const TOLERANCES: Tolerances = Tolerances {
    tolfun: 1e-11,
    tolx: 1e-12,
    stagnation: 0,
    max_condition: 1e14,
};

/// One emitter and its batch in flight.
pub(crate) struct Emitter {
    kind: EmitterKind,
    batch: usize,
    sigma: f64,
    line_sigma: f64,
    /// Where proposals centre before the map holds an elite.
    start: Vec<f64>,
    /// The CMA-ES run of an improvement emitter (made at its first batch).
    cma: Option<Run>,
    proposals: Vec<Vec<f64>>,
    told: Vec<Option<Told>>,
    outstanding: usize,
    /// Times the improvement emitter restarted.
    pub(crate) restarts: u64,
}

impl Emitter {
    pub(crate) fn new(config: &MapElitesConfig, start: &[f64]) -> Self {
        Emitter {
            kind: config.emitter,
            batch: config.batch,
            sigma: config.sigma,
            line_sigma: config.line_sigma,
            start: start.to_vec(),
            cma: None,
            proposals: Vec::new(),
            told: Vec::new(),
            outstanding: 0,
            restarts: 0,
        }
    }

    /// No batch in flight: ready to propose.
    pub(crate) fn idle(&self) -> bool {
        self.outstanding == 0
    }

    /// The `i`-th proposal of the batch in flight (unit box).
    pub(crate) fn proposal(&self, i: usize) -> &[f64] {
        &self.proposals[i]
    }

    /// A new batch; `elites` are the map's elites in the unit box.
    pub(crate) fn ask(&mut self, elites: &[Vec<f64>], rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
        let proposals = match self.kind {
            EmitterKind::CmaMe => {
                let start = &self.start;
                let sigma = self.sigma;
                let batch = self.batch;
                let run = self.cma.get_or_insert_with(|| {
                    Run::new(DVector::from_column_slice(start), sigma, batch, TOLERANCES)
                });
                sample_in_box(run, rng)
            }
            EmitterKind::Gaussian => (0..self.batch)
                .map(|_| {
                    let parent = pick(elites, rng).unwrap_or(&self.start);
                    gaussian_step(parent, self.sigma, rng)
                })
                .collect(),
            EmitterKind::IsoLine => (0..self.batch)
                .map(|_| {
                    let (Some(a), Some(b)) = (pick(elites, rng), pick(elites, rng)) else {
                        return gaussian_step(&self.start, self.sigma, rng);
                    };
                    let line = normals(rng, 1)[0] * self.line_sigma;
                    let iso = gaussian_step(a, self.sigma, rng);
                    iso.iter()
                        .zip(a.iter().zip(b))
                        .map(|(x, (a, b))| x + line * (b - a))
                        .collect()
                })
                .collect(),
        };
        self.told = vec![None; proposals.len()];
        self.outstanding = proposals.len();
        self.proposals.clone_from(&proposals);
        proposals
    }

    /// Records what proposal `i` did; true when the batch is complete.
    pub(crate) fn told(&mut self, i: usize, told: Told) -> bool {
        if self.told[i].replace(told).is_none() {
            self.outstanding -= 1;
        }
        self.outstanding == 0
    }

    /// Learns from the complete batch: an improvement emitter updates its
    /// CMA-ES from the batch's improvement ranking, and restarts from a
    /// random elite when nothing was added or CMA-ES stopped.
    pub(crate) fn next_generation(&mut self, elites: &[Vec<f64>], rng: &mut ChaCha8Rng) {
        let Some(run) = self.cma.as_mut() else {
            return;
        };
        let told: Vec<Told> = self
            .told
            .iter()
            .map(|t| t.unwrap_or(Told::Failed))
            .collect();
        let mut order: Vec<usize> = (0..told.len()).collect();
        // A stable sort: equal keys keep proposal order.
        order.sort_by(|&a, &b| {
            let (ka, kb) = (told[a].improvement_key(), told[b].improvement_key());
            kb.0.cmp(&ka.0).then(kb.1.total_cmp(&ka.1))
        });
        let mut rank = vec![0.0; told.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r as f64;
        }
        let xs: Vec<DVector<f64>> = self
            .proposals
            .iter()
            .map(|u| DVector::from_column_slice(u))
            .collect();
        // pyribs' "filter" selection: the solutions the map kept are the
        // parents; a generation that kept none restarts the emitter.
        let parents = told.iter().filter(|t| t.added()).count();
        let stopped = parents == 0 || run.update_with_parents(&xs, &rank, parents).is_some();
        if stopped {
            let mean = pick(elites, rng).unwrap_or(&self.start);
            *run = Run::new(
                DVector::from_column_slice(mean),
                self.sigma,
                self.batch,
                TOLERANCES,
            );
            self.restarts += 1;
        }
    }
}

/// A uniformly drawn elite.
fn pick<'a>(elites: &'a [Vec<f64>], rng: &mut ChaCha8Rng) -> Option<&'a Vec<f64>> {
    (!elites.is_empty()).then(|| &elites[rng.random_range(0..elites.len())])
}

fn gaussian_step(from: &[f64], sigma: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
    from.iter()
        .zip(normals(rng, from.len()))
        .map(|(x, z)| x + sigma * z)
        .collect()
}

fn in_box(u: &DVector<f64>) -> bool {
    u.iter().all(|v| (0.0..=1.0).contains(v))
}

/// A CMA-ES generation inside the unit box: a sample outside is replaced
/// by a later draw's (up to [`RESAMPLES`] draws), then clipped.
fn sample_in_box(run: &Run, rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
    let mut batch = run.sample(rng);
    for _ in 0..RESAMPLES {
        if batch.iter().all(in_box) {
            break;
        }
        let mut fresh = run.sample(rng).into_iter().filter(in_box);
        for x in batch.iter_mut().filter(|x| !in_box(x)) {
            match fresh.next() {
                Some(f) => *x = f,
                None => break,
            }
        }
    }
    batch
        .into_iter()
        .map(|x| x.iter().map(|v| v.clamp(0.0, 1.0)).collect())
        .collect()
}
