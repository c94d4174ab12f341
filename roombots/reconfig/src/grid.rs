//! Cells, directions and the 24 turns of the cube: the integer geometry of
//! the grid world (003 §1.5: one cell per cube).

/// A cell of the grid: `[x, y, z]`, `z` up.
pub type Cell = [i32; 3];

/// One of the six unit directions along the grid's axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dir(u8);

impl Dir {
    pub const PLUS_X: Dir = Dir(0);
    pub const MINUS_X: Dir = Dir(1);
    pub const PLUS_Y: Dir = Dir(2);
    pub const MINUS_Y: Dir = Dir(3);
    pub const PLUS_Z: Dir = Dir(4);
    pub const MINUS_Z: Dir = Dir(5);
    pub const ALL: [Dir; 6] = [
        Dir::PLUS_X,
        Dir::MINUS_X,
        Dir::PLUS_Y,
        Dir::MINUS_Y,
        Dir::PLUS_Z,
        Dir::MINUS_Z,
    ];

    /// The unit step.
    #[must_use]
    pub fn step(self) -> Cell {
        let mut c = [0; 3];
        c[usize::from(self.0 / 2)] = if self.0.is_multiple_of(2) { 1 } else { -1 };
        c
    }

    /// The direction of a unit step, if `c` is one.
    #[must_use]
    pub fn of(c: Cell) -> Option<Dir> {
        match c {
            [1, 0, 0] => Some(Dir::PLUS_X),
            [-1, 0, 0] => Some(Dir::MINUS_X),
            [0, 1, 0] => Some(Dir::PLUS_Y),
            [0, -1, 0] => Some(Dir::MINUS_Y),
            [0, 0, 1] => Some(Dir::PLUS_Z),
            [0, 0, -1] => Some(Dir::MINUS_Z),
            _ => None,
        }
    }

    #[must_use]
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The seed's name (003 §2.4.3: `PLUSX`, `MINUSZ`, …).
    #[must_use]
    pub fn name(self) -> &'static str {
        ["PLUSX", "MINUSX", "PLUSY", "MINUSY", "PLUSZ", "MINUSZ"][self.index()]
    }
}

impl std::fmt::Display for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[must_use]
pub fn add(a: Cell, b: Cell) -> Cell {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

#[must_use]
pub fn sub(a: Cell, b: Cell) -> Cell {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// Four cubes' cells sorted: the cells a meta-module or a place takes,
/// whichever cube is its root, to compare as a set.
#[must_use]
pub fn cell_set(mut cells: [Cell; 4]) -> [Cell; 4] {
    cells.sort_unstable();
    cells
}

/// Squared Euclidean distance between two cells.
#[must_use]
pub fn distance2(a: Cell, b: Cell) -> i32 {
    let d = sub(a, b);
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// The cell a displacement (m) from a cube's centre ends in: one cube
/// per [`CELL`](yamor_roombots::module::CELL).
#[must_use]
pub fn cell_at(d: &nalgebra::Vector3<f64>) -> Cell {
    (d / yamor_roombots::module::CELL)
        .map(|v| v.round() as i32)
        .into()
}

/// A rotation of the grid onto itself: one of the cube's 24 turns, as an
/// integer matrix (each row and column one ±1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Turn([[i8; 3]; 3]);

impl Turn {
    pub const IDENTITY: Turn = Turn([[1, 0, 0], [0, 1, 0], [0, 0, 1]]);

    /// All 24, the identity first.
    #[must_use]
    pub fn all() -> Vec<Turn> {
        let mut turns = vec![Turn::IDENTITY];
        for perm in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            for signs in 0..8u8 {
                let mut m = [[0i8; 3]; 3];
                for (row, &col) in perm.iter().enumerate() {
                    m[row][col] = if signs >> row & 1 == 0 { 1 } else { -1 };
                }
                let t = Turn(m);
                if t.determinant() == 1 && t != Turn::IDENTITY {
                    turns.push(t);
                }
            }
        }
        turns
    }

    fn determinant(&self) -> i32 {
        let m = self.0.map(|r| r.map(i32::from));
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    }

    /// The turn nearest a rotation matrix (its entries rounded); `None`
    /// unless it is one of the 24 within `1e-6`.
    #[must_use]
    pub fn of_matrix(m: &nalgebra::Matrix3<f64>) -> Option<Turn> {
        let mut t = [[0i8; 3]; 3];
        for (r, row) in t.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                let x = m[(r, c)];
                if (x - x.round()).abs() > 1e-6 {
                    return None;
                }
                *v = x.round() as i8;
            }
        }
        let t = Turn(t);
        // A turn has one ±1 in every row and column.
        let ones = |v: [i8; 3]| v.iter().filter(|x| **x != 0).count() == 1;
        let rows = t.0.iter().all(|r| ones(*r));
        let columns = (0..3).all(|c| ones([t.0[0][c], t.0[1][c], t.0[2][c]]));
        (rows && columns && t.determinant() == 1).then_some(t)
    }

    #[must_use]
    pub fn apply(&self, c: Cell) -> Cell {
        let m = &self.0;
        let row = |r: usize| {
            i32::from(m[r][0]) * c[0] + i32::from(m[r][1]) * c[1] + i32::from(m[r][2]) * c[2]
        };
        [row(0), row(1), row(2)]
    }

    #[must_use]
    pub fn apply_dir(&self, d: Dir) -> Dir {
        Dir::of(self.apply(d.step())).expect("a turn maps axes onto axes")
    }

    #[must_use]
    pub fn inverse(&self) -> Turn {
        let m = &self.0;
        Turn([
            [m[0][0], m[1][0], m[2][0]],
            [m[0][1], m[1][1], m[2][1]],
            [m[0][2], m[1][2], m[2][2]],
        ])
    }

    /// `self` after `other`.
    #[must_use]
    pub fn compose(&self, other: &Turn) -> Turn {
        let mut m = [[0i8; 3]; 3];
        for (r, row) in m.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = (0..3).map(|k| self.0[r][k] * other.0[k][c]).sum();
            }
        }
        Turn(m)
    }

    #[must_use]
    pub fn matrix(&self) -> nalgebra::Matrix3<f64> {
        nalgebra::Matrix3::from_fn(|r, c| f64::from(self.0[r][c]))
    }
}

