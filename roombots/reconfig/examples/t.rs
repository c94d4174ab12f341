use yamor_reconfig::build::*;
use yamor_reconfig::srdb::*;
use yamor_reconfig::sweep::*;
use yamor_reconfig::world::World;
use yamor_roombots::chain::ConnectionType;
fn main() {
    let db = Database::generate();
    for file in ["chair-4", "stool-4", "stool-6"] {
        let s = yamor_reconfig::structure::parse(
            &std::fs::read_to_string(format!("examples/roombots/structures/{file}.xml")).unwrap(),
        )
        .unwrap();
        for t in ConnectionType::ALL {
            let table = db.table(t);
            let clouds = Clouds::build(table, std::f64::consts::PI / 8.0, 2);
            for (rule, look_ahead) in [
                (Rule::CanMove, false),
                (Rule::OneAtATime, false),
                (Rule::Reserve, false),
                (Rule::Reserve, true),
            ] {
                let (mut ok, mut coll, mut dead, mut rounds, mut out) = (0, 0, 0, 0, 0);
                let t0 = std::time::Instant::now();
                for seed in 0..20 {
                    let mut world = World::new([13, 13, 13]);
                    world.set_structure(&s).unwrap();
                    let starts = random_starts(&world, s.places.len(), 3, seed).unwrap();
                    let mut b = Build::new(
                        world,
                        table,
                        &clouds,
                        &starts,
                        Settings {
                            rule,
                            look_ahead,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    let r = b.run();
                    ok += usize::from(r.built);
                    out += usize::from(r.out_of_rounds);
                    coll += r.collisions;
                    dead += usize::from(r.deadlock);
                    rounds += r.rounds;
                }
                println!(
                    "{file} {t} {rule:?} {look_ahead}: built {ok}/20 collisions {coll} deadlocks {dead} out of rounds {out} rounds {rounds} ({:?})",
                    t0.elapsed()
                );
            }
        }
    }
}
