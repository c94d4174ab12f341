//! How runs are named when their request names none: after what tells
//! them apart in a list, so that a page of runs reads without opening each.

use std::collections::BTreeMap;

use crate::model::RunSpec;

/// An unnamed run's name: its robot first (a list of runs reads by what
/// was walked), then its optimizer and id.
pub(super) fn default_name(spec: &RunSpec, id: u64) -> String {
    match spec.robot_short_name() {
        Some(robot) => format!("{robot}-{}-{id}", spec.optimizer),
        None => format!("{}-{id}", spec.optimizer),
    }
}

/// An unnamed batch run is named after what sets it apart: its settings
/// (or its seed when it changes none), after the batch's name or optimizer.
pub(super) fn variant_name(
    base: &RunSpec,
    settings: &BTreeMap<String, String>,
    seed: u64,
) -> String {
    let prefix = if base.name.is_empty() {
        &base.optimizer
    } else {
        &base.name
    };
    if settings.is_empty() {
        format!("{prefix} seed={seed}")
    } else {
        let pairs: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{prefix} {}", pairs.join(","))
    }
}
