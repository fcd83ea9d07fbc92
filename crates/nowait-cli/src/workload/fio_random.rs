//! fio's random numbers, bit for bit: the combined Tausworthe generators
//! (`random_generator=tausworthe`, 32-bit, and `tausworthe64`), fio's
//! maximal-length LFSR (`random_generator=lfsr`), the per-job seeds fio
//! derives from `randseed`/`randrepeat` and the job's thread number, the
//! random map that makes a `randread` pass visit every block once (fio's
//! `axmap`: the same answers, written here as a bitmap with summary levels),
//! and the step that turns one random number into a block number
//! (`__get_next_rand_offset` in fio's `io_u.c`).
//!
//! Everything here is pure: no clock, no I/O. The streams are checked against
//! fio's own offsets (`ioengine=null`, `write_iolog`) in this module's tests.

/// One of fio's combined Tausworthe generators: `tausworthe` (three 32-bit
/// components, period about 2^88) or `tausworthe64` (five 64-bit components,
/// about 2^258). fio's `struct frand_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FioRand {
    /// `tausworthe`: 32-bit outputs.
    Taus32([u32; 3]),
    /// `tausworthe64`: 64-bit outputs.
    Taus64([u64; 5]),
}

/// `(2^31)+(2^17)+(2^7)` as fio's seeding writes it: in C `^` is xor, so this
/// is 29 + 19 + 5.
const SEED_START: u64 = 53;

/// The lower bounds each component must exceed (L'Ecuyer's erratum: the top
/// bits of each component must not all be zero).
const MIN32: [u32; 3] = [1, 7, 15];
const MIN64: [u64; 5] = [1, 7, 15, 33, 49];

/// fio's `__seed`: a component below its bound is moved up by the bound.
fn lift<T: PartialOrd + std::ops::Add<Output = T> + Copy>(x: T, m: T) -> T {
    if x < m {
        x + m
    } else {
        x
    }
}

impl FioRand {
    /// fio's `init_rand_seed(state, seed, use64)`: a 32-bit generator takes
    /// the low 32 bits of `seed`. The components are filled from a linear
    /// congruential sequence mixed with the seed, then the generator is
    /// stepped six times.
    pub fn new(seed: u64, use64: bool) -> FioRand {
        let mut g = if use64 {
            let mut s = [0u64; 5];
            let mut prev = SEED_START;
            for (i, c) in s.iter_mut().enumerate() {
                *c = lift(prev.wrapping_mul(6_906_969_069) ^ seed, MIN64[i]);
                prev = *c;
            }
            FioRand::Taus64(s)
        } else {
            let seed = seed as u32;
            let mut s = [0u32; 3];
            let mut prev = SEED_START as u32;
            for (i, c) in s.iter_mut().enumerate() {
                *c = lift(prev.wrapping_mul(69_069) ^ seed, MIN32[i]);
                prev = *c;
            }
            FioRand::Taus32(s)
        };
        for _ in 0..6 {
            g.rand();
        }
        g
    }

    /// Whether this is `tausworthe64`.
    pub fn is_64(&self) -> bool {
        matches!(self, FioRand::Taus64(_))
    }

    /// The next output (fio's `__rand`): 32 bits wide for `tausworthe`.
    #[inline(always)]
    pub fn rand(&mut self) -> u64 {
        match self {
            FioRand::Taus32(s) => u64::from(taus32(s)),
            FioRand::Taus64(s) => {
                // (shift-left a, shift-right b, mask c, shift-left d) per component.
                const P: [(u32, u32, u64, u32); 5] = [
                    (1, 53, 0xffff_ffff_ffff_fffe, 10),
                    (24, 50, 0xffff_ffff_ffff_fe00, 5),
                    (3, 23, 0xffff_ffff_ffff_f000, 29),
                    (5, 24, 0xffff_ffff_fffe_0000, 23),
                    (3, 33, 0xffff_ffff_ff80_0000, 8),
                ];
                for (c, &(a, b, m, d)) in s.iter_mut().zip(P.iter()) {
                    let x = ((*c << a) ^ *c) >> b;
                    *c = ((*c & m) << d) ^ x;
                }
                s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
            }
        }
    }

