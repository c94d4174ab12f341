//! The C.1 id mapping: setting it, and translating real ids to the robot's
//! ids and SNP addresses.

use std::collections::{BTreeMap, HashMap};

use yamor_core::{ModuleConfig, ModuleId};

use crate::model::{IdMapping, SessionError};

use super::{MAX_WIRE_ID, SessionHost};

impl SessionHost {
    /// Sets the C.1 mapping. Refused while a session is open.
    pub async fn set_id_mapping(&self, mapping: IdMapping) -> Result<IdMapping, SessionError> {
        let mut owner = BTreeMap::new();
        for (&real, &sim) in &mapping {
            if sim > u32::from(MAX_WIRE_ID) {
                return Err(SessionError::Invalid(format!(
                    "real id {real} maps to simulation id {sim}, beyond the SNP wire's 0..={MAX_WIRE_ID}"
                )));
            }
            if let Some(other) = owner.insert(sim, real) {
                let (a, b) = (other.min(real), other.max(real));
                return Err(SessionError::Invalid(format!(
                    "real ids {a} and {b} both map to simulation id {sim}"
                )));
            }
        }
        self.with(move |shared, _| {
            if shared.session.is_some() {
                return Err(SessionError::NotReady(
                    "the id mapping cannot change while a simulation is open: \
                     CloseSimulation first"
                        .to_owned(),
                ));
            }
            shared.mapping = mapping.clone();
            Ok(mapping)
        })
        .await
    }

    pub async fn get_id_mapping(&self) -> Result<IdMapping, SessionError> {
        self.with(|shared, _| Ok(shared.mapping.clone())).await
    }
}

/// The C.1 translation as it applies to one link.
pub(super) struct Ids<'a> {
    pub(super) mapping: &'a HashMap<u32, u32>,
    /// Only simulation links translate.
    pub(super) active: bool,
}

impl Ids<'_> {
    /// The robot's id for real id `real`.
    pub(super) fn robot(&self, real: ModuleId) -> Result<ModuleId, SessionError> {
        if !self.active {
            return Ok(real);
        }
        if let Some(&sim) = self.mapping.get(&real) {
            return Ok(sim);
        }
        // Unmapped ids map to themselves, unless another real id took that place.
        match self.mapping.iter().find(|&(_, &sim)| sim == real) {
            Some((other, _)) => Err(SessionError::Invalid(format!(
                "real id {real} is not mapped, and simulation id {real} belongs to real id {other}"
            ))),
            None => Ok(real),
        }
    }

    /// The SNP address of real id `real`.
    pub(super) fn wire(&self, real: ModuleId) -> Result<u8, SessionError> {
        let id = self.robot(real)?;
        u8::try_from(id)
            .ok()
            .filter(|&b| b <= MAX_WIRE_ID)
            .ok_or_else(|| {
                SessionError::Invalid(format!(
                    "module id {real} does not fit the SNP wire (ids 0..={MAX_WIRE_ID})"
                ))
            })
    }

    /// `module` with every id it carries translated.
    pub(super) fn wire_config(&self, module: &ModuleConfig) -> Result<ModuleConfig, SessionError> {
        let mut out = module.clone();
        out.id = ModuleId::from(self.wire(module.id)?);
        out.bluetooth_to = module
            .bluetooth_to
            .map(|to| self.wire(to).map(ModuleId::from))
            .transpose()?;
        for link in &mut out.cpg_links {
            link.to = ModuleId::from(self.wire(link.to)?);
        }
        Ok(out)
    }
}
