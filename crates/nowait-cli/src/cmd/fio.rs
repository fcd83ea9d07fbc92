//! `nowait fio`: fio job files run in fio itself, with nowait's engine.
//! Finds fio and the engine (`fio-nowait.so`), then runs fio with the
//! engine preloaded (`LD_PRELOAD`: it registers itself as `nowait`) and
//! `--ioengine=nowait` as the jobs' default, so a job that names no engine
//! and one that says `ioengine=nowait` both read through it; fio's job
//! language, options and reports are fio's own. With `--all-jobs`, jobs
//! that name another engine run on nowait's too: fio reads a copy of each
//! job file whose `ioengine=` lines say `nowait`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::base::failure::{stop_on_sigint, Failure};
use crate::fio::find::{engine, fio_program, fio_version};

const HELP: &str = "\
nowait fio — run fio job files in fio, with nowait's engine

USAGE:
    nowait fio [--engine=PATH] [--all-jobs] [FIO OPTIONS...] JOBFILE...

Runs fio with nowait's fio engine (fio-nowait.so) as the jobs' ioengine:
fio reads the job files (its whole job language), runs the jobs and
prints its own reports; each read goes through nowait's queue. Every
argument that is not one of the two below is handed to fio as given
(--output-format=json, --section=NAME, --minimal, ...). fio's exit status
is nowait fio's.

A job that names no ioengine runs on nowait's engine, and so does one that
says ioengine=nowait. The engine's options (fio --enghelp=external:PATH):
backend=auto|uring|aio|aio+pool|pool|sync, nowait_mode, cache, direct_auto,
pool_workers, nowait_stats.

OPTIONS:
  --engine=PATH   nowait's fio engine; else $NOWAIT_FIO_ENGINE, else
                  fio-nowait.so beside the nowait executable, else in
                  ../lib/nowait/ from it, else the source tree's
                  fio-engine/build/ (built by `make -C fio-engine`)
  --all-jobs      jobs that name another ioengine (psync, libaio, ...) run
                  on nowait's engine too: fio reads a copy of each job file
                  whose ioengine= lines say nowait
  -h, --help      this help

fio is $NOWAIT_FIO, else fio on PATH.

EXAMPLES:
    nowait fio seed.fio
    nowait fio --output-format=json job.fio
    QD=32 nowait fio --all-jobs /usr/share/doc/fio/examples/fio-rand-read.fio
";

/// Run `nowait fio` with the arguments after `fio`; returns the exit code.
pub fn run(args: &[OsString]) -> i32 {
    match main(args) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("nowait fio: {}", f.message());
            f.exit_code()
        }
    }
}

/// What `nowait fio` takes for itself; the rest is fio's.
#[derive(Debug, Default, PartialEq)]
struct Args {
    engine: Option<PathBuf>,
    all_jobs: bool,
    help: bool,
    fio: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, Failure> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let b = arg.as_bytes();
        if b == b"--engine" {
            let v = it
                .next()
                .ok_or_else(|| Failure::Usage("--engine: needs a value (--engine=PATH)".into()))?;
            a.engine = Some(PathBuf::from(v));
        } else if let Some(v) = b.strip_prefix(b"--engine=") {
            if v.is_empty() {
                return Err(Failure::Usage(
                    "--engine: needs a value (--engine=PATH)".into(),
                ));
            }
            a.engine = Some(PathBuf::from(OsStr::from_bytes(v)));
        } else if b == b"--all-jobs" {
            a.all_jobs = true;
        } else if b == b"-h" || b == b"--help" {
            a.help = true;
        } else {
            a.fio.push(arg.clone());
        }
    }
    Ok(a)
}

