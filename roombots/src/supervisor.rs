//! The supervisor language of 002 App. B: one command per line, read from
//! a file or typed after `cmd`, driving one meta-module.
//!
//! ```text
//! movefw s1 m1 s2 s1' m1' s2'    absolute angles: outer joints in thirds of a turn,
//! movebw …                       middle joints in quarters; movebw reads them from
//!                                the other end (the chain inverted, angles reversed)
//! lock 0|1 CONNECTOR             lock a connector of module 0 or 1 (C0X … C3Z)
//! unlock 0|1 CONNECTOR
//! step MS                        wait MS milliseconds
//! reachfw [Dx Dy Dz] dirX dirY dirZ [O]   place the end connector on a grid face
//! reachbw [Dx Dy Dz] dirX dirY dirZ [O]   the same from the other end
//! dropBoxFw | dropBoxBw          mark the end (or the beginning) with a small box
//! cmd | file                     commands from the terminal, then from the file again
//! ```
//!
//! `Dx Dy Dz` count cells from the root cube in `M0`, `dir` is a face's
//! outward direction (one of them ±1), `O` quarter-turns about the face's
//! normal (002 Fig 5.10). A triple may be packed into one token of three
//! digits, as the seed's only example writes it (`reachfw 010 100 3`).
//! Blank lines and `#` comments are skipped. A bad line is one error that
//! names its line and what is wrong, and parsing a file that has one
//! yields no commands at all.

use std::f64::consts::FRAC_PI_2;
use std::fmt;
use std::str::FromStr;

use crate::ik::MetaJoints;
use crate::module::{Connector, OUTER_STEP, UnknownConnector};
use crate::reach::{Direction, GridTarget};

/// Which end of the meta-module a command works from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// From the first module's `C0X`: the chain as built.
    Forward,
    /// From the second module's `C3X`: the chain inverted.
    Backward,
}

impl End {
    /// The chain's other end.
    #[must_use]
    pub fn other(self) -> Self {
        match self {
            Self::Forward => Self::Backward,
            Self::Backward => Self::Forward,
        }
    }
}

/// The longest `step` (ms): an hour. A simulated step runs on the one
/// simulation thread a bridge shares, so an endless one would stall every
/// client.
pub const MAX_STEP_MS: u64 = 3_600_000;

/// One supervisor command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Joint angles (rad) in chain order as seen from `end`.
    Move {
        end: End,
        angles: MetaJoints,
    },
    Lock {
        module: u8,
        connector: Connector,
    },
    Unlock {
        module: u8,
        connector: Connector,
    },
    /// At most [`MAX_STEP_MS`].
    Step {
        milliseconds: u64,
    },
    Reach {
        end: End,
        target: GridTarget,
    },
    DropBox {
        end: End,
    },
    /// Commands from the terminal from here on.
    Terminal,
    /// Commands from the file again.
    File,
}

impl Command {
    /// The six angles as the first module sees them (forward chain
    /// order): a backward move's list is the inverted chain's.
    #[must_use]
    pub fn forward_angles(end: End, angles: MetaJoints) -> MetaJoints {
        match end {
            End::Forward => angles,
            End::Backward => {
                let mut a = angles;
                a.reverse();
                a
            }
        }
    }
}

/// A line the supervisor cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ParseError {
    pub line: usize,
    pub what: LineError,
}

/// What is wrong with one line (without its number).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("{what}: {token:?} is not a number")]
    NotANumber { what: String, token: String },
    #[error("reach takes [Dx Dy Dz] dirX dirY dirZ [Orientation]: 3, 4, 6 or 7 numbers, got {0}")]
    ReachArity(usize),
    #[error("direction {0} {1} {2}: exactly one of dirX dirY dirZ is 1 or -1, the others 0")]
    Direction(i32, i32, i32),
    #[error("cell {0} {1} {2} is beyond a meta-module's reach of three cells")]
    BeyondReach(i32, i32, i32),
    #[error("orientation {0}: quarter-turns 0, 1, 2 or 3")]
    Orientation(i32),
    #[error(
        "move takes six angles (s1 m1 s2 s1' m1' s2': outer joints in thirds of a turn, middle in quarters), got {0}"
    )]
    MoveArity(usize),
    /// `angle` counts from 1.
    #[error("angle {angle}: {token:?} is not finite")]
    AngleNotFinite { angle: usize, token: String },
    /// `angle` counts from 1; `unit` is "quarter-turns" or "thirds of a turn".
    #[error("angle {angle}: {token} is not a whole number of {unit}")]
    AngleNotWhole {
        angle: usize,
        token: String,
        unit: &'static str,
    },
    /// `verb` is "lock" or "unlock".
    #[error("{verb} takes a module (0 or 1) and a connector, got {got} fields")]
    LockArity { verb: &'static str, got: usize },
    #[error("module {0:?}: a meta-module has modules 0 and 1")]
    Module(String),
    #[error(transparent)]
    Connector(#[from] UnknownConnector),
    #[error("step: {0:?} is not a whole number of milliseconds")]
    StepNotWhole(String),
    #[error("step: {0} ms is longer than an hour ({MAX_STEP_MS} ms): split it")]
    StepTooLong(u64),
    #[error("step takes one number of milliseconds")]
    StepArity,
    #[error("{0} takes no arguments")]
    NoArguments(String),
    #[error(
        "unknown command {0:?} (known: movefw movebw lock unlock step reachfw reachbw dropBoxFw dropBoxBw cmd file)"
    )]
    UnknownCommand(String),
}

