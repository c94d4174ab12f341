//! Where walks start, and what a gait is worth over many starts (issue 31).
//!
//! A walk is chaotic: [`EvaluationSpec::seed`](crate::evaluation::EvaluationSpec::seed)
//! seeds the oscillators' initial phases, and the same gait walks anywhere
//! from 8 to 21 cm/s depending on it. A gait is therefore valued as a
//! distribution over starts, never by one walk, and the seeds fall in two
//! disjoint sets:
//!
//! - **Candidate starts**, [`candidate_seed`]: every candidate an optimizer
//!   proposes is walked from a fresh start, a function of the run's seed and
//!   the proposal's index. Nothing about it is stored beyond those two
//!   numbers, yet any job can be re-walked exactly and a resumed run replays
//!   the very walks it would have made.
//! - **Held-out starts**, [`held_out_seeds`]: a fixed, public list
//!   (`HELD_OUT_FIRST_SEED + i`) that no candidate is ever walked, and so
//!   never selected, on. A gait's reported velocity is its [`Spread`] over
//!   the first N of them. Selection on the same walks that are reported
//!   would report the luckiest walk again; keeping them out gives an
//!   unbiased figure. Being fixed and public, any `yamor sim` with the same
//!   robot, gait and N reproduces a reported figure exactly.
//!
//! The held-out range starts at 2^40, far from the small seeds people type,
//! so a hand-chosen `--seed 3` is never mistaken for a held-out start.

use serde::{Deserialize, Serialize};

/// The first held-out start; held-out start `i` is `HELD_OUT_FIRST_SEED + i`.
pub const HELD_OUT_FIRST_SEED: u64 = 1 << 40;

/// How many held-out starts exist: `i < MAX_HELD_OUT`. Reserving a whole
/// range (not only the starts in use today) lets a report use more starts
/// later without some of them having been candidate starts.
pub const MAX_HELD_OUT: u32 = 1 << 20;

/// The first `count` held-out starts, in order.
///
/// # Panics
/// If `count` exceeds [`MAX_HELD_OUT`]: later seeds are candidate starts,
/// so they would not be held out.
pub fn held_out_seeds(count: u32) -> impl Iterator<Item = u64> {
    assert!(
        count <= MAX_HELD_OUT,
        "at most {MAX_HELD_OUT} held-out starts exist, {count} asked for"
    );
    (0..u64::from(count)).map(|i| HELD_OUT_FIRST_SEED + i)
}

/// Whether `seed` is one of the held-out starts.
#[must_use]
pub fn is_held_out(seed: u64) -> bool {
    seed.wrapping_sub(HELD_OUT_FIRST_SEED) < u64::from(MAX_HELD_OUT)
}

/// SplitMix64's increment (2^64 / φ, odd).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function: a bijection of `u64` that mixes every input
/// bit into every output bit.
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The start the `proposal`-th candidate of the run seeded `run_seed` walks
/// from: output `proposal` of a SplitMix64 stream whose state starts at the
/// mixed run seed.
///
/// Deterministic, so a job is re-walked exactly from (run seed, proposal
/// index) and a resumed run replays its walks. Within a run no two
/// proposals share a start (the stream is a bijection of the index); across
/// runs, pairs collide only by chance, since the run seed is mixed before
/// it offsets the stream. Never a held-out start: a result landing in the
/// held-out range is mixed again, so the held-out starts stay unseen by
/// every optimizer.
#[must_use]
pub fn candidate_seed(run_seed: u64, proposal: u64) -> u64 {
    let state = mix64(run_seed).wrapping_add(proposal.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA));
    let mut seed = mix64(state);
    // Lands there once in 2^44 proposals; another mix leaves the range
    // with the same odds, so the loop almost never runs twice.
    while is_held_out(seed) {
        seed = mix64(seed);
    }
    seed
}

