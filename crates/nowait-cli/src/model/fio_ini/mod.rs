//! fio's job-file syntax, read as fio's `__parse_jobs_ini` (`init.c`) reads
//! it, into an ordered list of jobs, each an ordered list of raw
//! `(option, value)` pairs with where each came from:
//!
//! - `[name]` starts a job; a section whose name starts with `global` holds
//!   options for every job after it (in this file and the files after it),
//!   wherever it appears; a job gets the global options seen before it,
//!   then its own.
//! - `key=value` or a bare `key`; the key ends at the first `=` (trailing
//!   blanks dropped), the value is everything after it, kept as written
//!   (fio reads `bs = 4k` as 4 bytes; the value parsers refuse it).
//! - A line whose first non-blank character is `;` or `#` is a comment; on
//!   any other line everything from the first `;`, then from the first `#`,
//!   is cut (so a value cannot contain either).
//! - `include FILE` inside a section adds FILE's lines to it (no sections
//!   allowed there; includes nest); a FILE that does not exist as given is
//!   looked up beside the including file.
//! - `${VAR}`, `$pagesize`, `$mb_memory`, `$ncpus` and their arithmetic
//!   ([`expand`]).
//! - `--section=NAME` (repeatable) keeps only those jobs (and every global
//!   section) of the first job file, as fio does; `--exclude-section` is
//!   nowait's own (fio has none) and drops jobs by name in every file.
//! - `-` reads the job file from standard input; a job file after the first
//!   starts with a `stonewall` (fio separates job files so).
//!
//! fio applies a section's options in its own priority order (`kb_base` and
//! `unit_base` first, `filename`/`filename_format` last), not in file order;
//! the option table does the same with [`Job::options`].

pub mod arith;
pub mod choice;
pub mod expand;
pub mod value;

use std::fmt;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use expand::SystemFacts;

/// Where a line came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pos {
    /// The job file as named (`-` is standard input), or the include file
    /// as resolved.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if &*self.file == "-" {
            "<stdin>"
        } else {
            &self.file
        };
        write!(f, "{name}:{}", self.line)
    }
}

/// One option as written, after substitution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOption {
    /// The option's name.
    pub name: String,
    /// The value after `=`, as written (leading blanks kept); `None` for a
    /// bare flag.
    pub value: Option<String>,
    /// Where it was written.
    pub at: Pos,
    /// Whether it came from a global section.
    pub global: bool,
}

/// One job: its section name and options (the globals before it, then its
/// own), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The section name.
    pub name: String,
    /// Where its section starts.
    pub at: Pos,
    /// Whether fio adds a `stonewall` to it: the first job of every job file
    /// after the first.
    pub file_stonewall: bool,
    /// Its options, globals first.
    pub options: Vec<RawOption>,
}

impl Job {
    /// The last value given for `name` (a later one overrides an earlier),
    /// with `Some(None)` for a bare flag.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.options
            .iter()
            .rev()
            .find(|o| o.name == name)
            .map(|o| o.value.as_deref())
    }
}

/// A job file that cannot be read: where, what was asked, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniError {
    /// Where, when a line is at fault.
    pub at: Option<Pos>,
    /// What is wrong and what to do.
    pub msg: String,
}

impl fmt::Display for IniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(p) => write!(f, "{p}: {}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for IniError {}

/// Where job files come from: the filesystem and standard input, or a map
/// in tests.
pub trait Loader {
    /// The text of `path` (`-`: standard input).
    fn read(&self, path: &str) -> std::io::Result<String>;
    /// Whether `path` exists (fio's `access(F_OK)`).
    fn exists(&self, path: &str) -> bool;
}

/// Job files from the filesystem; `-` from standard input.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsLoader;

impl Loader for FsLoader {
    fn read(&self, path: &str) -> std::io::Result<String> {
        if path == "-" {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            return Ok(s);
        }
        std::fs::read_to_string(path)
    }

    fn exists(&self, path: &str) -> bool {
        Path::new(path).exists()
    }
}

/// Which jobs to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `--section=NAME`: only these jobs of the first job file (empty: all).
    pub sections: Vec<String>,
    /// `--exclude-section=NAME`: not these, in any file.
    pub exclude: Vec<String>,
}

/// What substitution needs: the environment and the machine's facts.
pub struct Context<'a> {
    /// Where files come from.
    pub loader: &'a dyn Loader,
    /// An environment variable's value.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// `$pagesize`, `$mb_memory`, `$ncpus`.
    pub facts: SystemFacts,
}

/// fio reads lines with a buffer of this many bytes (`OPT_LEN_MAX`).
const LINE_MAX: usize = 8192;
/// The longest section name fio keeps.
const NAME_MAX: usize = 255;

