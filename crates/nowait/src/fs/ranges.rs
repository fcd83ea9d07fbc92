//! Range reads: many byte ranges of one file, all in flight at once, as
//! `Bytes` in the caller's order ([`read_ranges`]).
//!
//! What a columnar reader (Parquet, Arrow IPC, Lance) asks for: the column
//! chunks of a row group, or the pages an index points at, known up front.
//! The ranges are sorted and those closer than a gap
//! ([`RangeOptions::gap`]) are merged into one read (reading a few
//! unrequested bytes costs less than another request); a merged read
//! longer than [`RangeOptions::piece`] is split into pieces that are read
//! in parallel; every piece goes to the engine in one batch
//! ([`crate::EngineFile::read_many`]: with io_uring one system call for as
//! many as there are free ops). Results are slices of the pieces' buffers
//! (no copy), except a range that spans two pieces, which is copied into
//! one buffer.
//!
//! Memory: the bytes of the ranges asked for, plus the gaps merged and (on
//! an `O_DIRECT` file) the alignment around each read, held until every
//! result that shares a buffer is dropped. Reads in flight are bounded
//! twice: by the engine's one limit, shared by every concurrent call on
//! its files ([`crate::EngineBuilder::range_budget`], default 256 MiB and
//! 1,024 reads: 32 callers together hold no more than one caller may),
//! taken piece by piece in arrival order and given back as each piece
//! completes or the call is dropped; and by the call's own
//! [`RangeOptions::budget`]. Past either, the next batch starts as earlier
//! reads finish. A piece larger than the engine's limit goes alone.

use std::io;
use std::ops::Range;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};

use crate::engine::budget::Ticket;
use crate::{Buf, EngineFile, Error, InFlightLimit, ManyItem, ReadMany, MAX_READ};

/// How [`read_ranges_with`] merges, splits and bounds its reads.
#[derive(Clone, Debug)]
pub struct RangeOptions {
    gap: u64,
    piece: usize,
    budget: usize,
    ioprio: u16,
}

impl Default for RangeOptions {
    fn default() -> Self {
        RangeOptions {
            gap: 64 << 10,
            piece: 4 << 20,
            budget: 256 << 20,
            ioprio: 0,
        }
    }
}

impl RangeOptions {
    /// Merge two ranges into one read when at most `bytes` lie between
    /// them (default 64 KiB; 0 merges only touching or overlapping ones).
    pub fn gap(mut self, bytes: u64) -> Self {
        self.gap = bytes;
        self
    }

    /// Split a read longer than `bytes` into pieces read in parallel
    /// (default 4 MiB; at most the engine's single-read limit,
    /// [`MAX_READ`], at least 4 KiB).
    pub fn piece(mut self, bytes: usize) -> Self {
        self.piece = bytes.clamp(4096, MAX_READ);
        self
    }

    /// At most `bytes` of this call's reads in flight at once (default
    /// 256 MiB; at least one piece is always in flight). The engine's
    /// limit, shared by every call, applies as well
    /// ([`crate::EngineBuilder::range_budget`]).
    pub fn budget(mut self, bytes: usize) -> Self {
        self.budget = bytes;
        self
    }

    /// The I/O priority of every read of the call ([`crate::ioprio`]:
    /// class and level; default 0, the calling thread's), as
    /// [`ReadMany::ioprio`] gives it: e.g. `ioprio(IOPRIO_CLASS_IDLE, 0)`
    /// for a background scan beside foreground reads. A priority the
    /// kernel refuses fails the call with EINVAL or EPERM.
    pub fn ioprio(mut self, prio: u16) -> Self {
        self.ioprio = prio;
        self
    }
}

/// Read every range of `file` at once (default [`RangeOptions`]) and return
/// their bytes in the caller's order. A range is shorter than asked only
/// where the file ends inside it (empty past the end); a range whose start
/// is after its end is an error that names it. Dropping the future drops
/// the reads in flight (their buffers stay with the engine until the
/// kernel is done).
pub async fn read_ranges(
    file: &impl AsRef<EngineFile>,
    ranges: &[Range<u64>],
) -> io::Result<Vec<Bytes>> {
    read_ranges_with(file, ranges, &RangeOptions::default()).await
}

/// [`read_ranges`] with options.
pub async fn read_ranges_with(
    file: &impl AsRef<EngineFile>,
    ranges: &[Range<u64>],
    opts: &RangeOptions,
) -> io::Result<Vec<Bytes>> {
    let file = file.as_ref();
    let plan = Plan::new(file, ranges, opts)?;
    let mut run = Run::new(file, &plan, opts);
    std::future::poll_fn(|cx| run.poll(cx)).await?;
    let bufs = std::mem::take(&mut run.bufs);
    Ok(plan.assemble(ranges, bufs))
}

