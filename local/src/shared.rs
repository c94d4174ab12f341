//! The one database every `yamor run` records into by default
//! (`$YAMOR_RUNS/yamor.db`), so that runs accumulate with their own ids and
//! names and a dashboard can compare them. Each `yamor run` brings its own
//! hosts, so one process at a time holds the database ([`Claim`]); a run
//! that finds it held records into its own directory instead.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use yamor_organizer::Store;
use yamor_organizer::store::Write;

use crate::LocalError;

/// The database `yamor run` records into unless told otherwise.
#[must_use]
pub fn shared_database() -> PathBuf {
    crate::report::runs_home().join("yamor.db")
}

/// This process's hold on a database: an exclusive lock on `DB.lock`
/// beside it, released when dropped (or when the process ends, however).
/// A lock file rather than the database itself: closing any descriptor of
/// the database would drop SQLite's own POSIX locks on it.
#[derive(Debug)]
pub struct Claim {
    _lock: File,
    pub path: PathBuf,
}

impl Claim {
    /// Holds `db` for this process; `None` while another process holds it.
    pub fn try_hold(db: &Path) -> Result<Option<Claim>, LocalError> {
        let path = lock_path(db);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(LocalError::writing(dir))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(LocalError::writing(&path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Claim {
                _lock: file,
                path: db.to_owned(),
            })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(LocalError::writing(&path)(e)),
        }
    }
}

fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_owned();
    name.push(".lock");
    db.with_file_name(name)
}

/// Ends what an earlier process left running in the database `db` holds
/// (see [`Write::EndOrphans`]): its runs cannot resume on this process's
/// hosts, which may walk another robot.
pub async fn end_orphans(claim: &Claim) -> Result<(), LocalError> {
    let path = claim.path.clone();
    let store = tokio::task::spawn_blocking(move || Store::open(&path))
        .await
        .map_err(|e| LocalError::Problem(format!("opening the database: {e}")))??;
    store
        .commit(Write::EndOrphans {
            error: "interrupted: the yamor run that ran it ended first".into(),
            finished_ms: yamor_organizer::now_ms(),
        })
        .await?;
    store.close().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_holds_a_database_at_a_time() {
        let dir = std::env::temp_dir().join(format!("yamor-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = dir.join("yamor.db");
        let first = Claim::try_hold(&db).unwrap().expect("free");
        // A second hold (another descriptor, as another process has) waits.
        assert!(Claim::try_hold(&db).unwrap().is_none());
        drop(first);
        assert!(Claim::try_hold(&db).unwrap().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
