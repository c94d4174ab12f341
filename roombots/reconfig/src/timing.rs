//! 003 §3.1's timings measured here: building the database, and the
//! level 1–3 searches for intermediate configurations at the seed's two
//! rotation steps, each sweep computed live (the seed's way) and from the
//! table of every pair swept once.
//!
//! The searches are posed as a meta-module standing on the floor meets
//! them: its root locked to the floor (the cells beyond its root
//! connector are solid), a few cells around it taken by others, a start
//! and a goal configuration free of them. Each search runs to its end:
//! it finds a way, or proves there is none at its level.

use std::time::{Duration, Instant};

use yamor_roombots::chain::{ConnectionType, MetaModule};

use crate::grid::{Cell, CellSet, WINDOW_CELLS};
use crate::search::{Sweeps, find_way};
use crate::srdb::{Database, Table};
use crate::sweep::{Clouds, Sweeper};

/// The median of `runs` builds of the whole database.
#[must_use]
pub fn database_build(runs: usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(Database::generate());
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

/// The cells of the window on the far side of the root's connector: the
/// surface the root stands on, and everything under it.
#[must_use]
pub fn below_root() -> CellSet {
    let f = crate::srdb::root_facing().step();
    (0..WINDOW_CELLS)
        .map(CellSet::cell)
        .filter(|c| c[0] * f[0] + c[1] * f[1] + c[2] * f[2] >= 1)
        .collect()
}

/// One search case: start, goal, the cells taken.
#[derive(Debug, Clone)]
pub struct Case {
    pub from: usize,
    pub to: usize,
    pub blocked: CellSet,
}

/// `count` cases over `table`: the floor under the root and `others`
/// random cells taken, start and goal kept configurations free of them
/// (a small deterministic generator from `seed`).
#[must_use]
pub fn cases(table: &Table, count: usize, others: usize, seed: u64) -> Vec<Case> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    let floor = below_root();
    let free = |cells: &[Cell; 4], blocked: &CellSet| cells.iter().all(|c| !blocked.contains(*c));
    let n = table.kept().len();
    let mut out = Vec::new();
    while out.len() < count {
        let mut blocked = floor;
        for _ in 0..others {
            let c = CellSet::cell(next(WINDOW_CELLS));
            if c != [0, 0, 0] {
                blocked.insert(c);
            }
        }
        let (from, to) = (next(n), next(n));
        let cells = |i: usize| table.configurations()[i].cells;
        if from != to && free(&cells(from), &blocked) && free(&cells(to), &blocked) {
            out.push(Case { from, to, blocked });
        }
    }
    out
}

/// How long one level's searches took.
#[derive(Debug, Clone)]
pub struct LevelTiming {
    pub level: u8,
    pub live: bool,
    /// Over the hard cases only: those no level-2 search solves.
    pub hard: bool,
    pub searches: usize,
    /// Searches that found a way (at this level or below).
    pub found: usize,
    pub median: Duration,
    pub max: Duration,
}

/// Times `find_way` at `level` over `cases` (at least one).
#[must_use]
pub fn time_level(table: &Table, sweeps: Sweeps<'_>, cases: &[Case], level: u8) -> LevelTiming {
    let mut times = Vec::with_capacity(cases.len());
    let mut found = 0;
    for case in cases {
        let start = Instant::now();
        let way = find_way(table, sweeps, case.from, case.to, &case.blocked, level);
        times.push(start.elapsed());
        found += usize::from(way.is_some());
    }
    times.sort_unstable();
    LevelTiming {
        level,
        live: matches!(sweeps, Sweeps::Live(..)),
        hard: false,
        searches: cases.len(),
        found,
        median: times[times.len() / 2],
        max: *times.last().expect("at least one case"),
    }
}

/// The searches at one rotation step, live and tabled.
#[derive(Debug, Clone)]
pub struct StepTiming {
    pub step: f64,
    /// Sweeping every pair of the table once, on `threads` threads.
    pub table_build: Duration,
    pub threads: usize,
    pub levels: Vec<LevelTiming>,
}

/// Times all three levels at `step` on `connection`'s table: tabled over
/// `cases`, live over the first `live_cases` of them (a live level-3
/// search at a fine step takes seconds); then level 3 again over the
/// cases of `hard_pool` that no level-2 search solves (up to as many as
/// `cases`), where it must search to the end.
#[must_use]
pub fn time_step(
    db: &Database,
    connection: ConnectionType,
    step: f64,
    cases: &[Case],
    hard_pool: &[Case],
    live_cases: usize,
    threads: usize,
) -> StepTiming {
    let table = db.table(connection);
    let start = Instant::now();
    let clouds = Clouds::build(table, step, threads);
    let table_build = start.elapsed();
    let sweeper = Sweeper::new(&MetaModule::new(connection));
    let mut levels = Vec::new();
    let live = &cases[..live_cases.min(cases.len())];
    for level in 1..=3 {
        for (sweeps, cases) in [
            (Sweeps::Live(&sweeper, step), live),
            (Sweeps::Table(&clouds), cases),
        ] {
            if !cases.is_empty() {
                levels.push(time_level(table, sweeps, cases, level));
            }
        }
    }
    let hard: Vec<Case> = hard_pool
        .iter()
        .filter(|c| find_way(table, Sweeps::Table(&clouds), c.from, c.to, &c.blocked, 2).is_none())
        .take(cases.len())
        .cloned()
        .collect();
    if !hard.is_empty() {
        for (sweeps, hard) in [
            (
                Sweeps::Live(&sweeper, step),
                &hard[..live_cases.min(hard.len())],
            ),
            (Sweeps::Table(&clouds), &hard[..]),
        ] {
            if !hard.is_empty() {
                let mut t = time_level(table, sweeps, hard, 3);
                t.hard = true;
                levels.push(t);
            }
        }
    }
    StepTiming {
        step,
        table_build,
        threads,
        levels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cases_stand_on_the_floor_and_leave_start_and_goal_free() {
        let db = Database::generate();
        let table = db.table(ConnectionType::ShearZ);
        let floor = below_root();
        assert!(!floor.contains([0, 0, 0]));
        assert!(
            floor.contains(crate::srdb::root_facing().step()),
            "the cell the root locks onto"
        );
        for case in cases(table, 20, 10, 3) {
            assert!(floor.union(&case.blocked) == case.blocked);
            for i in [case.from, case.to] {
                for c in table.configurations()[i].cells {
                    assert!(!case.blocked.contains(c));
                }
            }
        }
        let hard_pool = cases(table, 200, 150, 2);
        let timing = time_step(
            &db,
            ConnectionType::ShearZ,
            std::f64::consts::PI / 4.0,
            &cases(table, 4, 10, 1),
            &hard_pool,
            2,
            2,
        );
        for pair in timing.levels[..6].chunks(2) {
            assert!(pair[0].searches == 2 && pair[1].searches == 4);
        }
        // A higher level finds at least what a lower one finds.
        let tabled: Vec<usize> = timing.levels[..6]
            .iter()
            .filter(|l| !l.live)
            .map(|l| l.found)
            .collect();
        assert!(tabled.windows(2).all(|w| w[0] <= w[1]), "{tabled:?}");
        // Crowded enough, some moves need a level-3 search to the end.
        let hard: Vec<&LevelTiming> = timing.levels.iter().filter(|l| l.hard).collect();
        assert_eq!(hard.len(), 2, "{:?}", timing.levels);
        assert!(hard.iter().all(|l| l.level == 3));
    }
}
