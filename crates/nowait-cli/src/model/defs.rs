//! The options of `nowait bench`, one table: each option once, with its
//! fio name and aliases, what its value looks like, its default, its help,
//! its parser (`model/values.rs`) and an example it is tested with. The
//! same table serves the command line (`--name=value`, `--name value`),
//! fio job files (`name=value`) and the help text, so adding an option is
//! one entry here (and its field in `Job` or `Settings`).
//!
//! Options that take comma lists (`--iodepth 1,2,4 --ioengine uring,sync`)
//! are marked `sweep` (`sweep!`); `model/sweep.rs` runs a job for each
//! combination.

#[cfg(test)]
use std::time::Duration;

#[cfg(test)]
use nowait::BackendKind;
use nowait::{NowaitMode, SubmitPolicy};

use crate::model::job::Rw;
use crate::model::opt::{Apply, Opt};
use crate::model::values::{
    fio_filename, fio_read_bs, in_range, nonempty, parse_bool, parse_count, parse_depth,
    parse_engine, parse_in, parse_runtime, parse_size, parse_time, parse_u64,
};
#[cfg(test)]
use crate::model::{job::Job, opt::Example};

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

mod output;
pub use output::refused;

/// Every option of `nowait bench`, in help order: the table below, then
/// the measuring and reporting options (`defs/output.rs`).
pub fn all() -> impl Iterator<Item = &'static Opt> {
    OPTIONS.iter().chain(output::OPTIONS)
}

