//! What the dashboard's charts share: numbers as attributes, and the axes
//! of a full-size chart with its titles. Charts are SVG built with maud, so
//! every label (a run's name, a parameter's) is escaped like page text.

use maud::{Markup, html};

/// A coordinate to a tenth of a pixel.
pub(super) fn px(v: f64) -> String {
    format!("{v:.1}")
}

/// Polyline points from coordinates.
pub(super) fn points(xy: impl IntoIterator<Item = (f64, f64)>) -> String {
    xy.into_iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// About this many ticks an axis gets ([`ticks`]).
const TICKS: usize = 5;

/// Round values between `lo` and `hi` at a step of 1, 2 or 5 times a power
/// of ten, about `count` of them (the "nice numbers" of Heckbert's
/// Graphics Gems labelling), and the decimals their labels need.
pub(super) fn ticks(lo: f64, hi: f64, count: usize) -> (Vec<f64>, usize) {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return (vec![lo], 2);
    }
    let raw = (hi - lo) / count.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    let values = (first..=last).map(|k| k as f64 * step).collect();
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    (values, decimals)
}

/// A full-size chart's frame: both axes inside `pad`, each with round
/// ticks, their values and light grid lines across the plot, and both
/// titles (the y title turned upright). The chart maps `x` (its range)
/// from `pad` to `width - pad` and `y` from `height - pad` up to `pad`,
/// as the axes are drawn.
pub(super) struct Axes<'a> {
    pub width: f64,
    pub height: f64,
    pub pad: f64,
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub x_title: &'a str,
    pub y_title: &'a str,
}

impl Axes<'_> {
    fn x_at(&self, v: f64) -> f64 {
        let (lo, hi) = self.x;
        self.pad + (v - lo) / (hi - lo).max(1e-12) * (self.width - 2.0 * self.pad)
    }

    fn y_at(&self, v: f64) -> f64 {
        let (lo, hi) = self.y;
        self.height - self.pad - (v - lo) / (hi - lo).max(1e-12) * (self.height - 2.0 * self.pad)
    }

    pub(super) fn draw(&self) -> Markup {
        let (w, h, pad) = (self.width, self.height, self.pad);
        let (bottom, right, mid_y) = (h - pad, w - pad, h / 2.0);
        let (x_ticks, x_decimals) = ticks(self.x.0, self.x.1, TICKS);
        let (y_ticks, y_decimals) = ticks(self.y.0, self.y.1, TICKS);
        html! {
            g.grid stroke="#e6e6e6" {
                @for &v in &y_ticks {
                    line x1=(pad) y1=(px(self.y_at(v))) x2=(right) y2=(px(self.y_at(v))) {}
                }
            }
            line x1=(pad) y1=(bottom) x2=(right) y2=(bottom) stroke="#999" {}
            line x1=(pad) y1=(pad) x2=(pad) y2=(bottom) stroke="#999" {}
            @for &v in &x_ticks {
                line.tick x1=(px(self.x_at(v))) y1=(bottom) x2=(px(self.x_at(v))) y2=(bottom + 4.0) stroke="#999" {}
                text.tick-label x=(px(self.x_at(v))) y=(bottom + 15.0) font-size="10" text-anchor="middle" {
                    (format!("{v:.x_decimals$}"))
                }
            }
            @for &v in &y_ticks {
                line.tick x1=(pad - 4.0) y1=(px(self.y_at(v))) x2=(pad) y2=(px(self.y_at(v))) stroke="#999" {}
                text.tick-label x=(pad - 6.0) y=(px(self.y_at(v) + 3.0)) font-size="10" text-anchor="end" {
                    (format!("{v:.y_decimals$}"))
                }
            }
            text x=(w / 2.0) y=(h - 6.0) font-size="11" text-anchor="middle" { (self.x_title) }
            text x="10" y=(mid_y) font-size="11" text-anchor="middle"
                transform=(format!("rotate(-90 10 {mid_y})")) { (self.y_title) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_inside_the_range() {
        assert_eq!(ticks(0.0, 18.0, 5), (vec![0.0, 5.0, 10.0, 15.0], 0));
        let (values, decimals) = ticks(0.4881, 16.7962, 5);
        assert_eq!(values, vec![5.0, 10.0, 15.0]);
        assert_eq!(decimals, 0);
        let (values, decimals) = ticks(-0.93, -0.02, 5);
        assert_eq!(decimals, 1);
        assert!(
            values.iter().all(|v| (-0.93..=-0.02).contains(v)),
            "{values:?}"
        );
        assert_eq!(values.len(), 4, "{values:?}");
        assert_eq!(ticks(1.0, 1.0, 5).0, vec![1.0]);
    }
}