impl AsRef<EngineFile> for EngineFile {
    fn as_ref(&self) -> &EngineFile {
        self
    }
}

/// One read of the plan: a piece of a merged group.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Piece {
    offset: u64,
    len: usize,
}

/// The reads that cover the ranges asked for, in file order.
struct Plan {
    pieces: Vec<Piece>,
}

impl Plan {
    fn new(file: &EngineFile, ranges: &[Range<u64>], opts: &RangeOptions) -> io::Result<Plan> {
        let f = file.file();
        for r in ranges {
            if r.start > r.end || r.end > i64::MAX as u64 {
                return Err(Error::BadPosition {
                    path: f.path().into(),
                    asked: format!("range {}..{}", r.start, r.end),
                }
                .into());
            }
        }
        let align = if f.is_direct() {
            u64::from(f.dio_align().offset).max(1)
        } else {
            1
        };
        let piece = (opts.piece.clamp(4096, MAX_READ) as u64 / align).max(1) * align;
        let mut sorted: Vec<&Range<u64>> = ranges.iter().filter(|r| r.start < r.end).collect();
        sorted.sort_unstable_by_key(|r| r.start);
        // Merged groups, aligned.
        let mut groups: Vec<Range<u64>> = Vec::new();
        for r in sorted {
            let (s, e) = (r.start / align * align, r.end.div_ceil(align) * align);
            match groups.last_mut() {
                Some(g) if s <= g.end.saturating_add(opts.gap) => g.end = g.end.max(e),
                _ => groups.push(s..e),
            }
        }
        let mut pieces = Vec::new();
        for g in groups {
            let mut at = g.start;
            while at < g.end {
                let len = (g.end - at).min(piece);
                pieces.push(Piece {
                    offset: at,
                    len: len as usize,
                });
                at += len;
            }
        }
        Ok(Plan { pieces })
    }

    /// The pieces that hold `r`, as an index range into `pieces`.
    fn covering(&self, r: &Range<u64>) -> Range<usize> {
        let first = self
            .pieces
            .partition_point(|p| p.offset + p.len as u64 <= r.start);
        let end = self.pieces.partition_point(|p| p.offset < r.end);
        first..end.max(first)
    }

    /// Each range's bytes from the pieces' buffers (`bufs[i]` holds piece
    /// `i`, its length the bytes read).
    fn assemble(&self, ranges: &[Range<u64>], bufs: Vec<Option<Buf>>) -> Vec<Bytes> {
        let whole: Vec<Bytes> = bufs
            .into_iter()
            .map(|b| b.map_or_else(Bytes::new, Buf::into_bytes))
            .collect();
        ranges
            .iter()
            .map(|r| {
                if r.start >= r.end {
                    return Bytes::new();
                }
                let span = self.covering(r);
                let mut parts = span.clone().filter_map(|i| {
                    let p = self.pieces[i];
                    let data = &whole[i];
                    let from = r.start.saturating_sub(p.offset) as usize;
                    let to = ((r.end - p.offset) as usize).min(data.len());
                    (from < to).then(|| data.slice(from..to))
                });
                if span.len() <= 1 {
                    return parts.next().unwrap_or_default();
                }
                // A range over two or more pieces: one buffer for it. A
                // piece short of its length ends the file: nothing after.
                let mut out = BytesMut::new();
                for i in span {
                    let p = self.pieces[i];
                    let data = &whole[i];
                    let from = r.start.saturating_sub(p.offset) as usize;
                    let to = ((r.end - p.offset) as usize).min(data.len());
                    if from < to {
                        out.extend_from_slice(&data[from..to]);
                    }
                    if data.len() < p.len {
                        break;
                    }
                }
                out.freeze()
            })
            .collect()
    }
}

/// The reads of a plan in flight: batches started as the engine's shared
/// limit ([`crate::InFlightLimit`]) and the call's own budget allow.
struct Run<'a> {
    file: &'a EngineFile,
    plan: &'a Plan,
    budget: usize,
    /// The I/O priority of every read ([`RangeOptions::ioprio`]).
    ioprio: u16,
    /// The next piece to start.
    next: usize,
    /// Bytes of this call's reads in flight (and granted by the engine's
    /// limit, given back piece by piece as each completes).
    in_flight: usize,
    /// Reads granted by the engine's limit and not yet given back.
    held: usize,
    /// Our place in the engine limit's line, while waiting for the piece
    /// `next`.
    ticket: Option<Ticket>,
    batches: Vec<(usize, ReadMany)>,
    bufs: Vec<Option<Buf>>,
    mem_align: usize,
}

