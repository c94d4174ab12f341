//! The example robots of `examples/robots/`, embedded in the binary so the
//! main command runs on a fresh machine without any file.

use yamor_core::{Morphology, RobotConfig, XmlError};

/// One example robot: its morphology, its reference gait and, where it
/// has one, the optimization problem made by hand for it (else
/// `yamor run` derives one from the gait).
#[derive(Debug, Clone, Copy)]
pub struct ExampleRobot {
    pub name: &'static str,
    pub world_xml: &'static str,
    pub gait_xml: &'static str,
    pub problem_xml: Option<&'static str>,
}

macro_rules! example {
    ($name:literal) => {
        ExampleRobot {
            name: $name,
            world_xml: include_str!(concat!("../../examples/robots/", $name, "/world.xml")),
            gait_xml: include_str!(concat!("../../examples/robots/", $name, "/gait.xml")),
            problem_xml: None,
        }
    };
    ($name:literal, optimize) => {
        ExampleRobot {
            problem_xml: Some(include_str!(concat!(
                "../../examples/robots/",
                $name,
                "/optimize.xml"
            ))),
            ..example!($name)
        }
    };
}

/// Every embedded example, the default (quadruped) first.
pub const EXAMPLES: [ExampleRobot; 10] = [
    example!("quadruped", optimize),
    example!("snake"),
    example!("trebuchet"),
    example!("dog"),
    example!("wheel"),
    // The bench of morphologies (docs/morphology.md).
    example!("hexapod", optimize),
    example!("tripod", optimize),
    example!("salamander", optimize),
    example!("long-snake", optimize),
    example!("mudskipper", optimize),
];

impl ExampleRobot {
    /// The names of every embedded robot, for error messages and listings.
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        EXAMPLES.iter().map(|e| e.name).collect()
    }

    #[must_use]
    pub fn named(name: &str) -> Option<ExampleRobot> {
        EXAMPLES.into_iter().find(|e| e.name == name)
    }

    pub fn morphology(&self) -> Result<Morphology, XmlError> {
        Morphology::from_xml_str(&format!("{}/world.xml", self.name), self.world_xml)
    }

    pub fn gait(&self) -> Result<RobotConfig, XmlError> {
        RobotConfig::from_xml_str(&format!("{}/gait.xml", self.name), self.gait_xml)
    }
}

/// Why a robot named on a command line cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("`{name}` is neither an example robot ({known}) nor a file")]
    Unknown { name: String, known: String },
    #[error(
        "{dir} holds no world.xml: a robot directory needs world.xml (its morphology) and gait.xml"
    )]
    NoWorld { dir: std::path::PathBuf },
    #[error(transparent)]
    Xml(#[from] Box<XmlError>),
    #[error(
        "the gait configures module {module}, which is not in the morphology (its modules: {known}); \
         every <module> of gait.xml must name a module of world.xml"
    )]
    GaitDoesNotFit {
        module: yamor_core::ModuleId,
        known: String,
    },
    #[error("no gait given and {path} is unusable: {source}")]
    GaitBeside {
        path: std::path::PathBuf,
        source: Box<XmlError>,
    },
}

/// A robot as a user names it: an embedded example, a morphology file with
/// `gait.xml` beside it, or a directory holding `world.xml` and `gait.xml`.
/// `gait` overrides the robot's own gait.
pub fn load(
    robot: &str,
    gait: Option<&std::path::Path>,
) -> Result<(Morphology, RobotConfig), LoadError> {
    let given = || {
        gait.map(RobotConfig::from_file)
            .transpose()
            .map_err(Box::new)
    };
    if let Some(example) = ExampleRobot::named(robot) {
        let gait = match given()? {
            Some(g) => g,
            None => example.gait().map_err(Box::new)?,
        };
        let morphology = example.morphology().map_err(Box::new)?;
        fits(&morphology, &gait)?;
        return Ok((morphology, gait));
    }
    let given_path = std::path::Path::new(robot);
    let in_dir;
    let path = if given_path.is_dir() {
        in_dir = given_path.join("world.xml");
        if !in_dir.exists() {
            return Err(LoadError::NoWorld {
                dir: given_path.to_owned(),
            });
        }
        in_dir.as_path()
    } else {
        given_path
    };
    if !path.exists() {
        return Err(LoadError::Unknown {
            name: robot.to_owned(),
            known: ExampleRobot::names().join(", "),
        });
    }
    let morphology = Morphology::from_file(path).map_err(Box::new)?;
    let gait = match given()? {
        Some(g) => g,
        None => {
            let beside = path.with_file_name("gait.xml");
            RobotConfig::from_file(&beside).map_err(|source| LoadError::GaitBeside {
                path: beside,
                source: Box::new(source),
            })?
        }
    };
    fits(&morphology, &gait)?;
    Ok((morphology, gait))
}

/// Every module the gait configures is one of the morphology's: checked
/// when a robot is loaded, so a run does not start to fail every walk.
pub fn fits(morphology: &Morphology, gait: &RobotConfig) -> Result<(), LoadError> {
    let has = |id| morphology.modules.iter().any(|m| m.id == id);
    match gait.modules.iter().find(|m| !has(m.id)) {
        None => Ok(()),
        Some(stray) => Err(LoadError::GaitDoesNotFit {
            module: stray.id,
            known: morphology
                .modules
                .iter()
                .map(|m| m.id.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_robot_directory_loads_its_world_and_gait() {
        let dir = std::env::temp_dir().join(format!("yamor-robot-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let example = ExampleRobot::named("snake").unwrap();
        let (morphology, gait) = (example.morphology().unwrap(), example.gait().unwrap());
        std::fs::write(dir.join("world.xml"), morphology.to_xml_string()).unwrap();
        std::fs::write(dir.join("gait.xml"), gait.to_xml_string()).unwrap();
        let (loaded, walked) = load(dir.to_str().unwrap(), None).unwrap();
        assert_eq!(loaded.modules.len(), morphology.modules.len());
        assert_eq!(walked, gait);
        // A gait for a module the world lacks is refused at load, by name.
        let mut stray = gait.clone();
        stray.modules[0].id = 99;
        std::fs::write(dir.join("gait.xml"), stray.to_xml_string()).unwrap();
        let error = load(dir.to_str().unwrap(), None).unwrap_err();
        assert!(
            matches!(error, LoadError::GaitDoesNotFit { module: 99, .. }),
            "{error}"
        );
        std::fs::write(dir.join("gait.xml"), gait.to_xml_string()).unwrap();
        std::fs::remove_file(dir.join("world.xml")).unwrap();
        let missing = load(dir.to_str().unwrap(), None).unwrap_err();
        assert!(matches!(missing, LoadError::NoWorld { .. }), "{missing}");
    }
}
