//! The two jobs of the `scan` scenario on the engine, alone and side by
//! side ([`hot_beside_scan`]): a hot set read at
//! random, one read at a time, through an [`Engine`] whose first poll tries
//! each read with `RWF_NOWAIT` (its hits are the hot job's hit ratio), and
//! a sequential scan through a [`Queue`]; and the hot set's warm-up (every
//! 64 KiB block once, in random order: not a run, so no policy takes it
//! for a scan). Both check the data they read against nowait's pattern
//! (one read in 64).

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nowait::{
    Buf, CachePolicy, Direct, DontcacheStats, Engine, EngineFile, File, NowaitMode, Queue, Read,
};

use crate::base::failure::Failure;
use crate::measure::latency::Latency;
use crate::workload::rng::Rng;

/// The hot job's read size.
pub const HOT_BS: usize = 4096;
/// The warm-up's read size.
const WARM_BS: usize = 64 << 10;

/// What the hot job measured.
#[derive(Debug, Default)]
pub struct Hot {
    /// Each read's latency, from the call to its completion.
    pub lat: Latency,
    /// Reads done.
    pub reads: u64,
    /// How long it read.
    pub elapsed: Duration,
    /// The share of the engine's `RWF_NOWAIT` tries that hit the page cache.
    pub hit: f64,
}

