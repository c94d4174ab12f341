//! The grid world of 003 §2.7 and its World Controller: one cell per
//! cube, a floor of connectors under `z = 0`, the meta-modules where they
//! stand, and the structure being built, whose seeds open level by level.
//!
//! A meta-module in the world is a root cell, the turn of its root cube's
//! frame (the table's frame) in the world, and its pose (an index of the
//! connection type's [`Table`]). What a meta-module may know of the world
//! is what the World Controller answers (§2.7.4): the contents of the
//! 7 × 7 × 7 cells around its root, with the seed's cell codes, and the
//! gradient towards the open seeds.

use std::collections::HashMap;

use crate::grid::{Cell, CellSet, SIGHT, Turn, add, distance2, sub};
use crate::srdb::Table;
use crate::structure::Structure;

/// What a cell holds, as a meta-module is told (003 §2.7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// A moving meta-module, by its id (1 …).
    Module(u32),
    Free,
    /// Something a meta-module can lock onto: the floor, a placed one.
    Connector,
    /// An obstacle nothing locks onto.
    Wall,
    /// An open seed's root cell, free.
    Seed,
    /// An open seed's root cell under the asking meta-module.
    CoveredSeed,
    /// An open seed's root cell under another meta-module.
    CoveredSeedOther,
    /// Outside the world.
    Undefined,
}

impl Content {
    /// The seed's integer code.
    #[must_use]
    pub fn code(self) -> i32 {
        match self {
            Content::Module(id) => i32::try_from(id).unwrap_or(i32::MAX),
            Content::Free => 0,
            Content::Connector => -1,
            Content::Wall => -2,
            Content::Seed => -3,
            Content::CoveredSeed => -4,
            Content::CoveredSeedOther => -5,
            Content::Undefined => -6,
        }
    }

    /// From the seed's integer code.
    #[must_use]
    pub fn from_code(code: i32) -> Option<Content> {
        Some(match code {
            1.. => Content::Module(code as u32),
            0 => Content::Free,
            -1 => Content::Connector,
            -2 => Content::Wall,
            -3 => Content::Seed,
            -4 => Content::CoveredSeed,
            -5 => Content::CoveredSeedOther,
            -6 => Content::Undefined,
            _ => return None,
        })
    }

    /// Whether a meta-module may move through it.
    #[must_use]
    pub fn is_empty(self) -> bool {
        matches!(self, Content::Free | Content::Seed)
    }
}

/// A meta-module in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Placement {
    pub root: Cell,
    /// The root frame's turn in the world.
    pub turn: Turn,
    /// Its pose: an index of the table's configurations.
    pub pose: usize,
}

impl Placement {
    /// Its four cubes in the world, root first.
    #[must_use]
    pub fn cells(&self, table: &Table) -> [Cell; 4] {
        table.configurations()[self.pose]
            .cells
            .map(|c| add(self.root, self.turn.apply(c)))
    }

    /// The placement turned `turn` whose cubes lie on `cells` (root
    /// first), if the table has that shape.
    #[must_use]
    pub fn turned_onto(table: &Table, cells: &[Cell; 4], turn: Turn) -> Option<Placement> {
        let root = cells[0];
        let shape = [cells[1], cells[2], cells[3]].map(|c| turn.inverse().apply(sub(c, root)));
        let pose = table.query_shape(shape).next()?;
        Some(Placement { root, turn, pose })
    }

    /// A world cell in the root's frame.
    #[must_use]
    pub fn local(&self, world: Cell) -> Cell {
        self.turn.inverse().apply(sub(world, self.root))
    }

    /// A cell of the root's frame in the world.
    #[must_use]
    pub fn world(&self, local: Cell) -> Cell {
        add(self.root, self.turn.apply(local))
    }
}

/// An open or filled place of the structure.
#[derive(Debug, Clone)]
pub struct Seed {
    pub level: u32,
    /// The four cells in the world, root first.
    pub cells: [Cell; 4],
    pub filled_by: Option<u32>,
}

/// The World Controller (003 §2.7.4): the grid world and its bookkeeping.
#[derive(Debug, Clone)]
pub struct WorldController {
    /// Cells `0 ≤ x, y, z < size`; under `z = 0` the floor.
    pub size: [i32; 3],
    walls: CellSetWorld,
    /// Moving meta-modules by id.
    moving: HashMap<u32, Placement>,
    /// Cells of placed meta-modules: connectors now.
    placed: CellSetWorld,
    /// Where each placed meta-module stands.
    settled: HashMap<u32, Placement>,
    /// Which moving meta-module holds each cell.
    occupied: HashMap<Cell, u32>,
    seeds: Vec<Seed>,
    /// The level whose seeds are open.
    level: Option<u32>,
}

