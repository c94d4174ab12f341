//! Intermediate configurations (003 §2.6.4): a move from configuration
//! A to B that would sweep an occupied cell may go through one
//! intermediate C (level 2: A → C → B) or two, C and D (level 3:
//! A → C → D → B). Each level first tries the levels below it; the
//! first way found is taken, as in the seed.
//!
//! The sweeps come either from a table of every pair swept once
//! ([`Clouds`], bit-set ANDs) or live, each sweep computed when it is
//! needed (the seed's way), so both can be timed side by side.

use crate::grid::CellSet;
use crate::srdb::Table;
use crate::sweep::{Clouds, Sweeper, travel_between};

/// Where the swept cells come from.
#[derive(Debug, Clone, Copy)]
pub enum Sweeps<'a> {
    /// Every pair swept once beforehand.
    Table(&'a Clouds),
    /// Each sweep computed when asked, at this step (rad).
    Live(&'a Sweeper, f64),
}

impl Sweeps<'_> {
    fn cloud(&self, table: &Table, a: usize, b: usize) -> CellSet {
        match self {
            Sweeps::Table(clouds) => *clouds.get(a, b),
            Sweeps::Live(sweeper, step) => sweeper.cloud(
                table.configurations()[a].angles(),
                travel_between(table, a, b),
                *step,
            ),
        }
    }
}

/// What a search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Way {
    /// A → B directly.
    Direct,
    /// A → C → B.
    Through(usize),
    /// A → C → D → B.
    ThroughTwo(usize, usize),
}

impl Way {
    /// The configurations passed through, A and B excluded.
    #[must_use]
    pub fn intermediates(&self) -> Vec<usize> {
        match self {
            Way::Direct => Vec::new(),
            Way::Through(c) => vec![*c],
            Way::ThroughTwo(c, d) => vec![*c, *d],
        }
    }
}

/// A way from configuration `a` to `b` of `table` (indexes of
/// [`Table::configurations`]) that sweeps no cell of `blocked` (the
/// root's frame), through at most `level − 1` kept intermediate
/// configurations (`level` 1–3); `None` when there is none.
#[must_use]
pub fn find_way(
    table: &Table,
    sweeps: Sweeps<'_>,
    a: usize,
    b: usize,
    blocked: &CellSet,
    level: u8,
) -> Option<Way> {
    let free = |x: usize, y: usize| !sweeps.cloud(table, x, y).meets(blocked);
    if free(a, b) {
        return Some(Way::Direct);
    }
    if level < 2 {
        return None;
    }
    // Intermediates are kept configurations; each first leg and each last
    // leg is swept once.
    let n = table.kept().len();
    let from_a: Vec<bool> = (0..n).map(|c| c != a && c != b && free(a, c)).collect();
    let to_b: Vec<bool> = (0..n).map(|d| d != a && d != b && free(d, b)).collect();
    if let Some(c) = (0..n).find(|&c| from_a[c] && to_b[c]) {
        return Some(Way::Through(c));
    }
    if level < 3 {
        return None;
    }
    for c in (0..n).filter(|&c| from_a[c]) {
        for d in (0..n).filter(|&d| to_b[d] && d != c) {
            if free(c, d) {
                return Some(Way::ThroughTwo(c, d));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srdb::Database;
    use yamor_roombots::chain::{ConnectionType, MetaModule};

    /// Whether `way` from `a` to `b` sweeps nothing blocked, leg by leg.
    fn sound(
        table: &Table,
        sweeper: &Sweeper,
        step: f64,
        a: usize,
        b: usize,
        way: &Way,
        blocked: &CellSet,
    ) -> bool {
        let mut stops = vec![a];
        stops.extend(way.intermediates());
        stops.push(b);
        stops.windows(2).all(|w| {
            !sweeper
                .cloud(
                    table.configurations()[w[0]].angles(),
                    travel_between(table, w[0], w[1]),
                    step,
                )
                .meets(blocked)
        })
    }

    #[test]
    fn each_level_finds_a_sound_way_where_the_one_below_finds_none_and_both_sweeps_agree() {
        let db = Database::generate();
        let step = crate::sweep::ROTATION_STEP;
        let table = db.table(ConnectionType::ShearS);
        let sweeper = Sweeper::new(&MetaModule::new(table.connection));
        let clouds = Clouds::build(table, step, 2);
        let n = table.configurations().len();
        let mut found_at = [0usize; 4];
        let mut rng = 12345u64;
        let mut next = |m: usize| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as usize % m
        };
        for trial in 0..300 {
            let (a, b) = (next(n), next(n));
            let (ca, cb) = (table.configurations()[a], table.configurations()[b]);
            // From a few random occupied cells to many, never the ends' own.
            let mut blocked = CellSet::EMPTY;
            for _ in 0..4 + (trial % 20) * 8 {
                let c = CellSet::cell(next(crate::grid::WINDOW_CELLS));
                if !ca.cells.contains(&c) && !cb.cells.contains(&c) {
                    blocked.insert(c);
                }
            }
            let mut level_found = 0;
            for level in 1..=3u8 {
                let tabled = find_way(table, Sweeps::Table(&clouds), a, b, &blocked, level);
                let live = find_way(table, Sweeps::Live(&sweeper, step), a, b, &blocked, level);
                assert_eq!(tabled, live, "{a} → {b}, level {level}");
                if let Some(way) = &tabled {
                    assert!(sound(table, &sweeper, step, a, b, way, &blocked), "{way:?}");
                    assert!(way.intermediates().len() < usize::from(level));
                    if level_found == 0 {
                        level_found = level as usize;
                    }
                } else {
                    assert_eq!(level_found, 0, "a higher level never loses a way");
                }
            }
            found_at[level_found] += 1;
        }
        // Every level is needed somewhere, and some moves have no way.
        assert!(found_at.iter().all(|k| *k > 0), "{found_at:?}");
    }
}