/// A sample of velocities (m/s), one per start, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Number of values.
    pub n: usize,
    pub mean: f64,
    /// Standard error of the mean: the sample standard deviation (n − 1 in
    /// the denominator) over √n; 0 for one value.
    pub se: f64,
    /// 10th percentile: how badly the gait walks from an unlucky start.
    pub p10: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none or one is NaN or
    /// infinite (a walk that produced no number is not a slow walk).
    ///
    /// `p10` is interpolated linearly between the order statistics at rank
    /// `0.1 (n − 1)` (zero-based), numpy's default (`method="linear"`), so
    /// `np.percentile(values, 10)` gives the same figure.
    #[must_use]
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let count = n as f64;
        let mean = sorted.iter().sum::<f64>() / count;
        let se = if n > 1 {
            let squares: f64 = sorted.iter().map(|v| (v - mean).powi(2)).sum();
            (squares / (count - 1.0)).sqrt() / count.sqrt()
        } else {
            0.0
        };
        Some(Spread {
            n,
            mean,
            se,
            p10: percentile_linear(&sorted, 0.1),
            min: sorted[0],
            max: sorted[n - 1],
        })
    }

    /// The spread in cm/s as people read it:
    /// `14.93 ± 1.21 cm/s (20 starts, p10 9.10, 8.00–21.00)`.
    #[must_use]
    pub fn cm_s(&self) -> String {
        self.cm_s_over("start")
    }

    /// [`Spread::cm_s`] of values one per `what` (`world`: `… (20 worlds,
    /// p10 …)`).
    #[must_use]
    pub fn cm_s_over(&self, what: &str) -> String {
        let cm = |v: f64| v * 100.0;
        format!(
            "{:.2} ± {:.2} cm/s ({} {what}{}, p10 {:.2}, {:.2}–{:.2})",
            cm(self.mean),
            cm(self.se),
            self.n,
            if self.n == 1 { "" } else { "s" },
            cm(self.p10),
            cm(self.min),
            cm(self.max),
        )
    }
}

impl Spread {
    /// The spread of values that have no unit (a bare objective's):
    /// `0.123400 ± 0.001000 (20 starts, p10 0.120000, 0.110000–0.130000)`.
    #[must_use]
    pub fn plain(&self) -> String {
        format!(
            "{:.6} ± {:.6} ({} start{}, p10 {:.6}, {:.6}–{:.6})",
            self.mean,
            self.se,
            self.n,
            if self.n == 1 { "" } else { "s" },
            self.p10,
            self.min,
            self.max,
        )
    }
}

