//! A build to plan, as `build`, `fewest` and `plan` take it: the
//! structure, how the meta-modules move, and the search's limits.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_reconfig::decentralised::Rule;
use yamor_reconfig::planning::{Method, Target, Task};
use yamor_roombots::chain::ConnectionType;

/// Who may move in a round of a build.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum MoveRule {
    /// 003 §2.6.4's canMove: wait when a visible one has priority.
    CanMove,
    /// 003 §3.2's remedy: one meta-module moves at a time.
    OneAtATime,
    /// Ours: moves in one agreed order, a move meeting an earlier one's
    /// swept cells waits.
    Reserve,
}

/// A build to plan: the structure and how the meta-modules move.
#[derive(Args, Clone)]
pub struct TaskArgs {
    /// The structure (003 §2.7's XML; examples/roombots/structures/).
    #[arg(required_unless_present = "platform", conflicts_with = "platform")]
    structure: Option<PathBuf>,
    /// Instead of a file: a platform of BARS × ROWS meta-modules lying
    /// flat (e.g. 5x20: 100 meta-modules), built from the middle row out.
    #[arg(long, value_parser = bars_by_rows)]
    platform: Option<(i32, i32)>,
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
    #[arg(long, value_enum, default_value = "reserve")]
    rule: MoveRule,
    /// The seed's controller: step onto a seed's root in any pose (no
    /// look-ahead to whether its shape can be assumed from there).
    #[arg(long)]
    no_look_ahead: bool,
    /// The world's side, in cells.
    #[arg(long, default_value_t = 13)]
    size: i32,
    /// Rounds before a build gives up.
    #[arg(long, default_value_t = 2000)]
    max_rounds: usize,
    /// Plan centrally: the fewest moves, by A* over the configurations of
    /// all the meta-modules at once (at most 8 of them), instead of each
    /// meta-module deciding for itself.
    #[arg(long)]
    central: bool,
    /// The centralised search gives up after this many configurations.
    #[arg(long, default_value_t = 1_000_000)]
    max_expanded: usize,
    /// Start standing as this structure (003 §2.7's XML) and take it apart
    /// into the target: meta-modules on the target's places stay, the
    /// others walk off and park on the floor clear of it. Needs --central.
    #[arg(long, requires = "central")]
    from: Option<PathBuf>,
}

impl TaskArgs {
    /// The centralised search's give-up.
    #[must_use]
    pub fn max_expanded(&self) -> usize {
        self.max_expanded
    }

    /// Whether the build takes a standing structure apart (`--from`).
    #[must_use]
    pub fn takes_apart(&self) -> bool {
        self.from.is_some()
    }

    /// The task, its structure file read and checked.
    pub fn task(&self) -> Result<Task> {
        let target = match (&self.structure, self.platform) {
            (Some(path), _) => xml_target(path)?,
            (None, Some((bars, rows))) => Target::Platform { bars, rows },
            (None, None) => bail!("give a structure file or --platform"),
        };
        let from = self.from.as_deref().map(xml_target).transpose()?;
        let task = Task {
            target,
            connection: self.connection,
            rule: match self.rule {
                MoveRule::CanMove => Rule::CanMove,
                MoveRule::OneAtATime => Rule::OneAtATime,
                MoveRule::Reserve => Rule::Reserve,
            },
            look_ahead: !self.no_look_ahead,
            size: self.size,
            max_rounds: self.max_rounds,
            method: if self.central {
                Method::Central {
                    max_expanded: self.max_expanded,
                }
            } else {
                Method::Decentralised
            },
            from,
        };
        Ok(task.checked()?)
    }
}

/// A structure file as a task's target.
fn xml_target(path: &std::path::Path) -> Result<Target> {
    Ok(Target::Xml {
        name: path.display().to_string(),
        xml: std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))?,
    })
}

fn bars_by_rows(text: &str) -> Result<(i32, i32), String> {
    let bad = || format!("{text:?} is not BARSxROWS (e.g. 5x20)");
    let (a, b) = text.split_once('x').ok_or_else(bad)?;
    let (a, b): (i32, i32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a < 1 || b < 1 {
        return Err(bad());
    }
    Ok((a, b))
}