fn is_comment_or_empty(line: &str) -> bool {
    for c in line.chars() {
        if c == ';' || c == '#' {
            return true;
        }
        if !c.is_whitespace() && !c.is_control() {
            return false;
        }
    }
    true
}

/// fio's `strip_blank_end`: cut at the first `;`, then at the first `#`,
/// then drop trailing blanks.
fn strip_end(s: &str) -> &str {
    let s = s.split(';').next().unwrap_or("");
    let s = s.split('#').next().unwrap_or("");
    s.trim_end_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// The lines of a job file that are not blank or comments, each with its
/// position, leading blanks dropped (fio's `is_empty_or_comment` and
/// `strip_blank_front`).
fn content_lines<'t>(text: &'t str, file: &Arc<str>) -> Result<Vec<(Pos, &'t str)>, IniError> {
    let mut out = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let pos = at(file, i + 1);
        if raw.len() >= LINE_MAX {
            return Err(IniError {
                at: Some(pos),
                msg: format!(
                    "a line of {} bytes; fio reads lines of at most {} bytes",
                    raw.len(),
                    LINE_MAX - 1
                ),
            });
        }
        if !is_comment_or_empty(raw) {
            out.push((pos, raw.trim_start()));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    ctx: &'a Context<'a>,
    globals: Vec<RawOption>,
    jobs: Vec<Job>,
    include_depth: usize,
}

fn at(file: &Arc<str>, line: usize) -> Pos {
    Pos {
        file: file.clone(),
        line,
    }
}

impl Parser<'_> {
    fn read(&self, path: &str, from: Option<&Pos>) -> Result<String, IniError> {
        let text = self.ctx.loader.read(path).map_err(|e| IniError {
            at: from.cloned(),
            msg: format!("cannot read job file `{path}`: {e}"),
        })?;
        Ok(text)
    }

    /// One option line (already cut at comments, not blank) of a section.
    fn option(&self, line: &str, pos: Pos, global: bool) -> Result<RawOption, IniError> {
        let line = expand::expand(line, self.ctx.var, &self.ctx.facts).map_err(|msg| IniError {
            at: Some(pos.clone()),
            msg,
        })?;
        let (name, value) = match line.split_once('=') {
            Some((k, v)) => (strip_end(k).to_string(), Some(v.to_string())),
            None => (line.trim_end().to_string(), None),
        };
        if name.is_empty() {
            return Err(IniError {
                at: Some(pos),
                msg: format!("`{line}` has no option name before `=`"),
            });
        }
        Ok(RawOption {
            name,
            value,
            at: pos,
            global,
        })
    }

    /// The lines of an included file, added to the current section.
    fn include(
        &mut self,
        spec: &str,
        including: &Arc<str>,
        pos: &Pos,
        out: &mut Vec<RawOption>,
        global: bool,
    ) -> Result<(), IniError> {
        self.include_depth += 1;
        if self.include_depth > 32 {
            return Err(IniError {
                at: Some(pos.clone()),
                msg: "includes nested more than 32 deep (an include loop?)".into(),
            });
        }
        // fio: a name that does not exist as given is looked up beside the
        // including file.
        let path: String = if !self.ctx.loader.exists(spec) {
            match including.rfind('/') {
                Some(i) => format!("{}{spec}", &including[..=i]),
                None => spec.to_string(),
            }
        } else {
            spec.to_string()
        };
        let text = self.read(&path, Some(pos))?;
        let file: Arc<str> = Arc::from(path.as_str());
        for (p, s) in content_lines(&text, &file)? {
            if s.starts_with('[') {
                return Err(IniError { at: Some(p), msg: "a section in an included file; fio allows options only (put the section in the including file)".into() });
            }
            self.line(strip_end(s), &file, p, out, global)?;
        }
        self.include_depth -= 1;
        Ok(())
    }

    /// One line of a section (cut at comments): `include FILE` or an option.
    fn line(
        &mut self,
        s: &str,
        file: &Arc<str>,
        pos: Pos,
        out: &mut Vec<RawOption>,
        global: bool,
    ) -> Result<(), IniError> {
        if let Some(rest) = s.strip_prefix("include") {
            // fio takes the name from the character after the one that
            // follows `include`.
            let spec = rest.get(1..).unwrap_or("");
            if spec.is_empty() {
                return Err(IniError {
                    at: Some(pos),
                    msg: "`include` without a file name".into(),
                });
            }
            return self.include(spec, file, &pos, out, global);
        }
        out.push(self.option(s, pos, global)?);
        Ok(())
    }

    fn file(&mut self, path: &str, first: bool, sel: &Selection) -> Result<(), IniError> {
        let text = self.read(path, None)?;
        let file: Arc<str> = Arc::from(path);
        let mut section: Option<(String, Pos, bool, Vec<RawOption>)> = None;
        let mut skipping = false;
        let mut stonewall = !first;
        for (pos, s) in content_lines(&text, &file)? {
            if s.starts_with('[') {
                self.finish(section.take(), &mut stonewall);
                let h = strip_end(s);
                let name = match h.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
                    Some(n) if !n.is_empty() && n.len() <= NAME_MAX => n.to_string(),
                    Some(n) if n.len() > NAME_MAX => {
                        return Err(IniError {
                            at: Some(pos),
                            msg: format!(
                                "a section name of {} bytes; fio keeps at most {NAME_MAX}",
                                n.len()
                            ),
                        })
                    }
                    _ => {
                        return Err(IniError {
                            at: Some(pos),
                            msg: format!("`{h}` is not a section header; write [name]"),
                        })
                    }
                };
                let global = name.starts_with("global");
                let keep = global
                    || ((!first || sel.sections.is_empty() || sel.sections.contains(&name))
                        && !sel.exclude.contains(&name));
                skipping = !keep;
                if keep {
                    section = Some((name, pos, global, Vec::new()));
                }
                continue;
            }
            let Some((_, _, global, opts)) = section.as_mut() else {
                if skipping {
                    continue;
                }
                return Err(IniError {
                    at: Some(pos),
                    msg: format!("option `{}` outside of a [] job section; start a section (e.g. [global]) above it", strip_end(s)),
                });
            };
            let global = *global;
            self.line(strip_end(s), &file, pos, opts, global)?;
        }
        self.finish(section.take(), &mut stonewall);
        Ok(())
    }

    fn finish(
        &mut self,
        section: Option<(String, Pos, bool, Vec<RawOption>)>,
        stonewall: &mut bool,
    ) {
        let Some((name, pos, global, opts)) = section else {
            return;
        };
        if global {
            self.globals.extend(opts);
            return;
        }
        let mut options = self.globals.clone();
        options.extend(opts);
        self.jobs.push(Job {
            name,
            at: pos,
            file_stonewall: std::mem::take(stonewall),
            options,
        });
    }
}

