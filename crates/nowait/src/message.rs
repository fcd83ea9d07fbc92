//! What an error says: what was asked, what failed and what to do, in words
//! that hold in every front end.
//!
//! The settings a message names (a direct mode, a backend, a queue depth)
//! are spelled by a [`Vocabulary`]: the library's own words
//! ([`PlainWords`], which an error's `Display` uses), or a front end's: the
//! C API says `NOWAIT_DIRECT_AUTO`, Python `direct="auto"`, the CLI
//! `--direct=0`. Each front end renders the error itself with its
//! vocabulary ([`Error::message`]); none rewrites another's text. A front
//! end with no way to ask for a choice says so (`None`), and the message
//! leaves that choice out of what to do.
//!
//! The kernel's answer is given as the system's words and the errno's name
//! (`No such file or directory (ENOENT)`), which read the same from C,
//! Python and Rust.

use std::borrow::Cow;
use std::fmt;
use std::io;

use crate::error::{ConfigError, Error};
use crate::setting::{BackendChoice, BackendKind, Direct, Setting};
use crate::sys::names::errno_name;

/// How a front end spells the settings an error message names. Every
/// method has a default, the library's own words ([`PlainWords`]); a front
/// end overrides those it has a name for.
pub trait Vocabulary {
    /// The name of a numeric setting: "queue depth" (C `opts->depth`,
    /// Python `depth`, CLI `--iodepth`).
    fn setting(&self, setting: Setting) -> Cow<'static, str> {
        Cow::Borrowed(match setting {
            Setting::Depth => "queue depth",
            Setting::PoolWorkers => "pool worker count",
            Setting::FixedBuffers => "fixed buffers",
        })
    }

    /// A setting given a value, as the caller wrote it: "queue depth 0"
    /// (C `opts->depth = 0`, Python `depth=0`, CLI `--iodepth=0`).
    fn assigned(&self, setting: Setting, value: &dyn fmt::Display) -> String {
        format!("{} {value}", self.setting(setting))
    }

    /// A direct mode as this front end asks for it ("direct mode auto";
    /// C `NOWAIT_DIRECT_AUTO`, Python `direct="auto"`), or `None` if it
    /// offers no way to ask for it (the message then leaves it out).
    fn direct(&self, mode: Direct) -> Option<Cow<'static, str>> {
        Some(Cow::Borrowed(match mode {
            Direct::Off => "direct mode off",
            Direct::On => "direct mode on",
            Direct::Auto => "direct mode auto",
        }))
    }

    /// A backend choice as this front end asks for it ("the pool backend",
    /// "the automatic backend choice"; C `NOWAIT_BACKEND_POOL`, CLI
    /// `--ioengine=pool`), or `None` if it offers no way to ask for it.
    fn backend(&self, choice: BackendChoice) -> Option<Cow<'static, str>> {
        Some(match choice {
            BackendChoice::Auto => Cow::Borrowed("the automatic backend choice"),
            BackendChoice::Exactly(kind) => Cow::Owned(format!("the {kind} backend")),
        })
    }
}

/// The library's own words, the same for every front end: what an error's
/// `Display` says.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainWords;

impl Vocabulary for PlainWords {}

/// An error's message in a front end's words ([`Error::message`],
/// [`ConfigError::message`]); write it with `{}` or `to_string()`.
pub struct Message<'a> {
    subject: Subject<'a>,
    words: &'a dyn Vocabulary,
}

enum Subject<'a> {
    Error(&'a Error),
    Config(&'a ConfigError),
}

impl Error {
    /// The message, with the settings it names spelled by `words` (the
    /// error's `Display` is `self.message(&PlainWords)`).
    pub fn message<'a>(&'a self, words: &'a dyn Vocabulary) -> Message<'a> {
        Message {
            subject: Subject::Error(self),
            words,
        }
    }
}

impl ConfigError {
    /// The message, with the setting at fault spelled by `words`.
    pub fn message<'a>(&'a self, words: &'a dyn Vocabulary) -> Message<'a> {
        Message {
            subject: Subject::Config(self),
            words,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message(&PlainWords).fmt(f)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message(&PlainWords).fmt(f)
    }
}

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.subject {
            Subject::Error(e) => error(e, self.words, f),
            Subject::Config(c) => config(c, self.words, f),
        }
    }
}

