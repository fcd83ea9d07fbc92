//! Options about the engine a job reads through and how it is driven.

#[cfg(test)]
use std::time::Duration;

use nowait::{CachePolicy, NowaitMode, SubmitPolicy};

use super::{Apply, Opt};
use crate::model::job::{Job, OwnEngine as Own};
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::fio::{flag, int};
use crate::model::values::{parse_count, parse_in};

/// The job options about engines.
pub static OPTIONS: &[Opt] = &[
    sweep!(
        "ioengine",
        "ENGINE",
        "uring",
        "How reads reach the kernel, by fio's names: io_uring (nowait's uring), libaio \
               (aio), psync (pread through the engine's sync backend), sync (lseek and \
               read), pvsync (preadv), pvsync2 (preadv2, with hipri, nowait and uncached), \
               mmap (the file mapped, each read a copy from it), null (no I/O: the harness's \
               own cost per read); and nowait's own pool (threads with the RWF_NOWAIT \
               nowait path) and aio+pool. Engines that write, move data over a network or \
               drive one kind of device are refused by name.",
        |j, v| set_engine(j, v)?,
        example: "pvsync2" => |j| j.own_engine == Some(Own::Pvsync2)
    ),
    sweep!(
        "iodepth",
        "INT",
        "1",
        "Reads in flight per thread. Synchronous engines (psync, sync, pvsync, pvsync2, \
           mmap) perform one at a time whatever this says, as fio caps them.",
        |j, v| j.iodepth = int(j.kb_base, v, 1, nowait::MAX_DEPTH as u64)? as usize,
        example: "16" => |j| j.iodepth == 16
    ),
    job!(
        "iodepth_low",
        "INT",
        "iodepth",
        "Once the queue is full, refill it only when no more than this many reads are \
               in flight (fio's low-water mark).",
        |j, v| j.iodepth_low = Some(int(j.kb_base, v, 0, nowait::MAX_DEPTH as u64)? as usize),
        example: "4" => |j| j.iodepth_low == Some(4)
    ),
    sweep!(
        "direct",
        "BOOL",
        "0",
        "1: open with O_DIRECT, bypassing the page cache (an error if the filesystem \
               refuses it); 0: buffered reads.",
        |j, v| j.direct = flag(v)?,
        example: "1" => |j| j.direct
    ),
    job!(
        "buffered",
        "BOOL",
        "1",
        "fio's inverse of direct: buffered=0 is direct=1.",
        |j, v| j.direct = !flag(v)?,
        example: "0" => |j| j.direct
    ),
    job!(
        "iodepth_batch_submit" | "iodepth_batch",
        "INT",
        "1 (fio's)",
        "Submit once this many reads are queued: 1 (fio's default) hands each read \
               to the kernel as soon as its slot is free, one system call per read. 0 \
               (nowait's faster mode, and --peak's 32) fills every free slot and submits \
               them with one system call.",
        |j, v| j.iodepth_batch_submit = parse_count(v)? as usize,
        example: "8" => |j| j.iodepth_batch_submit == 8
    ),
    job!(
        "iodepth_batch_complete_min" | "iodepth_batch_complete",
        "INT",
        "1",
        "Wait for at least this many completions each time (capped at the reads in \
               flight).",
        |j, v| j.iodepth_batch_complete_min = parse_count(v)? as usize,
        example: "4" => |j| j.iodepth_batch_complete_min == 4
    ),
    sweep!(
        "nowait",
        "0|1|off|always|adaptive",
        "0",
        "fio's nowait: RWF_NOWAIT on every read, so a read the page cache cannot answer \
               at once fails with EAGAIN instead of waiting (ioengine=pvsync2; with io_uring \
               refused, as nowait's uring engine sets no per-read flags). With ioengine=pool \
               it is the pool's RWF_NOWAIT nowait path instead: off (every read goes to a \
               worker thread), always (try each buffered read inline with \
               preadv2(RWF_NOWAIT) first, only a miss goes to a worker; 1 means always), \
               adaptive (try while the file's hit ratio stays high, the pool's default). \
               Other engines take only 0, with a note.",
        |j, v| j.nowait = Some(v.trim().parse::<NowaitMode>()?),
        example: "always" => |j| j.nowait == Some(NowaitMode::Always)
    ),
    sweep!(
        "cache",
        "keep|drop|adaptive",
        "keep",
        "What buffered reads leave in the page cache. keep: what a read brings in stays \
               (fio's default); drop: every read is uncached (preadv2/io_uring \
               RWF_DONTCACHE, Linux 6.14+: the pages it brings in are dropped once copied, \
               pages cached before stay), fio's uncached=1; adaptive: only the scan reads \
               (sequential runs, or reads of 1 MiB or more) of a file at least half the \
               memory the page cache may use here (the memory cgroup's limit, else RAM) and \
               mostly not cached. Every engine of nowait's takes it; of fio's own engines \
               pvsync2 takes drop. Where the filesystem refuses the flag (tmpfs, FUSE) reads \
               go on cached and the report says how many. No effect with direct=1. \
               --compare-fio passes drop as uncached=1 (fio has no adaptive).",
        |j, v| j.cache = v.trim().parse::<CachePolicy>()?,
        example: "adaptive" => |j| j.cache == CachePolicy::Adaptive
    ),
    job!(
        "uncached",
        "INT",
        "0 (fio's)",
        "fio's io_uring and pvsync2 option: any value but 0 reads every buffered read \
               uncached (RWF_DONTCACHE), as --cache=drop; 0 is --cache=keep. Ignored with \
               direct=1, as in fio. Unlike fio, where the kernel or filesystem refuses the flag \
               the reads go on cached instead of failing (the report says how many).",
        |j, v| {
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("'{v}' is not a whole number (0: keep, else: drop)"))?;
            j.cache = if n != 0 { CachePolicy::Drop } else { CachePolicy::Keep };
        },
        example: "1" => |j| j.cache == CachePolicy::Drop
    ),
    job!(
        "hipri",
        "",
        "0 (fio's)",
        "Polled completions. ioengine=uring, direct=1: IOPOLL, the reaping thread polls \
               the device instead of waiting for an interrupt; 1 polls every direct read \
               (a device that cannot poll refuses each read with EOPNOTSUPP, which is \
               resubmitted unpolled and reported as unsupported), auto (the engine's \
               default) polls where the device's queue polls. ioengine=pvsync2: RWF_HIPRI \
               on every read. 0 never polls (fio's default).",
        |j, v| {
            j.hipri = match v.trim() {
                "auto" => None,
                v => Some(flag(v).map_err(|e| format!("{e}, or auto"))?),
            };
        },
        example: "auto" => |j| j.hipri.is_none()
    ),
    job!(
        "fixedbufs",
        "",
        "0",
        "Read into buffers registered with io_uring (READ_FIXED: no page pinning per \
               read). Where the locked-memory limit refuses them, plain buffers are used and \
               the report says so.",
        |j, v| j.fixedbufs = flag(v)?,
        example: "1" => |j| j.fixedbufs
    ),
    job!(
        "registerfiles",
        "BOOL",
        "0 (fio's)",
        "ioengine=uring: register the files with the ring (fixed files: no file \
               reference taken per read). Off by default as in fio; --peak turns it on.",
        |j, v| j.registerfiles = flag(v)?,
        example: "1" => |j| j.registerfiles
    ),
    job!(
        "sqthread_poll" | "sqpoll",
        "",
        "0",
        "ioengine=uring only: SQPOLL, a kernel thread (iou-sqp-*) polls the submission \
               queue so submitting needs no system call while it is awake. Its CPU time is \
               reported apart (sqpoll_cpu) and is included in usr/sys.",
        |j, v| j.sqthread_poll = flag(v)?,
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
            let d = crate::model::values::fio::secs(v)?;
            if d.as_millis() > u32::MAX as u128 {
                return Err(format!("'{v}' is too long for the kernel's idle time"));
            }
            j.sqthread_poll_idle = d;
        },
        example: "20ms" => |j| j.sqthread_poll_idle == Duration::from_millis(20)
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
        "small_direct" | "small_fast_path",
        "BOOL",
        "1",
        "direct=1 with fixedbufs: the small direct-read path. An aligned read of at \
               most one block (4 KiB, or the file's offset alignment if larger) into a \
               registered buffer goes out as one READ_FIXED without the general checks and \
               bounce logic, and a full result is handed back inline; other reads take the \
               general path. 0 sends every read the general way. nowait only, not passed to fio. \
               Alias: small_fast_path (its old name).",
        |j, v| j.small_direct = flag(v)?,
        example: "0" => |j| !j.small_direct
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
            j.submit = SubmitPolicy::parse(v.trim())
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
               the synchronous engines. nowait only, not passed to fio.",
        |j, v| j.memory_inline = flag(v)?,
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
            j.inline_window = if v.trim() == "auto" {
                None
            } else {
                Some(parse_count(v).map_err(|e| format!("{e}, or auto"))? as usize)
            };
        },
        example: "4" => |j| j.inline_window == Some(4)
    ),
];

