use yamor_reconfig::build::*;
use yamor_reconfig::srdb::*;
use yamor_reconfig::sweep::*;
use yamor_reconfig::world::World;
use yamor_roombots::chain::ConnectionType;
fn main() {
    let db = Database::generate();
    let args: Vec<i32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (bars, rows, size) = (args[0], args[1], args[2]);
    let s = yamor_reconfig::structure::platform(bars, rows, [size / 2, size / 2, 0]);
    let table = db.table(ConnectionType::ShearS);
    let clouds = Clouds::build(table, std::f64::consts::PI / 8.0, 2);
    for seed in 0..3 {
        let mut world = World::new([size, size, 8]);
        world.set_structure(&s).unwrap();
        let starts = random_starts(&world, s.places.len(), 3, seed).unwrap();
        let mut b = Build::new(
            world,
            table,
            &clouds,
            &starts,
            Settings {
                rule: Rule::Reserve,
                max_rounds: 3000,
                ..Default::default()
            },
        )
        .unwrap();
        let t0 = std::time::Instant::now();
        let r = b.run();
        println!(
            "{} places: built {} filled {} rounds {} moves {} collisions {} deadlock {} out {} ({:?})",
            s.places.len(),
            r.built,
            r.filled,
            r.rounds,
            r.moves.len(),
            r.collisions,
            r.deadlock,
            r.out_of_rounds,
            t0.elapsed()
        );
    }
}