fn error(e: &Error, w: &dyn Vocabulary, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match e {
        Error::Open { path, source } => write!(
            f,
            "cannot open {}: {}{}",
            path.display(),
            Kernel(source),
            open_hint(source)
        ),
        Error::IsDirectory { path } => write!(
            f,
            "{} is a directory; nowait reads regular files and block devices: pass a file inside it",
            path.display()
        ),
        Error::Unsupported { path, kind } => write!(
            f,
            "{} is a {kind}, not a regular file or block device; nowait reads only those, at \
             file offsets: pass one of them, or read the {kind} sequentially",
            path.display()
        ),
        Error::DirectUnsupported { path, reason } => {
            write!(
                f,
                "{} cannot be opened with O_DIRECT ({reason}); ",
                path.display()
            )?;
            let named = [
                (w.direct(Direct::Off), "buffered"),
                (w.direct(Direct::Auto), "O_DIRECT where the filesystem allows it"),
            ];
            if !either(f, "ask for ", &named, "")? {
                f.write_str("open it buffered")?;
            }
            Ok(())
        }
        Error::Misaligned {
            path,
            offset,
            len,
            offset_align,
            mem_align,
        } => {
            write!(
                f,
                "O_DIRECT read of {len} bytes at offset {offset} on {} is not aligned (offset \
                 and length must be multiples of {offset_align}, the buffer address of \
                 {mem_align}); align the request",
                path.display()
            )?;
            if let Some(auto) = w.direct(Direct::Auto) {
                write!(
                    f,
                    ", or open the file with {auto} to bounce it through an aligned buffer"
                )?;
            }
            Ok(())
        }
        Error::BufferTooSmall { len, capacity } => write!(
            f,
            "read of {len} bytes does not fit the {capacity}-byte buffer it was given; pass a \
             buffer of at least {len} bytes or read less"
        ),
        Error::TooLarge { len, max } => write!(
            f,
            "read of {len} bytes is larger than the {max}-byte limit of a single request; split it"
        ),
        Error::OffsetTooLarge { offset, len } => write!(
            f,
            "read of {len} bytes at offset {offset} ends past the largest file offset ({}); \
             offsets and lengths must fit a signed 64-bit file position",
            i64::MAX
        ),
        Error::QueueFull { depth } => write!(
            f,
            "all {depth} slots of the queue are in flight; reap completions before pushing \
             more, or build the queue with a larger {}",
            w.setting(Setting::Depth)
        ),
        Error::Read {
            path,
            offset,
            len,
            source,
        } => write!(
            f,
            "read of {len} bytes at offset {offset} of {} failed: {}{}",
            path.display(),
            Kernel(source),
            read_hint(source)
        ),
        Error::BadPosition { path, asked } => write!(
            f,
            "{asked} on {} names no valid file position: positions run from 0 to {}, and a \
             range must start at or before its end; ask for one inside those bounds",
            path.display(),
            i64::MAX
        ),
        Error::UnexpectedEof {
            path,
            offset,
            len,
            got,
        } => write!(
            f,
            "read of {len} bytes at offset {offset} of {} reached end of file after {got} bytes",
            path.display()
        ),
        Error::FileTooLarge { path, limit } => write!(
            f,
            "{} is larger than the {limit}-byte limit of a whole-file read; raise the limit \
             or read the file in ranges",
            path.display()
        ),
        Error::BackendUnavailable {
            backend: BackendChoice::Exactly(kind),
            reason,
        } => {
            write!(f, "the {kind} backend cannot be set up here: {reason}")?;
            let (instead, why): (&[BackendChoice], &str) = match kind {
                BackendKind::Uring | BackendKind::AioPool => (
                    &[BackendChoice::Exactly(BackendKind::Pool), BackendChoice::Auto],
                    " to fall back",
                ),
                BackendKind::Aio => (
                    &[
                        BackendChoice::Exactly(BackendKind::Uring),
                        BackendChoice::Exactly(BackendKind::Pool),
                    ],
                    "",
                ),
                BackendKind::Pool => (
                    &[BackendChoice::Exactly(BackendKind::Sync)],
                    " to read on the calling thread",
                ),
                BackendKind::Sync => (&[], ""),
            };
            let named: Vec<(Option<Cow<'static, str>>, &str)> =
                instead.iter().map(|&b| (w.backend(b), "")).collect();
            either(f, "; ask for ", &named, why).map(|_| ())
        }
        Error::BackendUnavailable {
            backend: BackendChoice::Auto,
            reason,
        } => write!(f, "no backend can be set up here: {reason}"),
        Error::Kernel { what, source } => write!(f, "{what} failed: {}", Kernel(source)),
        Error::Config(c) => config(c, w, f),
        Error::Closed(m) => f.write_str(m),
    }
}

fn config(c: &ConfigError, w: &dyn Vocabulary, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match c {
        ConfigError::Depth { depth, max } => write!(
            f,
            "{} is out of range: it must be between 1 and {max}",
            w.assigned(Setting::Depth, depth)
        ),
        ConfigError::PoolWorkers { workers, max } => write!(
            f,
            "{} is out of range: it must be between 1 and {max}",
            w.assigned(Setting::PoolWorkers, workers)
        ),
        ConfigError::CompletionFdLate { in_flight } => write!(
            f,
            "the completion fd was asked for with {in_flight} reads in flight; ask for it \
             right after building the queue, before the first push"
        ),
        ConfigError::FixedBuffers { count, size } => write!(
            f,
            "{}: {count} buffers of {size} bytes is out of range (1 to 65535 buffers, of at \
             least 1 byte)",
            w.setting(Setting::FixedBuffers)
        ),
    }
}

/// Write `lead`, the choices this front end can name ("A (what it does) or
/// B"), then `tail`; nothing if it can name none. Returns whether it wrote.
fn either(
    f: &mut fmt::Formatter<'_>,
    lead: &str,
    choices: &[(Option<Cow<'static, str>>, &str)],
    tail: &str,
) -> Result<bool, fmt::Error> {
    let named: Vec<_> = choices
        .iter()
        .filter_map(|(name, what)| name.as_ref().map(|n| (n, *what)))
        .collect();
    if named.is_empty() {
        return Ok(false);
    }
    f.write_str(lead)?;
    for (i, (name, what)) in named.iter().enumerate() {
        if i > 0 {
            f.write_str(" or ")?;
        }
        f.write_str(name)?;
        if !what.is_empty() {
            write!(f, " ({what})")?;
        }
    }
    f.write_str(tail)?;
    Ok(true)
}

/// The kernel's answer: the system's words and the errno's name
/// ("No such file or directory (ENOENT)"); an answer without an errno as
/// it is.
struct Kernel<'a>(&'a io::Error);

impl fmt::Display for Kernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.raw_os_error() {
            Some(errno) => write!(f, "{} ({})", errno_text(errno), errno_name(errno)),
            None => self.0.fmt(f),
        }
    }
}

