//! A map of solutions (a quality-diversity archive): a grid over named
//! behaviour descriptors whose every cell keeps the best solution that
//! landed in it. A quality-diversity plugin fills one; the runtime rebuilds
//! the same map from a run's stored results to show and re-walk it, so both
//! use these types and file a result in the same cell.
//!
//! As in pyribs' `GridArchive`, descriptors outside an axis' range are
//! filed in its edge cell, and a cell's elite is replaced only by a strictly
//! better value.

use std::collections::BTreeMap;
use std::fmt;

/// One descriptor's axis: `bins` equal cells over `[min, max]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub min: f64,
    pub max: f64,
    pub bins: usize,
}

impl Axis {
    /// The bin of `value`: clamped to the edge bins outside the range.
    #[must_use]
    pub fn bin(&self, value: f64) -> usize {
        let unit = (value - self.min) / (self.max - self.min);
        let bin = (unit * self.bins as f64).floor();
        if bin.is_nan() || bin < 0.0 {
            0
        } else {
            (bin as usize).min(self.bins - 1)
        }
    }

    /// The descriptor range `[low, high)` of bin `bin`.
    #[must_use]
    pub fn range(&self, bin: usize) -> (f64, f64) {
        let width = (self.max - self.min) / self.bins as f64;
        (
            self.min + width * bin as f64,
            self.min + width * (bin + 1) as f64,
        )
    }
}

/// The grid of a map: its axes, first slowest.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    axes: Vec<Axis>,
}

/// The most cells a grid may have: a map held in memory by every run that
/// shows it.
pub const MAX_CELLS: usize = 1 << 20;

impl Grid {
    /// A grid over `axes`, checked: at least one, distinct names, finite
    /// ordered ranges, at least one bin each, at most [`MAX_CELLS`] cells.
    pub fn new(axes: Vec<Axis>) -> Result<Self, GridError> {
        if axes.is_empty() {
            return Err(GridError::Empty);
        }
        let mut cells = 1usize;
        for (i, axis) in axes.iter().enumerate() {
            if axes[..i].iter().any(|a| a.name == axis.name) {
                return Err(GridError::Repeated(axis.name.clone()));
            }
            if !(axis.min.is_finite() && axis.max.is_finite() && axis.min < axis.max) {
                return Err(GridError::Range(axis.name.clone()));
            }
            if axis.bins == 0 {
                return Err(GridError::Bins(axis.name.clone()));
            }
            cells = cells
                .checked_mul(axis.bins)
                .filter(|&c| c <= MAX_CELLS)
                .ok_or(GridError::TooLarge)?;
        }
        Ok(Grid { axes })
    }

    /// Parses `name:min:max:bins` axes separated by commas, as a setting
    /// is typed (`heading_deg:-180:180:12,height_m:0:0.1:5`).
    pub fn parse(text: &str) -> Result<Self, GridError> {
        let axes = text
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|axis| {
                let bad = || GridError::Syntax(axis.to_owned());
                let parts: Vec<&str> = axis.split(':').map(str::trim).collect();
                let [name, min, max, bins] = parts.as_slice() else {
                    return Err(bad());
                };
                if name.is_empty() {
                    return Err(bad());
                }
                Ok(Axis {
                    name: (*name).to_owned(),
                    min: min.parse().map_err(|_| bad())?,
                    max: max.parse().map_err(|_| bad())?,
                    bins: bins.parse().map_err(|_| bad())?,
                })
            })
            .collect::<Result<_, _>>()?;
        Grid::new(axes)
    }

    #[must_use]
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The descriptors' names, in axis order.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.name.clone()).collect()
    }

    #[must_use]
    pub fn cells(&self) -> usize {
        self.axes.iter().map(|a| a.bins).product()
    }

    /// The cell of `descriptors` (one per axis, in order).
    #[must_use]
    pub fn cell(&self, descriptors: &[f64]) -> usize {
        self.axes
            .iter()
            .zip(descriptors)
            .fold(0, |cell, (axis, &d)| cell * axis.bins + axis.bin(d))
    }

    /// The bin on each axis of `cell`.
    #[must_use]
    pub fn bins_of(&self, mut cell: usize) -> Vec<usize> {
        let mut bins = vec![0; self.axes.len()];
        for (bin, axis) in bins.iter_mut().zip(&self.axes).rev() {
            *bin = cell % axis.bins;
            cell /= axis.bins;
        }
        bins
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.axes.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}:{}:{}:{}", a.name, a.min, a.max, a.bins)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GridError {
    #[error("a map needs at least one descriptor axis")]
    Empty,
    #[error("axis {0:?} is not name:min:max:bins")]
    Syntax(String),
    #[error("descriptor {0:?} has two axes")]
    Repeated(String),
    #[error("axis {0}: min and max must be finite with min < max")]
    Range(String),
    #[error("axis {0}: needs at least one bin")]
    Bins(String),
    #[error("the grid has more than {MAX_CELLS} cells")]
    TooLarge,
}