/// A set of world cells.
type CellSetWorld = std::collections::HashSet<Cell>;

/// Why the world refused something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("cell {0:?} is outside the world (0 ≤ x, y, z < {1:?})")]
    Outside(Cell, [i32; 3]),
    #[error("cell {0:?} is taken")]
    Taken(Cell),
    #[error("there is no meta-module {0}")]
    Unknown(u32),
}

impl WorldController {
    /// An empty world of `size` cells over a floor of connectors.
    #[must_use]
    pub fn new(size: [i32; 3]) -> Self {
        WorldController {
            size,
            walls: CellSetWorld::new(),
            moving: HashMap::new(),
            placed: CellSetWorld::new(),
            settled: HashMap::new(),
            occupied: HashMap::new(),
            seeds: Vec::new(),
            level: None,
        }
    }

    #[must_use]
    pub fn inside(&self, c: Cell) -> bool {
        (0..3).all(|k| c[k] >= 0 && c[k] < self.size[k])
    }

    /// The structure to build: its places become seeds, the lowest level
    /// open.
    pub fn set_structure(&mut self, structure: &Structure) -> Result<(), WorldError> {
        let mut seeds = Vec::new();
        for (place, cells) in structure.places.iter().zip(structure.world_cells()) {
            if let Some(c) = cells.iter().find(|c| !self.inside(**c)) {
                return Err(WorldError::Outside(*c, self.size));
            }
            seeds.push(Seed {
                level: place.level,
                cells,
                filled_by: None,
            });
        }
        self.seeds = seeds;
        self.refresh_level();
        Ok(())
    }

    /// Opens the lowest level with an unfilled seed.
    fn refresh_level(&mut self) {
        self.level = self
            .seeds
            .iter()
            .filter(|s| s.filled_by.is_none())
            .map(|s| s.level)
            .min();
    }

    /// Every seed of the structure, open or filled.
    #[must_use]
    pub fn seeds(&self) -> &[Seed] {
        &self.seeds
    }

    /// The level whose seeds are open; `None` once all are filled.
    #[must_use]
    pub fn level(&self) -> Option<u32> {
        self.level
    }

