//! The gaits database of thesis 7.8.2, kept in the organizer's SQLite file
//! beside runs and jobs, so a robot's gaits outlive a session. It is read
//! and written in process, through the organizer's store: no RPC serves
//! it, so clients on other machines do not share it (`yamor lifelong gaits
//! --db FILE` reads a copy).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::anomaly::Symptom;
use crate::gaits::{GaitRecord, Orientation};

use yamor_organizer::store::{GaitRow, Store, StoreError, Write};

/// Stored gaits: read them, add one, mark one used.
pub struct Gaits {
    store: Store,
    next_id: AtomicU64,
}

impl Gaits {
    pub fn load(store: Store) -> Result<Gaits, StoreError> {
        let next_id = AtomicU64::new(store.max_gait_id()? + 1);
        Ok(Gaits { store, next_id })
    }

    /// The gaits learnt on the body `body` (a `body_key`), or every gait.
    /// Rows this version cannot read (an unknown orientation or symptom
    /// name) are skipped with a warning rather than failing the lookup.
    pub fn list(&self, body: Option<&str>) -> Result<Vec<GaitRecord>, StoreError> {
        Ok(self
            .store
            .gaits(body)?
            .into_iter()
            .filter_map(|row| {
                let record = record(&row);
                if record.is_none() {
                    tracing::warn!(gait = row.id, "unreadable stored gait skipped");
                }
                record
            })
            .collect())
    }

    /// Stores a new gait (its `id` is assigned) and waits until it is
    /// committed; returns the id.
    pub async fn insert(&self, mut record: GaitRecord) -> Result<u64, StoreError> {
        record.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.store
            .commit(Write::InsertGait(GaitRow {
                id: record.id,
                body: record.body,
                gait_xml: record.gait_xml,
                orientation: record.orientation.as_str().to_owned(),
                expected_velocity: record.expected_velocity,
                windows: 1,
                velocity_m2: 0.0,
                last_used_ms: record.last_used_ms,
                predecessors: record
                    .predecessors
                    .iter()
                    .map(|(id, s)| (*id, s.as_str().to_owned()))
                    .collect(),
            }))
            .await?;
        Ok(record.id)
    }

    /// Gait `id` is in use again, its window walked at `velocity` (which
    /// joins the mean of its windows); `switched_from` is the gait it
    /// replaced and the symptom that made the switch.
    pub async fn used(
        &self,
        id: u64,
        velocity: f64,
        switched_from: Option<(u64, Symptom)>,
    ) -> Result<(), StoreError> {
        self.store
            .commit(Write::GaitUsed {
                id,
                last_used_ms: yamor_organizer::now_ms(),
                velocity,
                predecessor: switched_from.map(|(from, s)| (from, s.as_str().to_owned())),
            })
            .await
    }
}

fn record(row: &GaitRow) -> Option<GaitRecord> {
    Some(GaitRecord {
        id: row.id,
        body: row.body.clone(),
        gait_xml: row.gait_xml.clone(),
        orientation: Orientation::parse(&row.orientation)?,
        expected_velocity: row.expected_velocity,
        windows: row.windows,
        velocity_se: row.standard_error(),
        last_used_ms: row.last_used_ms,
        predecessors: row
            .predecessors
            .iter()
            .map(|(id, s)| Some((*id, Symptom::parse(s)?)))
            .collect::<Option<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gait(body: &str, v: f64, predecessors: Vec<(u64, Symptom)>) -> GaitRecord {
        GaitRecord {
            id: 0,
            body: body.into(),
            gait_xml: format!("<yamorconfig v=\"{v}\"/>"),
            orientation: Orientation::UpsideDown,
            expected_velocity: v,
            windows: 1,
            velocity_se: None,
            last_used_ms: 7,
            predecessors,
        }
    }

    #[tokio::test]
    async fn gaits_round_trip_through_the_database_and_a_restart() {
        let dir = std::env::temp_dir().join(format!("yamor-gaits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("g.db");
        let (a, b);
        {
            let gaits = Gaits::load(Store::open(&path).unwrap()).unwrap();
            a = gaits.insert(gait("quad", 0.05, vec![])).await.unwrap();
            b = gaits
                .insert(gait("quad", 0.03, vec![(a, Symptom::TurnedOver)]))
                .await
                .unwrap();
            gaits.insert(gait("snake", 0.01, vec![])).await.unwrap();
            gaits
                .used(a, 0.06, Some((b, Symptom::VelocityRise)))
                .await
                .unwrap();
            gaits.used(a, 0.10, None).await.unwrap();
        }
        let gaits = Gaits::load(Store::open(&path).unwrap()).unwrap();
        let quad = gaits.list(Some("quad")).unwrap();
        assert_eq!(quad.len(), 2);
        assert_eq!(quad[0].id, a);
        // Its three windows, 0.05, 0.06 and 0.10: mean 0.07, sample
        // standard deviation 0.0265, standard error 0.0153.
        assert!((quad[0].expected_velocity - 0.07).abs() < 1e-12);
        assert_eq!(quad[0].windows, 3);
        let se = quad[0].velocity_se.unwrap();
        assert!((se - (0.0007_f64 / 3.0).sqrt()).abs() < 1e-12, "{se}");
        assert!(quad[0].last_used_ms > 7);
        assert_eq!(quad[0].predecessors, [(b, Symptom::VelocityRise)]);
        assert_eq!(quad[1], {
            let mut g = gait("quad", 0.03, vec![(a, Symptom::TurnedOver)]);
            g.id = b;
            g
        });
        assert_eq!(gaits.list(None).unwrap().len(), 3);
        // Ids continue after the restart.
        let c = gaits.insert(gait("quad", 0.02, vec![])).await.unwrap();
        assert!(c > b);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
