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

use std::fmt::Write as _;

use yamor_optimizer_api::Bound;

use super::{Units, esc};
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
fn frame(svg: &mut String, lo: &str, hi: &str, x_title: &str, x_lo: &str, x_hi: &str) {
    let _ = write!(
        svg,
        "<line x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#999\"/>\
         <line x1=\"{PAD}\" y1=\"8\" x2=\"{PAD}\" y2=\"{b}\" stroke=\"#999\"/>\
         <text x=\"{t}\" y=\"14\" font-size=\"9\" text-anchor=\"end\">{hi}</text>\
         <text x=\"{t}\" y=\"{b}\" font-size=\"9\" text-anchor=\"end\">{lo}</text>\
         <text x=\"{PAD}\" y=\"{xl}\" font-size=\"9\">{x_lo}</text>\
         <text x=\"{r}\" y=\"{xl}\" font-size=\"9\" text-anchor=\"end\">{x_hi}</text>\
         <text x=\"{mid}\" y=\"{xl}\" font-size=\"9\" text-anchor=\"middle\">{x_title}</text>",
        b = H - 20.0,
        r = W - 6.0,
        t = PAD - 3.0,
        xl = H - 8.0,
        mid = (PAD + W) / 2.0,
        hi = esc(hi),
        lo = esc(lo),
        x_title = esc(x_title),
        x_lo = esc(x_lo),
        x_hi = esc(x_hi),
    );
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
) -> (String, String) {
    let mut svg = format!(
        "<svg class=param data-param=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">",
        esc(name)
    );
    frame(
        &mut svg,
        &format!("{lo:.3}"),
        &format!("{hi:.3}"),
        "evaluation",
        "1",
        &xs.len().to_string(),
    );
    let (top, bottom) = (8.0, H - 20.0);
    for y in [top, bottom] {
        let _ = write!(
            svg,
            "<line class=bound x1=\"{PAD}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#c33\" stroke-dasharray=\"3 3\"/>",
            W - 6.0
        );
    }
    let n = xs.len().max(2) as f64 - 1.0;
    for (i, &x) in xs.iter().enumerate().filter(|(_, x)| x.is_finite()) {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.5\" fill=\"#36c\"/>",
            scale(i as f64, 0.0, n, PAD, W - 6.0),
            scale(x.clamp(lo, hi), lo, hi, bottom, top)
        );
    }
    svg.push_str("</svg>");
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
    let note = if notes.is_empty() {
        String::new()
    } else {
        format!("<small class=pinned>{}</small>", esc(&notes.join("; ")))
    };
    (svg, note)
}

