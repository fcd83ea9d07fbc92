//! The options of `nowait bench`, one table per topic (`model/defs/`):
//! each option once, with its fio name and aliases, what its value looks
//! like, its default, its help, its parser and an example it is tested
//! with. The same tables serve the command line (`--name=value`, `--name
//! value`), fio job files (`name=value`) and the help text, so adding an
//! option is one entry (and its field in `Job` or `Settings`).
//!
//! Values are read as fio reads them (`model/fio_ini/value.rs`): sizes with
//! the job's `kb_base`, times in the option's own unit, booleans as fio's
//! integers. Options that take comma lists (`--iodepth 1,2,4 --ioengine
//! uring,sync`) are marked `sweep` (`sweep!`); `model/sweep.rs` runs the
//! jobs once for each combination. fio options nowait refuses are named in
//! `defs/refused.rs`, each with the reason.

use crate::model::opt::{Apply, Opt};

/// A table entry: `job!("name" | "alias", ARG, default, help, |j, v| j.x =
/// parse(v)?, example: "value" => |j| j.x == …)`, whose body stores the
/// value `v` in the job `j` (or, with `run!`, the settings `s`), with `?`
/// for a bad value, and whose example is checked in tests; `sweep!` takes
/// a comma list, `job_path!`/`run_path!` a path (any bytes).
macro_rules! entry {
    ($kind:ident, $example:ident, $sweep:expr, $name:literal $(| $alias:literal)*, $arg:expr,
     $default:expr, $help:expr, |$x:ident, $v:ident| $body:expr,
     example: $value:literal => |$c:ident| $check:expr) => {
        Opt {
            name: $name,
            aliases: &[$($alias),*],
            arg: $arg,
            default: $default,
            help: $help,
            sweep: $sweep,
            apply: Apply::$kind(|$x, $v| {
                $body;
                Ok(())
            }),
            #[cfg(test)]
            example: Example::$example($value, |$c| $check),
        }
    };
}
macro_rules! job {
    ($($t:tt)*) => { entry!(Job, Job, false, $($t)*) };
}
macro_rules! sweep {
    ($($t:tt)*) => { entry!(Job, Job, true, $($t)*) };
}
macro_rules! job_path {
    ($($t:tt)*) => { entry!(JobPath, Job, false, $($t)*) };
}
macro_rules! run {
    ($($t:tt)*) => { entry!(Run, Run, false, $($t)*) };
}
macro_rules! run_path {
    ($($t:tt)*) => { entry!(RunPath, Run, false, $($t)*) };
}

mod engine;
mod files;
mod output;
mod pacing;
mod reads;
pub mod refused;
mod run;
mod schedule;

/// The tables, in help order.
static TABLES: &[&[Opt]] = &[
    schedule::OPTIONS,
    files::OPTIONS,
    reads::OPTIONS,
    pacing::OPTIONS,
    engine::OPTIONS,
    run::OPTIONS,
    output::OPTIONS,
];

/// Every option of `nowait bench`, in help order.
pub fn all() -> impl Iterator<Item = &'static Opt> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// fio applies a job's options in its own order, not as written: `kb_base`
/// and `unit_base` first (the sizes after them depend on it), `filename`
/// and `filename_format` last (they come after `directory`). Higher first.
pub fn priority(name: &str) -> i8 {
    match name {
        "kb_base" | "unit_base" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name and alias belongs to one option.
    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for o in all() {
            for n in std::iter::once(&o.name).chain(o.aliases) {
                assert!(seen.insert(*n), "{n} twice");
                assert!(refused::reason(n).is_none(), "{n} is refused and an option");
            }
        }
    }
}