    /// The largest output (fio's `rand_max`).
    pub fn max(&self) -> u64 {
        match self {
            FioRand::Taus32(_) => u64::from(u32::MAX),
            FioRand::Taus64(_) => u64::MAX,
        }
    }

    /// A number in (0, 1] (fio's `__rand_0_1`): `(r + 1) / 2^bits`.
    pub fn next_0_1(&mut self) -> f64 {
        let span = self.max() as f64 + 1.0;
        (self.rand() as f64 + 1.0) / span
    }

    /// A number in `start..=end` (fio's `rand_between`): the output scaled
    /// by `(end - start + 1) / 2^bits`, truncated. The 32-bit generator
    /// works in 32 bits as fio does (`rand32_upto` truncates the span).
    pub fn between(&mut self, start: u64, end: u64) -> u64 {
        let r = self.rand();
        match self {
            FioRand::Taus32(_) => {
                let span = (end.wrapping_sub(start) as u32).wrapping_add(1);
                // fio converts through `int`; spans here are far below 2^31.
                let v = f64::from(span) * (r as f64 / 4_294_967_296.0);
                start.wrapping_add(v as i32 as u32 as u64)
            }
            FioRand::Taus64(_) => {
                let span = end.wrapping_sub(start).wrapping_add(1);
                let v = span as f64 * (r as f64 / 18_446_744_073_709_551_616.0);
                start.wrapping_add(v as u64)
            }
        }
    }
}

/// One step of fio's 32-bit Tausworthe generator over its three components
/// (each: shift left, xor, shift right, mask, shift left), and its output.
#[inline(always)]
pub fn taus32(s: &mut [u32; 3]) -> u32 {
    s[0] = ((s[0] & 0xffff_fffe) << 12) ^ (((s[0] << 13) ^ s[0]) >> 19);
    s[1] = ((s[1] & 0xffff_fff8) << 4) ^ (((s[1] << 2) ^ s[1]) >> 25);
    s[2] = ((s[2] & 0xffff_fff0) << 17) ^ (((s[2] << 3) ^ s[2]) >> 11);
    s[0] ^ s[1] ^ s[2]
}

/// `random_generator=`: which generator picks random blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generator {
    /// `tausworthe` (fio's default): 32-bit outputs.
    #[default]
    Tausworthe,
    /// `lfsr`: every block exactly once per pass, without a map.
    Lfsr,
    /// `tausworthe64`: 64-bit outputs.
    Tausworthe64,
}

impl Generator {
    /// fio's names, in fio's order.
    pub const NAMES: [(&'static str, Generator); 3] = [
        ("tausworthe", Generator::Tausworthe),
        ("lfsr", Generator::Lfsr),
        ("tausworthe64", Generator::Tausworthe64),
    ];

    /// The generator `random_generator=NAME` names.
    pub fn from_name(name: &str) -> Option<Generator> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, g)| g)
    }

    /// fio's `check_rand_gen_limits`: a file of more than 2^32 - 1 blocks
    /// exceeds the 32-bit generator; when `random_generator` was not given,
    /// fio switches to `tausworthe64` (and says so), otherwise it keeps the
    /// asked generator with a warning.
    pub fn for_blocks(asked: Option<Generator>, blocks: u64) -> Generator {
        match asked {
            Some(g) => g,
            None if blocks > u64::from(u32::MAX) => Generator::Tausworthe64,
            None => Generator::Tausworthe,
        }
    }
}

/// The streams fio seeds for each job, in fio's order (`FIO_RAND_*_OFF` in
/// `fio.h`): each gets its own seed from [`JobSeeds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Stream {
    /// Block sizes of reads (`bsrange`, `bssplit`).
    BsRead = 0,
    /// Block sizes of writes.
    BsWrite,
    /// Block sizes of trims.
    BsTrim,
    /// Verify.
    Verify,
    /// The read/write mix.
    Mix,
    /// Which file is next (`file_service_type`).
    File,
    /// Random blocks (the offset generator, the LFSR, distributions).
    Block,
    /// File sizes (`filesize` ranges).
    FileSize,
    /// Trims.
    Trim,
    /// Buffer contents.
    Buf,
    /// `percentage_random`: random or sequential, reads.
    SeqRandRead,
    /// `percentage_random`, writes.
    SeqRandWrite,
    /// `percentage_random`, trims.
    SeqRandTrim,
    /// `startdelay` ranges.
    StartDelay,
    /// Dedupe.
    Dedupe,
    /// `rate_process=poisson`, reads.
    PoissonRead,
    /// `zoned` and `zoned_abs` distributions: which zone.
    Zone,
    /// `rate_process=poisson`, writes.
    PoissonWrite,
    /// `rate_process=poisson`, trims.
    PoissonTrim,
}

