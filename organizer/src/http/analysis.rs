//! A run's parameters analysed on its page: each parameter against the
//! evaluations with its bounds drawn (a parameter pinned at a bound shows,
//! and says so), the run's value against each parameter (a slice plot), its
//! best evaluations in parallel coordinates, and an estimate of which
//! parameters matter.
//!
//! The importance estimate is PED-ANOVA's (Watanabe et al., IJCAI 2023;
//! Optuna's `PedAnovaImportanceEvaluator` with its defaults): per
//! parameter, the Pearson divergence between the kernel density of the
//! best [`TOP_QUANTILE`] of the evaluations along it and that of all the
//! evaluations, Σ p_top² / p_all − 1 on a grid over its range; the
//! divergences are then normalised to sum to 1. Comparing the best with
//! everything the run tried accounts for where an optimizer chose to look
//! (its samples crowd near its optimum), which the correlation ratio used
//! before did not; what the run never tried it cannot see, and a parameter
//! matters here when the best evaluations gather in part of what was
//! tried.

use maud::{Markup, html};
use yamor_optimizer_api::Bound;

use super::Units;
use super::plot::{points, px};
use crate::model::Job;

/// Evaluations drawn in the parallel-coordinates view: the best ones.
pub(super) const PARALLEL_BEST: usize = 20;

/// The best fraction of the evaluations PED-ANOVA compares with all of
/// them (Optuna's `target_quantile`).
const TOP_QUANTILE: f64 = 0.1;
/// Grid points each density is evaluated on, and the evaluations the
/// estimate needs at least.
const GRID: usize = 100;
const MIN_FOR_IMPORTANCE: usize = 30;

/// A parameter's range on the page: its bounds when the run has them,
/// else what the evaluations span.
fn range(bound: Option<&Bound>, xs: &[f64]) -> (f64, f64) {
    if let Some(b) = bound {
        return (b.min, b.max);
    }
    let (lo, hi) = xs
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    if lo > hi { (0.0, 1.0) } else { (lo, hi) }
}

/// How many of `xs` sit on a bound of `[lo, hi]` (within a millionth of
/// the range): a parameter pinned there wants a wider range.
fn pinned(xs: &[f64], lo: f64, hi: f64) -> (usize, usize) {
    let eps = (hi - lo).abs() * 1e-6;
    let at_lo = xs.iter().filter(|&&x| (x - lo).abs() <= eps).count();
    let at_hi = xs.iter().filter(|&&x| (x - hi).abs() <= eps).count();
    (at_lo, at_hi)
}

const W: f64 = 240.0;
const H: f64 = 130.0;
const PAD: f64 = 44.0;

/// Small chart frame: axes, y labels `lo`/`hi`, an x title.
fn frame(lo: &str, hi: &str, x_title: &str, x_lo: &str, x_hi: &str) -> Markup {
    let (bottom, right, label_x, label_y) = (H - 20.0, W - 6.0, PAD - 3.0, H - 8.0);
    html! {
        line x1=(PAD) y1=(bottom) x2=(right) y2=(bottom) stroke="#999" {}
        line x1=(PAD) y1="8" x2=(PAD) y2=(bottom) stroke="#999" {}
        text x=(label_x) y="14" font-size="9" text-anchor="end" { (hi) }
        text x=(label_x) y=(bottom) font-size="9" text-anchor="end" { (lo) }
        text x=(PAD) y=(label_y) font-size="9" { (x_lo) }
        text x=(right) y=(label_y) font-size="9" text-anchor="end" { (x_hi) }
        text x=((PAD + W) / 2.0) y=(label_y) font-size="9" text-anchor="middle" { (x_title) }
    }
}

fn scale(v: f64, lo: f64, hi: f64, from: f64, to: f64) -> f64 {
    from + (v - lo) / (hi - lo).max(1e-12) * (to - from)
}

