//! What an option is: its names, the help it shows, what it sets and how
//! its value is parsed ([`Opt`], [`Apply`]). Every option is one entry of
//! the tables in `defs/`.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::model::job::{Job, Settings};

/// What an option sets.
#[derive(Clone, Copy)]
pub enum Apply {
    /// A job option.
    Job(fn(&mut Job, &str) -> Result<(), String>),
    /// A job option that is a path (any bytes, UTF-8 or not).
    JobPath(fn(&mut Job, PathBuf) -> Result<(), String>),
    /// An invocation setting (command line only).
    Run(fn(&mut Settings, &str) -> Result<(), String>),
    /// An invocation setting that is a path.
    RunPath(fn(&mut Settings, PathBuf) -> Result<(), String>),
}

impl Apply {
    /// Apply `v` to the job or the settings.
    pub fn to(self, job: &mut Job, run: &mut Settings, v: &OsStr) -> Result<(), String> {
        let text = || {
            v.to_str()
                .ok_or_else(|| format!("'{}' is not valid UTF-8", v.to_string_lossy()))
        };
        match self {
            // Leading blanks stay: fio reads `bs= 4k` as 4 bytes, which
            // the value parsers refuse instead of misreading.
            Apply::Job(f) => f(job, text()?.trim_end()),
            Apply::Run(f) => f(run, text()?.trim()),
            Apply::JobPath(f) => f(job, nonempty_path(v)?),
            Apply::RunPath(f) => f(run, nonempty_path(v)?),
        }
    }
}

fn nonempty_path(v: &OsStr) -> Result<PathBuf, String> {
    if v.is_empty() {
        Err("needs a value".into())
    } else {
        Ok(PathBuf::from(v))
    }
}

/// One option: its fio name and aliases, what it takes, its help, how it
/// is parsed, and (in tests) an example value and what it must set.
pub struct Opt {
    /// fio's name (nowait's, for options fio does not have).
    pub name: &'static str,
    /// Other names that mean the same option: fio's other spellings, and
    /// names nowait used before.
    pub aliases: &'static [&'static str],
    /// What the value looks like in help (`INT`, `SIZE`, …; `""` for a flag,
    /// which may be given bare, meaning `1`, or with a boolean).
    pub arg: &'static str,
    /// Default, as shown in help.
    pub default: &'static str,
    /// One-paragraph help.
    pub help: &'static str,
    /// Accepts a comma list that `bench` sweeps over.
    pub sweep: bool,
    /// The parser.
    pub apply: Apply,
    /// A value, and what it must set: checked for every option, given as
    /// `--name=value` and as `--name value`.
    #[cfg(test)]
    pub example: Example,
}

/// An option's example value and the check of what it set.
#[cfg(test)]
#[derive(Clone, Copy)]
pub enum Example {
    /// A job option's value and what it makes of the job.
    Job(&'static str, fn(&Job) -> bool),
    /// An invocation setting's value and what it makes of the settings.
    Run(&'static str, fn(&Settings) -> bool),
}