/// The workload and engine options, in help order.
pub static OPTIONS: &[Opt] = &[
    job!(
        "name",
        "STR",
        "nowait",
        "Job name shown in reports (a job file's section name sets it too). Given \
               once: nowait runs one job per command line (fio starts a new job at each \
               --name); several jobs go in sections of a job file.",
        |j, v| j.name = nonempty(v)?.to_string(),
        example: "x" => |j| j.name == "x"
    ),
    job_path!(
        "filename",
        "PATH",
        "(required)",
        "File or block device to read. A missing file is laid out at `size` with \
               nowait's verifiable pattern (each byte a function of its offset), written \
               under a temporary name in the same directory and renamed when complete, so \
               an interrupted layout leaves no short file behind. One file \
               per job: fio reads `a:b` as two files, so a colon is an error; a colon that \
               is part of the name is written `\\:`, as in fio.",
        |j, v| j.filename = Some(fio_filename(v)?),
        example: "/tmp/f" => |j| j.filename.as_deref() == Some("/tmp/f".as_ref())
    ),
    job!(
        "size",
        "SIZE",
        "file size",
        "Bytes of the file to read (the region); also the size a new file is laid \
               out at. Suffixes k, m, g, t (powers of 1024, like fio): 512m, 4g.",
        |j, v| j.size = Some(in_range(parse_size(v)?, 1, u64::MAX)?),
        example: "2m" => |j| j.size == Some(2 << 20)
    ),
    sweep!(
        "rw" | "readwrite",
        "read|randread",
        "read",
        "Sequential (`read`) or random (`randread`) reads. Writes are not supported: \
           nowait is a read engine.",
        |j, v| {
            j.rw = match v {
                "read" => Rw::Read,
                "randread" => Rw::RandRead,
                "write" | "randwrite" | "rw" | "readwrite" | "randrw" | "trim" | "randtrim" => {
                    return Err(format!(
                        "'{v}' is not supported: nowait only reads; use read or randread"
                    ))
                }
                _ => return Err(format!("unknown '{v}'; use read or randread")),
            };
        },
        example: "randread" => |j| j.rw == Rw::RandRead
    ),
    job!(
        "bs" | "blocksize",
        "SIZE[,W[,T]]",
        "4k",
        "Block size of each read. With direct=1 it must be a multiple of the file's \
           O_DIRECT alignment (`nowait probe FILE` shows it). As in fio, a comma list \
           gives the read, write and trim sizes: nowait only reads, so the first counts \
           (empty: the default) and the others are only checked; it is not a sweep, \
           so the same command line reads the same blocks in both tools (one block \
           size per run, or per job-file section).",
        |j, v| j.bs = fio_read_bs(v)?,
        example: "8k" => |j| j.bs == 8192
    ),
    sweep!(
        "ioengine",
        "ENGINE",
        "uring",
        "Backend: uring (io_uring), sync (pread loop, depth 1), and those the engine \
               adds (pool, aio). fio's names are accepted: io_uring, psync, libaio.",
        |j, v| j.ioengine = parse_engine(v)?,
        example: "sync" => |j| j.ioengine == BackendKind::Sync
    ),
    sweep!(
        "iodepth",
        "INT",
        "1",
        "Reads in flight per thread. The sync engine performs one at a time \
           whatever this says (fio caps synchronous engines the same way).",
        |j, v| j.iodepth = parse_depth(v)?,
        example: "16" => |j| j.iodepth == 16
    ),
    sweep!(
        "direct",
        "BOOL",
        "0",
        "1: open with O_DIRECT, bypassing the page cache (an error if the filesystem \
               refuses it); 0: buffered reads.",
        |j, v| j.direct = parse_bool(v)?,
        example: "1" => |j| j.direct
    ),
    job!(
        "runtime",
        "TIME",
        "none",
        "Stop after this long (after ramp_time). Plain numbers are seconds; suffixes \
               us, ms, s, m, h.",
        |j, v| j.runtime = Some(parse_runtime(v)?),
        example: "3" => |j| j.runtime == Some(Duration::from_secs(3))
    ),
    job!(
        "time_based",
        "",
        "0",
        "Run for the whole runtime, starting the region over when it is done \
               (without it a job ends after reading `size` bytes). Without --runtime it is \
               ignored with a note, as fio ignores it. Ctrl-C stops any run early and prints \
               the results so far.",
        |j, v| j.time_based = parse_bool(v)?,
        example: "1" => |j| j.time_based
    ),
    job!(
        "number_ios",
        "INT",
        "none",
        "Stop each thread after this many reads.",
        |j, v| j.number_ios = Some(parse_in(v, 1, u64::MAX)?),
        example: "100" => |j| j.number_ios == Some(100)
    ),
    job!(
        "ramp_time",
        "TIME",
        "0",
        "Run this long before counting anything (warm-up).",
        |j, v| j.ramp_time = parse_time(v)?,
        example: "500ms" => |j| j.ramp_time == Duration::from_millis(500)
    ),
    job!(
        "norandommap",
        "",
        "0",
        "randread: draw every offset independently (blocks may repeat). Without it \
               each block is read exactly once per pass, in a seeded random order.",
        |j, v| j.norandommap = parse_bool(v)?,
        example: "1" => |j| j.norandommap
    ),
    job!(
        "randseed",
        "INT",
        "0x6e6f77616974",
        "Seed of the random offsets (printed with every result so a run can be \
               replayed). Thread i uses randseed + i.",
        |j, v| j.randseed = parse_u64(v)?,
        example: "89" => |j| j.randseed == 89
    ),
    job!(
        "invalidate",
        "BOOL",
        "1",
        "Drop the file's pages from the page cache (posix_fadvise DONTNEED) before \
               the run, as fio does by default. 0 keeps a warm cache.",
        |j, v| j.invalidate = parse_bool(v)?,
        example: "0" => |j| !j.invalidate
    ),
    sweep!(
        "numjobs",
        "INT",
        "1",
        "Threads, each with its own queue, all reading the same file; each is reported \
           on its own, as fio's clones are (group_reporting reports them as one).",
        |j, v| j.numjobs = parse_in(v, 1, 1024)? as usize,
        example: "2" => |j| j.numjobs == 2
    ),
    job!(
        "thread",
        "",
        "1 (always)",
        "fio's option, accepted with fio's meaning: numjobs are threads of one process \
               (fio's default forks processes), which nowait's jobs always are (0 is refused).",
        |_j, v| {
            if !parse_bool(v)? {
                return Err("nowait runs numjobs as threads only (no processes); \
                            drop the option (or give 1)"
                    .into());
            }
        },
        example: "1" => |j| *j == Job::default()
    ),
    job!(
        "iodepth_batch_submit" | "iodepth_batch",
        "INT",
        "1 (fio's)",
        "Submit once this many reads are queued: 1 (fio's default) hands each read \
               to the kernel as soon as its slot is free, one system call per read. 0 \
               (nowait's faster mode, and --peak's 32) fills every free slot and submits \
               them with one system call. Alias: iodepth_batch.",
        |j, v| j.iodepth_batch_submit = parse_count(v)? as usize,
        example: "8" => |j| j.iodepth_batch_submit == 8
    ),
    job!(
        "iodepth_batch_complete_min" | "iodepth_batch_complete",
        "INT",
        "1",
        "Wait for at least this many completions each time (capped at the reads in \
               flight). Alias: iodepth_batch_complete.",
        |j, v| j.iodepth_batch_complete_min = parse_count(v)? as usize,
        example: "4" => |j| j.iodepth_batch_complete_min == 4
    ),
    job!(
        "verify",
        "",
        "0",
        "Check every byte read against nowait's offset pattern and stop at the first \
               mismatch, reporting its file offset (the file must have been laid out by nowait).",
        |j, v| {
            j.verify = match v {
                "pattern" | "nowait" => true,
                _ => parse_bool(v).map_err(|_| {
                    format!(
                        "'{v}' is not supported: nowait verifies with its own offset pattern; \
                     use verify=1 (or 0)"
                    )
                })?,
            };
        },
        example: "1" => |j| j.verify
    ),
    job!(
        "fadvise_hint",
        "BOOL",
        "1",
        "Advise the kernel of the access pattern before the run, as fio does by default: \
               posix_fadvise RANDOM (no readahead) for randread, SEQUENTIAL for read.",
        |j, v| j.fadvise_hint = parse_bool(v)?,
        example: "0" => |j| !j.fadvise_hint
    ),
    sweep!(
        "nowait",
        "off|always|adaptive",
        "adaptive",
        "ioengine=pool only: the RWF_NOWAIT nowait path. off: every read goes to a worker \
               thread (plain thread offload); always: try each buffered read inline with \
               preadv2(RWF_NOWAIT) first, only a miss goes to a worker; adaptive: try while \
               the file's hit ratio stays high. Not fio's nowait option (RWF_NOWAIT on \
               every io_uring request): with ioengine=uring and no pool job, 1 (always) \
               and adaptive are an error, while 0 (off, fio's default) is what the \
               uring engine does; other engines ignore it, with a note.",
        |j, v| j.nowait = Some(v.trim().parse::<NowaitMode>()?),
        example: "always" => |j| j.nowait == Some(NowaitMode::Always)
    ),
    job!(
        "pool_workers" | "pool-workers",
        "INT",
        "min(iodepth, 4 x CPUs)",
        "ioengine=pool only: worker threads doing pread(2) (1 to 1024).",
        |j, v| j.pool_workers = Some(parse_in(v, 1, 1024)? as usize),
        example: "3" => |j| j.pool_workers == Some(3)
    ),
    job!(
        "sqthread_poll" | "sqpoll",
        "",
        "0",
        "ioengine=uring only: SQPOLL, a kernel thread (iou-sqp-*) polls the submission \
               queue so submitting needs no system call while it is awake. Its CPU time is \
               reported apart (sqpoll_cpu) and is included in usr/sys.",
        |j, v| j.sqthread_poll = parse_bool(v)?,
        example: "1" => |j| j.sqthread_poll
    ),
    job!(
        "sqthread_poll_idle",
        "TIME",
        "1s",
        "With sqthread_poll: the SQPOLL thread goes to sleep after this long without \
               work (the next submit then wakes it: IORING_SQ_NEED_WAKEUP). Milliseconds \
               resolution; plain numbers are seconds.",
        |j, v| {
            let d = parse_time(v)?;
            if d.as_millis() > u32::MAX as u128 {
                return Err(format!("'{v}' is too long for the kernel's idle time"));
            }
            j.sqthread_poll_idle = d;
        },
        example: "20ms" => |j| j.sqthread_poll_idle == Duration::from_millis(20)
    ),
    job!(
        "fixedbufs",
        "",
        "0",
        "Read into buffers registered with io_uring (READ_FIXED: no page pinning per \
               read). Where the locked-memory limit refuses them, plain buffers are used and \
               the report says so.",
        |j, v| j.fixedbufs = parse_bool(v)?,
        example: "1" => |j| j.fixedbufs
    ),
    job!(
        "registerfiles",
        "BOOL",
        "0 (fio's)",
        "ioengine=uring: register the file with the ring (fixed files: no file \
               reference taken per read). Off by default as in fio; --peak turns it on.",
        |j, v| j.registerfiles = parse_bool(v)?,
        example: "1" => |j| j.registerfiles
    ),
    job!(
        "small_direct" | "small_fast_path",
        "BOOL",
        "1",
        "direct=1 with fixedbufs: the small direct-read path. An aligned read of at \
               most one block (4 KiB, or the file's offset alignment if larger) into a \
               registered buffer goes out as one READ_FIXED without the general checks and \
               bounce logic, and a full result is handed back inline; other reads take the \
               general path. 0 sends every read the general way. nowait only, not passed to fio. \
               Alias: small_fast_path (its old name).",
        |j, v| j.small_direct = parse_bool(v)?,
        example: "0" => |j| !j.small_direct
    ),
    job!(
        "hipri",
        "",
        "0 (fio's)",
        "ioengine=uring, direct=1: polled completions (IOPOLL): the reaping thread \
               polls the device instead of waiting for an interrupt. 1 polls every direct \
               read; on a device that cannot poll, each read is refused (EOPNOTSUPP) and \
               resubmitted unpolled, and the report shows it as unsupported. 0 never polls \
               (fio's default); auto (the engine's default) polls where the device's queue \
               polls (io_poll=1).",
        |j, v| {
            j.hipri = match v {
                "auto" => None,
                v => Some(parse_bool(v).map_err(|e| format!("{e}, or auto"))?),
            };
        },
        example: "auto" => |j| j.hipri.is_none()
    ),
    job!(
        "submit",
        "adaptive|batch|paced",
        "adaptive (--peak: batch)",
        "ioengine=uring or aio: how many of the queued reads one system call hands to the \
               kernel. batch: all of them (one call per batch). paced: at most two per call, \
               below the kernels' block-plug threshold, so a device gets each read at once \
               instead of a burst per call. adaptive: batch while reads complete inside the \
               submitting call (page cache), paced while they wait on a device; the report \
               says which was chosen. Matters only when more than two reads are submitted \
               together (iodepth_batch_submit=0 or > 2). nowait only, not passed to fio.",
        |j, v| {
            j.submit = SubmitPolicy::parse(v)
                .ok_or_else(|| format!("unknown value {v:?}: adaptive, batch or paced"))?;
        },
        example: "paced" => |j| j.submit == SubmitPolicy::Paced
    ),
    job!(
        "spin_us",
        "INT",
        "0",
        "ioengine=uring only: spin on the completion queue for up to this many \
               microseconds before sleeping in io_uring_enter (nowait's own; fio has none).",
        |j, v| j.spin_us = parse_in(v, 0, 1_000_000)?,
        example: "50" => |j| j.spin_us == 50
    ),
    job!(
        "memory_inline",
        "BOOL",
        "1",
        "Files whose data is in memory (tmpfs, ramfs, zram without a backing device, brd, \
               pmem) and that refuse RWF_NOWAIT: io_uring would hand each read to an io-wq \
               kernel thread. With 1, once the engine holds --inline_window such reads, further \
               ones are read inline by the submitting thread (pread), so both it and the kernel \
               worker read. 0 sends every read to the engine. No effect on other files or on \
               ioengine=sync. nowait only, not passed to fio.",
        |j, v| j.memory_inline = parse_bool(v)?,
        example: "0" => |j| !j.memory_inline
    ),
    job!(
        "inline_window",
        "INT",
        "auto",
        "With --memory_inline=1: how many reads of a memory-backed file the engine holds \
               before further ones are read inline. auto: min(32, iodepth/2), and a read with \
               nothing else in flight is inline, so at iodepth=1 every such read is. nowait only.",
        |j, v| {
            j.inline_window = if v == "auto" {
                None
            } else {
                Some(parse_count(v).map_err(|e| format!("{e}, or auto"))? as usize)
            };
        },
        example: "4" => |j| j.inline_window == Some(4)
    ),
    run_path!(
        "output",
        "FILE",
        "stdout",
        "Write the report to FILE instead of standard output. FILE is opened (created) \
               before anything runs, so a destination that cannot be written is an error \
               up front, as in fio.",
        |s, v| s.output = Some(v),
        example: "/tmp/o" => |s| s.output.as_deref() == Some("/tmp/o".as_ref())
    ),
    run_path!(
        "plot",
        "FILE.svg",
        "none",
        "Draw IOPS and p99 completion latency against queue depth, one line per \
               engine, as an SVG (meant for --iodepth sweeps). Like --output, FILE is \
               opened before anything runs.",
        |s, v| s.plot = Some(v),
        example: "/tmp/p.svg" => |s| s.plot.as_deref() == Some("/tmp/p.svg".as_ref())
    ),
    run!(
        "compare-fio" | "compare_fio",
        "",
        "0",
        "Also run fio with the same job, alternating with ours, and print both with \
               the ratio (needs fio: apt-get install fio).",
        |s, v| s.compare_fio = parse_bool(v)?,
        example: "1" => |s| s.compare_fio
    ),
    run!(
        "compare-rounds",
        "INT",
        "1",
        "With --compare-fio: run ours then fio this many times per job, alternating, \
               and report each side's median round (a shared disk is noisy).",
        |s, v| s.compare_rounds = parse_in(v, 1, 100)? as usize,
        example: "3" => |s| s.compare_rounds == 3
    ),
    run!(
        "abba",
        "SETS",
        "0",
        "Compare with fio (implies --compare-fio) in ABBA order: per set fio, nowait, \
               nowait, fio, so drift of a shared disk falls on both alike. Reports every run, \
               each side's median and spread, and the ratio of the medians, which is the \
               headline ratio (text, table, JSON iops_ratio). Use 3 or more sets for \
               anything disk-bound.",
        |s, v| {
            s.abba = parse_in(v, 0, 100)? as usize;
            s.compare_fio |= s.abba > 0;
        },
        example: "3" => |s| s.compare_fio && s.abba == 3
    ),
    run!(
        "peak",
        "",
        "0",
        "Peak IOPS, like fio's t/io_uring: a lean loop with registered files and \
               buffers, direct reads, random offsets, iodepth 128, batches of 32 submitted \
               per call, runtime 10s (each overridable), no latency histogram; prints IOPS \
               every second and reads per submit and per reap call.",
        |s, v| s.peak = parse_bool(v)?,
        example: "1" => |s| s.peak
    ),
];
