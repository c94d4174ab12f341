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

/// A full-size chart's frame: both axes inside `pad`, the y range's ends,
/// the x axis's end value and both titles (the y title turned upright).
pub(super) struct Axes<'a> {
    pub width: f64,
    pub height: f64,
    pub pad: f64,
    pub y_lo: String,
    pub y_hi: String,
    pub x_end: String,
    pub x_title: &'a str,
    pub y_title: &'a str,
}

impl Axes<'_> {
    pub(super) fn draw(&self) -> Markup {
        let (w, h, pad) = (self.width, self.height, self.pad);
        let (bottom, right, mid_y) = (h - pad, w - pad, h / 2.0);
        html! {
            line x1=(pad) y1=(bottom) x2=(right) y2=(bottom) stroke="#999" {}
            line x1=(pad) y1=(pad) x2=(pad) y2=(bottom) stroke="#999" {}
            text x=(pad) y=(pad - 6.0) font-size="11" { (self.y_hi) }
            text x=(pad) y=(bottom + 14.0) font-size="11" { (self.y_lo) }
            text x=(right) y=(bottom + 14.0) font-size="11" text-anchor="end" { (self.x_end) }
            text x=(w / 2.0) y=(h - 6.0) font-size="11" text-anchor="middle" { (self.x_title) }
            text x="12" y=(mid_y) font-size="11" text-anchor="middle"
                transform=(format!("rotate(-90 12 {mid_y})")) { (self.y_title) }
        }
    }
}