impl<'a> Run<'a> {
    fn new(file: &'a EngineFile, plan: &'a Plan, opts: &RangeOptions) -> Run<'a> {
        let f = file.file();
        let mem_align = if f.is_direct() {
            (f.dio_align().mem as usize).max(crate::PAGE)
        } else {
            crate::PAGE
        };
        Run {
            file,
            plan,
            budget: opts.budget,
            ioprio: opts.ioprio,
            next: 0,
            in_flight: 0,
            held: 0,
            ticket: None,
            batches: Vec::new(),
            bufs: (0..plan.pieces.len()).map(|_| None).collect(),
            mem_align,
        }
    }

    fn limit(&self) -> &'a InFlightLimit {
        &self.file.bound.rings.budget
    }

    /// Start the pieces that fit this call's budget and the engine's limit
    /// (one at least when none of ours is in flight, the limit permitting)
    /// as one batch. Waits its turn in the engine's line otherwise.
    fn start(&mut self, cx: &mut Context<'_>) {
        let first = self.next;
        let limit = self.limit();
        let mut bytes = 0;
        while let Some(p) = self.plan.pieces.get(self.next) {
            if self.in_flight + bytes + p.len > self.budget && (self.in_flight + bytes) > 0 {
                break;
            }
            let ok = if self.ticket.is_some() || self.next == first {
                // Our first piece of this batch, or one we already wait
                // for: take a place in line.
                limit.poll_take(cx, p.len, &mut self.ticket).is_ready()
            } else {
                // More of the batch only while nobody waits.
                limit.try_take(p.len)
            };
            if !ok {
                break;
            }
            self.held += 1;
            bytes += p.len;
            self.next += 1;
        }
        if self.next == first {
            return;
        }
        let align = self.mem_align;
        let reads = self.plan.pieces[first..self.next]
            .iter()
            .map(|p| (p.offset, Buf::with_align(p.len, align)));
        let batch = self.file.read_many(reads).ioprio(self.ioprio);
        self.batches.push((first, batch));
        self.in_flight += bytes;
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            self.start(cx);
            let mut progress = false;
            let mut i = 0;
            while i < self.batches.len() {
                let (first, batch) = &mut self.batches[i];
                match batch.poll_next(cx) {
                    Poll::Ready(Some(ManyItem {
                        index, result, buf, ..
                    })) => {
                        let piece = *first + index;
                        let len = self.plan.pieces[piece].len;
                        self.in_flight -= len;
                        self.held -= 1;
                        self.limit().give_back(len);
                        result?;
                        self.bufs[piece] = Some(buf);
                        progress = true;
                    }
                    Poll::Ready(None) => {
                        self.batches.swap_remove(i);
                        continue;
                    }
                    Poll::Pending => {}
                }
                i += 1;
            }
            if self.batches.is_empty() && self.next == self.plan.pieces.len() {
                return Poll::Ready(Ok(()));
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}

impl Drop for Run<'_> {
    /// A call dropped (or failed) mid-way gives its share of the engine's
    /// limit back: the reads still in flight are abandoned to the engine,
    /// which keeps their buffers until the kernel is done.
    fn drop(&mut self) {
        let limit = self.limit();
        if let Some(t) = self.ticket.take() {
            limit.cancel(t);
        }
        limit.give_back_many(self.held, self.in_flight);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(ranges: &[Range<u64>], opts: RangeOptions) -> Vec<(u64, usize)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let engine = crate::Engine::new().unwrap();
        let file = engine.open(&path, crate::Direct::Off).unwrap();
        Plan::new(&file, ranges, &opts)
            .unwrap()
            .pieces
            .iter()
            .map(|p| (p.offset, p.len))
            .collect()
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn nearby_ranges_merge_and_long_ones_split() {
        let o = RangeOptions::default().gap(100).piece(8192);
        // 0..10 and 50..60 merge (gap 40), 1000..1010 stays apart; the
        // order given does not matter.
        assert_eq!(
            plan_of(&[1000..1010, 50..60, 0..10], o.clone()),
            vec![(0, 60), (1000, 10)]
        );
        // 20000 bytes in pieces of 8192.
        assert_eq!(
            plan_of(&[0..20000], o.clone()),
            vec![(0, 8192), (8192, 8192), (16384, 3616)]
        );
        // Overlapping and empty ranges.
        assert_eq!(plan_of(&[0..10, 5..30, 7..7], o.gap(0)), vec![(0, 30)]);
    }
}
