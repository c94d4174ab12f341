//! A run's parameters analysed on its page: each parameter against the
//! evaluations with its bounds drawn (a parameter pinned at a bound shows,
//! and says so), the run's value against each parameter (a slice plot), its
//! best evaluations in parallel coordinates, and an estimate of which
//! parameters matter.
//!
//! The importance estimate is each parameter's first-order share of the
//! value's variance: the correlation ratio η² of the value over ten
//! equal-count bins of the parameter (the between-bin variance of the bin
//! means over the total variance). It is what fANOVA calls a main effect,
//! estimated by binning rather than by a random forest; interactions
//! between parameters are not counted, so the shares need not sum to 1. On
//! an optimizer's samples, which crowd near its optimum, it says which
//! parameters moved the value over what the run tried, not over the box.

use maud::{Markup, html};
use yamor_optimizer_api::Bound;

use super::Units;
use super::plot::{points, px};
use crate::model::Job;

/// Evaluations drawn in the parallel-coordinates view: the best ones.
pub(super) const PARALLEL_BEST: usize = 20;

/// Bins of the importance estimate, and the evaluations it needs at least.
const BINS: usize = 10;
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

/// The first-order share of the variance of `values` that `xs` explains:
/// η² over [`BINS`] equal-count bins. `None` with too few evaluations or
/// no variance.
pub(super) fn importance(xs: &[f64], values: &[f64]) -> Option<f64> {
    let mut pairs: Vec<(f64, f64)> = xs
        .iter()
        .zip(values)
        .filter(|(x, v)| x.is_finite() && v.is_finite())
        .map(|(&x, &v)| (x, v))
        .collect();
    if pairs.len() < MIN_FOR_IMPORTANCE {
        return None;
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pairs.len() as f64;
    let mean = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let total: f64 = pairs.iter().map(|p| (p.1 - mean).powi(2)).sum();
    if total <= 0.0 {
        return None;
    }
    let per_bin = pairs.len().div_ceil(BINS);
    let between: f64 = pairs
        .chunks(per_bin)
        .map(|bin| {
            let m = bin.iter().map(|p| p.1).sum::<f64>() / bin.len() as f64;
            bin.len() as f64 * (m - mean).powi(2)
        })
        .sum();
    Some((between / total).clamp(0.0, 1.0))
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
        .zip(&columns)
        .map(|(name, xs)| (name, importance(xs, &values)))
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
        h2 { "Which parameters matter" }
        p { small {
            "Each parameter's first-order share of the value's variance over the evaluations              (correlation ratio η² over ten equal-count bins, fANOVA's main effect estimated              by binning); interactions are not counted."
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
    fn importance_sees_the_parameter_that_drives_the_value_and_not_the_other() {
        // v depends on x alone; y is noise-free but irrelevant.
        let xs: Vec<f64> = (0..200).map(|i| (i as f64 * 0.37).sin()).collect();
        let ys: Vec<f64> = (0..200).map(|i| (i as f64 * 1.91).cos()).collect();
        let values: Vec<f64> = xs.iter().map(|x| -x * x).collect();
        let x = importance(&xs, &values).unwrap();
        let y = importance(&ys, &values).unwrap();
        assert!(x > 0.9, "{x}");
        assert!(y < 0.2, "{y}");
        // Too few results, or no variance: no estimate.
        assert_eq!(importance(&xs[..10], &values[..10]), None);
        assert_eq!(importance(&xs, &vec![1.0; 200]), None);
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
