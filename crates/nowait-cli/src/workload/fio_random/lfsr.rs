//! fio's maximal-length LFSR (`random_generator=lfsr`, `lib/lfsr.c`): a
//! register of the smallest width that covers a file's blocks, stepped
//! past the numbers beyond them, so that one pass visits every block once
//! without a map.

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
    /// passes `spin` 0 and the job's [`Stream::Block`](super::Stream::Block) seed).
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