/// How many seeds fio 3.35 and later derive per job (`FIO_RAND_NR_OFFS` in
/// fio 3.42 is 24; each seed depends only on the ones before it, so the
/// first [`Stream`]s are the same whatever the count).
pub const SEED_COUNT: usize = 24;

/// fio's `FIO_RANDSEED`, the seed of the offset stream before fio 3.35.
const FIO_RANDSEED_OLD: u64 = 0xb189_9bed;
/// The multiplier fio steps its seed chain with.
const SEED_STEP: u64 = 0x9e37_0001;
/// `randseed`'s default.
pub const DEFAULT_RANDSEED: u64 = 0x89;

/// Which of fio's seeding rules to follow. fio 3.35 changed them: before,
/// with the default `randrepeat=1` the offset stream was seeded from a
/// constant and the job's number whatever `randseed` said (so `randseed`
/// did not move random offsets); since, every stream comes from `randseed`.
/// Offsets are otherwise chosen the same way in fio 3.33 and 3.42.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Seeding {
    /// fio 3.35 and later.
    #[default]
    Since3_35,
    /// fio 3.34 and earlier (Debian 12 ships 3.33).
    Before3_35,
}

impl Seeding {
    /// The rules of fio `major.minor`.
    pub fn of_version(major: u32, minor: u32) -> Seeding {
        if (major, minor) < (3, 35) {
            Seeding::Before3_35
        } else {
            Seeding::Since3_35
        }
    }
}

/// The options that decide a job's seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedOptions {
    /// `randrepeat` (default true): the same streams on every run.
    pub randrepeat: bool,
    /// `randseed`, when the job file sets it (default [`DEFAULT_RANDSEED`]).
    pub randseed: Option<u64>,
    /// `allrandrepeat` (before fio 3.35 a separate option, default false;
    /// since, another name for `randrepeat`).
    pub allrandrepeat: bool,
}

impl Default for SeedOptions {
    fn default() -> SeedOptions {
        SeedOptions {
            randrepeat: true,
            randseed: None,
            allrandrepeat: false,
        }
    }
}

impl SeedOptions {
    /// Whether the seeds come from the operating system: `randrepeat=0`
    /// without `randseed` (fio reads `/dev/urandom`).
    pub fn needs_entropy(&self) -> bool {
        !self.randrepeat && self.randseed.is_none()
    }

    /// Whether each `loops` pass starts the streams again from their seeds
    /// (fio re-seeds when `randrepeat` is in force at run time; setting
    /// `randseed` turns it off, so later passes go on with the stream).
    pub fn reseeds_each_loop(&self) -> bool {
        self.randrepeat && self.randseed.is_none()
    }
}

/// A job's seeds, one per [`Stream`] (fio's `td->rand_seeds[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSeeds {
    seeds: [u64; SEED_COUNT],
}

