//! `/runs/{id}/map`: a quality-diversity run's map of gaits as a heat map
//! over two of its axes (each square the best elite over the other axes),
//! where a click opens the elite's job (its walk replayed in 3-D), and
//! `/runs/{id}/map.json`, the whole map (each cell's gait, descriptors,
//! value, held-out spread and world) for a later run to start from.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::{App, PageError, internal, page, plot, run_of};
use crate::runs::{MapCell, RunMap};

/// Which two axes the heat map shows and what colours its squares.
#[derive(Debug, Default, Deserialize)]
pub(super) struct MapQuery {
    /// Axis across (its index in the grid); the first by default.
    x: Option<usize>,
    /// Axis up; the second by default (the first of a one-axis map).
    y: Option<usize>,
    /// `held-out`: colour by the held-out mean; otherwise by the value the
    /// elite was filed with.
    colour: Option<String>,
}

async fn map_of(app: &App, id: u64) -> Result<RunMap, PageError> {
    run_of(&app.organizer.runs, id)?;
    app.organizer
        .runs
        .map(id)
        .await
        .map_err(internal)?
        .ok_or_else(|| {
            PageError(
                StatusCode::NOT_FOUND,
                format!("run {id}'s optimizer keeps no map (run map-elites for one)"),
            )
        })
}

/// The value a cell is coloured by.
fn shown(cell: &MapCell, held_out: bool) -> Option<f64> {
    if held_out {
        cell.held_out.map(|s| s.mean)
    } else {
        Some(cell.fitness)
    }
}

/// From pale yellow (low) to dark red (high), as a heat map reads.
fn heat(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(255.0, 140.0),
        lerp(237.0, 20.0),
        lerp(160.0, 30.0)
    )
}

/// What a heat map shows: the axes across and up (their indices in the
/// grid) and whether squares are coloured by the held-out mean.
#[derive(Debug, Clone, Copy)]
pub(super) struct MapView {
    pub ax: usize,
    pub ay: usize,
    pub held_out: bool,
}

impl MapView {
    /// The view `query` asks of `map`; refused for an axis it does not have.
    pub(super) fn of(map: &RunMap, query: &MapQuery) -> Result<MapView, PageError> {
        let axes = map.grid.axes();
        let bad_axis = |a: usize| {
            PageError(
                StatusCode::BAD_REQUEST,
                format!(
                    "axis {a} does not exist: the map has {} axes, 0 to {}",
                    axes.len(),
                    axes.len() - 1
                ),
            )
        };
        let ax = query.x.unwrap_or(0);
        let ay = query.y.unwrap_or(if axes.len() > 1 { 1 } else { 0 });
        if ax >= axes.len() {
            return Err(bad_axis(ax));
        }
        if ay >= axes.len() {
            return Err(bad_axis(ay));
        }
        Ok(MapView {
            ax,
            ay,
            held_out: query.colour.as_deref() == Some("held-out"),
        })
    }