    /// The open seeds: unfilled, of the open level.
    pub fn open_seeds(&self) -> impl Iterator<Item = (usize, &Seed)> {
        self.seeds
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.filled_by.is_none() && Some(s.level) == self.level)
    }

    /// Whether every seed is filled.
    #[must_use]
    pub fn built(&self) -> bool {
        self.seeds.iter().all(|s| s.filled_by.is_some())
    }

    pub fn add_wall(&mut self, c: Cell) -> Result<(), WorldError> {
        self.check_free(c, None)?;
        self.walls.insert(c);
        Ok(())
    }

    fn check_free(&self, c: Cell, mover: Option<u32>) -> Result<(), WorldError> {
        if !self.inside(c) {
            return Err(WorldError::Outside(c, self.size));
        }
        let other = self.occupied.get(&c).is_some_and(|id| Some(*id) != mover);
        if other || self.walls.contains(&c) || self.placed.contains(&c) {
            return Err(WorldError::Taken(c));
        }
        Ok(())
    }

    /// Puts meta-module `id` (a new one, or one moving) at `placement`.
    pub fn place(
        &mut self,
        id: u32,
        placement: Placement,
        table: &Table,
    ) -> Result<(), WorldError> {
        let cells = placement.cells(table);
        for c in cells {
            self.check_free(c, Some(id))?;
        }
        if let Some(old) = self.moving.insert(id, placement) {
            for c in old.cells(table) {
                self.occupied.remove(&c);
            }
        }
        for c in cells {
            self.occupied.insert(c, id);
        }
        Ok(())
    }

    /// Takes moving meta-module `id` out of the world.
    pub fn remove(&mut self, id: u32, table: &Table) -> Option<Placement> {
        let placement = self.moving.remove(&id)?;
        for c in placement.cells(table) {
            self.occupied.remove(&c);
        }
        Some(placement)
    }

    #[must_use]
    pub fn placement(&self, id: u32) -> Option<Placement> {
        self.moving.get(&id).copied()
    }

    /// The moving meta-modules' ids, in order.
    #[must_use]
    pub fn moving(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.moving.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Meta-module `id` fills seed `seed` (Cancel Seed, 003 §2.7.4): it
    /// stops moving, its cells become connectors, and when its level is
    /// full the next opens.
    pub fn fill(&mut self, id: u32, seed: usize, table: &Table) -> Result<(), WorldError> {
        let placement = self.moving.remove(&id).ok_or(WorldError::Unknown(id))?;
        for c in placement.cells(table) {
            self.occupied.remove(&c);
            self.placed.insert(c);
        }
        self.seeds[seed].filled_by = Some(id);
        self.settled.insert(id, placement);
        self.refresh_level();
        Ok(())
    }

    /// Every meta-module, moving or placed, by id.
    #[must_use]
    pub fn everyone(&self) -> Vec<(u32, Placement)> {
        let mut all: Vec<(u32, Placement)> = self
            .moving
            .iter()
            .chain(&self.settled)
            .map(|(id, p)| (*id, *p))
            .collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }

    /// What cell `c` holds, as meta-module `viewer` is told.
    #[must_use]
    pub fn content(&self, c: Cell, viewer: u32) -> Content {
        if c[2] < 0 {
            return Content::Connector;
        }
        if !self.inside(c) {
            return Content::Undefined;
        }
        if self.walls.contains(&c) {
            return Content::Wall;
        }
        if self.placed.contains(&c) {
            return Content::Connector;
        }
        let seed = self.open_seeds().any(|(_, s)| s.cells[0] == c);
        match (self.occupied.get(&c), seed) {
            (Some(id), true) if *id == viewer => Content::CoveredSeed,
            (Some(_), true) => Content::CoveredSeedOther,
            (Some(id), false) => Content::Module(*id),
            (None, true) => Content::Seed,
            (None, false) => Content::Free,
        }
    }

    /// The 7 × 7 × 7 cells around `root` (Need World, 003 §2.7.4): world
    /// axes, `[dx + 3][dy + 3][dz + 3]`.
    #[must_use]
    pub fn surroundings(&self, root: Cell, viewer: u32) -> Vec<Content> {
        let w = 2 * SIGHT + 1;
        let mut out = Vec::with_capacity((w * w * w) as usize);
        for dx in -SIGHT..=SIGHT {
            for dy in -SIGHT..=SIGHT {
                for dz in -SIGHT..=SIGHT {
                    out.push(self.content(add(root, [dx, dy, dz]), viewer));
                }
            }
        }
        out
    }

    /// The cells of `placement`'s window that it may not sweep, in its
    /// root's frame: everything not empty, its own cubes excepted.
    #[must_use]
    pub fn blocked(&self, id: u32, placement: &Placement) -> CellSet {
        let mut set = CellSet::EMPTY;
        for i in 0..crate::grid::WINDOW_CELLS {
            let local = CellSet::cell(i);
            let world = placement.world(local);
            let content = self.content(world, id);
            let own =
                matches!(content, Content::Module(m) if m == id) || content == Content::CoveredSeed;
            if !own && !content.is_empty() {
                set.insert(local);
            }
        }
        set
    }

    /// Whether a meta-module's goal cube may lock onto cell `c`.
    #[must_use]
    pub fn lockable(&self, c: Cell) -> bool {
        c[2] < 0 && self.inside([c[0], c[1], 0]) || self.placed.contains(&c)
    }

    /// The gradient at `c` (Need World): towards the nearest open seed's
    /// root cell; zero when none is open.
    #[must_use]
    pub fn gradient(&self, c: Cell) -> [f64; 3] {
        let Some(target) = self
            .open_seeds()
            .map(|(_, s)| s.cells[0])
            .min_by_key(|s| distance2(*s, c))
        else {
            return [0.0; 3];
        };
        let d = sub(target, c).map(f64::from);
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if n == 0.0 { [0.0; 3] } else { d.map(|v| v / n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_content_keeps_the_seeds_code() {
        for (content, code) in [
            (Content::Module(7), 7),
            (Content::Free, 0),
            (Content::Connector, -1),
            (Content::Wall, -2),
            (Content::Seed, -3),
            (Content::CoveredSeed, -4),
            (Content::CoveredSeedOther, -5),
            (Content::Undefined, -6),
        ] {
            assert_eq!(content.code(), code);
            assert_eq!(Content::from_code(code), Some(content));
        }
        assert_eq!(Content::from_code(-7), None);
    }
}
