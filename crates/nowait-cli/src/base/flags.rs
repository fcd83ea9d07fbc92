//! The engine's error messages in the command's words: the settings they
//! name spelled as `nowait bench` flags (`--direct=0`, `--ioengine=pool`,
//! `--iodepth=0`), rendered from the error (`nowait::Error::message`).

use std::borrow::Cow;
use std::fmt;

use nowait::{BackendChoice, Direct, Setting, Vocabulary};

/// `nowait bench`'s flags for what the engine's messages name. The
/// command has no automatic direct mode or backend choice: a message
/// leaves those out.
pub struct Flags;

impl Vocabulary for Flags {
    fn setting(&self, setting: Setting) -> Cow<'static, str> {
        match setting {
            Setting::Depth => "--iodepth".into(),
            Setting::PoolWorkers => "--pool_workers".into(),
            Setting::FixedBuffers => "--fixedbufs (--iodepth buffers of --bs bytes)".into(),
            other => nowait::PlainWords.setting(other),
        }
    }

    fn assigned(&self, setting: Setting, value: &dyn fmt::Display) -> String {
        format!("{}={value}", self.setting(setting))
    }

    fn direct(&self, mode: Direct) -> Option<Cow<'static, str>> {
        match mode {
            Direct::Off => Some("--direct=0".into()),
            Direct::On => Some("--direct=1".into()),
            Direct::Auto => None,
        }
    }

    fn backend(&self, choice: BackendChoice) -> Option<Cow<'static, str>> {
        match choice {
            BackendChoice::Exactly(kind) => Some(format!("--ioengine={kind}").into()),
            BackendChoice::Auto => None,
        }
    }
}

/// An engine error as the command prints it.
pub fn say(e: &nowait::Error) -> String {
    e.message(&Flags).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nowait::{BackendKind, ConfigError, Error};

    #[test]
    fn messages_name_the_commands_flags() {
        let direct = Error::DirectUnsupported {
            path: "/proc/version".into(),
            reason: "the filesystem answered EINVAL to O_DIRECT at open".into(),
        };
        assert!(
            say(&direct).ends_with("; ask for --direct=0 (buffered)"),
            "{}",
            say(&direct)
        );
        let uring = Error::BackendUnavailable {
            backend: BackendChoice::Exactly(BackendKind::Uring),
            reason: "blocked".into(),
        };
        assert!(
            say(&uring).ends_with("ask for --ioengine=pool to fall back"),
            "{}",
            say(&uring)
        );
        let depth = Error::Config(ConfigError::Depth {
            depth: 100_000,
            max: 16_384,
        });
        assert!(
            say(&depth).starts_with("--iodepth=100000 is out of range"),
            "{}",
            say(&depth)
        );
        for (name, e) in nowait::error_samples() {
            let m = say(&e);
            assert!(
                !m.contains("::") && !m.contains("direct mode"),
                "{name}: {m}"
            );
        }
    }
}
