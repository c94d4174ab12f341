//! The box: CMA-ES searches an unbounded genotype; every sample is mapped
//! into the unit interval, per coordinate, by pycma's `BoundTransform`
//! (a periodic, piecewise linear-quadratic map), so proposals always lie in
//! the box and no penalty is needed.
//!
//! On the fundamental interval `[−a, 1 + a]` the map is the identity in
//! `[a, 1 − a]` and a parabola in each margin, touching the bound with zero
//! slope at `−a` and `1 + a` and joining the identity with slope one at
//! `±a` (resp. `1 ∓ a`). Outside that interval the genotype is reflected
//! (period `2·(1 + 2a)`), so the map is continuous everywhere and smooth
//! except at the reflection points, which it reaches with zero slope.

/// Width `a` of each quadratic margin, as a fraction of the range. pycma
/// works in user units: its older `margin_width1`, `(1 + |bound|)/20`, is
/// 0.03 of the range on BBOB's `[−5, 5]`; pycma 4's default,
/// `margin_width2 = max(1, |bound|)/20`, is 0.025 there (both capped at
/// half the range). A fixed fraction keeps the map independent of the
/// user's units; 0.025 and 0.03 solved the same BBOB problems at 200·d
/// (held-out instances 4–6, ten seeds).
pub const MARGIN: f64 = 0.03;

/// The point of `[0, 1]` a genotype coordinate stands for.
#[must_use]
pub fn to_unit(x: f64) -> f64 {
    let a = MARGIN;
    let width = 1.0 + 2.0 * a;
    // Fold into [−a, 1 + a] by periodic reflection.
    let mut t = (x + a).rem_euclid(2.0 * width);
    if t > width {
        t = 2.0 * width - t;
    }
    let x = t - a;
    let y = if x < a {
        (x + a) * (x + a) / (4.0 * a)
    } else if x > 1.0 - a {
        1.0 - (1.0 + a - x) * (1.0 + a - x) / (4.0 * a)
    } else {
        x
    };
    y.clamp(0.0, 1.0)
}

/// A genotype coordinate that [`to_unit`] maps to `y ∈ [0, 1]` (the one in
/// the fundamental interval).
#[must_use]
pub fn from_unit(y: f64) -> f64 {
    let a = MARGIN;
    let y = y.clamp(0.0, 1.0);
    if y < a {
        -a + (4.0 * a * y).sqrt()
    } else if y > 1.0 - a {
        1.0 + a - (4.0 * a * (1.0 - y)).sqrt()
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_inside_the_margins() {
        for y in [0.03, 0.1, 0.5, 0.9, 0.97] {
            assert_eq!(to_unit(y), y);
            assert_eq!(from_unit(y), y);
        }
    }

    #[test]
    fn inverse_round_trips_and_the_map_stays_in_the_box() {
        for i in 0..=1000 {
            let y = f64::from(i) / 1000.0;
            assert!((to_unit(from_unit(y)) - y).abs() < 1e-12, "{y}");
        }
        for i in -5000..=5000 {
            let x = f64::from(i) * 0.0123;
            let y = to_unit(x);
            assert!((0.0..=1.0).contains(&y), "{x} -> {y}");
        }
    }

    #[test]
    fn continuous_and_periodic() {
        let width = 1.0 + 2.0 * MARGIN;
        for i in -300..300 {
            let x = f64::from(i) * 0.01;
            assert!((to_unit(x) - to_unit(x + 1e-9)).abs() < 1e-8, "{x}");
            assert!((to_unit(x) - to_unit(x + 2.0 * width)).abs() < 1e-9);
        }
        assert_eq!(to_unit(-MARGIN), 0.0);
        assert!((to_unit(1.0 + MARGIN) - 1.0).abs() < 1e-15);
        // Beyond the upper bound the genotype is reflected back.
        assert!((to_unit(1.0 + MARGIN + 0.2) - to_unit(1.0 + MARGIN - 0.2)).abs() < 1e-12);
    }
}
