//! Batches of decentralised builds from random starts, tallied.

use crate::decentralised::{Build, Settings};
use crate::srdb::Table;
use crate::starts::random_starts;
use crate::sweep::Clouds;
use crate::world::{WorldController, WorldError};

/// Why a batch of builds stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrialsError {
    #[error(transparent)]
    World(#[from] WorldError),
    /// The world's size and the number of meta-modules.
    #[error("a world of {size:?} cells has no room for {count} meta-modules spread out")]
    NoRoom { size: [i32; 3], count: usize },
}

/// How a batch of builds went.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub trials: usize,
    pub built: usize,
    pub collisions: usize,
    pub deadlocks: usize,
    pub out_of_rounds: usize,
    /// Per built trial.
    pub rounds: Vec<usize>,
    pub moves: Vec<usize>,
    pub seconds: Vec<f64>,
}

/// Builds `structure` from `trials` random starts (seeds `0..trials`),
/// one meta-module per place, in a world of `size`.
pub fn trials(
    table: &Table,
    clouds: &Clouds,
    structure: &crate::structure::Structure,
    size: [i32; 3],
    settings: Settings,
    trials: usize,
) -> Result<Tally, TrialsError> {
    let mut tally = Tally {
        trials,
        ..Tally::default()
    };
    for seed in 0..trials as u64 {
        let mut world = WorldController::new(size);
        world.set_structure(structure)?;
        let starts =
            random_starts(&world, structure.places.len(), 3, seed).ok_or(TrialsError::NoRoom {
                size,
                count: structure.places.len(),
            })?;
        let start = std::time::Instant::now();
        let mut build = Build::new(world, table, clouds, &starts, settings)?;
        let report = build.run();
        let seconds = start.elapsed().as_secs_f64();
        tally.collisions += report.collisions;
        tally.deadlocks += usize::from(report.deadlock);
        tally.out_of_rounds += usize::from(report.out_of_rounds);
        if report.built {
            tally.built += 1;
            tally.rounds.push(report.rounds);
            tally.moves.push(report.moves.len());
            tally.seconds.push(seconds);
        }
    }
    Ok(tally)
}