impl JobSeeds {
    /// The seeds fio gives the job numbered `thread_number` (1-based, in the
    /// order fio adds jobs: each job, then its `numjobs` clones, file after
    /// file). `random` is whether the job does random I/O (fio 3.34 and
    /// earlier override the offset seed only then). `entropy` is asked for
    /// only when [`SeedOptions::needs_entropy`]; it must give fresh random
    /// words (the operating system's), as fio reads `/dev/urandom`.
    pub fn new(
        opts: &SeedOptions,
        thread_number: u64,
        random: bool,
        seeding: Seeding,
        entropy: impl FnOnce() -> [u64; SEED_COUNT],
    ) -> JobSeeds {
        let mut seeds = if opts.needs_entropy() {
            entropy()
        } else {
            let mut seed = opts.randseed.unwrap_or(DEFAULT_RANDSEED);
            for _ in 0..4 {
                seed = seed.wrapping_mul(SEED_STEP);
            }
            let mut s = [0u64; SEED_COUNT];
            for (i, v) in s.iter_mut().enumerate() {
                *v = seed.wrapping_mul(thread_number).wrapping_add(i as u64);
                seed = seed.wrapping_mul(SEED_STEP);
            }
            s
        };
        if seeding == Seeding::Before3_35 {
            // fio 3.34 and earlier: `allrandrepeat` replaces every seed, and
            // `randrepeat` (as given: `randseed` turns it off only later)
            // replaces the offset seed of a random job.
            let base = FIO_RANDSEED_OLD.wrapping_mul(thread_number);
            if opts.allrandrepeat {
                for (i, v) in seeds.iter_mut().enumerate() {
                    *v = base.wrapping_add(i as u64);
                }
            }
            if random && opts.randrepeat {
                seeds[Stream::Block as usize] = base;
            }
        }
        JobSeeds { seeds }
    }

    /// The seed of `stream`.
    pub fn get(&self, stream: Stream) -> u64 {
        self.seeds[stream as usize]
    }

    /// A generator seeded for `stream` (fio's `init_rand_seed`).
    pub fn rand(&self, stream: Stream, use64: bool) -> FioRand {
        FioRand::new(self.get(stream), use64)
    }
}

/// Tap positions of a maximal-length LFSR of each width from 3 to 63 bits
/// (the widely published table fio uses; the first entry is the width).
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// Why an LFSR cannot be set up (fio: "failed initializing LFSR", and the
/// job is not run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LfsrError {
    /// No blocks to pick from.
    Empty,
    /// More blocks than a 63-bit LFSR has states.
    TooManyBlocks(u64),
    /// `spin` above 15.
    Spin(u32),
    /// The seed's low bits are all ones, the one state an XNOR LFSR never
    /// leaves: another `randseed` (or job number) is needed.
    LockedSeed(u64),
}

impl std::fmt::Display for LfsrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LfsrError::Empty => write!(f, "random_generator=lfsr needs at least one block; make size at least bs"),
            LfsrError::TooManyBlocks(n) => write!(f, "random_generator=lfsr handles fewer than 2^63 blocks, not {n}; use a larger bs or tausworthe64"),
            LfsrError::Spin(s) => write!(f, "an LFSR spins at most 15 steps, not {s}"),
            LfsrError::LockedSeed(s) => write!(f, "seed {s:#x} puts the LFSR in its all-ones state, which it never leaves (fio refuses it too); choose another randseed"),
        }
    }
}

impl std::error::Error for LfsrError {}

/// fio's LFSR (`lib/lfsr.c`): an XNOR shift register of the smallest width
/// whose states cover `0..blocks`, stepped `spin + 1` times per output;
/// states above the last block are skipped, so a pass returns each block
/// once, then `next` answers `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lfsr {
    xormask: u64,
    state: u64,
    top_bit: u64,
    max_val: u64,
    returned: u64,
    cycle: u64,
    cycle_len: u64,
    spin: u32,
}

impl Lfsr {
    /// An LFSR over `0..blocks` from `seed` (fio's `lfsr_init`; fio always
    /// passes `spin` 0 and the job's [`Stream::Block`] seed).
    pub fn new(blocks: u64, seed: u64, spin: u32) -> Result<Lfsr, LfsrError> {
        if blocks == 0 {
            return Err(LfsrError::Empty);
        }
        let width = (3..64)
            .find(|&i| (1u64 << i) > blocks)
            .ok_or(LfsrError::TooManyBlocks(blocks))?;
        let taps = TAPS[width];
        if spin > 15 {
            return Err(LfsrError::Spin(spin));
        }
        let top_bit = 1u64 << (taps[0] - 1);
        let mut l = Lfsr {
            xormask: taps.iter().fold(0, |m, &t| m | 1u64 << (t - 1)),
            state: 0,
            top_bit,
            max_val: blocks - 1,
            returned: 0,
            cycle: 0,
            cycle_len: 0,
            spin,
        };
        // A spin can make the sequence repeat a sub-cycle early: fio finds
        // the first i in 1..=spin with (2^n - 1) * i divisible by spin + 1
        // and adds one step every cycle of that length.
        let max = (top_bit << 1) - 1;
        let s1 = u64::from(spin) + 1;
        let (x, y) = (max / s1, max % s1);
        for i in 1..=u64::from(spin) {
            if (y * i) % s1 == 0 {
                l.cycle = x * i + (y * i) / s1;
                break;
            }
        }
        l.cycle_len = l.cycle;
        // fio counts one more the first time, so the first output takes one
        // step more than the rest (`prepare_spin`).
        l.cycle += 1;
        l.reset(seed)?;
        Ok(l)
    }