fn main(args: &[OsString]) -> Result<i32, Failure> {
    let a = parse(args)?;
    if a.help {
        print!("{HELP}");
        return Ok(0);
    }
    if a.fio.is_empty() {
        return Err(Failure::Usage(
            "give a job file to run (nowait fio JOBFILE; see nowait fio --help)".into(),
        ));
    }
    fio_version().map_err(Failure::Unavailable)?;
    let so = engine(a.engine.as_deref()).map_err(Failure::Unavailable)?;
    let scratch = tempfile::tempdir()
        .map_err(|e| Failure::Runtime(format!("cannot make a directory for job files: {e}")))?;
    let mut fio_args: Vec<OsString> = vec!["--ioengine=nowait".into()];
    for (i, arg) in a.fio.iter().enumerate() {
        let p = Path::new(arg);
        if a.all_jobs && !arg.as_bytes().starts_with(b"-") && p.is_file() {
            let copy = scratch.path().join(format!("{i}.fio"));
            let text = std::fs::read(p).map_err(|e| {
                Failure::Runtime(format!("{}: cannot read the job file: {e}", p.display()))
            })?;
            std::fs::write(&copy, with_engine(&text, "nowait", p)).map_err(|e| {
                Failure::Runtime(format!("{}: cannot write a copy: {e}", copy.display()))
            })?;
            fio_args.push(copy.into_os_string());
        } else {
            fio_args.push(arg.clone());
        }
    }
    let mut preload = OsString::from(&so);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    // fio gets Ctrl-C too (the same process group); wait for its report.
    stop_on_sigint()?;
    let status = Command::new(fio_program())
        .args(&fio_args)
        .env("LD_PRELOAD", preload)
        .status()
        .map_err(|e| Failure::Runtime(format!("cannot run {}: {e}", fio_program().display())))?;
    Ok(status.code().unwrap_or(1))
}

/// A job file's text with every `ioengine=` line naming `engine`, and
/// every relative `include` naming the file beside `original` (fio looks
/// for an include beside the job file that includes it).
fn with_engine(text: &[u8], engine: &str, original: &Path) -> Vec<u8> {
    let dir = original.parent().unwrap_or(Path::new("."));
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        let t = line.trim_ascii();
        let key_end = t.iter().position(|&b| b == b'=').unwrap_or(t.len());
        let key = t[..key_end].trim_ascii();
        if key.eq_ignore_ascii_case(b"ioengine") && key_end < t.len() {
            out.extend_from_slice(format!("ioengine={engine}\n").as_bytes());
        } else if let Some(name) = t.strip_prefix(b"include ") {
            let name = Path::new(OsStr::from_bytes(name.trim_ascii()));
            let beside = dir.join(name);
            if name.is_relative() && !name.exists() && beside.exists() {
                out.extend_from_slice(b"include ");
                out.extend_from_slice(beside.as_os_str().as_bytes());
                out.push(b'\n');
            } else {
                out.extend_from_slice(line);
            }
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::args::words;

    #[test]
    fn nowaits_options_are_taken_and_the_rest_is_fios() {
        let a = parse(&words(
            "--output-format=json --engine /x.so a.fio --all-jobs --section=b",
        ))
        .unwrap();
        assert_eq!(a.engine.as_deref(), Some(Path::new("/x.so")));
        assert!(a.all_jobs && !a.help);
        assert_eq!(a.fio, words("--output-format=json a.fio --section=b"));
        assert!(parse(&words("--engine")).is_err());
    }

    #[test]
    fn ioengine_lines_name_nowaits_engine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inc.fio"), "bs=8k\n").unwrap();
        let job = dir.path().join("job.fio");
        let text =
            b"[global]\nioengine = libaio\nioengine_x=1\ninclude inc.fio\n[a]\nrw=randread\n";
        let got = String::from_utf8(with_engine(text, "nowait", &job)).unwrap();
        assert_eq!(
            got,
            format!(
                "[global]\nioengine=nowait\nioengine_x=1\ninclude {}\n[a]\nrw=randread\n",
                dir.path().join("inc.fio").display()
            )
        );
    }
}