/// One parameter over the evaluations, its bounds as dashed lines; and a
/// note when it wraps or sits on a bound.
fn over_evaluations(
    name: &str,
    xs: &[f64],
    (lo, hi): (f64, f64),
    periodic: bool,
) -> (Markup, Option<String>) {
    let (top, bottom) = (8.0, H - 20.0);
    let n = xs.len().max(2) as f64 - 1.0;
    let svg = html! {
        svg.param data-param=(name) width=(W) height=(H) viewBox={ "0 0 " (W) " " (H) } {
            (frame(&format!("{lo:.3}"), &format!("{hi:.3}"), "evaluation", "1", &xs.len().to_string()))
            @for y in [top, bottom] {
                line.bound x1=(PAD) y1=(y) x2=(W - 6.0) y2=(y) stroke="#c33" stroke-dasharray="3 3" {}
            }
            @for (i, &x) in xs.iter().enumerate().filter(|(_, x)| x.is_finite()) {
                circle cx=(px(scale(i as f64, 0.0, n, PAD, W - 6.0)))
                    cy=(px(scale(x.clamp(lo, hi), lo, hi, bottom, top))) r="1.5" fill="#36c" {}
            }
        }
    };
    let (at_lo, at_hi) = pinned(xs, lo, hi);
    let mut notes = Vec::new();
    if periodic {
        notes.push("wraps at its bounds (one turn)".to_owned());
    }
    let share = |k: usize| 100.0 * k as f64 / xs.len().max(1) as f64;
    if !periodic && share(at_lo) >= 10.0 {
        notes.push(format!("{:.0} % at its minimum", share(at_lo)));
    }
    if !periodic && share(at_hi) >= 10.0 {
        notes.push(format!("{:.0} % at its maximum", share(at_hi)));
    }
    (svg, (!notes.is_empty()).then(|| notes.join("; ")))
}

/// The run's value against one parameter.
fn slice(name: &str, xs: &[f64], values: &[f64], (lo, hi): (f64, f64), units: Units) -> Markup {
    let finite: Vec<(f64, f64)> = xs
        .iter()
        .zip(values)
        .filter(|(x, v)| x.is_finite() && v.is_finite())
        .map(|(&x, &v)| (x, v * units.factor))
        .collect();
    let (v_lo, v_hi) = finite
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &(_, v)| (a.min(v), b.max(v)));
    html! {
        svg.slice data-param=(name) width=(W) height=(H) viewBox={ "0 0 " (W) " " (H) } {
            @if v_lo > v_hi {
                text x="10" y="40" font-size="10" { "no results" }
            } @else {
                // The unit is in the section's title: labels stay inside the margin.
                (frame(&format!("{v_lo:.2}"), &format!("{v_hi:.2}"), name, &format!("{lo:.2}"), &format!("{hi:.2}")))
                @for &(x, v) in &finite {
                    circle cx=(px(scale(x.clamp(lo, hi), lo, hi, PAD, W - 6.0)))
                        cy=(px(scale(v, v_lo, v_hi, H - 20.0, 8.0))) r="1.5" fill="#2a7" {}
                }
            }
        }
    }
}

/// PED-ANOVA's importance of each parameter (`columns[k]` over the
/// evaluations, inside `ranges[k]`) for `values` (larger is better),
/// normalised to sum to 1; `None` for every parameter with too few
/// evaluations or values that do not vary.
pub(super) fn importance(
    columns: &[Vec<f64>],
    ranges: &[(f64, f64)],
    values: &[f64],
) -> Vec<Option<f64>> {
    let none = vec![None; columns.len()];
    let finite: Vec<usize> = (0..values.len())
        .filter(|&i| values[i].is_finite() && columns.iter().all(|c| c[i].is_finite()))
        .collect();
    if finite.len() < MIN_FOR_IMPORTANCE {
        return none;
    }
    let mut ranked = finite.clone();
    ranked.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let top_count = ((finite.len() as f64 * TOP_QUANTILE).ceil() as usize).max(2);
    if values[ranked[0]] == values[ranked[finite.len() - 1]] {
        return none;
    }
    let top = &ranked[..top_count];
    let divergences: Vec<f64> = columns
        .iter()
        .zip(ranges)
        .map(|(xs, &(lo, hi))| {
            let unit = |i: &usize| {
                if hi > lo {
                    (xs[*i] - lo) / (hi - lo)
                } else {
                    0.5
                }
            };
            let all: Vec<f64> = finite.iter().map(unit).collect();
            let best: Vec<f64> = top.iter().map(unit).collect();
            pearson_divergence(&density(&best), &density(&all))
        })
        .collect();
    let total: f64 = divergences.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return none;
    }
    divergences.iter().map(|d| Some(d / total)).collect()
}

