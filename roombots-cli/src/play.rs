//! `yamor roombots play`: supervisor command files played on meta-modules
//! standing on a floor of connectors, simulated or kinematically.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::picture::floor_around;

#[derive(Args)]
pub struct PlayArgs {
    /// The command files, one per meta-module (one App. B command per
    /// line, `#` comments), played one after the other in one world.
    #[arg(required = true)]
    files: Vec<std::path::PathBuf>,
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
    /// The floor cell each meta-module stands on at the start, `X,Y`,
    /// one per file in their order (one file: 0,0 when not given).
    #[arg(long = "at", value_parser = floor_cell, allow_hyphen_values = true)]
    at: Vec<(i64, i64)>,
    /// A passive structure on the floor whose faces carry connectors: a
    /// file of cells `x y z`, one per line (examples/roombots/stool.txt).
    #[arg(long)]
    structure: Option<std::path::PathBuf>,
    /// Only plan: check each command and move the joints at once, without
    /// simulating the servos, the locks and the floor.
    #[arg(long)]
    kinematic: bool,
    /// Draw the simulated meta-module at the start and after every move
    /// into this PNG, side by side.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

/// `X,Y`: a floor cell.
fn floor_cell(text: &str) -> Result<(i64, i64), String> {
    let (x, y) = text
        .split_once(',')
        .ok_or_else(|| format!("{text:?} is not a floor cell: X,Y"))?;
    let number = |n: &str| {
        n.trim()
            .parse::<i64>()
            .map_err(|_| format!("{text:?} is not a floor cell: X,Y with integers"))
    };
    Ok((number(x)?, number(y)?))
}

pub fn play(args: &PlayArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_roombots::enactment::Enactment;
    use yamor_roombots::stage::Stage;
    use yamor_roombots::supervisor::Command;
    anyhow::ensure!(
        !(args.kinematic && args.picture.is_some()),
        "--picture draws the simulation: drop --kinematic"
    );
    // Every file is read before anything moves.
    let mut texts = Vec::new();
    for file in &args.files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        yamor_roombots::supervisor::parse(&text)
            .with_context(|| format!("{} is not a command file", file.display()))?;
        texts.push(text);
    }
    let at = match (args.at.len(), args.files.len()) {
        (0, 1) => vec![(0, 0)],
        (a, f) if a == f => args.at.clone(),
        (a, f) => {
            anyhow::bail!("{f} command files need {f} --at cells (one per meta-module), {a} given")
        }
    };
    let structure = match &args.structure {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            yamor_roombots::stage::parse_structure(&text)
                .map_err(|e| anyhow::anyhow!("{} is not a structure: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let mut planned: Vec<Stage> = at
        .iter()
        .map(|(x, y)| Stage::standing_on(args.connection, *x, *y).with_structure(structure.clone()))
        .collect();
    for (k, stage) in planned.iter().enumerate() {
        let cells = stage.cells();
        if let Some(c) = structure.iter().find(|c| cells.contains(c)) {
            anyhow::bail!(
                "meta-module {} would stand in the structure's cell {c:?}",
                k + 1
            );
        }
        if let Some(c) = planned[k + 1..]
            .iter()
            .flat_map(Stage::cells)
            .find(|c| cells.contains(c))
        {
            anyhow::bail!("two meta-modules would stand in cell {c:?}");
        }
    }
    let mut simulated = if args.kinematic {
        None
    } else {
        Some(Enactment::troupe(planned.clone()).context("building the simulated meta-modules")?)
    };
    let mut moments = Vec::new();
    if let Some(enactment) = &simulated {
        moments.push(enactment.robot().module_poses());
    }
    let locks = |stage: &Stage| -> String {
        let held: Vec<String> = stage
            .locks()
            .iter()
            .map(|(m, c)| format!("{m}:{c}"))
            .collect();
        held.join(" ")
    };
    let how = if simulated.is_some() {
        ", simulated"
    } else {
        ", kinematically"
    };
    for (meta, stage) in planned.iter().enumerate() {
        println!(
            "{}a {} meta-module standing on the floor{how}: cubes at {:?}, locked {}",
            label(meta, at.len()),
            args.connection,
            stage.cells(),
            locks(stage)
        );
    }
    for (meta, text) in texts.iter().enumerate() {
        let who = label(meta, at.len());
        for (k, line) in text.lines().enumerate() {
            let Ok(Some(command)) = yamor_roombots::supervisor::parse_line(line) else {
                continue;
            };
            let line = line.split('#').next().unwrap_or("").trim();
            let refused = |why: String| {
                anyhow::anyhow!(
                    "{who}line {} ({line}) refused, nothing changed: {why}",
                    k + 1
                )
            };
            match &mut simulated {
                None => {
                    yamor_roombots::stage::see_others(&mut planned, meta);
                    let what = planned[meta]
                        .apply(&command)
                        .map_err(|e| refused(e.to_string()))?;
                    println!("{who}line {:>3} {line}: {what}", k + 1);
                }
                Some(enactment) => {
                    let report = enactment
                        .apply_to(meta, &command)
                        .map_err(|e| refused(e.to_string()))?;
                    println!(
                        "{who}line {:>3} {line}: {}\n          simulated {:.2} s: {}, {} retarget(s), {} overlap(s), locks give ≤ {:.2} mm, {:.2} mm from the plan",
                        k + 1,
                        report.plan,
                        report.seconds,
                        match (&command, report.reached) {
                            (_, false) => "STUCK",
                            (Command::Move { .. } | Command::Reach { .. }, true) => {
                                "every joint reached its goal"
                            }
                            _ => "the servos held",
                        },
                        report.retargets,
                        report.overlaps,
                        report.lock_gap * 1e3,
                        report.plan_error * 1e3,
                    );
                    anyhow::ensure!(
                        report.reached,
                        "{who}line {} ({line}): the meta-module got stuck (the bounding trial gave up after {} goal changes); stopped here",
                        k + 1,
                        report.retargets
                    );
                    planned = enactment.stages().to_vec();
                    if matches!(command, Command::Move { .. } | Command::Reach { .. }) {
                        moments.push(enactment.robot().module_poses());
                    }
                }
            }
        }
    }
    if let Some(path) = &args.picture {
        let mut span = floor_around(&moments);
        for c in &structure {
            span = (
                span.0.min(c[0].min(c[1]) as i32),
                span.1.max(c[0].max(c[1]) as i32),
            );
        }
        yamor_roombots::picture::draw_with(path, &moments, span, &structure)?;
        println!("picture: {}", path.display());
    }
    for (meta, stage) in planned.iter().enumerate() {
        let clock = simulated.as_ref().map_or(String::new(), |e| {
            format!(
                ", {:.2} s simulated, the simulation's cubes at {:?}",
                e.clock(),
                e.cells_of(meta)
            )
        });
        println!(
            "{}end: cubes at {:?}, held by its {} end, locked {}, {} ms waited{clock}",
            label(meta, at.len()),
            stage.cells(),
            stage.held_by(),
            locks(stage),
            stage.clock_ms
        );
    }
    Ok(())
}

/// How a meta-module's lines begin: nothing when it plays alone.
fn label(meta: usize, of: usize) -> String {
    if of == 1 {
        String::new()
    } else {
        format!("[{}] ", meta + 1)
    }
}
