//! From words to settings: an option looked up by name or alias (an
//! unknown one is an error with the closest names), each `name=value`
//! checked against the table as a [`Setting`] that remembers where it came
//! from (`--bs=4k`), and `bench`'s command line lexed into settings.

use std::ffi::{OsStr, OsString};

use crate::base::args::lex;
use crate::model::defs::all;
use crate::model::job::{Job, Settings};
use crate::model::opt::Opt;

/// Look an option up by name or alias.
pub fn find(name: &str) -> Option<&'static Opt> {
    all().find(|o| o.name == name || o.aliases.contains(&name))
}

/// An option that does not exist, with the closest names as a hint.
pub fn unknown(name: &str) -> String {
    let mut near: Vec<&str> = all()
        .map(|o| o.name)
        .filter(|n| n.contains(name) || name.contains(n) || edit_distance(n, name) <= 2)
        .collect();
    near.truncate(3);
    let hint = if near.is_empty() {
        "see `nowait bench --help` for the supported options".to_string()
    } else {
        format!("did you mean {}?", near.join(", "))
    };
    format!("unknown or unsupported option '{name}' (nowait never ignores an option): {hint}")
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// One `name=value` setting, with where it came from for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Canonical option name.
    pub name: &'static str,
    /// Raw value (may be a comma list for sweep options; any bytes for paths).
    pub value: OsString,
    /// `--bs=4k` — shown in errors.
    pub origin: String,
}

impl Setting {
    /// The elements of the value: one, or each of a sweep's comma list.
    pub fn values(&self, opt: &Opt) -> Vec<OsString> {
        match (opt.sweep, self.value.to_str()) {
            (true, Some(v)) => v.split(',').map(|x| x.trim().into()).collect(),
            _ => vec![self.value.clone()],
        }
    }

    /// An error of the value `v` of this setting, naming where it came from.
    pub fn err(&self, opt: &Opt, v: &OsStr, e: String) -> String {
        format!("{}: {}={}: {e}", self.origin, opt.name, v.to_string_lossy())
    }
}

/// Check a name and value against the table, returning the setting.
/// Each element of a sweep list is validated here so errors come early.
pub fn setting(name: &str, value: impl Into<OsString>, origin: String) -> Result<Setting, String> {
    let opt = find(name).ok_or_else(|| format!("{origin}: {}", unknown(name)))?;
    let s = Setting {
        name: opt.name,
        value: value.into(),
        origin,
    };
    for v in s.values(opt) {
        opt.apply
            .to(&mut Job::default(), &mut Settings::default(), &v)
            .map_err(|e| s.err(opt, &v, e))?;
    }
    Ok(s)
}

/// Parse the command line of `bench` (everything after `bench`). Returns
/// the settings and whether help was asked for. Job files are fio's: a
/// path given here is an error that says to run it with `nowait fio`.
pub fn parse_args(args: &[OsString]) -> Result<(Vec<Setting>, bool), String> {
    let lexed = lex(args, |name| match find(name) {
        Some(o) => Ok((!o.arg.is_empty()).then_some(o.arg)),
        None => Err(unknown(name)),
    })?;
    let mut settings = Vec::new();
    for (name, value) in lexed.opts {
        let canonical = find(&name).expect("lexed names are known").name;
        settings.push(setting(&name, value, format!("--{canonical}"))?);
    }
    let help = lexed.help || lexed.positional.iter().any(|p| p == "help");
    if let Some(p) = lexed.positional.iter().find(|p| *p != "help") {
        return Err(format!(
            "'{}': bench takes options only; job files run in fio with nowait's engine: \
             nowait fio {}",
            p.to_string_lossy(),
            p.to_string_lossy()
        ));
    }
    Ok((settings, help))
}