    /// Start a new pass from `seed` (fio's `lfsr_reset`, at each file reset).
    pub fn reset(&mut self, seed: u64) -> Result<(), LfsrError> {
        let mask = (self.top_bit << 1) - 1;
        self.returned = 0;
        self.state = seed & mask;
        if self.state == mask {
            return Err(LfsrError::LockedSeed(seed));
        }
        Ok(())
    }

    fn step(&mut self, spin: u32) {
        // fio's switch falls through `spin + 1` steps for 0..=15, none above.
        let n = if spin <= 15 { spin + 1 } else { 0 };
        for _ in 0..n {
            let v = self.state;
            self.state = ((v >> 1) | self.top_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
        }
    }

    /// The next block of this pass, or `None` once the pass has returned as
    /// many blocks as there are (fio's `lfsr_next`).
    pub fn next_block(&mut self) -> Option<u64> {
        let n = self.returned;
        self.returned += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle != 0 {
                self.cycle -= 1;
                if self.cycle == 0 {
                    self.step(self.spin + 1);
                    self.cycle = self.cycle_len;
                } else {
                    self.step(self.spin);
                }
            } else {
                self.step(self.spin);
            }
            if self.state <= self.max_val {
                return Some(self.state);
            }
        }
    }
}

/// Which blocks of a file this pass has read: fio's random map (`axmap`).
/// One bit per block (fio sizes it by the smallest block size), plus a
/// summary level per 64 words below it where a set bit means "that word is
/// full", so the next unread block is found in a few word reads however
/// full the map is. Memory: `blocks / 8` bytes and under 2% more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockMap {
    /// `levels[0]` holds a bit per block; `levels[k + 1]` a bit per word of
    /// `levels[k]`, set when that word is all ones.
    levels: Vec<Vec<u64>>,
    blocks: u64,
}

impl BlockMap {
    /// A map of `blocks` blocks, none read (fio's `axmap_new`).
    pub fn new(blocks: u64) -> BlockMap {
        let mut levels = Vec::new();
        let mut n = blocks;
        loop {
            let words = n.div_ceil(64).max(1);
            levels.push(vec![0u64; words as usize]);
            if words <= 1 {
                break;
            }
            n = words;
        }
        BlockMap { levels, blocks }
    }

    /// How many blocks the map covers.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Forget every read (fio's `axmap_reset`, at each new pass).
    pub fn reset(&mut self) {
        for l in &mut self.levels {
            l.fill(0);
        }
    }

    /// Whether `block` has been read this pass.
    pub fn is_set(&self, block: u64) -> bool {
        block < self.capacity() && self.bit(0, block)
    }

    fn capacity(&self) -> u64 {
        self.levels[0].len() as u64 * 64
    }

