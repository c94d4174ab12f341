//! Pictures of modules: a PNG is written, and it shows the pose it is given.

use yamor_roombots::chain::{ConnectionType, MetaModule};
use yamor_roombots::picture::draw;

#[test]
fn a_picture_is_a_png_of_the_poses_given() {
    let dir = std::env::temp_dir().join(format!("yamor-picture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let meta = MetaModule::new(ConnectionType::Parallel);
    let straight = meta.poses([0.0; 6]).to_vec();
    let bent = meta.poses([1.0, 0.5, 0.0, 0.0, 1.2, 0.0]).to_vec();
    let (a, b) = (dir.join("a.png"), dir.join("b.png"));
    draw(&a, &[straight.clone(), bent.clone()], (-4, 1)).unwrap();
    draw(&b, &[straight, straight_or(&bent)], (-4, 1)).unwrap();
    let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(&a[..8], b"\x89PNG\r\n\x1a\n");
    assert_ne!(a, b, "another pose draws another picture");
    // A long play is thinned to a few panels, not an endless strip.
    let many = vec![meta.poses([0.0; 6]).to_vec(); 50];
    draw(&dir.join("many.png"), &many, (-4, 1)).unwrap();
    let png = std::fs::read(dir.join("many.png")).unwrap();
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 420 * yamor_roombots::picture::MAX_PANELS as u32);
    let error = draw(&dir.join("missing/c.png"), &[vec![]], (0, 1)).unwrap_err();
    assert!(error.to_string().contains("missing/c.png"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bent pose moved a cell along `x`.
fn straight_or(
    bent: &[yamor_roombots::module::ModulePose],
) -> Vec<yamor_roombots::module::ModulePose> {
    let shift = nalgebra::Isometry3::translation(0.11, 0.0, 0.0);
    bent.iter()
        .map(|m| yamor_roombots::module::ModulePose {
            middles: m.middles.map(|f| shift * f),
        })
        .collect()
}