/// A Gaussian kernel density of `xs` (in [0, 1]) on [`GRID`] points over
/// [0, 1], summing to 1; bandwidth by Scott's rule, at least 1/[`GRID`]
/// so that equal values still spread over a grid cell.
fn density(xs: &[f64]) -> Vec<f64> {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let h = (1.06 * sd * n.powf(-0.2)).max(1.0 / GRID as f64);
    let mut p: Vec<f64> = (0..GRID)
        .map(|g| {
            let at = (g as f64 + 0.5) / GRID as f64;
            xs.iter()
                .map(|x| (-0.5 * ((at - x) / h).powi(2)).exp())
                .sum::<f64>()
        })
        .collect();
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|v| *v /= sum);
    p
}

/// Σ p² / q − 1: how far `p` is from `q` (both summing to 1, `q` > 0
/// wherever `p` is, as a kernel density of a superset is).
fn pearson_divergence(p: &[f64], q: &[f64]) -> f64 {
    let sum: f64 = p
        .iter()
        .zip(q)
        .filter(|(_, q)| **q > 0.0)
        .map(|(p, q)| p * p / q)
        .sum();
    (sum - 1.0).max(0.0)
}

/// The best [`PARALLEL_BEST`] evaluations, one line each across the
/// parameters' axes (each scaled to its range) and the value's.
fn parallel(
    names: &[String],
    columns: &[Vec<f64>],
    values: &[f64],
    ranges: &[(f64, f64)],
    units: Units,
) -> Markup {
    let mut best: Vec<usize> = (0..values.len())
        .filter(|&i| values[i].is_finite())
        .collect();
    best.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    best.truncate(PARALLEL_BEST);
    let axes = names.len() + 1;
    let (w, h, pad) = ((axes as f64 * 110.0).max(300.0), 260.0, 30.0);
    let x = |k: usize| pad + k as f64 * (w - 2.0 * pad) / (axes - 1).max(1) as f64;
    let (v_lo, v_hi) = best.iter().fold((f64::MAX, f64::MIN), |(a, b), &i| {
        (a.min(values[i]), b.max(values[i]))
    });
    let two = |v: f64| format!("{v:.2}");
    let axis_labels: Vec<(&str, String, String)> = names
        .iter()
        .zip(ranges)
        .map(|(name, &(lo, hi))| (name.as_str(), two(lo), two(hi)))
        .chain([(
            units.title,
            two(v_lo * units.factor),
            two(v_hi * units.factor),
        )])
        .collect();
    let line = |i: usize| {
        points(
            (0..names.len())
                .map(|k| {
                    let (lo, hi) = ranges[k];
                    (
                        x(k),
                        scale(columns[k][i].clamp(lo, hi), lo, hi, h - pad, pad),
                    )
                })
                .chain([(x(names.len()), scale(values[i], v_lo, v_hi, h - pad, pad))]),
        )
    };
    html! {
        svg #parallel width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) } {
            @if best.is_empty() {
                text x="10" y="40" { "no results yet" }
            } @else {
                @for (k, (name, lo, hi)) in axis_labels.iter().enumerate() {
                    line x1=(px(x(k))) y1=(pad) x2=(px(x(k))) y2=(h - pad) stroke="#999" {}
                    text x=(px(x(k))) y="14" font-size="10" text-anchor="middle" { (name) }
                    text x=(px(x(k))) y=(pad - 3.0) font-size="9" text-anchor="middle" { (hi) }
                    text x=(px(x(k))) y=(h - pad + 12.0) font-size="9" text-anchor="middle" { (lo) }
                }
                @for (rank, &i) in best.iter().enumerate() {
                    // The best darkest.
                    polyline.best-line fill="none" stroke="#c33"
                        stroke-opacity=(format!("{:.2}", 1.0 - 0.8 * rank as f64 / best.len() as f64))
                        points=(line(i)) {}
                }
            }
        }
    }
}