fn number<T: FromStr>(token: &str, what: &str) -> Result<T, LineError> {
    token.parse().map_err(|_| LineError::NotANumber {
        what: what.to_owned(),
        token: token.to_owned(),
    })
}

/// The tokens with packed triples (`010`) spread into three.
fn spread(tokens: &[&str]) -> Vec<String> {
    tokens
        .iter()
        .flat_map(|t| {
            if t.len() == 3 && t.bytes().all(|b| b.is_ascii_digit()) {
                t.chars().map(String::from).collect::<Vec<_>>()
            } else {
                vec![(*t).to_owned()]
            }
        })
        .collect()
}

fn reach(end: End, tokens: &[&str]) -> Result<Command, LineError> {
    let tokens = spread(tokens);
    let ints: Vec<i32> = tokens
        .iter()
        .map(|t| number::<i32>(t, "reach"))
        .collect::<Result<_, _>>()?;
    let (cell, dir, orientation) = match ints.as_slice() {
        [x, y, z] => ([0, 0, 0], [*x, *y, *z], 0),
        [x, y, z, o] => ([0, 0, 0], [*x, *y, *z], *o),
        [dx, dy, dz, x, y, z] => ([*dx, *dy, *dz], [*x, *y, *z], 0),
        [dx, dy, dz, x, y, z, o] => ([*dx, *dy, *dz], [*x, *y, *z], *o),
        _ => return Err(LineError::ReachArity(ints.len())),
    };
    let direction =
        Direction::from_components(dir).ok_or(LineError::Direction(dir[0], dir[1], dir[2]))?;
    if cell.iter().any(|c| c.unsigned_abs() > 3) {
        return Err(LineError::BeyondReach(cell[0], cell[1], cell[2]));
    }
    Ok(Command::Reach {
        end,
        target: GridTarget {
            cell,
            direction,
            orientation: u8::try_from(orientation)
                .ok()
                .filter(|o| *o < 4)
                .ok_or(LineError::Orientation(orientation))?,
        },
    })
}

fn moving(end: End, tokens: &[&str]) -> Result<Command, LineError> {
    if tokens.len() != 6 {
        return Err(LineError::MoveArity(tokens.len()));
    }
    let mut angles = [0.0; 6];
    for (k, token) in tokens.iter().enumerate() {
        let units: f64 = number(token, &format!("angle {}", k + 1))?;
        if !units.is_finite() {
            return Err(LineError::AngleNotFinite {
                angle: k + 1,
                token: (*token).to_owned(),
            });
        }
        // App. B's angles are whole thirds and quarters of a turn: the
        // lattice poses a move command names.
        if units.fract() != 0.0 {
            return Err(LineError::AngleNotWhole {
                angle: k + 1,
                token: (*token).to_owned(),
                unit: if k % 3 == 1 {
                    "quarter-turns"
                } else {
                    "thirds of a turn"
                },
            });
        }
        angles[k] = units * if k % 3 == 1 { FRAC_PI_2 } else { OUTER_STEP };
    }
    Ok(Command::Move { end, angles })
}

fn locking(lock: bool, tokens: &[&str]) -> Result<Command, LineError> {
    let [module, connector] = tokens else {
        return Err(LineError::LockArity {
            verb: if lock { "lock" } else { "unlock" },
            got: tokens.len(),
        });
    };
    let module = match *module {
        "0" => 0,
        "1" => 1,
        other => return Err(LineError::Module(other.to_owned())),
    };
    let connector: Connector = connector.parse()?;
    Ok(if lock {
        Command::Lock { module, connector }
    } else {
        Command::Unlock { module, connector }
    })
}

/// Reads one line; `Ok(None)` for a blank or comment line.
///
/// # Errors
/// What is wrong with the line (without its number).
pub fn parse_line(text: &str) -> Result<Option<Command>, LineError> {
    let text = text.split('#').next().unwrap_or("").trim();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let Some((&verb, args)) = tokens.split_first() else {
        return Ok(None);
    };
    let no_args = |command: Command| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(LineError::NoArguments(verb.to_owned()))
        }
    };
    let command = match verb {
        "movefw" => moving(End::Forward, args)?,
        "movebw" => moving(End::Backward, args)?,
        "lock" => locking(true, args)?,
        "unlock" => locking(false, args)?,
        "step" => match args {
            [ms] => {
                let milliseconds: u64 =
                    number(ms, "step").map_err(|_| LineError::StepNotWhole((*ms).to_owned()))?;
                if milliseconds > MAX_STEP_MS {
                    return Err(LineError::StepTooLong(milliseconds));
                }
                Command::Step { milliseconds }
            }
            _ => return Err(LineError::StepArity),
        },
        "reachfw" => reach(End::Forward, args)?,
        "reachbw" => reach(End::Backward, args)?,
        "dropBoxFw" => no_args(Command::DropBox { end: End::Forward })?,
        "dropBoxBw" => no_args(Command::DropBox { end: End::Backward })?,
        "cmd" => no_args(Command::Terminal)?,
        "file" => no_args(Command::File)?,
        other => return Err(LineError::UnknownCommand(other.to_owned())),
    };
    Ok(Some(command))
}