/// The system's words for an errno (strerror(3)'s): "No such file or
/// directory" for ENOENT; the sign is ignored.
pub fn errno_text(errno: i32) -> String {
    let errno = errno.checked_abs().unwrap_or(i32::MAX);
    let text = io::Error::from_raw_os_error(errno).to_string();
    // std writes strerror's words then " (os error N)", and has no call
    // for the words alone: keep them.
    match text.strip_suffix(&format!(" (os error {errno})")) {
        Some(words) => words.to_string(),
        None => text,
    }
}

fn open_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "; check the path",
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "; check the file's permissions or run as a user that may read it"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "; raise the limit of open files (RLIMIT_NOFILE, ulimit -n)"
        }
        Some(libc::ENAMETOOLONG) => "; shorten the path",
        _ => "",
    }
}

fn read_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EIO) => "; the device reported an error: check the kernel log (dmesg)",
        Some(libc::EINVAL) => {
            "; the kernel refused the request: on an O_DIRECT file check the alignment; \
             with an I/O priority of its own, check its class (IOPRIO_CLASS_RT, _BE or _IDLE) \
             and level (0 to 7)"
        }
        Some(libc::EFAULT) => "; the memory the read was given is not writable",
        Some(libc::EPERM) => {
            "; not permitted: a read with the real-time I/O priority class needs \
             CAP_SYS_ADMIN"
        }
        Some(libc::ECANCELED) => "; the request was cancelled",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::samples;

    #[test]
    fn misaligned_message_names_offset_len_and_alignment() {
        let e = Error::Misaligned {
            path: "/data/f".into(),
            offset: 4097,
            len: 4096,
            offset_align: 512,
            mem_align: 512,
        };
        let s = e.to_string();
        assert!(s.contains("offset 4097"), "{s}");
        assert!(s.contains("4096 bytes"), "{s}");
        assert!(s.contains("multiples of 512"), "{s}");
        assert!(s.contains("direct mode auto"), "{s}");
    }

    #[test]
    fn open_error_names_the_errno_and_what_to_do() {
        let e = Error::Open {
            path: "/nope".into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        };
        assert_eq!(
            e.to_string(),
            "cannot open /nope: No such file or directory (ENOENT); check the path"
        );
    }

    /// The library's words name no front end's items: no Rust paths, no
    /// CLI flags, no "(os error N)" tails, no C or Python spellings.
    #[test]
    fn plain_messages_hold_in_every_front_end() {
        for (name, e) in samples() {
            let m = e.to_string();
            for bad in ["::", "--", "(os error", "NOWAIT_", "=\""] {
                assert!(!m.contains(bad), "{name}: {m:?} contains {bad:?}");
            }
            assert!(!m.is_empty(), "{name}");
        }
    }

    /// A front end's vocabulary names its own settings, and leaves out a
    /// choice it cannot ask for.
    #[test]
    fn a_vocabulary_spells_the_choices() {
        struct Flags;
        impl Vocabulary for Flags {
            fn setting(&self, s: Setting) -> Cow<'static, str> {
                match s {
                    Setting::Depth => "--iodepth".into(),
                    other => PlainWords.setting(other),
                }
            }
            fn assigned(&self, s: Setting, v: &dyn fmt::Display) -> String {
                format!("{}={v}", self.setting(s))
            }
            fn direct(&self, d: Direct) -> Option<Cow<'static, str>> {
                match d {
                    Direct::Off => Some("--direct=0".into()),
                    Direct::On => Some("--direct=1".into()),
                    Direct::Auto => None,
                }
            }
            fn backend(&self, b: BackendChoice) -> Option<Cow<'static, str>> {
                match b {
                    BackendChoice::Exactly(k) => Some(format!("--ioengine={k}").into()),
                    BackendChoice::Auto => None,
                }
            }
        }
        let direct = Error::DirectUnsupported {
            path: "/proc/version".into(),
            reason: "refused".into(),
        };
        assert_eq!(
            direct.message(&Flags).to_string(),
            "/proc/version cannot be opened with O_DIRECT (refused); ask for --direct=0 (buffered)"
        );
        assert_eq!(
            direct.to_string(),
            "/proc/version cannot be opened with O_DIRECT (refused); ask for direct mode off \
             (buffered) or direct mode auto (O_DIRECT where the filesystem allows it)"
        );
        let uring = Error::BackendUnavailable {
            backend: BackendChoice::Exactly(BackendKind::Uring),
            reason: "blocked".into(),
        };
        assert_eq!(
            uring.message(&Flags).to_string(),
            "the uring backend cannot be set up here: blocked; ask for --ioengine=pool to fall back"
        );
        assert!(uring
            .to_string()
            .ends_with("ask for the pool backend or the automatic backend choice to fall back"));
        let depth = Error::Config(ConfigError::Depth {
            depth: 0,
            max: 16384,
        });
        assert_eq!(
            depth.message(&Flags).to_string(),
            "--iodepth=0 is out of range: it must be between 1 and 16384"
        );
        assert_eq!(
            depth.to_string(),
            "queue depth 0 is out of range: it must be between 1 and 16384"
        );
        let misaligned = Error::Misaligned {
            path: "/f".into(),
            offset: 1,
            len: 1,
            offset_align: 512,
            mem_align: 512,
        };
        assert!(misaligned
            .message(&Flags)
            .to_string()
            .ends_with("align the request"));
    }

    #[test]
    fn errno_text_is_the_words_alone() {
        assert_eq!(errno_text(libc::EBUSY), "Device or resource busy");
        assert_eq!(errno_text(-libc::EINVAL), "Invalid argument");
    }
}
