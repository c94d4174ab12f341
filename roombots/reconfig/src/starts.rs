//! Where a build's meta-modules start: random floor cells spread out as
//! 003 Fig 3.4 spreads them, standing as another structure's places (to
//! take it apart), and the one-seed world of 003 Fig 3.5's deadlock.

use crate::decentralised::{Build, Rule, Settings, upright};
use crate::grid::{Cell, Dir, SIGHT, Turn, add, cell_set, sub};
use crate::srdb::Table;
use crate::structure::Structure;
use crate::sweep::Clouds;
use crate::world::{Placement, WorldController, WorldError};

/// `count` floor cells to start on, spread out as 003 Fig 3.4 spreads
/// them: at least `spacing` cells apart (along x or y) from each other,
/// and clear of the structure's footprint by one cell; drawn from `seed`.
/// `None` when the world has no room for them.
#[must_use]
pub fn random_starts(
    world: &WorldController,
    count: usize,
    spacing: i32,
    seed: u64,
) -> Option<Vec<[i32; 2]>> {
    let footprint: Vec<[i32; 2]> = world
        .seeds()
        .iter()
        .flat_map(|s| s.cells)
        .map(|c| [c[0], c[1]])
        .collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = |m: i32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as i32
    };
    let mut starts: Vec<[i32; 2]> = Vec::new();
    for _ in 0..100_000 {
        if starts.len() == count {
            return Some(starts);
        }
        let c = [next(world.size[0]), next(world.size[1])];
        let near =
            |a: [i32; 2], b: [i32; 2], d: i32| (a[0] - b[0]).abs() < d && (a[1] - b[1]).abs() < d;
        if footprint.iter().any(|f| near(*f, c, 2)) || starts.iter().any(|s| near(*s, c, spacing)) {
            continue;
        }
        starts.push(c);
    }
    None
}

/// Why meta-modules cannot stand as a structure's places; ids count from 1
/// in the structure's order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StandError {
    #[error("place {0} of the start is no pose of a meta-module")]
    NoPose(u32),
    #[error("place {id} of the start: {error}")]
    Place { id: u32, error: WorldError },
    #[error(transparent)]
    World(#[from] WorldError),
}

/// Meta-modules standing as the places of `from` stand (ids 1 … in its
/// order), in a world with a structure to build: one on a place of the
/// structure fills its seed; the others move, each turned so its root's
/// connector faces a floor or structure connector where one does. Taking
/// `from` apart into the world's structure (003 Fig 1.2's stool shrinking
/// from six meta-modules to four) starts here.
pub fn stand_as(
    world: &mut WorldController,
    table: &Table,
    from: &Structure,
) -> Result<(), StandError> {
    let places = from.world_cells();
    let seed_of = |cells: &[Cell; 4], world: &WorldController| {
        world
            .seeds()
            .iter()
            .position(|s| s.filled_by.is_none() && cell_set(s.cells) == cell_set(*cells))
    };
    // Upright on the floor, a meta-module stands as random starts stand
    // it (the pose and turn the physics replay expects there); otherwise
    // that turn is tried first.
    let mut turns = Turn::all();
    let (up_pose, up) = upright(table);
    turns.sort_by_key(|t| *t != up);
    let placement_of = |cells: &[Cell; 4], world: &WorldController| {
        let root = cells[0];
        let standing = Placement {
            root,
            turn: up,
            pose: up_pose,
        };
        if standing.cells(table) == *cells && root[2] == 0 {
            return Some(standing);
        }
        let mut found = None;
        for turn in turns.iter().copied() {
            let Some(p) = Placement::turned_onto(table, cells, turn) else {
                continue;
            };
            let faces = turn.apply_dir(crate::srdb::root_facing()).step();
            if world.lockable(add(root, faces)) {
                return Some(p);
            }
            found.get_or_insert(p);
        }
        found
    };
    // Those on the structure first: their cells become connectors the
    // others' roots may face.
    let seeds: Vec<Option<usize>> = places.iter().map(|c| seed_of(c, world)).collect();
    for on_structure in [true, false] {
        for (k, cells) in places.iter().enumerate() {
            let id = k as u32 + 1;
            let seed = seeds[k];
            if seed.is_some() != on_structure {
                continue;
            }
            let p = placement_of(cells, world).ok_or(StandError::NoPose(id))?;
            world
                .place(id, p, table)
                .map_err(|error| StandError::Place { id, error })?;
            if let Some(seed) = seed {
                world.fill(id, seed, table)?;
            }
        }
    }
    Ok(())
}

/// A 13-cell world with one open seed: a meta-module standing upright on
/// floor cell (6, 6).
#[must_use]
pub fn one_seed_world() -> WorldController {
    let structure = crate::structure::Structure {
        places: vec![crate::structure::Place {
            level: 0,
            root: [0, 0, 0],
            cubes: [[0, 0, 1], [0, 0, 2], [0, 0, 3]],
        }],
        offset: [6, 6, 0],
    };
    let mut world = WorldController::new([13, 13, 13]);
    world
        .set_structure(&structure)
        .expect("one upright place fits a 13-cell world");
    world
}

/// 003 Fig 3.5's deadlock rebuilt: one open seed (a meta-module standing
/// on floor cell (6, 6) of a 13-cell world), meta-module 1 whose root is
/// four cells from the seed (just beyond sight) but which lies towards
/// it, and meta-module 2 standing where it sees both. 1 sees no seed and
/// yields to 2, farther along the gradient; 2 sees the seed and yields
/// to 1, whose cubes are nearer it. The first such pair found searching
/// the poses around the seed; `None` when there is none for this table.
#[must_use]
pub fn deadlock_case(table: &Table, clouds: &Clouds) -> Option<(WorldController, Vec<Placement>)> {
    let world = one_seed_world();
    let seed: Cell = [6, 6, 0];
    let (up_pose, up_turn) = upright(table);
    let down = crate::srdb::root_facing();
    let turns: Vec<Turn> = Turn::all()
        .into_iter()
        .filter(|t| t.apply_dir(down) == Dir::MINUS_Z)
        .collect();
    let settings = Settings {
        rule: Rule::CanMove,
        ..Settings::default()
    };
    for ax in [2, 10] {
        for ay in 3..=9 {
            let root = [ax, ay, 0];
            for turn in &turns {
                for pose in 0..table.kept().len() {
                    let a = Placement {
                        root,
                        turn: *turn,
                        pose,
                    };
                    if a.cells(table).iter().any(|c| c[2] < 0 || !world.inside(*c)) {
                        continue;
                    }
                    for bx in 3..=9 {
                        for by in 3..=9 {
                            let b = Placement {
                                root: [bx, by, 0],
                                turn: up_turn,
                                pose: up_pose,
                            };
                            let Ok(build) = Build::with_placements(
                                world.clone(),
                                table,
                                clouds,
                                &[a, b],
                                settings,
                            ) else {
                                continue;
                            };
                            let sees_seed =
                                |p: &Placement| sub(seed, p.root).iter().all(|d| d.abs() <= SIGHT);
                            if !sees_seed(&a) && sees_seed(&b) && build.waits(1) && build.waits(2) {
                                return Some((world, vec![a, b]));
                            }
                        }
                    }
                }
            }
        }
    }
    None
}
