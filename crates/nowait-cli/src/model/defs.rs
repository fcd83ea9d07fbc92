//! The options of `nowait bench`, one table: each option once, with its
//! fio name and aliases, what its value looks like, its default, its help,
//! its parser and an example it is tested with. The same table serves the
//! command line (`--name=value`, `--name value`) and the help text, so
//! adding an option is one entry (and its field in `Job` or `Settings`).
//!
//! The basic options carry fio's names and meanings (filename, size, rw,
//! bs, iodepth, direct, runtime, time_based, numjobs, ioengine, invalidate,
//! norandommap, randseed); job files are fio's to read (`nowait fio`).
//! Options that take comma lists (`--iodepth 1,2,4 --ioengine
//! uring,sync`) are marked `sweep` (`sweep!`); `model/sweep.rs` runs the
//! jobs once for each combination.

#[cfg(test)]
use std::time::Duration;

use nowait::{CachePolicy, NowaitMode, SubmitPolicy};

#[cfg(test)]
use crate::model::opt::Example;
use crate::model::opt::{Apply, Opt};
use crate::model::values::{
    in_range, nonempty, parse_bool, parse_count, parse_depth, parse_engine_mode, parse_in,
    parse_runtime, parse_size, parse_time, parse_u64,
};

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

/// The largest read (the engine's per-request limit).
const MAX_BS: u64 = nowait::MAX_READ as u64;

/// Every option of `nowait bench`, in help order.
pub fn all() -> impl Iterator<Item = &'static Opt> {
    OPTIONS.iter()
}