/// Reads a whole command file: every command, or the first bad line.
///
/// # Errors
/// The first line that is not a command, with its number.
pub fn parse(text: &str) -> Result<Vec<Command>, ParseError> {
    let mut commands = Vec::new();
    for (k, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(c)) => commands.push(c),
            Ok(None) => {}
            Err(what) => return Err(ParseError { line: k + 1, what }),
        }
    }
    Ok(commands)
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            End::Forward => "fw",
            End::Backward => "bw",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_of_appendix_b_reads() {
        let text = "\
# the seed's example, and its spelled-out form
reachfw 010 100 3
reachfw 0 1 0 1 0 0 3
reachbw 0 0 -1 2
reachfw -1 0 0
movefw 2 -3 0 1 1 0
movebw 0 0 1 0 0 2
lock 0 C0X
unlock 1 C3Z   # a comment after a command
step 500

dropBoxFw
dropBoxBw
cmd
file
";
        let commands = parse(text).unwrap();
        assert_eq!(commands.len(), 13);
        let example = GridTarget {
            cell: [0, 1, 0],
            direction: Direction::from_components([1, 0, 0]).unwrap(),
            orientation: 3,
        };
        assert_eq!(
            commands[0],
            Command::Reach {
                end: End::Forward,
                target: example
            }
        );
        assert_eq!(commands[0], commands[1]);
        let Command::Reach { target, .. } = &commands[2] else {
            panic!()
        };
        assert_eq!((target.cell, target.orientation), ([0, 0, 0], 2));
        // App. B's own examples: 2 is 4π/3 of an outer joint, -3 is -3π/2
        // of a middle one.
        let Command::Move { angles, .. } = &commands[4] else {
            panic!()
        };
        assert!((angles[0] - 4.0 * std::f64::consts::PI / 3.0).abs() < 1e-12);
        assert!((angles[1] + 1.5 * std::f64::consts::PI).abs() < 1e-12);
        // movebw's list is the inverted chain's.
        let Command::Move { end, angles } = commands[5] else {
            panic!()
        };
        let forward = Command::forward_angles(end, angles);
        assert!(
            (forward[3] - OUTER_STEP).abs() < 1e-12
                && (forward[0] - 2.0 * OUTER_STEP).abs() < 1e-12
        );
        assert_eq!(
            commands[6],
            Command::Lock {
                module: 0,
                connector: Connector::C0X
            }
        );
        assert_eq!(commands[8], Command::Step { milliseconds: 500 });
    }

    #[test]
    fn bad_lines_are_refused_with_their_number_and_what_is_wrong() {
        let cases = [
            ("jump 3", "unknown command \"jump\""),
            ("movefw 1 2 3", "six angles"),
            ("movefw 1 2 3 4 5 x", "angle 6: \"x\" is not a number"),
            ("movefw 1 2 3 4 5 inf", "angle 6: \"inf\" is not finite"),
            ("lock 2 C0X", "modules 0 and 1"),
            ("lock 0 C1X", "unknown connector \"C1X\""),
            ("unlock 0", "takes a module (0 or 1) and a connector"),
            ("step -5", "not a whole number of milliseconds"),
            ("step", "one number of milliseconds"),
            ("reachfw 1 1 0", "exactly one of dirX dirY dirZ"),
            ("reachfw 0 0 2", "exactly one of dirX dirY dirZ"),
            ("reachfw 1 0", "3, 4, 6 or 7 numbers, got 2"),
            ("reachfw 5 0 0 1 0 0", "beyond a meta-module's reach"),
            ("reachfw a 0 0", "\"a\" is not a number"),
            (
                "reachfw 0 0 1 4",
                "orientation 4: quarter-turns 0, 1, 2 or 3",
            ),
            ("reachfw 0 0 1 -1", "orientation -1"),
            (
                "reachfw -2147483648 0 0 1 0 0",
                "beyond a meta-module's reach",
            ),
            (
                "movefw 0.5 0 0 0 0 0",
                "angle 1: 0.5 is not a whole number of thirds of a turn",
            ),
            ("dropBoxFw 3", "takes no arguments"),
            ("cmd now", "takes no arguments"),
        ];
        for (line, says) in cases {
            let text = format!("step 10\n\n{line}\nstep 20\n");
            let error = parse(&text).unwrap_err();
            assert_eq!(error.line, 3, "{line}");
            assert!(error.to_string().contains(says), "{line}: {error}");
        }
    }
}