impl Hot {
    /// Reads per second.
    pub fn iops(&self) -> f64 {
        self.reads as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn runtime(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Runtime(format!("{what}: {e}"))
}

/// Read every 64 KiB block of `path` once, in an order drawn from `seed`.
pub fn warm_random(path: &Path, seed: u64) -> Result<(), Failure> {
    let what = format!("warming {}", path.display());
    let f = std::fs::File::open(path).map_err(|e| runtime(&what, e))?;
    let blocks = f.metadata().map_err(|e| runtime(&what, e))?.len() / WARM_BS as u64;
    let mut order: Vec<u64> = (0..blocks).collect();
    let mut rng = Rng::new(seed);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut buf = vec![0u8; WARM_BS];
    for b in order {
        f.read_exact_at(&mut buf, b * WARM_BS as u64)
            .map_err(|e| runtime(&what, e))?;
    }
    Ok(())
}

/// Read `file` at random in [`HOT_BS`] blocks, one at a time, until `stop`
/// is set or `limit` has passed, timing each read.
pub fn hot_reads(
    engine: &Engine,
    file: &EngineFile,
    limit: Option<Duration>,
    stop: &AtomicBool,
    seed: u64,
) -> Result<Hot, Failure> {
    let path = file.file().path().display().to_string();
    let len = file.file().len().map_err(|e| runtime(&path, e))?;
    let blocks = (len / HOT_BS as u64).max(1);
    let mut rng = Rng::new(seed);
    let mut hot = Hot::default();
    let before = engine.stats().nowait;
    let t0 = Instant::now();
    let mut buf = Buf::new(HOT_BS);
    while !stop.load(Ordering::Relaxed) && limit.is_none_or(|l| t0.elapsed() < l) {
        let off = rng.below(blocks) * HOT_BS as u64;
        let t = Instant::now();
        let (r, b) = nowait::block_on(file.read_at(buf, off));
        hot.lat.record(t.elapsed());
        let n = r.map_err(|e| runtime(&format!("hot read of {path} at {off}"), e))?;
        if n != HOT_BS {
            return Err(runtime(
                &format!("hot read of {path} at {off}"),
                format!("{n} bytes of {HOT_BS}"),
            ));
        }
        if hot.reads % 64 == 0 {
            nowait::pattern::check(off, b.as_slice()).map_err(|m| runtime(&path, m))?;
        }
        buf = b;
        hot.reads += 1;
    }
    hot.elapsed = t0.elapsed();
    let d = engine.stats().nowait.since(&before);
    hot.hit = d.hits as f64 / d.tries.max(1) as f64;
    Ok(hot)
}

/// What the scan measured.
#[derive(Debug)]
pub struct Scan {
    /// Bytes read.
    pub bytes: u64,
    /// How long the whole file took.
    pub elapsed: Duration,
    /// The queue's cache-policy counters.
    pub cache: DontcacheStats,
}

/// Read all of `file` in order, `bs` bytes a read, `qd` in flight, through
/// a queue whose reads follow `policy` (a policy set on the file wins).
pub fn scan_reads(file: &File, bs: usize, qd: usize, policy: CachePolicy) -> Result<Scan, Failure> {
    let path = file.path().display().to_string();
    let mut q = (Queue::builder().depth(qd).cache(policy).build())
        .map_err(|e| runtime("the scan's queue", e))?;
    let reads = file
        .len()
        .map_err(|e| runtime(&path, e))?
        .div_ceil(bs as u64);
    let (mut next, mut done, mut bytes) = (0u64, 0u64, 0u64);
    let mut bufs: Vec<Buf> = (0..qd).map(|_| Buf::new(bs)).collect();
    let mut out = Vec::new();
    let t0 = Instant::now();
    while done < reads {
        while next < reads {
            let Some(buf) = bufs.pop() else { break };
            let read = Read {
                file,
                offset: next * bs as u64,
                len: bs,
                buf,
                user_data: next,
                ioprio: 0,
                cache: None,
            };
            q.push(read)
                .map_err(|e| runtime(&format!("scan of {path}"), e))?;
            next += 1;
        }
        q.reap(1, None, &mut out)
            .map_err(|e| runtime(&format!("scan of {path}"), e))?;
        for c in out.drain(..) {
            let off = c.user_data * bs as u64;
            let n = c
                .result
                .map_err(|e| runtime(&format!("scan read of {path} at {off}"), e))?;
            if c.user_data % 64 == 0 {
                nowait::pattern::check(off, c.buf.as_slice()).map_err(|m| runtime(&path, m))?;
            }
            bytes += n as u64;
            done += 1;
            bufs.push(c.buf);
        }
    }
    Ok(Scan {
        bytes,
        elapsed: t0.elapsed(),
        cache: q.stats().dontcache,
    })
}

/// The hot job alone, then beside the scan, and what the adaptive policy did.
#[derive(Debug)]
pub struct HotBesideScan {
    /// The hot job alone.
    pub alone: Hot,
    /// The hot job while the scan ran.
    pub during: Hot,
    /// The scan.
    pub scan: Scan,
    /// Times the adaptive policy switched the scan file.
    pub switches: u64,
}

/// Read `hot` at random alone for `baseline`, then beside a scan of all of
/// `scan` (`bs` a read, `qd` in flight) until the scan ends, with `policy`
/// set as an application would: `keep` sets nothing, `drop` is set on the
/// scan file alone (`File::set_cache_policy`), `adaptive` on every read of
/// the process (`QueueBuilder::cache`, through `EngineBuilder::queue` for
/// the engine), nothing per file.
pub fn hot_beside_scan(
    hot: &Path,
    scan: &Path,
    baseline: Duration,
    bs: usize,
    qd: usize,
    policy: CachePolicy,
) -> Result<HotBesideScan, Failure> {
    let everywhere = match policy {
        CachePolicy::Adaptive => CachePolicy::Adaptive,
        _ => CachePolicy::Keep,
    };
    let engine = (Engine::builder()
        .queue(|q| q.nowait(NowaitMode::Always).cache(everywhere))
        .build())
    .map_err(|e| runtime("the hot job's engine", e))?;
    let hf = (engine.open(hot, Direct::Off)).map_err(|e| runtime(&hot.display().to_string(), e))?;
    let alone = hot_reads(&engine, &hf, Some(baseline), &AtomicBool::new(false), 1)?;
    let file =
        File::open(scan, Direct::Off).map_err(|e| runtime(&scan.display().to_string(), e))?;
    if policy == CachePolicy::Drop {
        file.set_cache_policy(CachePolicy::Drop);
    }
    let stop = AtomicBool::new(false);
    let (during, scanned) = std::thread::scope(|sc| {
        let scanner = sc.spawn(|| {
            let r = scan_reads(&file, bs, qd, everywhere);
            stop.store(true, Ordering::Relaxed);
            r
        });
        let during = hot_reads(&engine, &hf, None, &stop, 2);
        stop.store(true, Ordering::Relaxed);
        let scanned = (scanner.join()).unwrap_or_else(|_| Err(runtime("the scan", "panicked")));
        (during, scanned)
    });
    Ok(HotBesideScan {
        alone,
        during: during?,
        scan: scanned?,
        switches: file.cache_state().switches,
    })
}
