//! `yamor roombots acrobat` and `chair`: 002 §5.3.2's hand-over and
//! §5.4's climb onto a stool, planned and simulated.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;

#[derive(Args)]
pub struct AcrobatArgs {
    /// How the meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
    /// Draw the start, the hand-over and the end into this PNG.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct ChairArgs {
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
    /// Draw the start, every move and the end into this PNG.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
    /// Write each meta-module's plan as a command file into this
    /// directory (chair-1.txt, chair-2.txt), for `yamor roombots play`.
    #[arg(long)]
    write: Option<std::path::PathBuf>,
}

pub fn acrobat(args: &AcrobatArgs) -> Result<()> {
    use anyhow::Context;
    let report = yamor_roombots::scene::acrobat(args.connection).with_context(|| {
        format!(
            "a {} meta-module reaches the top of no lone module within three cells",
            args.connection
        )
    })?;
    println!(
        "a {} meta-module on cell (0, 0) reached the top of module 2 on cell {:?} ({:.2} mm off), locked onto it (the locks gave at most {:.2} mm), let go of its module 0; module 1 now stands on module 2",
        args.connection,
        report.partner,
        report.reach_error * 1e3,
        report.lock_gap * 1e3
    );
    for (m, cells) in report.cells.iter().enumerate() {
        println!("module {m}: cubes at {cells:?}");
    }
    println!("{:.2} s simulated", report.seconds);
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw(path, &report.moments, (-2, 2))?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

pub fn chair(args: &ChairArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_roombots::scene::{CHAIR_CLIMBERS, STOOL};
    let report = yamor_roombots::scene::chair(args.connection).with_context(|| {
        format!(
            "the planner finds no way for two {} meta-modules onto the stool's back (it only takes steps that bring the holding end nearer, at most eight)",
            args.connection
        )
    })?;
    println!(
        "two {} meta-modules beside a stool of cells {:?}",
        args.connection, STOOL
    );
    for (meta, ((x, y), goal)) in CHAIR_CLIMBERS.iter().enumerate() {
        println!(
            "meta-module {}: from floor cell ({x}, {y}) to stand on {goal:?}",
            meta + 1
        );
        for (line, r) in report.lines[meta].iter().zip(&report.reports[meta]) {
            println!(
                "  {line:<28} {}\n  {:28} simulated {:.2} s, {}, {} overlap(s), locks give <= {:.2} mm, {:.2} mm from the plan",
                r.plan,
                "",
                r.seconds,
                if r.reached { "reached" } else { "STUCK" },
                r.overlaps,
                r.lock_gap * 1e3,
                r.plan_error * 1e3
            );
        }
        println!(
            "  end: cubes at {:?}, connectors at most {:.2} mm from the plan",
            report.cells[meta],
            report.plan_errors[meta] * 1e3
        );
    }
    println!("{:.2} s simulated", report.seconds);
    if let Some(dir) = &args.write {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut at = Vec::new();
        for (meta, lines) in report.lines.iter().enumerate() {
            let ((x, y), goal) = CHAIR_CLIMBERS[meta];
            let path = dir.join(format!("chair-{}.txt", meta + 1));
            let text = format!(
                "# 002 §5.4, the chair: meta-module {} of {} ({}), from floor cell ({x}, {y}) onto the stool's back at {goal:?}\n{}\n",
                meta + 1,
                report.lines.len(),
                args.connection,
                lines.join("\n")
            );
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            at.push(format!("--at {x},{y}"));
            println!("wrote {}", path.display());
        }
        println!(
            "replay: yamor roombots play --connection {} --structure examples/roombots/stool.txt {} {}",
            args.connection,
            at.join(" "),
            (1..=report.lines.len())
                .map(|k| dir.join(format!("chair-{k}.txt")).display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw_with(path, &report.moments, (-1, 4), &STOOL)?;
        println!("picture: {}", path.display());
    }
    Ok(())
}
