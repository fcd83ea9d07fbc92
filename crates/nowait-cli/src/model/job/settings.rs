//! The [`Settings`] of an invocation: what is not a job's
//! (`--output-format`, `--output`, `--compare-fio`, `--peak`, …).

use std::path::PathBuf;

use super::FioVersion;
use crate::model::measuring::Format;

/// Settings of the invocation rather than of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--output-format`.
    pub format: Format,
    /// `--output FILE`.
    pub output: Option<PathBuf>,
    /// `--plot FILE.svg`.
    pub plot: Option<PathBuf>,
    /// `--compare-fio`.
    pub compare_fio: bool,
    /// `--compare-rounds`: ours/fio alternations per job.
    pub compare_rounds: usize,
    /// `--fio-timeout`: how long a fio run may take (`None`: worked out
    /// from the jobs, `crate::fio::limit`; zero: no limit).
    pub fio_timeout: Option<std::time::Duration>,
    /// `--abba`: sets of fio, nowait, nowait, fio per job (0: off).
    pub abba: usize,
    /// `--peak`: the lean peak-IOPS loop (like fio's t/io_uring).
    pub peak: bool,
    /// `--section`: only these jobs of the first job file.
    pub sections: Vec<String>,
    /// `--exclude-section`: not these jobs.
    pub exclude_sections: Vec<String>,
    /// `--like-fio`: follow this fio's rules where versions differ.
    pub like_fio: Option<FioVersion>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            format: Format::default(),
            output: None,
            plot: None,
            compare_fio: false,
            compare_rounds: 1,
            fio_timeout: None,
            abba: 0,
            peak: false,
            sections: Vec::new(),
            exclude_sections: Vec::new(),
            like_fio: None,
        }
    }
}
