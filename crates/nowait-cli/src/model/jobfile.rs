//! fio job files: INI text with a `[global]` section and one section per
//! job. Every key is checked against the options table (`model/defs.rs`),
//! so an option nowait does not support is an error naming the file, line
//! and option — never silently ignored. A key without a value
//! (`norandommap`, `time_based`) means `1`, as in fio.
//!
//! Job sections run one after another (as if each had fio's `stonewall`);
//! `numjobs` is how to run threads side by side.

use std::path::Path;

use crate::model::parse::{self, Setting};

/// One job section: its name and settings (global ones first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The section name, used as the job name.
    pub name: String,
    /// `[global]` settings followed by the section's own.
    pub settings: Vec<Setting>,
}

/// fio keys that only steer fio's own bookkeeping and change nothing nowait
/// measures; accepted so existing job files run. Everything else unknown is
/// an error.
/// (`group_reporting` and `thread` are options of the table, for the
/// command line too.)
const HARMLESS: &[&str] = &["stonewall", "wait_for_previous"];

/// Read and parse a job file.
pub fn load(path: &Path) -> Result<Vec<Section>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read job file {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parse job-file text; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Section>, String> {
    let mut global: Vec<Setting> = Vec::new();
    let mut sections: Vec<Section> = Vec::new();
    let mut current: Option<usize> = None; // None = before any section or in [global]
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("{origin}:{lineno}: section header '{line}' lacks ']'"))?
                .trim();
            if name.is_empty() {
                return Err(format!("{origin}:{lineno}: empty section name"));
            }
            if name == "global" {
                current = None;
            } else {
                sections.push(Section {
                    name: name.to_string(),
                    settings: global.clone(),
                });
                current = Some(sections.len() - 1);
            }
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line, "1"),
        };
        if HARMLESS.contains(&key) {
            continue;
        }
        if value.contains("${") {
            return Err(format!(
                "{origin}:{lineno}: {key}={value}: environment substitution is not supported; \
                 write the value, or override it on the command line (--{key}=...)"
            ));
        }
        let opt = parse::find(key)
            .ok_or_else(|| format!("{origin}:{lineno}: {}", parse::unknown(key)))?;
        if opt.apply.is_run() {
            return Err(format!(
                "{origin}:{lineno}: {key} is a command-line setting, not a job option; \
                 pass --{key} on the command line"
            ));
        }
        let s = parse::setting(key, value, format!("{origin}:{lineno}"))?;
        match current {
            Some(c) => sections[c].settings.push(s),
            // Before any section header fio treats keys as global.
            None => global.push(s),
        }
    }
    if sections.is_empty() {
        return Err(format!(
            "{origin}: no job section; add one such as [job1] after [global]"
        ));
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::{Job, Rw};
    use crate::model::sweep::expand;

    const SEED_JOB: &str = "\
; the seed's buffered QD sweep job
[global]
ioengine=io_uring
direct=0
bs=4k

[buf-test]
filename=/data/file
norandommap
rw=randread
iodepth=16
randseed=89
runtime=10s
";

    #[test]
    fn parses_global_and_job_sections() {
        let secs = parse(SEED_JOB, "seed.fio").unwrap();
        assert_eq!(secs.len(), 1);
        assert_eq!(secs[0].name, "buf-test");
        let (jobs, _) = expand(&secs[0].settings, &Job::default()).unwrap();
        let j = &jobs[0];
        assert_eq!(j.ioengine, nowait::BackendKind::Uring);
        assert!(j.norandommap && !j.direct);
        assert_eq!(
            (j.rw, j.bs, j.iodepth, j.randseed),
            (Rw::RandRead, 4096, 16, 89)
        );
        assert_eq!(j.runtime, Some(std::time::Duration::from_secs(10)));
    }

    #[test]
    fn unknown_key_names_file_line_and_option() {
        let e = parse("[a]\nfilename=/x\nrwmixread=70\n", "j.fio").unwrap_err();
        assert!(e.contains("j.fio:3") && e.contains("rwmixread"), "{e}");
    }

    #[test]
    fn bad_value_names_file_line_and_option() {
        let e = parse("[a]\niodepth=0\n", "j.fio").unwrap_err();
        assert!(e.contains("j.fio:2") && e.contains("iodepth"), "{e}");
    }

    #[test]
    fn several_sections_each_get_global() {
        let secs = parse("[global]\nbs=8k\n[a]\nrw=read\n[b]\nbs=16k\n", "j").unwrap();
        let b = expand(&secs[1].settings, &Job::default()).unwrap().0;
        let a = expand(&secs[0].settings, &Job::default()).unwrap().0;
        assert_eq!((a[0].bs, b[0].bs), (8192, 16384));
    }

    #[test]
    fn group_reporting_and_thread_are_accepted_as_on_the_command_line() {
        let secs = parse("[global]\nthread\ngroup_reporting=1\n[a]\nnumjobs=2\n", "j").unwrap();
        let a = expand(&secs[0].settings, &Job::default()).unwrap().0;
        assert_eq!(a[0].numjobs, 2);
        assert!(parse("[a]\nthread=0\n", "j").unwrap_err().contains("j:2"));
    }

    #[test]
    fn file_without_jobs_is_an_error() {
        assert!(parse("[global]\nbs=4k\n", "j")
            .unwrap_err()
            .contains("no job section"));
    }
}
