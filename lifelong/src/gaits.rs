//! The gaits database of thesis 7.8.2.
//!
//! A gait learnt for one situation (slippery ground, upside down, a
//! broken motor) is kept, so that when the situation comes back the robot
//! retakes it without a time-costly optimization. Each record holds what
//! 7.8.2 lists: the CPG parameters, when it was last used, which gaits came
//! before it with the symptoms of the anomaly that made the switch, the
//! robot orientation, and the expected velocity.
//!
//! [`candidates`] decides which stored gaits to try on an anomaly, most
//! likely first: the gait must fit the robot's body (same modules and
//! connections), and gaits that earlier followed the current one after the
//! same symptom come first, then those used most recently.

use serde::{Deserialize, Serialize};

use crate::anomaly::Symptom;

/// Which way up the robot walks with the gait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Orientation {
    Upright,
    UpsideDown,
}

impl Orientation {
    /// From the z component of the robot's up axis (1 as built).
    #[must_use]
    pub fn from_up(up: f64) -> Orientation {
        if up < 0.0 {
            Orientation::UpsideDown
        } else {
            Orientation::Upright
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Orientation::Upright => "upright",
            Orientation::UpsideDown => "upside-down",
        }
    }

    #[must_use]
    pub fn parse(name: &str) -> Option<Orientation> {
        [Orientation::Upright, Orientation::UpsideDown]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// One stored gait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaitRecord {
    pub id: u64,
    /// [`body_key`] of the morphology the gait was learnt on.
    pub body: String,
    /// The gait (yamorconfig XML).
    pub gait_xml: String,
    pub orientation: Orientation,
    /// Mean velocity of the robot's windows with this gait (m/s): the one
    /// it was stored with and one per switch to it since.
    pub expected_velocity: f64,
    /// Windows in that mean.
    pub windows: u64,
    /// Its standard error, from two windows on.
    pub velocity_se: Option<f64>,
    /// Milliseconds since the epoch.
    pub last_used_ms: i64,
    /// Gaits that were in use before a switch to this one, and the symptom
    /// that caused each switch.
    pub predecessors: Vec<(u64, Symptom)>,
}

impl GaitRecord {
    /// Its velocity as people read it: mean ± se over its windows.
    #[must_use]
    pub fn velocity_text(&self) -> String {
        yamor_organizer::store::gait_velocity_text(
            self.expected_velocity,
            self.velocity_se,
            self.windows,
        )
    }
}

/// A key equal for morphologies with the same modules and connections,
/// whatever their order in the file.
#[must_use]
pub fn body_key(morphology: &yamor_core::Morphology) -> String {
    let mut modules: Vec<String> = morphology
        .modules
        .iter()
        .map(|m| format!("{}{}", m.id, if m.passive { "p" } else { "" }))
        .collect();
    modules.sort();
    let mut connections: Vec<String> = morphology
        .connections
        .iter()
        .map(|c| {
            let a = (c.id_from, c.conn_from.as_str());
            let b = (c.id_to, c.conn_to.as_str());
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            format!("{}.{}-{}.{}@{}", a.0, a.1, b.0, b.1, c.angle_deg)
        })
        .collect();
    connections.sort();
    format!("{}|{}", modules.join(","), connections.join(","))
}

/// The stored gaits worth trying for `body` lying `orientation` after
/// `symptom` struck while `current` was in use, most likely first; `current`
/// itself is left out.
#[must_use]
pub fn candidates<'a>(
    records: &'a [GaitRecord],
    body: &str,
    orientation: Orientation,
    current: Option<u64>,
    symptom: Symptom,
) -> Vec<&'a GaitRecord> {
    let mut fitting: Vec<&GaitRecord> = records
        .iter()
        .filter(|r| r.body == body && r.orientation == orientation && Some(r.id) != current)
        .collect();
    let followed = |r: &GaitRecord| {
        r.predecessors
            .iter()
            .filter(|(from, s)| Some(*from) == current && *s == symptom)
            .count()
    };
    let after_any = |r: &GaitRecord| {
        r.predecessors
            .iter()
            .filter(|(from, _)| Some(*from) == current)
            .count()
    };
    fitting.sort_by(|a, b| {
        followed(b)
            .cmp(&followed(a))
            .then(after_any(b).cmp(&after_any(a)))
            .then(b.last_used_ms.cmp(&a.last_used_ms))
            .then(b.expected_velocity.total_cmp(&a.expected_velocity))
    });
    fitting
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        id: u64,
        body: &str,
        last_used_ms: i64,
        predecessors: Vec<(u64, Symptom)>,
    ) -> GaitRecord {
        GaitRecord {
            id,
            body: body.into(),
            gait_xml: String::new(),
            orientation: Orientation::Upright,
            expected_velocity: 0.05,
            windows: 1,
            velocity_se: None,
            last_used_ms,
            predecessors,
        }
    }

    #[test]
    fn the_gait_that_followed_this_symptom_before_comes_first() {
        let records = [
            record(1, "quad", 100, vec![]),
            record(2, "quad", 50, vec![(1, Symptom::VelocityDrop)]),
            record(3, "quad", 300, vec![(1, Symptom::VelocityRise)]),
            record(4, "quad", 400, vec![]),
            record(5, "snake", 500, vec![(1, Symptom::VelocityDrop)]),
            GaitRecord {
                orientation: Orientation::UpsideDown,
                ..record(6, "quad", 600, vec![(1, Symptom::VelocityDrop)])
            },
        ];
        let order = |orientation| -> Vec<u64> {
            candidates(
                &records,
                "quad",
                orientation,
                Some(1),
                Symptom::VelocityDrop,
            )
            .iter()
            .map(|r| r.id)
            .collect()
        };
        // 2 followed 1 after a drop; 3 followed 1 after something else; then
        // by recency; the snake's gait does not fit, nor does the upside-down
        // one; 1 is the current one.
        assert_eq!(order(Orientation::Upright), [2, 3, 4]);
        assert_eq!(order(Orientation::UpsideDown), [6]);
    }

    #[test]
    fn the_body_key_ignores_order() {
        let a = yamor_core::Morphology::from_xml_str(
            "a",
            r#"<morphology central="1"><module id="1"/><module id="2"/>
<connect idfrom="1" connfrom="front" idto="2" connto="rear" angle="0"/></morphology>"#,
        )
        .unwrap();
        let b = yamor_core::Morphology::from_xml_str(
            "b",
            r#"<morphology central="2"><module id="2"/><module id="1"/>
<connect idfrom="2" connfrom="rear" idto="1" connto="front" angle="0"/></morphology>"#,
        )
        .unwrap();
        assert_eq!(body_key(&a), body_key(&b));
        let mut c = a.clone();
        c.modules[1].passive = true;
        assert_ne!(body_key(&a), body_key(&c));
    }
}
