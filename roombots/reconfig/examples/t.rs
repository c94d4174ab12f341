use yamor_reconfig::srdb::*;
use yamor_reconfig::sweep::*;
use yamor_roombots::chain::ConnectionType;
fn main() {
    let mut times = vec![];
    for _ in 0..51 {
        let t = std::time::Instant::now();
        let db = Database::generate();
        times.push(t.elapsed());
        std::hint::black_box(db);
    }
    times.sort();
    println!("generate median {:?} min {:?}", times[25], times[0]);
    let db = Database::generate();
    for t in db.tables() {
        println!(
            "{}: {} poses, {} kept",
            t.connection,
            t.configurations().len(),
            t.kept().len()
        );
    }
    let t = db.table(ConnectionType::ShearS);
    for step in [std::f64::consts::PI / 8.0, std::f64::consts::PI / 360.0] {
        let t0 = std::time::Instant::now();
        let c = Clouds::build(t, step, 2);
        println!("step {step}: table {:?}", t0.elapsed());
        std::hint::black_box(c);
    }
}