/// The `q`-quantile of non-empty ascending `sorted`, numpy's "linear"
/// (`q` = 0.5 is the median, the mean of the middle two of an even count).
pub fn percentile_linear(sorted: &[f64], q: f64) -> f64 {
    let rank = q * (sorted.len() - 1) as f64;
    let below = rank.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = rank - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn spread_of_hand_worked_values() {
        // Mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sample variance
        // 32/7; se = sqrt(32/7) / sqrt(8) = sqrt(4/7). Rank of p10 is
        // 0.1 * 7 = 0.7: 2 + 0.7 * (4 - 2) = 3.4.
        let s = Spread::of(&[9.0, 2.0, 4.0, 5.0, 4.0, 7.0, 4.0, 5.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.se, (4.0_f64 / 7.0).sqrt()), "{}", s.se);
        assert!(close(s.p10, 3.4), "{}", s.p10);
        assert_eq!((s.min, s.max), (2.0, 9.0));

        // 1..=10: mean 5.5, sample variance 82.5/9, se = sqrt(82.5/90);
        // p10 at rank 0.9: 1.9 (np.percentile(range(1, 11), 10)).
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Spread::of(&ten).unwrap();
        assert!(close(s.mean, 5.5));
        assert!(close(s.se, (82.5_f64 / 90.0).sqrt()), "{}", s.se);
        assert!(close(s.p10, 1.9), "{}", s.p10);
    }

    #[test]
    fn p10_matches_numpy_linear_on_small_arrays() {
        // np.percentile([3, 1, 2], 10) = 1.2 (rank 0.2).
        assert!(close(Spread::of(&[3.0, 1.0, 2.0]).unwrap().p10, 1.2));
        // np.percentile([10, 20], 10) = 11.0 (rank 0.1).
        assert!(close(Spread::of(&[20.0, 10.0]).unwrap().p10, 11.0));
        // Eleven values: rank exactly 1, the second smallest.
        let eleven: Vec<f64> = (0..11).map(|i| f64::from(i * i)).collect();
        assert!(close(Spread::of(&eleven).unwrap().p10, 1.0));
    }

    #[test]
    fn one_value_has_no_error() {
        let s = Spread::of(&[0.15]).unwrap();
        assert_eq!(
            s,
            Spread {
                n: 1,
                mean: 0.15,
                se: 0.0,
                p10: 0.15,
                min: 0.15,
                max: 0.15
            }
        );
        assert_eq!(
            s.cm_s(),
            "15.00 ± 0.00 cm/s (1 start, p10 15.00, 15.00–15.00)"
        );
    }

    #[test]
    fn no_spread_of_nothing_or_of_non_numbers() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[0.1, f64::NAN]), None);
        assert_eq!(Spread::of(&[f64::INFINITY]), None);
    }

    #[test]
    fn cm_s_reads_in_centimetres() {
        // Mean 0.1275; squared deviations 0.00225625 + 0.00075625 +
        // 0.00005625 + 0.00680625 = 0.009875, variance 0.0032917, sd
        // 0.057373, se 0.028687. p10 at rank 0.3: 0.08 + 0.3 * 0.02 = 0.086.
        let s = Spread::of(&[0.08, 0.10, 0.12, 0.21]).unwrap();
        assert!(close(s.se, (0.009875_f64 / 3.0).sqrt() / 2.0), "{}", s.se);
        assert!(close(s.p10, 0.086), "{}", s.p10);
        assert_eq!(
            s.cm_s(),
            "12.75 ± 2.87 cm/s (4 starts, p10 8.60, 8.00–21.00)"
        );
    }

    #[test]
    fn held_out_seeds_are_a_fixed_public_range() {
        let seeds: Vec<u64> = held_out_seeds(3).collect();
        assert_eq!(seeds, [1 << 40, (1 << 40) + 1, (1 << 40) + 2]);
        assert!(held_out_seeds(MAX_HELD_OUT).all(is_held_out));
        assert!(!is_held_out(HELD_OUT_FIRST_SEED - 1));
        assert!(!is_held_out(HELD_OUT_FIRST_SEED + u64::from(MAX_HELD_OUT)));
        assert!(!is_held_out(0) && !is_held_out(42) && !is_held_out(u64::MAX));
    }

    #[test]
    fn candidate_seeds_are_deterministic_distinct_and_never_held_out() {
        let mut all = HashSet::new();
        for run_seed in [0, 1, 2, 11, 1 << 40, u64::MAX] {
            for proposal in 0..100_000 {
                let seed = candidate_seed(run_seed, proposal);
                assert_eq!(seed, candidate_seed(run_seed, proposal));
                assert!(!is_held_out(seed), "({run_seed}, {proposal}) -> {seed}");
                assert!(all.insert(seed), "({run_seed}, {proposal}) collides");
            }
        }
        assert!(held_out_seeds(MAX_HELD_OUT).all(|s| !all.contains(&s)));
    }

    /// The inverse of `x ↦ x ^ (x >> shift)`.
    fn unxorshift(y: u64, shift: u32) -> u64 {
        let mut x = y;
        for _ in 0..64 / shift {
            x = y ^ (x >> shift);
        }
        x
    }

    /// The inverse of odd `a` modulo 2^64 (Newton: each step doubles the
    /// correct low bits, from 3).
    fn inverse(a: u64) -> u64 {
        let mut x = a;
        for _ in 0..5 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }

    fn unmix64(z: u64) -> u64 {
        let z = unxorshift(z, 31).wrapping_mul(inverse(0x94d0_49bb_1331_11eb));
        let z = unxorshift(z, 27).wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9));
        unxorshift(z, 30)
    }

    #[test]
    fn a_candidate_landing_in_the_held_out_range_is_mixed_out_of_it() {
        // Run the stream backwards from a held-out start to the proposal
        // whose first mix lands on it.
        let (run_seed, target) = (7, HELD_OUT_FIRST_SEED + 5);
        assert_eq!(mix64(unmix64(target)), target);
        let offset = unmix64(target).wrapping_sub(mix64(run_seed));
        let proposal = offset.wrapping_mul(inverse(GOLDEN_GAMMA)).wrapping_sub(1);
        let state =
            mix64(run_seed).wrapping_add(proposal.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA));
        assert_eq!(mix64(state), target);
        let seed = candidate_seed(run_seed, proposal);
        assert!(!is_held_out(seed));
        assert_eq!(seed, mix64(target));
    }
}
