//! Where fio and nowait's fio engine are. fio: `$NOWAIT_FIO`, else `fio`
//! on `PATH`. The engine (`fio-nowait.so`): a path given by the caller
//! (`--engine`), else `$NOWAIT_FIO_ENGINE`, else beside the `nowait`
//! executable, else in `../lib/nowait/` from it, else the source tree's
//! build (`fio-engine/build/`). When none is there, the error says how to
//! build it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The engine's file name.
pub const ENGINE_FILE: &str = "fio-nowait.so";

/// How to build the engine, in the words of an error.
pub const BUILD_HINT: &str = "build it with `make -C fio-engine` in nowait's source tree \
     (fio-engine/README.md: it compiles against the source of the fio that loads it), \
     then pass --engine=PATH or set NOWAIT_FIO_ENGINE";

/// The fio to run: `$NOWAIT_FIO`, else `fio` (found on `PATH`).
pub fn fio_program() -> PathBuf {
    std::env::var_os("NOWAIT_FIO")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("fio"), PathBuf::from)
}

/// fio's version (`fio-3.33`), or why it cannot be run and how to install it.
pub fn fio_version() -> Result<String, String> {
    let fio = fio_program();
    match Command::new(&fio).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!(
            "`{} --version` failed ({}): {}",
            fio.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!(
            "cannot run {} ({e}); install fio (`apt-get install fio` on Debian/Ubuntu, \
             `dnf install fio` on Fedora) or set NOWAIT_FIO to its path",
            fio.display()
        )),
    }
}

/// The places the engine is looked for, in order, each with where the
/// path came from (for the error when none holds it).
/// `env`: the value of `NOWAIT_FIO_ENGINE`.
pub fn engine_candidates(
    given: Option<&Path>,
    env: Option<std::ffi::OsString>,
) -> Vec<(PathBuf, &'static str)> {
    if let Some(p) = given {
        return vec![(p.to_path_buf(), "--engine")];
    }
    if let Some(p) = env.filter(|v| !v.is_empty()) {
        return vec![(PathBuf::from(p), "NOWAIT_FIO_ENGINE")];
    }
    let mut v = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        v.push((dir.join(ENGINE_FILE), "beside the nowait executable"));
        v.push((
            dir.join("../lib/nowait").join(ENGINE_FILE),
            "in ../lib/nowait/ from the nowait executable",
        ));
    }
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fio-engine/build");
    v.push((
        tree.join(ENGINE_FILE),
        "the source tree's fio-engine/build/",
    ));
    v
}

/// The engine's path, or an error naming where it was looked for and how
/// to build it.
pub fn engine(given: Option<&Path>) -> Result<PathBuf, String> {
    let places = engine_candidates(given, std::env::var_os("NOWAIT_FIO_ENGINE"));
    if let Some((p, _)) = places.iter().find(|(p, _)| p.is_file()) {
        // fio resolves `external:` paths itself: hand it an absolute one.
        return Ok(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
    }
    let looked: Vec<String> = places
        .iter()
        .map(|(p, from)| format!("{} ({from})", p.display()))
        .collect();
    Err(format!(
        "nowait's fio engine ({ENGINE_FILE}) was not found; looked at {}; {BUILD_HINT}",
        looked.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_engine_is_the_only_place_looked() {
        let e = engine(Some(Path::new("/no/such/fio-nowait.so"))).unwrap_err();
        assert!(e.contains("/no/such/fio-nowait.so (--engine)"), "{e}");
        assert!(e.contains("make -C fio-engine"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let so = dir.path().join(ENGINE_FILE);
        std::fs::write(&so, b"").unwrap();
        assert_eq!(
            engine(Some(&so)).unwrap(),
            std::fs::canonicalize(&so).unwrap()
        );
    }

    #[test]
    fn the_search_ends_in_the_source_tree() {
        let places = engine_candidates(None, None);
        let last = &places.last().unwrap().0;
        assert!(last.ends_with("fio-engine/build/fio-nowait.so"), "{last:?}");
        let env = engine_candidates(None, Some("/e/fio-nowait.so".into()));
        assert_eq!(env, [("/e/fio-nowait.so".into(), "NOWAIT_FIO_ENGINE")]);
    }
}