    fn bit(&self, level: usize, i: u64) -> bool {
        self.levels[level][(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    fn set_bit(&mut self, mut i: u64) {
        for level in 0..self.levels.len() {
            let w = &mut self.levels[level][(i / 64) as usize];
            *w |= 1 << (i % 64);
            if *w != u64::MAX {
                return;
            }
            i /= 64;
        }
    }

    /// Mark up to `n` blocks from `block` as read, stopping at the first
    /// block already read; returns how many were marked (fio's
    /// `axmap_set_nr`: a read whose tail overlaps an earlier one is cut to
    /// the blocks that were free). As in fio, a run may start at the block
    /// just past the end and run to the end of its 64-block word.
    pub fn set_run(&mut self, mut block: u64, mut n: u64) -> u64 {
        let mut marked = 0;
        while n > 0 {
            if block > self.blocks || block >= self.capacity() {
                break;
            }
            let chunk = n.min(64 - block % 64);
            let mut done = 0;
            while done < chunk && !self.bit(0, block + done) {
                self.set_bit(block + done);
                done += 1;
            }
            marked += done;
            if done != chunk {
                break;
            }
            n -= done;
            block += done;
        }
        marked
    }

    /// The first index at or after `i` whose bit at `level` is clear.
    fn next_clear(&self, level: usize, mut i: u64) -> Option<u64> {
        let words = &self.levels[level];
        let valid = if level == 0 {
            self.capacity()
        } else {
            self.levels[level - 1].len() as u64
        };
        loop {
            if i >= valid {
                return None;
            }
            let w = i / 64;
            let free = !words[w as usize] & (u64::MAX << (i % 64));
            if free != 0 {
                let r = w * 64 + u64::from(free.trailing_zeros());
                return (r < valid).then_some(r);
            }
            i = if level + 1 < self.levels.len() {
                self.next_clear(level + 1, w + 1)? * 64
            } else {
                (w + 1) * 64
            };
        }
    }

    fn first_free_from(&self, block: u64) -> Option<u64> {
        self.next_clear(0, block).filter(|&b| b < self.blocks)
    }

    /// The first unread block after `block`, wrapping to the start (fio's
    /// `axmap_next_free`); `None` when every block has been read.
    pub fn next_free(&self, block: u64) -> Option<u64> {
        if block >= self.blocks {
            return None;
        }
        let next = if block + 1 == self.blocks {
            0
        } else {
            block + 1
        };
        match self.first_free_from(next) {
            None if next != 0 => self.first_free_from(0),
            r => r,
        }
    }
}

/// How a file's random blocks are drawn: from the job's Tausworthe stream
/// (with or without the random map), or from the file's own LFSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileBlocks {
    /// `tausworthe`/`tausworthe64`; `Some` map unless `norandommap` (or a
    /// non-uniform distribution, or `blockalign`, which turn it off).
    Taus(Option<BlockMap>),
    /// `lfsr`: no map; the register itself visits each block once.
    Lfsr(Lfsr),
}

impl FileBlocks {
    /// A file of `blocks` map blocks (its size over the job's smallest block
    /// size: fio's `init_random_map`), its LFSR seeded with `block_seed`
    /// ([`Stream::Block`]).
    pub fn new(
        gen: Generator,
        blocks: u64,
        randommap: bool,
        block_seed: u64,
    ) -> Result<FileBlocks, LfsrError> {
        Ok(match gen {
            Generator::Lfsr => FileBlocks::Lfsr(Lfsr::new(blocks, block_seed, 0)?),
            _ => FileBlocks::Taus(randommap.then(|| BlockMap::new(blocks))),
        })
    }

    /// Start a new pass (fio's `fio_file_reset`: the map is cleared, the
    /// LFSR restarts from the block seed).
    pub fn reset(&mut self, block_seed: u64) -> Result<(), LfsrError> {
        match self {
            FileBlocks::Taus(map) => {
                if let Some(m) = map {
                    m.reset();
                }
                Ok(())
            }
            FileBlocks::Lfsr(l) => l.reset(block_seed),
        }
    }

    /// The map, when this file keeps one.
    pub fn map_mut(&mut self) -> Option<&mut BlockMap> {
        match self {
            FileBlocks::Taus(m) => m.as_mut(),
            FileBlocks::Lfsr(_) => None,
        }
    }

    /// One random block below `last_block` (fio's `__get_next_rand_offset`):
    /// the generator's output scaled to `0..last_block`; with a map, a block
    /// read already this pass moves to the next unread one. `None` when the
    /// pass is over (map full, LFSR exhausted). `offsets` is the job's
    /// [`Stream::Block`] generator (the LFSR does not use it).
    pub fn next_block(&mut self, offsets: &mut FioRand, last_block: u64) -> Option<u64> {
        let b = match self {
            FileBlocks::Lfsr(l) => return l.next_block(),
            FileBlocks::Taus(_) => {
                let r = offsets.rand();
                (last_block as f64 * (r as f64 / (offsets.max() as f64 + 1.0))) as u64
            }
        };
        match self.map_mut() {
            Some(m) if m.is_set(b) => m.next_free(b),
            _ => Some(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fio_check;

    /// fio 3.42's debug output (`--debug=random`) for job 1 with the default
    /// seeds: `rand_seeds[6]`, then the first offset draws ("off rand").
    #[test]
    fn default_seeds_and_first_draws_match_fio() {
        let s = JobSeeds::new(
            &SeedOptions::default(),
            1,
            true,
            Seeding::Since3_35,
            || unreachable!(),
        );
        assert_eq!(s.get(Stream::BsRead), 5942511153023025289);
        assert_eq!(s.get(Stream::Block), 6803328749335347343);
        assert_eq!(s.get(Stream::FileSize), 2330239258251821200);
        let mut r = s.rand(Stream::Block, false);
        assert_eq!(
            [r.rand(), r.rand(), r.rand()],
            [4196289317, 3719163915, 2820806093]
        );
        // fio 3.33 seeds the offsets from 0xb1899bed times the job number.
        let s = JobSeeds::new(
            &SeedOptions::default(),
            1,
            true,
            Seeding::Before3_35,
            || unreachable!(),
        );
        let mut r = s.rand(Stream::Block, false);
        assert_eq!(
            [r.rand(), r.rand(), r.rand()],
            [259043585, 3179521932, 3621444214]
        );
    }

    #[test]
    fn randseed_moves_offsets_only_since_3_35() {
        let o = SeedOptions {
            randseed: Some(1234),
            ..Default::default()
        };
        let new = JobSeeds::new(&o, 1, true, Seeding::Since3_35, || unreachable!());
        assert_eq!(new.rand(Stream::Block, false).rand(), 320323601);
        let old = JobSeeds::new(&o, 1, true, Seeding::Before3_35, || unreachable!());
        assert_eq!(old.rand(Stream::Block, false).rand(), 259043585);
        assert!(!o.reseeds_each_loop());
    }

    #[test]
    fn entropy_is_asked_only_without_randrepeat_and_randseed() {
        let o = SeedOptions {
            randrepeat: false,
            ..Default::default()
        };
        let s = JobSeeds::new(&o, 3, true, Seeding::Since3_35, || [7; SEED_COUNT]);
        assert_eq!(s.get(Stream::Block), 7);
    }

    #[test]
    fn tausworthe64_is_deterministic_and_uses_all_bits() {
        let mut r = FioRand::new(12345, true);
        let v: Vec<u64> = (0..64).map(|_| r.rand()).collect();
        assert!(v.iter().any(|&x| x > u64::from(u32::MAX)));
        assert_eq!(FioRand::new(12345, true).rand(), v[0]);
        let x = FioRand::new(1, true).next_0_1();
        assert!(x > 0.0 && x <= 1.0);
    }

    #[test]
    fn between_stays_in_range() {
        let mut r = FioRand::new(99, false);
        for _ in 0..10_000 {
            let v = r.between(1, 100);
            assert!((1..=100).contains(&v), "{v}");
        }
    }

    #[test]
    fn lfsr_visits_every_block_once_per_pass() {
        for blocks in [1u64, 2, 7, 8, 100, 1000, 4096] {
            let mut l = Lfsr::new(blocks, 0x1234_5678, 0).unwrap();
            let mut seen = vec![false; blocks as usize];
            for _ in 0..blocks {
                let b = l.next_block().expect("a block per call within a pass");
                assert!(!seen[b as usize], "block {b} twice of {blocks}");
                seen[b as usize] = true;
            }
            assert_eq!(l.next_block(), None, "pass of {blocks} is over");
        }
    }

    #[test]
    fn lfsr_refuses_what_fio_refuses() {
        assert_eq!(Lfsr::new(0, 1, 0), Err(LfsrError::Empty));
        assert_eq!(Lfsr::new(10, 1, 16), Err(LfsrError::Spin(16)));
        // 10 blocks: a 4-bit register; a seed of all ones locks it.
        assert_eq!(Lfsr::new(10, 0xf, 0), Err(LfsrError::LockedSeed(0xf)));
    }

    #[test]
    fn block_map_marks_runs_and_finds_the_next_free_block() {
        let mut m = BlockMap::new(200);
        assert_eq!(m.set_run(10, 5), 5);
        assert_eq!(m.set_run(8, 5), 2, "stops at the first block already read");
        assert_eq!(m.next_free(9), Some(15));
        assert_eq!(m.next_free(199), Some(0), "wraps to the start");
        for b in 0..200 {
            m.set_run(b, 1);
        }
        assert_eq!(m.next_free(5), None);
        m.reset();
        assert!(!m.is_set(10));
    }

    #[test]
    fn block_map_summary_levels_skip_full_words() {
        // 64^3 blocks: three levels; fill all but one block far away.
        let n = 64u64 * 64 * 64;
        let mut m = BlockMap::new(n);
        let hole = n - 777;
        let mut b = 0;
        while b < n {
            let k = m.set_run(b, 64);
            b += k.max(1);
        }
        m.levels[0][(hole / 64) as usize] &= !(1 << (hole % 64));
        // Clear the summary bits above the hole, as a map that never had it set.
        let mut i = hole / 64;
        for l in 1..m.levels.len() {
            m.levels[l][(i / 64) as usize] &= !(1 << (i % 64));
            i /= 64;
        }
        assert_eq!(m.next_free(3), Some(hole));
        assert_eq!(m.next_free(hole + 5), Some(hole), "found after wrapping");
    }

    /// The LFSR's first output takes one step more than the rest (fio's
    /// `prepare_spin`); sizes whose first state is a block show it.
    #[test]
    fn lfsr_offsets_match_fio() {
        let Some(fios) = fio_check::fios("lfsr_offsets_match_fio") else {
            return;
        };
        for fio in &fios {
            for blocks in [511u64, 1000, 37] {
                let size = format!("--size={}k", blocks * 4);
                let got =
                    fio.reads(&["--rw=randread", "--bs=4k", &size, "--random_generator=lfsr"]);
                let seeds = JobSeeds::new(
                    &SeedOptions::default(),
                    1,
                    true,
                    Seeding::of_version(fio.major, fio.minor),
                    || unreachable!(),
                );
                let mut l = Lfsr::new(blocks, seeds.get(Stream::Block), 0).unwrap();
                let want: Vec<(u64, u64)> = (0..blocks)
                    .map(|_| (l.next_block().unwrap() * 4096, 4096))
                    .collect();
                assert_eq!(got, want, "{} {blocks} blocks", fio.version);
            }
        }
    }

    /// Offsets of plain `randread` jobs, offset for offset against fio.
    #[test]
    fn randread_offsets_match_fio() {
        let Some(fios) = fio_check::fios("randread_offsets_match_fio") else {
            return;
        };
        for fio in &fios {
            for (gen, extra) in [
                (Generator::Tausworthe, ""),
                (Generator::Lfsr, "--random_generator=lfsr"),
                (Generator::Tausworthe64, "--random_generator=tausworthe64"),
            ] {
                for norandommap in [false, true] {
                    let blocks = 300u64;
                    let mut args = vec!["--rw=randread", "--bs=4k", "--size=1200k"];
                    if !extra.is_empty() {
                        args.push(extra);
                    }
                    if norandommap {
                        args.push("--norandommap");
                    }
                    let got = fio.reads(&args);
                    let seeds = JobSeeds::new(
                        &SeedOptions::default(),
                        1,
                        true,
                        Seeding::of_version(fio.major, fio.minor),
                        || unreachable!(),
                    );
                    let mut rng = seeds.rand(Stream::Block, gen == Generator::Tausworthe64);
                    let mut file =
                        FileBlocks::new(gen, blocks, !norandommap, seeds.get(Stream::Block))
                            .unwrap();
                    let mut want = Vec::new();
                    for _ in 0..got.len() {
                        let b = file.next_block(&mut rng, blocks).unwrap();
                        if let Some(m) = file.map_mut() {
                            m.set_run(b, 1);
                        }
                        want.push((b * 4096, 4096));
                    }
                    assert_eq!(
                        got.len() as u64,
                        blocks,
                        "{} {gen:?}: one pass",
                        fio.version
                    );
                    assert_eq!(
                        got, want,
                        "{} {gen:?} norandommap={norandommap}",
                        fio.version
                    );
                }
            }
        }
    }
}
