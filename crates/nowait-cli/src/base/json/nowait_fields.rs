//! nowait's own fields under `jobs[].nowait`, where fio has none: the
//! engine's paths (the pool's nowait path, inline reads, the page cache,
//! io_uring, SQPOLL CPU), and `--peak`'s.

use serde::{Deserialize, Serialize};

use super::Second;

/// `jobs[].nowait`: what fio has no field for.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Nowait {
    pub backend: String,
    pub backend_reason: String,
    pub backend_detail: String,
    pub path: String,
    pub effective_iodepth: usize,
    pub syscalls: u64,
    pub ios_per_syscall: f64,
    pub syscalls_per_io: f64,
    pub submit_calls: u64,
    pub reap_calls: u64,
    pub ios_per_submit: f64,
    pub ios_per_reap: f64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub usr_us: u64,
    pub sys_us: u64,
    pub elapsed_ns: u64,
    pub region_bytes: u64,
    pub laid_out: bool,
    pub randseed: u64,
    pub verify: bool,
    pub verified_ios: u64,
    /// SIGINT stopped the run shown before its end: its figures are of the
    /// reads until then, and it is left out of medians and ratios.
    pub interrupted: bool,
    /// SIGINT stopped it during `ramp_time`: nothing was measured (its
    /// IOPS and latencies are zeros, not figures).
    pub unmeasured: bool,
    pub clat_from: String,
    pub nowait_path: NowaitPath,
    pub inline: Inline,
    #[serde(default)]
    pub cache: Cache,
    pub uring: Uring,
    pub sqpoll_cpu: Option<SqpollCpu>,
    /// `--peak`'s own figures.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Peak>,
}

/// Reads of memory-backed files read inline by the submitting thread.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Inline {
    pub enabled: bool,
    pub reads: u64,
}

/// What buffered reads left in the page cache (`--cache`, fio's
/// `uncached`): the policy and how its reads went.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Cache {
    /// `keep`, `drop` or `adaptive` (`keep` for direct reads).
    pub policy: String,
    /// Reads sent with `RWF_DONTCACHE`.
    pub uncached: u64,
    /// Reads the policy wanted uncached that went cached: the file's
    /// filesystem was known to refuse the flag.
    pub kept: u64,
    /// Reads the kernel refused the flag for (`EOPNOTSUPP`), read again
    /// cached.
    pub refused: u64,
}

/// io_uring's counters.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Uring {
    pub fixed_reads: u64,
    pub polled: u64,
    pub poll_fallbacks: u64,
    pub spin_reaped: u64,
    pub hipri: Option<String>,
    pub sqthread_poll: bool,
}

/// CPU of the SQPOLL kernel threads (also in `usr_cpu`/`sys_cpu`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SqpollCpu {
    pub threads: u32,
    pub usr_us: u64,
    pub sys_us: u64,
    pub cpu_pct: f64,
    pub included_in_usr_sys: bool,
}

/// `--peak`'s figures.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Peak {
    pub peak: bool,
    pub engine: String,
    pub iodepth: usize,
    pub bs: u64,
    pub direct: bool,
    pub fixedbufs: bool,
    pub registerfiles: bool,
    pub small_direct: bool,
    pub iodepth_batch_submit: usize,
    pub iodepth_batch_complete_min: usize,
    pub fixed_reads: u64,
    pub small_direct_reads: u64,
    pub memory_inline: bool,
    pub per_second: Vec<Second>,
}
/// The pool's `RWF_NOWAIT` nowait-path counters and each file's state
/// (`jobs[].nowait.nowait_path`, the mixed scenario's `configs[].nowait_path`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NowaitPath {
    /// `off`, `always`, `adaptive`; `null` where the pool is not used.
    pub mode: Option<String>,
    pub tries: u64,
    pub hits: u64,
    pub partial_hits: u64,
    pub misses: u64,
    pub refused: u64,
    pub skipped: u64,
    pub reprobes: u64,
    pub offloads: u64,
    pub worker_reads: u64,
    pub wakeups: u64,
    pub hit_ratio: f64,
    pub files: Vec<NowaitPathFile>,
}

/// One file's nowait-path state after the run.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct NowaitPathFile {
    pub filename: String,
    pub hit_ratio: f64,
    pub adaptive_skipping: bool,
    /// Why the nowait path is off for the file, if it is.
    pub off: Option<String>,
}

impl NowaitPath {
    /// From the queue's counters and the files' states.
    pub fn of(
        mode: Option<nowait::NowaitMode>,
        f: &nowait::NowaitStats,
        files: &[(String, nowait::NowaitState)],
    ) -> NowaitPath {
        NowaitPath {
            mode: mode.map(|m| m.to_string()),
            tries: f.tries,
            hits: f.hits,
            partial_hits: f.partial_hits,
            misses: f.misses,
            refused: f.refused,
            skipped: f.skipped,
            reprobes: f.reprobes,
            offloads: f.offloads,
            worker_reads: f.worker_reads,
            wakeups: f.wakeups,
            hit_ratio: f.hit_ratio(),
            files: files
                .iter()
                .map(|(p, st)| NowaitPathFile {
                    filename: p.clone(),
                    hit_ratio: st.hit_ratio,
                    adaptive_skipping: st.adaptive_skipping,
                    off: st.off.map(|o| o.to_string()),
                })
                .collect(),
        }
    }
}