/// The run's value against one parameter.
fn slice(name: &str, xs: &[f64], values: &[f64], (lo, hi): (f64, f64), units: Units) -> String {
    let finite: Vec<(f64, f64)> = xs
        .iter()
        .zip(values)
        .filter(|(x, v)| x.is_finite() && v.is_finite())
        .map(|(&x, &v)| (x, v * units.factor))
        .collect();
    let mut svg = format!(
        "<svg class=slice data-param=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">",
        esc(name)
    );
    let (v_lo, v_hi) = finite
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &(_, v)| (a.min(v), b.max(v)));
    if v_lo > v_hi {
        svg.push_str("<text x=\"10\" y=\"40\" font-size=\"10\">no results</text></svg>");
        return svg;
    }
    // The unit is in the section's title: labels stay inside the margin.
    frame(
        &mut svg,
        &format!("{v_lo:.2}"),
        &format!("{v_hi:.2}"),
        name,
        &format!("{lo:.2}"),
        &format!("{hi:.2}"),
    );
    for (x, v) in finite {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.5\" fill=\"#2a7\"/>",
            scale(x.clamp(lo, hi), lo, hi, PAD, W - 6.0),
            scale(v, v_lo, v_hi, H - 20.0, 8.0)
        );
    }
    svg.push_str("</svg>");
    svg
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
) -> String {
    let mut best: Vec<usize> = (0..values.len())
        .filter(|&i| values[i].is_finite())
        .collect();
    best.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    best.truncate(PARALLEL_BEST);
    let axes = names.len() + 1;
    let (w, h, pad) = ((axes as f64 * 110.0).max(300.0), 260.0, 30.0);
    let mut svg = format!("<svg id=parallel width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">");
    if best.is_empty() {
        svg.push_str("<text x=\"10\" y=\"40\">no results yet</text></svg>");
        return svg;
    }
    let x = |k: usize| pad + k as f64 * (w - 2.0 * pad) / (axes - 1).max(1) as f64;
    let (v_lo, v_hi) = best.iter().fold((f64::MAX, f64::MIN), |(a, b), &i| {
        (a.min(values[i]), b.max(values[i]))
    });
    for (k, name) in names
        .iter()
        .map(String::as_str)
        .chain([units.title])
        .enumerate()
    {
        let (lo, hi) = if k < names.len() {
            (format!("{:.2}", ranges[k].0), format!("{:.2}", ranges[k].1))
        } else {
            (
                format!("{:.2}", v_lo * units.factor),
                format!("{:.2}", v_hi * units.factor),
            )
        };
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{pad}\" x2=\"{x:.1}\" y2=\"{b}\" stroke=\"#999\"/>\
             <text x=\"{x:.1}\" y=\"14\" font-size=\"10\" text-anchor=\"middle\">{name}</text>\
             <text x=\"{x:.1}\" y=\"{top}\" font-size=\"9\" text-anchor=\"middle\">{hi}</text>\
             <text x=\"{x:.1}\" y=\"{bl}\" font-size=\"9\" text-anchor=\"middle\">{lo}</text>",
            x = x(k),
            b = h - pad,
            top = pad - 3.0,
            bl = h - pad + 12.0,
            name = esc(name),
        );
    }
    for (rank, &i) in best.iter().enumerate() {
        let mut points: Vec<String> = (0..names.len())
            .map(|k| {
                let (lo, hi) = ranges[k];
                let v = columns[k][i].clamp(lo, hi);
                format!("{:.1},{:.1}", x(k), scale(v, lo, hi, h - pad, pad))
            })
            .collect();
        points.push(format!(
            "{:.1},{:.1}",
            x(names.len()),
            scale(values[i], v_lo, v_hi, h - pad, pad)
        ));
        // The best darkest.
        let opacity = 1.0 - 0.8 * rank as f64 / best.len() as f64;
        let _ = write!(
            svg,
            "<polyline class=best-line fill=\"none\" stroke=\"#c33\" stroke-opacity=\"{opacity:.2}\" points=\"{}\"/>",
            points.join(" ")
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The analysis section of a run's page, from its results in proposal
/// order and its free parameters' bounds (empty when unknown).
pub(super) fn panel(jobs: &[(Job, f64)], bounds: &[Bound], units: Units) -> String {
    let names = jobs
        .first()
        .map(|(j, _)| j.parameter_names())
        .unwrap_or_default();
    if names.is_empty() {
        return "<div id=parameters><p>no evaluations yet</p></div>".into();
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
    let mut out = String::from(
        "<h2>Parameters</h2><p><small>Left: each parameter over the evaluations, its bounds \
         dashed; right: the run's {} against it (a slice through what the run tried).</small></p>\
         <div id=parameters>",
    )
    .replace("{}", &esc(units.title));
    for (k, name) in names.iter().enumerate() {
        let periodic = bound_of(name).is_some_and(|b| b.periodic);
        let (chart, note) = over_evaluations(name, &columns[k], ranges[k], periodic);
        let _ = write!(
            out,
            "<div class=parameter style=\"display:inline-block;margin:6px;vertical-align:top;white-space:nowrap\">\
             <b>{}</b> {note}<br>{chart}{}</div>",
            esc(name),
            slice(name, &columns[k], &values, ranges[k], units),
        );
    }
    out.push_str("</div>");
    let _ = write!(
        out,
        "<h2>Best {PARALLEL_BEST} in parallel coordinates</h2>{}",
        parallel(&names, &columns, &values, &ranges, units)
    );
    out.push_str(
        "<h2>Which parameters matter</h2><p><small>Each parameter's first-order share of \
         the value's variance over the evaluations (correlation ratio η² over ten \
         equal-count bins, fANOVA's main effect estimated by binning); interactions are \
         not counted.</small></p><table id=importance><tr><th>parameter</th><th class=num>share</th><th></th></tr>",
    );
    let mut shares: Vec<(&String, Option<f64>)> = names
        .iter()
        .zip(&columns)
        .map(|(name, xs)| (name, importance(xs, &values)))
        .collect();
    shares.sort_by(|a, b| b.1.unwrap_or(-1.0).total_cmp(&a.1.unwrap_or(-1.0)));
    for (name, share) in shares {
        match share {
            Some(s) => {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td class=num>{s:.2}</td><td><svg width=\"160\" height=\"10\"><rect width=\"{:.1}\" height=\"10\" fill=\"#36c\"/></svg></td></tr>",
                    esc(name),
                    160.0 * s
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td class=num>–</td><td><small>needs {MIN_FOR_IMPORTANCE} results that vary</small></td></tr>",
                    esc(name)
                );
            }
        }
    }
    out.push_str("</table>");
    out
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
        assert!(note.contains("60 % at its maximum"), "{note}");
        assert_eq!(svg.matches("class=bound").count(), 2);
        let (_, periodic) = over_evaluations("phase_0_1", &[PI, -PI], (-PI, PI), true);
        assert!(periodic.contains("wraps"), "{periodic}");
        assert!(!periodic.contains("% at its"), "{periodic}");
    }
}