/// The options, in help order.
static OPTIONS: &[Opt] = &[
    job!(
        "name",
        "NAME",
        "nowait",
        "The job's name, shown in reports and fio's JSON (jobs[].jobname).",
        |j, v| j.name = nonempty(v)?.to_string(),
        example: "hot" => |j| j.name == "hot"
    ),
    job_path!(
        "filename",
        "PATH",
        "(required)",
        "The file to read. A missing file (or one shorter than --size) is laid out \
           with nowait's data pattern first, so --verify can check every byte.",
        |j, v| j.filename = Some(v),
        example: "/tmp/f" => |j| j.filename.as_deref() == Some(std::path::Path::new("/tmp/f"))
    ),
    job!(
        "size",
        "SIZE",
        "the file's size",
        "Bytes of the file the job reads (k, m, g, t in powers of 1024, as fio's \
           default kb_base); the size a missing file is laid out at.",
        |j, v| j.size = Some(in_range(parse_size(v)?, 1, u64::MAX)?),
        example: "1g" => |j| j.size == Some(1 << 30)
    ),
    sweep!(
        "rw" | "readwrite",
        "read|randread",
        "read",
        "Sequential (read) or random (randread) reads, block aligned. Writes and \
           trims are refused: nowait reads only.",
        |j, v| j.rw = match v.trim() {
            "read" => crate::model::job::Rw::Read,
            "randread" => crate::model::job::Rw::RandRead,
            other => return Err(format!("'{other}' is not read or randread; nowait reads only")),
        },
        example: "randread" => |j| j.rw == crate::model::job::Rw::RandRead
    ),
    sweep!(
        "bs" | "blocksize",
        "SIZE",
        "4k",
        "Block size of each read. With direct=1 it must be a multiple of the file's \
           O_DIRECT alignment (`nowait probe FILE` shows it).",
        |j, v| j.bs = in_range(parse_size(v)?, 1, MAX_BS)?,
        example: "8k" => |j| j.bs == 8192
    ),
    job!(
        "norandommap",
        "",
        "0",
        "Random offsets may repeat within a pass. Without it each block of the region \
           is read once per pass, in an order drawn from randseed.",
        |j, v| j.norandommap = parse_bool(v)?,
        example: "1" => |j| j.norandommap
    ),
    job!(
        "randseed",
        "INT",
        "0x89",
        "Seed of the random offsets (decimal or 0x hex): the same seed, the same reads.",
        |j, v| j.randseed = parse_u64(v)?,
        example: "0x10" => |j| j.randseed == 16
    ),
    sweep!(
        "ioengine",
        "ENGINE",
        "uring",
        "The library backend reads go through: uring (fio's name io_uring), aio \
           (libaio), pool (worker threads with the RWF_NOWAIT cache-first path; \
           pool:off|always|adaptive sets --nowait too), sync (pread on the reading \
           thread; psync), aio+pool (direct files on AIO, buffered ones on the pool). \
           fio's other engines are fio's: `nowait fio` runs job files in fio with \
           nowait's engine.",
        |j, v| {
            let (k, mode) = parse_engine_mode(v)?;
            j.ioengine = k;
            if mode.is_some() && v.contains(':') {
                j.nowait = mode;
            }
        },
        example: "pool:off" => |j| j.ioengine == nowait::BackendKind::Pool
            && j.nowait == Some(NowaitMode::Off)
    ),
    sweep!(
        "iodepth",
        "INT",
        "1",
        "Reads in flight per thread (sync reads one at a time whatever this says).",
        |j, v| j.iodepth = parse_depth(v)?,
        example: "16" => |j| j.iodepth == 16
    ),
    sweep!(
        "direct",
        "",
        "0",
        "1: open with O_DIRECT, bypassing the page cache (an error if the filesystem \
           refuses it); 0: buffered reads.",
        |j, v| j.direct = parse_bool(v)?,
        example: "1" => |j| j.direct
    ),
    job!(
        "runtime",
        "TIME",
        "until the region is read",
        "Stop after this long (seconds, or with us, ms, s, m, h).",
        |j, v| j.runtime = Some(parse_runtime(v)?),
        example: "250ms" => |j| j.runtime == Some(Duration::from_millis(250))
    ),
    job!(
        "time_based",
        "",
        "0",
        "Keep reading for the whole --runtime, passing over the region again and again.",
        |j, v| j.time_based = parse_bool(v)?,
        example: "1" => |j| j.time_based
    ),
    job!(
        "number_ios",
        "INT",
        "none",
        "Stop each thread after this many reads.",
        |j, v| j.number_ios = Some(in_range(parse_count(v)?, 1, u64::MAX)?),
        example: "500" => |j| j.number_ios == Some(500)
    ),
    job!(
        "ramp_time",
        "TIME",
        "0",
        "Read this long before measuring.",
        |j, v| j.ramp_time = parse_time(v)?,
        example: "1s" => |j| j.ramp_time == Duration::from_secs(1)
    ),
    job!(
        "numjobs",
        "INT",
        "1",
        "Threads reading the file side by side, each with its own queue; reported \
           together.",
        |j, v| j.numjobs = parse_in(v, 1, 1024)? as usize,
        example: "4" => |j| j.numjobs == 4
    ),
    job!(
        "invalidate",
        "",
        "1",
        "Drop the file's pages from the page cache before the run (0: keep what is \
           cached, for cached-read figures).",
        |j, v| j.invalidate = parse_bool(v)?,
        example: "0" => |j| !j.invalidate
    ),
    job!(
        "fadvise_hint",
        "",
        "1",
        "Tell the kernel the access pattern (POSIX_FADV_SEQUENTIAL or RANDOM) before the run.",
        |j, v| j.fadvise_hint = parse_bool(v)?,
        example: "0" => |j| !j.fadvise_hint
    ),
    job!(
        "iodepth_batch_submit" | "iodepth_batch",
        "INT",
        "1",
        "Submit once this many reads are queued: 1 hands each read to the kernel as \
           soon as its slot is free; 0 fills every free slot and submits them with one \
           system call (--peak's way).",
        |j, v| j.iodepth_batch_submit = parse_count(v)? as usize,
        example: "8" => |j| j.iodepth_batch_submit == 8
    ),
    job!(
        "iodepth_batch_complete_min" | "iodepth_batch_complete",
        "INT",
        "1",
        "Wait for at least this many completions each time (capped at the reads in flight).",
        |j, v| j.iodepth_batch_complete_min = parse_count(v)? as usize,
        example: "4" => |j| j.iodepth_batch_complete_min == 4
    ),
    job!(
        "verify",
        "",
        "0",
        "Check every byte read against nowait's data pattern (the file must have been \
           laid out by nowait).",
        |j, v| j.verify = parse_bool(v)?,
        example: "1" => |j| j.verify
    ),
    sweep!(
        "nowait",
        "off|always|adaptive",
        "adaptive",
        "ioengine=pool only: the RWF_NOWAIT cache-first path. off: every read goes to a \
           worker thread; always: each buffered read is tried inline with \
           preadv2(RWF_NOWAIT) first, only a miss goes to a worker; adaptive: tried \
           while the file's hit ratio stays high.",
        |j, v| j.nowait = Some(v.trim().parse::<NowaitMode>()?),
        example: "always" => |j| j.nowait == Some(NowaitMode::Always)
    ),
    job!(
        "pool_workers",
        "INT",
        "min(iodepth, max(4, 4 x CPUs))",
        "ioengine=pool only: worker threads.",
        |j, v| j.pool_workers = Some(parse_in(v, 1, 4096)? as usize),
        example: "8" => |j| j.pool_workers == Some(8)
    ),
    sweep!(
        "cache",
        "keep|drop|adaptive",
        "keep",
        "What buffered reads leave in the page cache. keep: what a read brings in \
           stays; drop: every read is uncached (RWF_DONTCACHE, fio's uncached=1); \
           adaptive: only scan reads of a file too large for the page cache go uncached. \
           No effect with direct=1.",
        |j, v| j.cache = v.trim().parse::<CachePolicy>()?,
        example: "adaptive" => |j| j.cache == CachePolicy::Adaptive
    ),
    job!(
        "sqthread_poll",
        "",
        "0",
        "ioengine=uring only: a kernel thread polls the submission queue (SQPOLL).",
        |j, v| j.sqthread_poll = parse_bool(v)?,
        example: "1" => |j| j.sqthread_poll
    ),
    job!(
        "sqthread_poll_idle",
        "TIME",
        "1s",
        "ioengine=uring with sqthread_poll: the polling thread sleeps after this long idle.",
        |j, v| j.sqthread_poll_idle = parse_time(v)?,
        example: "10ms" => |j| j.sqthread_poll_idle == Duration::from_millis(10)
    ),
    sweep!(
        "hipri",
        "",
        "0",
        "ioengine=uring only: polled completions (IOPOLL) for direct reads. 1: every \
           direct read, an error where the device does not poll; auto: where the \
           device's queue polls.",
        |j, v| j.hipri = match v.trim() {
            "auto" => None,
            w => Some(parse_bool(w)?),
        },
        example: "auto" => |j| j.hipri.is_none()
    ),
    job!(
        "spin_us",
        "INT",
        "0",
        "ioengine=uring only: spin on the completion queue this many microseconds \
           before sleeping.",
        |j, v| j.spin_us = parse_count(v)?,
        example: "20" => |j| j.spin_us == 20
    ),
    job!(
        "fixedbufs",
        "",
        "0",
        "Registered buffers: reads issued as io_uring READ_FIXED.",
        |j, v| j.fixedbufs = parse_bool(v)?,
        example: "1" => |j| j.fixedbufs
    ),
    job!(
        "registerfiles",
        "",
        "0",
        "ioengine=uring only: register the file with the ring.",
        |j, v| j.registerfiles = parse_bool(v)?,
        example: "1" => |j| j.registerfiles
    ),
    job!(
        "small_direct" | "small_fast_path",
        "",
        "1",
        "The short path for small direct reads (one allocation per read, inline completion).",
        |j, v| j.small_direct = parse_bool(v)?,
        example: "0" => |j| !j.small_direct
    ),
    job!(
        "memory_inline",
        "",
        "1",
        "Read files whose data is in memory (tmpfs, zram, ramfs) inline instead of \
           through the kernel's worker threads.",
        |j, v| j.memory_inline = parse_bool(v)?,
        example: "0" => |j| !j.memory_inline
    ),
    job!(
        "inline_window",
        "INT",
        "the engine's",
        "Reads of a memory-backed file the backend holds before further ones are read inline.",
        |j, v| j.inline_window = Some(parse_count(v)? as usize),
        example: "4" => |j| j.inline_window == Some(4)
    ),
    sweep!(
        "submit",
        "adaptive|batch|paced",
        "adaptive",
        "ioengine=uring or aio: how many queued reads one system call hands over. \
           batch: all; paced: at most two (below the block layer's plug); adaptive: \
           batch while reads complete inside the submitting call, paced while they \
           wait on a device.",
        |j, v| j.submit = SubmitPolicy::parse(v.trim())
            .ok_or_else(|| format!("unknown value {v:?}: adaptive, batch or paced"))?,
        example: "paced" => |j| j.submit == SubmitPolicy::Paced
    ),
    run!(
        "peak",
        "",
        "off",
        "The lean peak-IOPS loop (like fio's t/io_uring): registered files and buffers, \
           batches of 32, no clock read per read, a line per second.",
        |s, v| s.peak = parse_bool(v)?,
        example: "1" => |s| s.peak
    ),
    run!(
        "compare-fio",
        "",
        "off",
        "Run the job in fio twice, with nowait's engine (ioengine=nowait) and with \
           fio's own (io_uring, libaio, psync or posixaio for uring, aio, sync, pool), \
           alternating, and print both: engine against engine, one harness. Needs fio \
           and the engine (`make -C fio-engine`).",
        |s, v| s.compare_fio = parse_bool(v)?,
        example: "1" => |s| s.compare_fio
    ),
    run!(
        "abba",
        "SETS",
        "0",
        "With --compare-fio: run SETS sets of (fio's engine, nowait's, nowait's, fio's) \
           and report medians and spread.",
        |s, v| {
            s.abba = parse_in(v, 1, 100)? as usize;
            s.compare_fio = true;
        },
        example: "3" => |s| s.abba == 3 && s.compare_fio
    ),
    run_path!(
        "engine",
        "PATH",
        "found",
        "fio's engine for --compare-fio (fio-nowait.so); else $NOWAIT_FIO_ENGINE, beside \
           the nowait executable, ../lib/nowait/, then the source tree's fio-engine/build.",
        |s, v| s.engine = Some(v),
        example: "/x/fio-nowait.so" => |s| s.engine.is_some()
    ),
    run!(
        "output-format",
        "normal|json",
        "normal",
        "normal: nowait's lines per job and a table; json: fio's JSON shape (jobs[].read \
           with iops, bw, clat_ns percentiles; usr_cpu, sys_cpu, ctx), nowait's fields \
           under jobs[].nowait.",
        |s, v| s.format = match v {
            "normal" => crate::model::job::Format::Normal,
            "json" => crate::model::job::Format::Json,
            _ => return Err("use normal or json".into()),
        },
        example: "json" => |s| s.format == crate::model::job::Format::Json
    ),
    run_path!(
        "output",
        "FILE",
        "stdout",
        "Write the report to FILE.",
        |s, v| s.output = Some(v),
        example: "out.json" => |s| s.output.is_some()
    ),
];

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
            }
        }
    }
}
