//! The calls on the host copy of module parameters and couplings; changes
//! wait for `Flush`.

use yamor_core::{CpgLink, ModuleConfig, ModuleId, RobotConfig};
use yamor_snp::MAX_LINKS;

use crate::model::{Coupling, CouplingChange, ModuleChange, ModuleView, SessionError};

use super::SessionHost;
use super::check::check_module;
use super::state::Changes;

impl SessionHost {
    /// GetAllModulesId and every module's parameters, in configuration order.
    pub async fn list_modules(&self) -> Result<Vec<ModuleView>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            Ok(session
                .config()?
                .modules
                .iter()
                .map(|m| session.module_view(m))
                .collect())
        })
        .await
    }

    pub async fn get_module(&self, id: ModuleId) -> Result<ModuleView, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            let module = session.configured(id)?;
            Ok(session.module_view(module))
        })
        .await
    }

    /// Changes the fields present in the host copy; pending until `Flush`.
    /// A bad value changes nothing.
    pub async fn set_module(&self, request: ModuleChange) -> Result<ModuleView, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            let current = session.configured(request.id)?.clone();
            let mut next = current.clone();
            next.amplitude = request.amplitude.unwrap_or(next.amplitude);
            next.offset = request.offset.unwrap_or(next.offset);
            next.speed = request.speed.unwrap_or(next.speed);
            next.min_angle = request.min_angle.unwrap_or(next.min_angle);
            next.max_angle = request.max_angle.unwrap_or(next.max_angle);
            check_module(&next)?;
            let changes = Changes {
                limits: (next.min_angle, next.max_angle) != (current.min_angle, current.max_angle),
                structure: false,
                params: (next.amplitude, next.offset, next.speed)
                    != (current.amplitude, current.offset, current.speed),
            };
            let view = session.module_view(&next);
            session.store(next, changes)?;
            Ok(view)
        })
        .await
    }

    /// Couplings as `from` → `to` pairs (the `cpglink` of `from`).
    pub async fn list_couplings(&self) -> Result<Vec<Coupling>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            Ok(couplings(session.config()?))
        })
        .await
    }

    /// Sets phase and/or weight of a coupling, adding it (phase 0, weight 1)
    /// when it does not exist; pending until `Flush`.
    pub async fn set_coupling(&self, request: CouplingChange) -> Result<Coupling, SessionError> {
        for (name, v) in [("phase", request.phase), ("weight", request.weight)] {
            if let Some(v) = v
                && !v.is_finite()
            {
                return Err(SessionError::Invalid(format!(
                    "{name} must be finite, got {v}"
                )));
            }
        }
        self.with(move |shared, _| {
            let (session, _) = shared.connected()?;
            session.configured(request.to)?;
            let mut module = session.configured(request.from)?.clone();
            let index = match module.cpg_links.iter().position(|l| l.to == request.to) {
                Some(i) => i,
                None if module.cpg_links.len() >= MAX_LINKS => {
                    return Err(SessionError::Invalid(format!(
                        "module {} already has {MAX_LINKS} couplings, the most one SNP message carries",
                        request.from
                    )));
                }
                None => {
                    module.cpg_links.push(CpgLink {
                        to: request.to,
                        phase: 0.0,
                        weight: 1.0,
                    });
                    module.cpg_links.len() - 1
                }
            };
            let link = &mut module.cpg_links[index];
            link.phase = request.phase.unwrap_or(link.phase);
            link.weight = request.weight.unwrap_or(link.weight);
            let view = Coupling {
                from: request.from,
                to: request.to,
                phase: link.phase,
                weight: link.weight,
            };
            let changed = session.configured(request.from)?.cpg_links != module.cpg_links;
            session.store(
                module,
                Changes {
                    structure: changed,
                    ..Changes::default()
                },
            )?;
            Ok(view)
        })
        .await
    }

    /// RemoveAllCoupling; pending until `Flush`.
    pub async fn remove_all_couplings(&self) -> Result<Vec<Coupling>, SessionError> {
        self.with(|shared, _| {
            let (session, _) = shared.connected()?;
            let coupled: Vec<ModuleConfig> = session
                .config()?
                .modules
                .iter()
                .filter(|m| !m.cpg_links.is_empty())
                .cloned()
                .collect();
            for mut module in coupled {
                module.cpg_links.clear();
                session.store(
                    module,
                    Changes {
                        structure: true,
                        ..Changes::default()
                    },
                )?;
            }
            Ok(couplings(session.config()?))
        })
        .await
    }
}

fn couplings(robot: &RobotConfig) -> Vec<Coupling> {
    robot
        .modules
        .iter()
        .flat_map(|m| {
            m.cpg_links.iter().map(move |l| Coupling {
                from: m.id,
                to: l.to,
                phase: l.phase,
                weight: l.weight,
            })
        })
        .collect()
}