/// `ioengine=NAME`: an engine nowait runs itself, a backend of the
/// library, or an error that says why nowait has no such engine.
fn set_engine(j: &mut Job, v: &str) -> Result<(), String> {
    use nowait::BackendKind as K;
    let v = v.trim();
    let own = match v {
        "null" => Some(Own::Null),
        "sync" => Some(Own::Sync),
        "pvsync" => Some(Own::Pvsync),
        "pvsync2" => Some(Own::Pvsync2),
        "mmap" => Some(Own::Mmap),
        _ => None,
    };
    if let Some(o) = own {
        // The backend a synchronous engine stands beside (never built).
        (j.own_engine, j.ioengine) = (Some(o), K::Sync);
        return Ok(());
    }
    if let Some(why) = super::refused::engine(v) {
        return Err(why);
    }
    j.ioengine = match v {
        "uring" | "io_uring" => K::Uring,
        "aio" | "libaio" => K::Aio,
        "aio+pool" => K::AioPool,
        "pool" | "threads" => K::Pool,
        "psync" | "pread" => K::Sync,
        _ => {
            return Err(format!(
                "unknown engine '{v}'; nowait reads through io_uring, libaio, psync, sync, \
                 pvsync, pvsync2, mmap, null, and its own pool and aio+pool"
            ))
        }
    };
    j.own_engine = None;
    Ok(())
}