    /// Links to the same page (`path`) showing other axes or colours.
    pub(super) fn picker(self, map: &RunMap, path: &str) -> Markup {
        let MapView { ax, ay, held_out } = self;
        let axes = map.grid.axes();
        let link = |x: usize, y: usize, colour: &str| format!("{path}?x={x}&y={y}&colour={colour}");
        let colour = if held_out { "held-out" } else { "value" };
        html! {
            "across: "
            @for (k, a) in axes.iter().enumerate() {
                @if k == ax { b { (a.name) } } @else { a href=(link(k, ay, colour)) { (a.name) } }
                " "
            }
            " · up: "
            @for (k, a) in axes.iter().enumerate() {
                @if k == ay { b { (a.name) } } @else { a href=(link(ax, k, colour)) { (a.name) } }
                " "
            }
            " · colour: "
            @if held_out { a href=(link(ax, ay, "value")) { "value filed" } " " b { "held-out mean" } }
            @else { b { "value filed" } " " a #colour-held-out href=(link(ax, ay, "held-out")) { "held-out mean" } }
        }
    }
}

/// A cell marked on a heat map with a label (a walk's number): an
/// adaptation's walks drawn over the map they adapted from.
pub(super) struct Mark {
    /// The cell, in the map's grid.
    pub cell: usize,
    pub label: String,
}

/// The heat map: one square per pair of bins, the best elite over the
/// other axes, linking to its job; `marks` labelled on their squares (the
/// labels of one square joined) and joined in order by a line.
pub(super) fn heat_map(map: &RunMap, view: MapView, marks: &[Mark]) -> Markup {
    let MapView { ax, ay, held_out } = view;
    let axes = map.grid.axes();
    let (x_axis, y_axis) = (&axes[ax], &axes[ay]);
    let (nx, ny) = (x_axis.bins, if ax == ay { 1 } else { y_axis.bins });
    let (w, h, pad) = (760.0, 520.0, 60.0);
    let (cw, ch) = ((w - 2.0 * pad) / nx as f64, (h - 2.0 * pad) / ny as f64);
    let mut best: Vec<Option<&MapCell>> = vec![None; nx * ny];
    for cell in &map.cells {
        let Some(v) = shown(cell, held_out) else {
            continue;
        };
        let (bx, by) = (cell.bins[ax], if ax == ay { 0 } else { cell.bins[ay] });
        let slot = &mut best[by * nx + bx];
        if slot.is_none_or(|b| shown(b, held_out).is_none_or(|bv| v > bv)) {
            *slot = Some(cell);
        }
    }
    let values: Vec<f64> = best
        .iter()
        .flatten()
        .filter_map(|c| shown(c, held_out))
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let span = (hi - lo).max(1e-12);
    let tick = |axis: &yamor_optimizer_api::map::Axis, bin: usize| {
        let (low, _) = axis.range(bin);
        format!("{low:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    };
    let every_x = nx.div_ceil(12).max(1);
    let every_y = ny.div_ceil(10).max(1);
    // A mark's square's centre, and each square's labels in mark order.
    let centre = |cell: usize| {
        let bins = map.grid.bins_of(cell);
        let (bx, by) = (bins[ax], if ax == ay { 0 } else { bins[ay] });
        (
            (bx, by),
            pad + (bx as f64 + 0.5) * cw,
            h - pad - (by as f64 + 0.5) * ch,
        )
    };
    let mut labels: BTreeMap<(usize, usize), (f64, f64, Vec<&str>)> = BTreeMap::new();
    for mark in marks {
        let (square, x, y) = centre(mark.cell);
        labels
            .entry(square)
            .or_insert((x, y, Vec::new()))
            .2
            .push(&mark.label);
    }
    let path = plot::points(marks.iter().map(|m| {
        let (_, x, y) = centre(m.cell);
        (x, y)
    }));
    let radius = (cw.min(ch) * 0.4).clamp(4.0, 14.0);
    html! {
        svg #heatmap xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={ "0 0 " (w) " " (h) } {
            rect x=(pad) y=(pad) width=(w - 2.0 * pad) height=(h - 2.0 * pad) fill="#f4f4f4" {}
            @for by in 0..ny {
                @for bx in 0..nx {
                    @if let Some(cell) = best[by * nx + bx] {
                        @let v = shown(cell, held_out).unwrap_or(lo);
                        a.cell href={ "/jobs/" (cell.job_id) } data-cell=(cell.cell) {
                            rect x=(plot::px(pad + bx as f64 * cw))
                                y=(plot::px(h - pad - (by + 1) as f64 * ch))
                                width=(plot::px(cw)) height=(plot::px(ch))
                                fill=(heat((v - lo) / span)) stroke="#fff" stroke-width="0.5" {
                                title { (cell_title(map, cell)) }
                            }
                        }
                    }
                }
            }
            @for bx in (0..=nx).step_by(every_x) {
                @let x = pad + bx as f64 * cw;
                line x1=(plot::px(x)) y1=(h - pad) x2=(plot::px(x)) y2=(h - pad + 4.0) stroke="#999" {}
                text x=(plot::px(x)) y=(h - pad + 16.0) font-size="10" text-anchor="middle" {
                    @if bx == nx { (format!("{}", x_axis.max)) } @else { (tick(x_axis, bx)) }
                }
            }
            @if ax != ay {
                @for by in (0..=ny).step_by(every_y) {
                    @let y = h - pad - by as f64 * ch;
                    line x1=(pad - 4.0) y1=(plot::px(y)) x2=(pad) y2=(plot::px(y)) stroke="#999" {}
                    text x=(pad - 6.0) y=(plot::px(y + 3.0)) font-size="10" text-anchor="end" {
                        @if by == ny { (format!("{}", y_axis.max)) } @else { (tick(y_axis, by)) }
                    }
                }
            }
            text x=(w / 2.0) y=(h - 18.0) font-size="12" text-anchor="middle" { (x_axis.name) }
            @if ax != ay {
                text x="14" y=(h / 2.0) font-size="12" text-anchor="middle"
                    transform=(format!("rotate(-90 14 {})", h / 2.0)) { (y_axis.name) }
            }
            // Over the squares but not in their way: a click still opens
            // the elite's job.
            @if !marks.is_empty() {
                polyline #walk-path fill="none" stroke="#036" stroke-width="1.5"
                    stroke-dasharray="4 3" points=(path) pointer-events="none" {}
                @for (x, y, names) in labels.values() {
                    g.tried pointer-events="none" {
                        circle cx=(plot::px(*x)) cy=(plot::px(*y)) r=(plot::px(radius))
                            fill="#fff" fill-opacity="0.85" stroke="#036" stroke-width="1.5" {}
                        text x=(plot::px(*x)) y=(plot::px(*y + 3.5)) font-size="10"
                            text-anchor="middle" fill="#036" { (names.join(",")) }
                    }
                }
            }
            @if !values.is_empty() {
                @for k in 0..10 {
                    rect x=(plot::px(w - pad - 200.0 + 20.0 * f64::from(k))) y="14" width="20" height="12"
                        fill=(heat(f64::from(k) / 9.0)) {}
                }
                text x=(w - pad - 204.0) y="24" font-size="10" text-anchor="end" { (cm_s(lo)) }
                text x=(w - pad + 4.0) y="24" font-size="10" { (cm_s(hi)) }
            }
        }
    }
}

fn cm_s(v: f64) -> String {
    format!("{:.2} cm/s", v * 100.0)
}

/// A square's tooltip: every descriptor, the value, the held-out figure.
fn cell_title(map: &RunMap, cell: &MapCell) -> String {
    let descriptors: Vec<String> = map
        .grid
        .axes()
        .iter()
        .zip(&cell.descriptors)
        .map(|(a, d)| format!("{} {d:.3}", a.name))
        .collect();
    let held_out = cell
        .held_out
        .map_or("not re-walked".into(), |s| format!("{} held out", s.cm_s()));
    format!(
        "cell {}: {} · {} · {} · job {}",
        cell.cell,
        descriptors.join(", "),
        cm_s(cell.fitness),
        held_out,
        cell.job_id
    )
}

pub(super) async fn map_page(
    State(app): State<App>,
    Path(id): Path<u64>,
    Query(query): Query<MapQuery>,
) -> Result<Html<String>, PageError> {
    let run = run_of(&app.organizer.runs, id)?;
    let map = map_of(&app, id).await?;
    let axes = map.grid.axes();
    let view = MapView::of(&map, &query)?;
    let re_walked = map.cells.iter().filter(|c| c.held_out.is_some()).count();
    let mut ranked: Vec<&MapCell> = map.cells.iter().collect();
    ranked.sort_by(|a, b| {
        let key = |c: &MapCell| c.held_out.map_or(f64::NEG_INFINITY, |s| s.mean);
        key(b)
            .total_cmp(&key(a))
            .then(b.fitness.total_cmp(&a.fitness))
    });
    let body = html! {
        p {
            "run " a href={ "/runs/" (id) } { (run.name) } " · optimizer " b { (run.optimizer) }
            " · state " b { (run.state.as_str()) }
        }
        p #map-summary {
            b #coverage { (map.cells.len()) } " of " (map.grid.cells()) " cells filled ("
            (format!("{:.1} %", 100.0 * map.coverage())) ") by " (map.results) " results · QD score "
            b #qd-score { (format!("{:.4}", map.qd_score())) } " (sum of the elites' m/s) · "
            (re_walked) " elites re-walked from held-out starts"
        }
        p {
            (view.picker(&map, &format!("/runs/{id}/map")))
            " · " a href={ "/runs/" (id) "/map.json" } { "the whole map (JSON)" }
        }
        p { small { "Each square is the best elite over the axes not shown; hover for its \
                     descriptors, click to open its walk (and its replay)." } }
        (heat_map(&map, view, &[]))
        h2 { "Best elites by held-out mean" }
        table #elites {
            tr {
                th { "cell" }
                @for a in axes { th.num { (a.name) } }
                th.num { "filed (cm/s)" } th.num { "held out" } th { "world" } th { "walk" }
            }
            @for cell in ranked.iter().take(20) {
                tr {
                    td { (cell.cell) }
                    @for d in &cell.descriptors { td.num { (format!("{d:.3}")) } }
                    td.num { (format!("{:.2}", cell.fitness * 100.0)) }
                    td.num { (cell.held_out.map_or("–".into(), |s| s.cm_s())) }
                    td {
                        @if cell.world == yamor_core::world::World::default() && cell.friction.is_none() {
                            "nominal (the host's own)"
                        } @else { (cell.world.describe(cell.friction)) }
                    }
                    td { a href={ "/jobs/" (cell.job_id) } { "job " (cell.job_id) } " · "
                         a href={ "/jobs/" (cell.job_id) "/replay" } { "replay" } }
                }
            }
        }
    };
    Ok(page(&format!("Run {id}: map of gaits"), body))
}

pub(super) async fn map_json(
    State(app): State<App>,
    Path(id): Path<u64>,
) -> Result<Response, PageError> {
    let map = map_of(&app, id).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        map.to_json(id).to_string(),
    )
        .into_response())
}
