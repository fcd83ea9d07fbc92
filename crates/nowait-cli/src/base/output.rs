//! Where a report goes: `--output FILE` or standard output, and the files
//! a run will write, opened before anything runs.

use crate::base::failure::Failure;

/// Write a report to `--output` or standard output.
pub fn emit(text: &str, output: Option<&std::path::Path>) -> Result<(), Failure> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| Failure::Runtime(format!("--output={}: cannot write: {e}", p.display()))),
        None => {
            use std::io::Write;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// Files the run will write (`--output`), opened before anything
/// runs, as fio opens its output at start: an unwritable destination is an
/// error before the benchmark, not after it. Files this check created are
/// removed again if the run fails ([`Dests::discard`]).
#[derive(Debug, Default)]
pub struct Dests(Vec<std::path::PathBuf>);

impl Dests {
    /// Open (creating if need be, truncating nothing) each `(flag, path)`.
    pub fn open(dests: &[(&str, Option<&std::path::Path>)]) -> Result<Dests, Failure> {
        let mut created = Dests::default();
        for (flag, path) in dests {
            let Some(p) = path else { continue };
            let existed = p.exists();
            let r = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(p);
            if let Err(e) = r {
                created.discard();
                return Err(Failure::Usage(format!(
                    "{flag}={}: cannot open it for writing: {e}; nothing was run: give a \
                     path in an existing directory you can write to",
                    p.display()
                )));
            }
            if !existed {
                created.0.push(p.to_path_buf());
            }
        }
        Ok(created)
    }

    /// Remove the files [`Dests::open`] created (the run failed).
    pub fn discard(&self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}