/// The best solution found in one cell; `tag` says where it came from (an
/// optimizer's tag, the runtime's job id).
#[derive(Debug, Clone, PartialEq)]
pub struct Elite<T> {
    pub x: Vec<f64>,
    pub fitness: f64,
    pub descriptors: Vec<f64>,
    pub tag: T,
}

/// What inserting a solution did to its cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Insertion {
    /// The cell was empty.
    New,
    /// The solution beat the cell's elite by this much.
    Improved(f64),
    /// The cell's elite is at least as good.
    Rejected,
}

impl Insertion {
    #[must_use]
    pub fn added(self) -> bool {
        !matches!(self, Insertion::Rejected)
    }
}

/// A grid of elites.
#[derive(Debug, Clone, PartialEq)]
pub struct Archive<T> {
    grid: Grid,
    elites: BTreeMap<usize, Elite<T>>,
}

impl<T> Archive<T> {
    #[must_use]
    pub fn new(grid: Grid) -> Self {
        Archive {
            grid,
            elites: BTreeMap::new(),
        }
    }

    #[must_use]
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Files a solution: the cell of its descriptors keeps it when empty
    /// or when it is strictly better. A non-finite fitness or descriptor,
    /// or the wrong number of descriptors, is never filed.
    pub fn insert(
        &mut self,
        x: Vec<f64>,
        fitness: f64,
        descriptors: Vec<f64>,
        tag: T,
    ) -> (usize, Insertion) {
        if !fitness.is_finite()
            || descriptors.len() != self.grid.axes.len()
            || descriptors.iter().any(|d| !d.is_finite())
        {
            return (0, Insertion::Rejected);
        }
        let cell = self.grid.cell(&descriptors);
        let insertion = match self.elites.get(&cell) {
            None => Insertion::New,
            Some(old) if fitness > old.fitness => Insertion::Improved(fitness - old.fitness),
            Some(_) => Insertion::Rejected,
        };
        if insertion.added() {
            self.elites.insert(
                cell,
                Elite {
                    x,
                    fitness,
                    descriptors,
                    tag,
                },
            );
        }
        (cell, insertion)
    }

    /// Every elite by cell, in cell order.
    pub fn elites(&self) -> impl Iterator<Item = (usize, &Elite<T>)> {
        self.elites.iter().map(|(c, e)| (*c, e))
    }

    #[must_use]
    pub fn get(&self, cell: usize) -> Option<&Elite<T>> {
        self.elites.get(&cell)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.elites.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.elites.is_empty()
    }

    /// Filled cells over all cells.
    #[must_use]
    pub fn coverage(&self) -> f64 {
        self.elites.len() as f64 / self.grid.cells() as f64
    }

    /// pyribs' QD score: the sum over elites of fitness minus `offset` (a
    /// value no solution falls below, so every elite adds).
    #[must_use]
    pub fn qd_score(&self, offset: f64) -> f64 {
        self.elites.values().map(|e| e.fitness - offset).sum()
    }

    /// The elite with the highest fitness.
    #[must_use]
    pub fn best(&self) -> Option<&Elite<T>> {
        self.elites
            .values()
            .max_by(|a, b| a.fitness.total_cmp(&b.fitness))
    }

    /// The `i`-th elite in cell order (for drawing one at random).
    #[must_use]
    pub fn nth(&self, i: usize) -> Option<&Elite<T>> {
        self.elites.values().nth(i)
    }
}