/// How far a meta-module sees, and reaches, from its root cube: three
/// cells in every direction (003 §2.6.2).
pub const SIGHT: i32 = 3;
/// The side of the window a meta-module sees: 7.
pub const WINDOW: i32 = 2 * SIGHT + 1;
/// Cells in the window: 343.
pub const WINDOW_CELLS: usize = (WINDOW * WINDOW * WINDOW) as usize;

/// A set of cells of the 7 × 7 × 7 window around a root cube, as bits:
/// 343 cells in six words, so that a swept cloud meets the obstacles in
/// six ANDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CellSet([u64; 6]);

impl CellSet {
    pub const EMPTY: CellSet = CellSet([0; 6]);

    /// The bit of a cell relative to the root; `None` outside the window.
    #[must_use]
    pub fn index(c: Cell) -> Option<usize> {
        if c.iter().any(|v| v.abs() > SIGHT) {
            return None;
        }
        let [x, y, z] = c.map(|v| (v + SIGHT) as usize);
        Some((x * WINDOW as usize + y) * WINDOW as usize + z)
    }

    /// The cell of a bit, relative to the root.
    #[must_use]
    pub fn cell(index: usize) -> Cell {
        let w = WINDOW as usize;
        let (x, rest) = (index / (w * w), index % (w * w));
        [
            x as i32 - SIGHT,
            (rest / w) as i32 - SIGHT,
            (rest % w) as i32 - SIGHT,
        ]
    }

    /// Adds a cell; false (and nothing added) outside the window.
    pub fn insert(&mut self, c: Cell) -> bool {
        match CellSet::index(c) {
            Some(i) => {
                self.0[i / 64] |= 1 << (i % 64);
                true
            }
            None => false,
        }
    }

    #[must_use]
    pub fn contains(&self, c: Cell) -> bool {
        CellSet::index(c).is_some_and(|i| self.0[i / 64] >> (i % 64) & 1 == 1)
    }

    #[must_use]
    pub fn meets(&self, other: &CellSet) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    #[must_use]
    pub fn union(&self, other: &CellSet) -> CellSet {
        let mut u = *self;
        for (a, b) in u.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
        u
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// The cells, relative to the root.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        (0..WINDOW_CELLS)
            .filter(|i| self.0[i / 64] >> (i % 64) & 1 == 1)
            .map(CellSet::cell)
    }
}

impl FromIterator<Cell> for CellSet {
    fn from_iter<I: IntoIterator<Item = Cell>>(cells: I) -> Self {
        let mut set = CellSet::EMPTY;
        for c in cells {
            set.insert(c);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cube_has_24_turns_closed_under_composition() {
        let turns = Turn::all();
        assert_eq!(turns.len(), 24);
        let set: std::collections::BTreeSet<Turn> = turns.iter().copied().collect();
        assert_eq!(set.len(), 24);
        for a in &turns {
            assert_eq!(a.compose(&a.inverse()), Turn::IDENTITY);
            for b in &turns {
                assert!(set.contains(&a.compose(b)));
            }
        }
        // Each turn maps +x and +z to a distinct pair of directions.
        let pairs: std::collections::BTreeSet<(Dir, Dir)> = turns
            .iter()
            .map(|t| (t.apply_dir(Dir::PLUS_X), t.apply_dir(Dir::PLUS_Z)))
            .collect();
        assert_eq!(pairs.len(), 24);
    }

    #[test]
    fn a_cell_set_holds_the_window_and_nothing_outside() {
        let mut set = CellSet::EMPTY;
        assert!(set.insert([3, -3, 0]));
        assert!(set.insert([-3, 3, 3]));
        assert!(!set.insert([4, 0, 0]), "outside the window");
        assert_eq!(set.len(), 2);
        assert!(set.contains([3, -3, 0]) && !set.contains([0, 0, 0]));
        for i in 0..WINDOW_CELLS {
            assert_eq!(CellSet::index(CellSet::cell(i)), Some(i));
        }
        let other: CellSet = [[0, 0, 0], [3, -3, 0]].into_iter().collect();
        assert!(set.meets(&other));
        assert!(!set.meets(&[[0, 0, 0]].into_iter().collect()));
        assert_eq!(set.union(&other).len(), 3);
        assert_eq!(
            set.cells().collect::<Vec<_>>(),
            vec![[-3, 3, 3], [3, -3, 0]]
        );
    }
}