/// Read job files in order (`-` is standard input) into their jobs.
pub fn parse_job_files(
    paths: &[&str],
    sel: &Selection,
    ctx: &Context<'_>,
) -> Result<Vec<Job>, IniError> {
    if paths.iter().filter(|p| **p == "-").count() > 1 {
        return Err(IniError {
            at: None,
            msg: "standard input (`-`) named as a job file more than once".into(),
        });
    }
    if sel.sections.iter().any(|s| s == "global") {
        return Err(IniError { at: None, msg: "--section=global: a global section cannot be the only section (fio refuses it too); name a job".into() });
    }
    let mut p = Parser {
        ctx,
        globals: Vec::new(),
        jobs: Vec::new(),
        include_depth: 0,
    };
    for (i, path) in paths.iter().enumerate() {
        p.file(path, i == 0, sel)?;
    }
    Ok(p.jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Files(HashMap<&'static str, &'static str>);

    impl Loader for Files {
        fn read(&self, path: &str) -> std::io::Result<String> {
            self.0
                .get(path)
                .map(|s| s.to_string())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }
        fn exists(&self, path: &str) -> bool {
            self.0.contains_key(path)
        }
    }

    fn env(n: &str) -> Option<String> {
        (n == "QD").then(|| "32".to_string())
    }

    const FACTS: SystemFacts = SystemFacts {
        pagesize: 4096,
        mb_memory: 1024,
        ncpus: 2,
    };

    fn parse(
        files: &[(&'static str, &'static str)],
        paths: &[&str],
        sel: &Selection,
    ) -> Result<Vec<Job>, IniError> {
        let loader = Files(files.iter().copied().collect());
        let ctx = Context {
            loader: &loader,
            var: &env,
            facts: FACTS,
        };
        parse_job_files(paths, sel, &ctx)
    }

    fn pairs(j: &Job) -> Vec<(String, Option<String>)> {
        j.options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect()
    }

    fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.into(), v.map(Into::into))
    }

    #[test]
    fn globals_apply_to_the_jobs_after_them() {
        let f = "; a comment\n[global]\nbs=4k\n[a]\nrw=read\n[global]\nbs=8k ; inline comment\n# another\n[b]\nnorandommap\n";
        let jobs = parse(&[("j.fio", f)], &["j.fio"], &Selection::default()).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            pairs(&jobs[0]),
            vec![kv("bs", Some("4k")), kv("rw", Some("read"))]
        );
        assert_eq!(
            pairs(&jobs[1]),
            vec![
                kv("bs", Some("4k")),
                kv("bs", Some("8k")),
                kv("norandommap", None)
            ]
        );
        assert_eq!(jobs[1].get("bs"), Some(Some("8k")));
        assert_eq!(jobs[1].options[1].at.to_string(), "j.fio:7");
        assert!(!jobs[0].file_stonewall);
    }

    #[test]
    fn inline_comments_are_cut_as_fio_cuts_them() {
        let f = "[a]\nfilename=/tmp/x#y\nsize=1g # the size\nbs = 4k\ndescription=a;b\n";
        let jobs = parse(&[("j", f)], &["j"], &Selection::default()).unwrap();
        assert_eq!(
            pairs(&jobs[0]),
            vec![
                kv("filename", Some("/tmp/x")),
                kv("size", Some("1g")),
                kv("bs", Some(" 4k")),
                kv("description", Some("a"))
            ]
        );
    }

    #[test]
    fn environment_and_reserved_words_are_substituted() {
        let f = "[buf-test]\niodepth=${QD}\nnumjobs=$ncpus\nsize=$mb_memory/2\nx=${NOPE}\n";
        let jobs = parse(&[("j", f)], &["j"], &Selection::default()).unwrap();
        assert_eq!(jobs[0].get("iodepth"), Some(Some("32")));
        assert_eq!(jobs[0].get("numjobs"), Some(Some("2")));
        assert_eq!(jobs[0].get("size"), Some(Some("512")));
        assert_eq!(jobs[0].get("x"), Some(Some("")));
    }

    #[test]
    fn includes_resolve_beside_the_including_file_and_nest() {
        let files = [
            (
                "dir/main.fio",
                "[global]\ninclude glob.fio\n[t]\nrw=randread\ninclude sub/t.fio\n",
            ),
            ("dir/glob.fio", "thread=1\n; c\n"),
            ("dir/sub/t.fio", "ioengine=psync\ninclude more.fio\n"),
            ("dir/sub/more.fio", "iodepth=4\n"),
            ("dir/bad.fio", "[x]\n"),
            ("dir/inc_bad.fio", "[t]\ninclude bad.fio\n"),
        ];
        let jobs = parse(&files, &["dir/main.fio"], &Selection::default()).unwrap();
        assert_eq!(
            pairs(&jobs[0]),
            vec![
                kv("thread", Some("1")),
                kv("rw", Some("randread")),
                kv("ioengine", Some("psync")),
                kv("iodepth", Some("4"))
            ]
        );
        assert_eq!(jobs[0].options[3].at.to_string(), "dir/sub/more.fio:1");
        let e = parse(&files, &["dir/inc_bad.fio"], &Selection::default()).unwrap_err();
        assert_eq!(e.at.unwrap().to_string(), "dir/bad.fio:1");
        let e = parse(
            &[("j", "[t]\ninclude nope.fio\n")],
            &["j"],
            &Selection::default(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("j:2: cannot read job file `nope.fio`"),
            "{e}"
        );
    }

    #[test]
    fn sections_are_selected_in_the_first_file_only() {
        let a = "[global]\nbs=4k\n[x]\nrw=read\n[y]\nrw=randread\n";
        let b = "[x]\nrw=read\n[z]\nrw=read\n";
        let sel = Selection {
            sections: vec!["y".into()],
            exclude: vec![],
        };
        let jobs = parse(&[("a", a), ("b", b)], &["a", "b"], &sel).unwrap();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["y", "x", "z"]);
        assert_eq!(
            jobs[0].get("bs"),
            Some(Some("4k")),
            "globals are never skipped"
        );
        assert!(
            jobs[1].file_stonewall && !jobs[2].file_stonewall,
            "a later file starts with a stonewall"
        );
        let sel = Selection {
            sections: vec![],
            exclude: vec!["x".into()],
        };
        let names: Vec<String> = parse(&[("a", a), ("b", b)], &["a", "b"], &sel)
            .unwrap()
            .into_iter()
            .map(|j| j.name)
            .collect();
        assert_eq!(names, ["y", "z"]);
        assert!(parse(
            &[("a", a)],
            &["a"],
            &Selection {
                sections: vec!["global".into()],
                exclude: vec![]
            }
        )
        .is_err());
    }

    #[test]
    fn errors_say_where_and_what_to_do() {
        let e = parse(&[("j", "bs=4k\n[a]\n")], &["j"], &Selection::default()).unwrap_err();
        assert_eq!(e.to_string(), "j:1: option `bs=4k` outside of a [] job section; start a section (e.g. [global]) above it");
        let e = parse(&[("j", "[a\n")], &["j"], &Selection::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("j:1: `[a` is not a section header"),
            "{e}"
        );
        let e = parse(&[], &["missing.fio"], &Selection::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read job file `missing.fio`"),
            "{e}"
        );
        assert!(parse(&[("j", "[a]\n=4\n")], &["j"], &Selection::default()).is_err());
    }
}
