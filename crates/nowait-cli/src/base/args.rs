//! The one argument lexer of every subcommand, over `lexopt`: long options
//! as `--name=value` or `--name value`, flags that take the next word only
//! when it is a boolean (`--verify 0`), `-h`/`--help`, and positional
//! arguments kept as `OsString` so any path works, UTF-8 or not; and the
//! scenarios' options read through it ([`scenario_options`]).

use std::ffi::{OsStr, OsString};

/// The lexed command line.
#[derive(Debug, Default)]
pub struct Lexed {
    /// `(name, value)` in order; a flag given bare has the value `1`.
    pub opts: Vec<(String, OsString)>,
    /// Positional arguments.
    pub positional: Vec<OsString>,
    /// `-h` or `--help` was given.
    pub help: bool,
}

/// Lex `args`. A flag takes the next word when it is a boolean or `auto`
/// (`--hipri auto`). `kind(name)` says whether an option is a flag
/// (`Ok(None)`), takes a value (`Ok(Some("SIZE"))`, its placeholder in the
/// message when it is missing) or does not exist (`Err(message)`), so an
/// unknown option is reported as such before anything else. Every error
/// names the argument.
pub fn lex(
    args: &[OsString],
    kind: impl Fn(&str) -> Result<Option<&'static str>, String>,
) -> Result<Lexed, String> {
    use lexopt::Arg;
    let mut p = lexopt::Parser::from_args(args.iter().cloned());
    let mut out = Lexed::default();
    loop {
        let arg = p.next().map_err(|e| e.to_string())?;
        match arg {
            None => return Ok(out),
            Some(Arg::Short('h')) | Some(Arg::Long("help")) => out.help = true,
            Some(Arg::Short(c)) => {
                return Err(format!("-{c}: unknown option (options are --name=value)"))
            }
            Some(Arg::Value(v)) => out.positional.push(v),
            Some(Arg::Long(name)) => {
                let name = name.to_string();
                let value = match kind(&name).map_err(|m| format!("--{name}: {m}"))? {
                    None => {
                        // `--flag=0`, `--flag 0`, or bare (1).
                        match p.optional_value() {
                            Some(v) => v,
                            None => {
                                let mut raw = p
                                    .try_raw_args()
                                    .ok_or_else(|| format!("--{name}: bad value"))?;
                                match raw.peek().and_then(|v| v.to_str()) {
                                    Some(v) if v == "auto" || bool_word(v).is_some() => {
                                        raw.next().unwrap_or_default()
                                    }
                                    _ => "1".into(),
                                }
                            }
                        }
                    }
                    Some(arg) => p
                        .value()
                        .map_err(|_| format!("--{name}: needs a value (--{name}={arg})"))?,
                };
                out.opts.push((name, value));
            }
        }
    }
}

/// A scenario's options through the one lexer: `set(name, raw value,
/// value as text)` for each, with `_` in names read as `-`; only the
/// `known` names (separated by spaces) are accepted, and the `flags` may be
/// given bare. Every error names the option (`--name=value: ` before what
/// `set` says).
pub fn scenario_options(
    args: &[OsString],
    known: &str,
    flags: &str,
    scenario: &str,
    mut set: impl FnMut(&str, &OsStr, &str) -> Result<(), String>,
) -> Result<(), String> {
    let norm = |n: &str| n.replace('_', "-");
    let lexed = lex(args, |n| {
        let n = norm(n);
        if known.split(' ').any(|k| k == n) {
            Ok((!flags.split(' ').any(|k| k == n)).then_some("VALUE"))
        } else {
            Err(format!(
                "unknown option for scenario {scenario}; it takes --{} (see `nowait scenario {scenario} --help`)",
                known.replace(' ', ", --")
            ))
        }
    })?;
    if let Some(p) = lexed.positional.first() {
        return Err(format!(
            "unexpected argument '{}'; see `nowait scenario {scenario} --help`",
            p.to_string_lossy()
        ));
    }
    for (n, raw) in lexed.opts {
        let (n, v) = (norm(&n), raw.to_string_lossy());
        set(&n, &raw, &v).map_err(|m| format!("--{n}={v}: {m}"))?;
    }
    Ok(())
}

/// The words a flag takes as its value: 1/0, true/false, yes/no, on/off
/// (any case, surrounding blanks ignored).
pub fn bool_word(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `s` split at whitespace, as a command line (for tests).
#[cfg(test)]
pub(crate) fn words(s: &str) -> Vec<OsString> {
    s.split_whitespace().map(OsString::from).collect()
}

#[cfg(test)]
mod tests {
    use super::{lex, words as os};
    use std::ffi::OsString;

    #[test]
    fn values_flags_and_positionals() {
        let kind = |n: &str| match n {
            "verify" | "time_based" => Ok(None),
            "bs" | "filename" => Ok(Some("SIZE")),
            _ => Err("unknown".to_string()),
        };
        let l = lex(
            &os("--bs=4k --verify 0 job.fio --time_based --filename /f -h"),
            kind,
        )
        .unwrap();
        let got: Vec<(String, String)> = l
            .opts
            .iter()
            .map(|(n, v)| (n.clone(), v.to_string_lossy().into_owned()))
            .collect();
        assert_eq!(
            got,
            [
                ("bs", "4k"),
                ("verify", "0"),
                ("time_based", "1"),
                ("filename", "/f")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(l.positional, os("job.fio"));
        assert!(l.help);
        assert!(lex(&os("--nope=1"), kind).unwrap_err().contains("--nope"));
        assert_eq!(
            lex(&os("--bs"), kind).unwrap_err(),
            "--bs: needs a value (--bs=SIZE)"
        );
    }

    #[test]
    fn non_utf8_paths_pass_through() {
        use std::os::unix::ffi::OsStringExt;
        let path = OsString::from_vec(b"/tmp/caf\xe9".to_vec());
        let mut a = os("--filename");
        a.push(path.clone());
        let l = lex(&a, |_| Ok(Some("PATH"))).unwrap();
        assert_eq!(l.opts[0].1, path);
    }
}