/// A map another run filled, as a prior for a run that adapts from it: each
/// elite's point (in the adapting run's space, parameter for parameter),
/// its descriptors in `axes` order and its value (m/s: the held-out mean
/// where the elite was re-walked, else the value it was filed with).
#[derive(Debug, Clone, PartialEq)]
pub struct Prior {
    /// The run whose map this is (for messages and records).
    pub run: u64,
    pub axes: Vec<Axis>,
    pub elites: Vec<PriorElite>,
}

/// One cell of a [`Prior`].
#[derive(Debug, Clone, PartialEq)]
pub struct PriorElite {
    /// Its cell in the prior's grid.
    pub cell: usize,
    pub x: Vec<f64>,
    pub descriptors: Vec<f64>,
    pub value: f64,
}

impl Axis {
    /// An angle that wraps: a descriptor in degrees (`…_deg`) whose axis
    /// spans a whole turn, as a direction of travel does. Its ends are
    /// neighbours, which a model of the map must know.
    #[must_use]
    pub fn is_turn(&self) -> bool {
        self.name.ends_with("_deg") && ((self.max - self.min) - 360.0).abs() < 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::parse("heading_deg:-180:180:12, height_m:0:0.1:5").unwrap()
    }

    #[test]
    fn a_grid_reads_back_and_files_edges_in_edge_cells() {
        let g = grid();
        assert_eq!(g.cells(), 60);
        assert_eq!(Grid::parse(&g.to_string()).unwrap(), g);
        assert_eq!(g.cell(&[-180.0, 0.0]), 0);
        assert_eq!(g.cell(&[179.9, 0.099]), 59);
        // Outside the range: the edge cells, like pyribs.
        assert_eq!(g.cell(&[500.0, -3.0]), 55);
        assert_eq!(g.cell(&[-500.0, 1.0]), 4);
        assert_eq!(g.bins_of(g.cell(&[15.0, 0.05])), vec![6, 2]);
        let (low, high) = g.axes()[0].range(6);
        assert!((low - 0.0).abs() < 1e-12 && (high - 30.0).abs() < 1e-12);
    }

    #[test]
    fn a_bad_grid_is_refused_with_its_reason() {
        for (text, error) in [
            ("", GridError::Empty),
            ("a:0:1", GridError::Syntax("a:0:1".into())),
            ("a:0:x:3", GridError::Syntax("a:0:x:3".into())),
            ("a:1:0:3", GridError::Range("a".into())),
            ("a:0:inf:3", GridError::Range("a".into())),
            ("a:0:1:0", GridError::Bins("a".into())),
            ("a:0:1:3,a:0:1:3", GridError::Repeated("a".into())),
            ("a:0:1:2000,b:0:1:2000", GridError::TooLarge),
        ] {
            assert_eq!(Grid::parse(text), Err(error), "{text}");
        }
    }

    #[test]
    fn a_cell_keeps_only_a_strictly_better_solution() {
        let mut archive = Archive::new(grid());
        let (cell, first) = archive.insert(vec![0.0], 0.1, vec![10.0, 0.05], 1);
        assert_eq!(first, Insertion::New);
        assert_eq!(
            archive.insert(vec![1.0], 0.1, vec![12.0, 0.051], 2),
            (cell, Insertion::Rejected)
        );
        let (again, better) = archive.insert(vec![2.0], 0.25, vec![20.0, 0.045], 3);
        assert_eq!(again, cell);
        assert!(matches!(better, Insertion::Improved(by) if (by - 0.15).abs() < 1e-12));
        assert_eq!(archive.get(cell).unwrap().tag, 3);
        archive.insert(vec![3.0], 0.05, vec![-170.0, 0.0], 4);
        assert_eq!(archive.len(), 2);
        assert!((archive.coverage() - 2.0 / 60.0).abs() < 1e-12);
        assert!((archive.qd_score(0.0) - 0.30).abs() < 1e-12);
        assert!((archive.qd_score(-1.0) - 2.30).abs() < 1e-12);
        assert_eq!(archive.best().unwrap().tag, 3);
        // Nothing non-finite or mis-sized is filed.
        for (f, d) in [
            (f64::NAN, vec![0.0, 0.0]),
            (1.0, vec![f64::INFINITY, 0.0]),
            (1.0, vec![0.0]),
        ] {
            assert_eq!(archive.insert(vec![], f, d, 9).1, Insertion::Rejected);
        }
        assert_eq!(archive.len(), 2);
    }
}