/// The analysis section of a run's page, from its results in proposal
/// order and its free parameters' bounds (empty when unknown).
pub(super) fn panel(jobs: &[(Job, f64)], bounds: &[Bound], units: Units) -> Markup {
    let names = jobs
        .first()
        .map(|(j, _)| j.parameter_names())
        .unwrap_or_default();
    if names.is_empty() {
        return html! { div #parameters { p { "no evaluations yet" } } };
    }
    let values: Vec<f64> = jobs.iter().map(|(_, v)| *v).collect();
    let columns: Vec<Vec<f64>> = (0..names.len())
        .map(|k| {
            jobs.iter()
                .map(|(j, _)| j.request.job.parameters.get(k).map_or(f64::NAN, |p| p.1))
                .collect()
        })
        .collect();
    let bound_of = |name: &str| bounds.iter().find(|b| b.name == name);
    let ranges: Vec<(f64, f64)> = names
        .iter()
        .zip(&columns)
        .map(|(name, xs)| range(bound_of(name), xs))
        .collect();
    let mut shares: Vec<(&String, Option<f64>)> = names
        .iter()
        .zip(importance(&columns, &ranges, &values))
        .collect();
    shares.sort_by(|a, b| b.1.unwrap_or(-1.0).total_cmp(&a.1.unwrap_or(-1.0)));
    html! {
        h2 { "Parameters" }
        p { small {
            "Left: each parameter over the evaluations, its bounds dashed; right: the run's "
            (units.title) " against it (a slice through what the run tried)."
        } }
        div #parameters {
            @for (k, name) in names.iter().enumerate() {
                @let periodic = bound_of(name).is_some_and(|b| b.periodic);
                @let (chart, note) = over_evaluations(name, &columns[k], ranges[k], periodic);
                div.parameter style="display:inline-block;margin:6px;vertical-align:top;white-space:nowrap" {
                    b { (name) }
                    @if let Some(note) = note { " " small.pinned { (note) } }
                    br;
                    (chart)
                    (slice(name, &columns[k], &values, ranges[k], units))
                }
            }
        }
        h2 { "Best " (PARALLEL_BEST) " in parallel coordinates" }
        (parallel(&names, &columns, &values, &ranges, units))
        h2 { "Which parameters matter (PED-ANOVA)" }
        p { small {
            "PED-ANOVA (Watanabe et al. 2023, as Optuna computes it): how differently the best 10 % of the "
            "evaluations lie along each parameter than all of them (the Pearson divergence of their kernel "
            "densities), normalised so the shares sum to 1. It compares the best with what the run tried, "
            "so where the optimizer chose to look is accounted for; what it never tried is not, and "
            "interactions show only through where the best gather."
        } }
        table #importance {
            tr { th { "parameter" } th.num { "share" } th {} }
            @for (name, share) in shares {
                tr {
                    td { (name) }
                    @if let Some(s) = share {
                        td.num { (format!("{s:.2}")) }
                        td { svg width="160" height="10" { rect width=(px(160.0 * s)) height="10" fill="#36c" {} } }
                    } @else {
                        td.num { "–" }
                        td { small { "needs " (MIN_FOR_IMPORTANCE) " results that vary" } }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn importance_sees_the_parameter_that_drives_the_value_and_shares_sum_to_one() {
        // v depends on x alone; y and z are irrelevant.
        let xs: Vec<f64> = (0..200).map(|i| (i as f64 * 0.37).sin()).collect();
        let ys: Vec<f64> = (0..200).map(|i| (i as f64 * 1.91).cos()).collect();
        let zs: Vec<f64> = (0..200).map(|i| (i as f64 * 2.71).sin()).collect();
        let values: Vec<f64> = xs.iter().map(|x| -x * x).collect();
        let ranges = [(-1.0, 1.0); 3];
        let columns = vec![xs.clone(), ys, zs];
        let shares: Vec<f64> = importance(&columns, &ranges, &values)
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert!(shares[0] > 0.8, "{shares:?}");
        assert!(shares[1] < 0.1 && shares[2] < 0.1, "{shares:?}");
        assert!(
            (shares.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "{shares:?}"
        );
        // Too few results, or no variance: no estimate.
        let few: Vec<Vec<f64>> = columns.iter().map(|c| c[..10].to_vec()).collect();
        assert_eq!(importance(&few, &ranges, &values[..10]), vec![None; 3]);
        assert_eq!(
            importance(&columns, &ranges, &vec![1.0; 200]),
            vec![None; 3]
        );
    }

    #[test]
    fn a_parameter_pinned_at_a_bound_says_so() {
        use std::f64::consts::PI;
        let xs = vec![1.0, 1.0, 1.0, 0.5, 0.2];
        let (svg, note) = over_evaluations("amplitude_0", &xs, (0.0, 1.0), false);
        let note = note.unwrap();
        assert!(note.contains("60 % at its maximum"), "{note}");
        assert_eq!(svg.into_string().matches("class=\"bound\"").count(), 2);
        let (_, periodic) = over_evaluations("phase_0_1", &[PI, -PI], (-PI, PI), true);
        let periodic = periodic.unwrap();
        assert!(periodic.contains("wraps"), "{periodic}");
        assert!(!periodic.contains("% at its"), "{periodic}");
    }
}
