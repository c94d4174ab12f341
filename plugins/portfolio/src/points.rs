//! Every point a portfolio evaluated, judged by the mean of all its
//! evaluations: what the chain hands over from and what the race compares
//! its optimizers by.

use std::collections::BTreeMap;

use crate::CHALLENGERS_PER_ROUND;

/// Every evaluation of one point (the same coordinates, bit for bit),
/// whichever optimizer proposed it, or the portfolio itself.
pub(crate) struct Point {
    pub(crate) x: Vec<f64>,
    /// The optimizer (stage or arm) that proposed it first.
    pub(crate) owner: usize,
    /// Values by the portfolio's tag, so the mean is summed in proposal
    /// order whatever order they were told in; a failure (−∞) makes it −∞.
    pub(crate) values: BTreeMap<u64, f64>,
}

impl Point {
    /// The portfolio's tag of its earliest evaluation.
    pub(crate) fn first(&self) -> u64 {
        *self.values.keys().next().expect("a point has a value")
    }

    pub(crate) fn mean(&self) -> f64 {
        self.values.values().sum::<f64>() / self.values.len() as f64
    }

    /// Whether `self` ranks before `other`: the higher mean, then the
    /// earlier first proposal.
    pub(crate) fn beats(&self, other: &Point) -> bool {
        let (a, b) = (self.mean(), other.mean());
        a > b || (a == b && self.first() < other.first())
    }
}

/// The points told so far, keyed by their coordinates' bits; a point is
/// *confirmed* once it has `1 + reevaluate` evaluations.
pub(crate) struct Points {
    points: BTreeMap<Vec<u64>, Point>,
    reevaluate: u32,
}

impl Points {
    pub(crate) fn new(reevaluate: u32) -> Self {
        Points {
            points: BTreeMap::new(),
            reevaluate,
        }
    }

    pub(crate) fn reevaluate(&self) -> u32 {
        self.reevaluate
    }

    /// Adds the value of the evaluation tagged `tag` of `x`, proposed by
    /// `owner` (kept only from the point's first proposal).
    pub(crate) fn record(&mut self, tag: u64, x: Vec<f64>, owner: usize, value: f64) {
        let key = x.iter().map(|v| v.to_bits()).collect();
        self.points
            .entry(key)
            .or_insert_with(|| Point {
                x,
                owner,
                values: BTreeMap::new(),
            })
            .values
            .insert(tag, value);
    }

    pub(crate) fn confirmed(&self, p: &Point) -> bool {
        p.values.len() > self.reevaluate as usize
    }

    /// The best confirmed point by mean among those `owned` accepts, or
    /// while none is confirmed the best by mean; ties go to the earlier
    /// proposal; `None` until some evaluation of them succeeded.
    pub(crate) fn best(&self, owned: impl Fn(usize) -> bool) -> Option<&Point> {
        let pick = |confirmed_only: bool| {
            self.points
                .values()
                .filter(|p| owned(p.owner) && p.mean() > f64::NEG_INFINITY)
                .filter(|p| !confirmed_only || self.confirmed(p))
                .fold(None, |best: Option<&Point>, p| match best {
                    Some(b) if !p.beats(b) => Some(b),
                    _ => Some(p),
                })
        };
        pick(true).or_else(|| pick(false))
    }

    /// The best `count` points among those `owned` accepts, best first:
    /// confirmed points by mean before unconfirmed ones (an unconfirmed
    /// mean is a lucky walk until shown otherwise), ties to the earlier
    /// proposal; failed points never.
    pub(crate) fn ranked(&self, owned: impl Fn(usize) -> bool, count: usize) -> Vec<&Point> {
        let mut all: Vec<&Point> = self
            .points
            .values()
            .filter(|p| owned(p.owner) && p.mean() > f64::NEG_INFINITY)
            .collect();
        all.sort_by(|a, b| {
            self.confirmed(b)
                .cmp(&self.confirmed(a))
                .then(b.mean().total_cmp(&a.mean()))
                .then(a.first().cmp(&b.first()))
        });
        all.truncate(count);
        all
    }

    /// The unconfirmed points among those `owned` accepts whose mean beats
    /// the best confirmed one of them, the best [`CHALLENGERS_PER_ROUND`].
    pub(crate) fn challengers(&self, owned: impl Fn(usize) -> bool) -> Vec<&Point> {
        let floor = self
            .points
            .values()
            .filter(|p| owned(p.owner) && self.confirmed(p))
            .map(Point::mean)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut open: Vec<&Point> = self
            .points
            .values()
            .filter(|p| owned(p.owner) && !self.confirmed(p) && p.mean() > floor)
            .collect();
        open.sort_by(|a, b| {
            b.mean()
                .total_cmp(&a.mean())
                .then(a.first().cmp(&b.first()))
        });
        open.truncate(CHALLENGERS_PER_ROUND);
        open
    }

    /// The evaluations that confirm `challengers`: each repeated until it
    /// has `1 + reevaluate` values.
    pub(crate) fn confirming(&self, challengers: &[&Point]) -> Vec<Vec<f64>> {
        let need = self.reevaluate as usize + 1;
        challengers
            .iter()
            .flat_map(|p| std::iter::repeat_n(p.x.clone(), need.saturating_sub(p.values.len())))
            .collect()
    }
}
