//! Bad input gets a clear error or the right answer — never a panic.

mod common;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::{backends, is_root, pattern_file};
use nowait::{Buf, Direct, Error, File, Queue, Read};

#[test]
fn missing_file_names_the_path() {
    for direct in [Direct::Off, Direct::Auto, Direct::On] {
        let e = File::open("/nonexistent/nowait/data", direct).unwrap_err();
        assert!(matches!(e, Error::Open { .. }), "{e:?}");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let msg = e.to_string();
        assert!(
            msg.contains("/nonexistent/nowait/data") && msg.contains("check the path"),
            "{msg}"
        );
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::NotFound);
    }
}

#[test]
fn directory_is_refused_for_every_direct_mode() {
    let dir = tempfile::tempdir().unwrap();
    for direct in [Direct::Off, Direct::Auto, Direct::On] {
        let e = File::open(dir.path(), direct).unwrap_err();
        assert!(matches!(e, Error::IsDirectory { .. }), "{direct:?}: {e:?}");
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}

/// A fifo with no writer: `open(2)` would wait for a writer forever. It is
/// refused at once, in every mode, by `File::open` and by the probe.
#[test]
fn fifo_without_a_writer_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: `c` is a valid NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let mut got = Vec::new();
        for direct in [Direct::Off, Direct::Auto, Direct::On] {
            got.push(File::open(&path, direct).map(|_| ()));
        }
        got.push(nowait::probe::file(&path, &nowait::probe::machine()).map(|_| ()));
        let _ = tx.send(got);
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("File::open of a fifo without a writer did not return within 10 s");
    for r in got {
        let e = r.expect_err("a fifo must be refused");
        assert!(
            matches!(e, Error::Unsupported { kind: "fifo", .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("fifo"), "{e}");
    }
}

#[test]
fn character_device_is_refused() {
    let e = File::open("/dev/null", Direct::Off).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsupported {
                kind: "character device",
                ..
            }
        ),
        "{e:?}"
    );
}

/// Runs in a child process as `nobody` (see `permission_denied`).
#[test]
#[ignore = "runs as user nobody in a child process started by permission_denied"]
fn permission_denied_child() {
    let path = std::env::var("NOWAIT_EACCES_PATH")
        .expect("permission_denied_child runs only in the child permission_denied starts");
    let e = File::open(&path, Direct::Off).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e:?}");
    assert!(e.to_string().contains("permissions"), "{e}");
    let io: io::Error = e.into();
    assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
}

#[test]
fn permission_denied() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = pattern_file(dir.path(), "secret.dat", 4096);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if !is_root() {
        // As an ordinary user, mode 000 is enough.
        let e = File::open(&path, Direct::Off).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES), "{e:?}");
        return;
    }
    // Root bypasses permissions (CAP_DAC_OVERRIDE): rerun this check as `nobody`.
    let exe = std::env::current_exe().unwrap();
    let out = std::os::unix::process::CommandExt::uid(
        Command::new(&exe)
            .args([
                "--exact",
                "permission_denied_child",
                "--include-ignored",
                "--nocapture",
            ])
            .env("NOWAIT_EACCES_PATH", &path),
        65534,
    )
    .output();
    match out {
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(
                o.status.success(),
                "the check as user nobody failed: {text}"
            );
            // A child that ran nothing must not pass for one that checked.
            assert!(
                text.contains("1 passed"),
                "the child check did not run: {text}"
            );
        }
        Err(e) => common::skip_line(&format!(
            "permission_denied: cannot run the test binary as nobody: {e}"
        )),
    }
}

#[test]
fn offset_past_eof_reads_zero_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 10_000);
    for direct in [Direct::Off, Direct::Auto, Direct::On] {
        let f = File::open(&path, direct).unwrap();
        for (kind, mut q) in backends(2) {
            let (r, b) = q.read_at(&f, 1 << 30, Buf::new(4096));
            assert_eq!(r.unwrap(), 0, "{kind} {direct:?}");
            assert!(b.is_empty());
        }
    }
}

#[test]
fn unaligned_strict_direct_read_is_refused_with_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 1 << 20);
    let f = File::open(&path, Direct::On).unwrap();
    if !f.is_direct() || f.dio_align().offset == 1 {
        common::skip_line(&format!(
            "unaligned_strict_direct_read: {} has no O_DIRECT alignment rules",
            f.fs()
        ));
        return;
    }
    let a = f.dio_align();
    for (kind, mut q) in backends(2) {
        // Unaligned offset.
        let (r, b) = q.read_at(&f, 4097, Buf::new(4096));
        let e = r.unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                Error::Misaligned {
                    offset: 4097,
                    len: 4096,
                    ..
                }
            ),
            "{kind}: {e:?}"
        );
        assert!(
            msg.contains("offset 4097") && msg.contains(&format!("multiples of {}", a.offset)),
            "{msg}"
        );
        assert!(
            msg.contains("direct mode auto"),
            "the message says what to do: {msg}"
        );
        assert_eq!(b.capacity(), 4096, "buffer handed back");
        // Unaligned length.
        let (r, _) = q.read_at(&f, 0, Buf::new(100));
        assert!(
            matches!(r, Err(Error::Misaligned { len: 100, .. })),
            "{kind}: {r:?}"
        );
        // Aligned works.
        let (r, b) = q.read_at(&f, 8192, Buf::new(4096));
        assert_eq!(r.unwrap(), 4096);
        nowait::pattern::check(8192, b.as_slice()).unwrap();
    }
}

#[test]
fn request_larger_than_buffer_is_refused_and_buffer_returned() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 8192);
    let f = File::open(&path, Direct::Off).unwrap();
    for (kind, mut q) in backends(2) {
        let r = q.push(Read {
            file: &f,
            offset: 0,
            len: 8192,
            buf: Buf::new(4096),
            user_data: 7,
            ioprio: 0,
            cache: None,
        });
        let rej = r.unwrap_err();
        assert!(
            matches!(
                rej.error,
                Error::BufferTooSmall {
                    len: 8192,
                    capacity: 4096
                }
            ),
            "{kind}: {:?}",
            rej.error
        );
        assert_eq!(rej.buf.capacity(), 4096);
        assert_eq!(q.in_flight(), 0, "a refused request takes no slot");
        let (r, _) = q.read_exact_at(&f, 0, 8192, Buf::new(10));
        assert!(matches!(r, Err(Error::BufferTooSmall { .. })));
    }
}

#[test]
fn full_queue_refuses_and_hands_buffer_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 8192);
    let f = File::open(&path, Direct::Off).unwrap();
    for (kind, mut q) in backends(2) {
        for i in 0..2 {
            q.push(Read {
                file: &f,
                offset: 0,
                len: 10,
                buf: Buf::new(10),
                user_data: i,
                ioprio: 0,
                cache: None,
            })
            .unwrap();
        }
        let rej = q
            .push(Read {
                file: &f,
                offset: 0,
                len: 10,
                buf: Buf::new(10),
                user_data: 2,
                ioprio: 0,
                cache: None,
            })
            .unwrap_err();
        assert!(matches!(rej.error, Error::QueueFull { depth: 2 }), "{kind}");
        let mut out = Vec::new();
        q.drain(&mut out).unwrap();
        assert_eq!(out.len(), 2);
        // Room again.
        q.push(Read {
            file: &f,
            offset: 0,
            len: 10,
            buf: rej.buf,
            user_data: 3,
            ioprio: 0,
            cache: None,
        })
        .unwrap();
    }
}

#[test]
fn zero_depth_is_a_clear_error() {
    let e = Queue::builder().depth(0).build().unwrap_err();
    assert!(e.to_string().contains("between 1 and"), "{e}");
}

/// Dropping a queue with reads in flight waits for the kernel to finish
/// them: reads into the caller's memory have landed, whole, when the drop
/// returns (a drop that returned early would leave the sentinel there, or
/// let the kernel write after the memory was given back).
#[test]
fn dropping_a_queue_with_reads_in_flight_waits_for_them() {
    const N: usize = 64;
    const LEN: usize = 65536;
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", (N * LEN) as u64);
    let f = File::open(&path, Direct::Auto).unwrap();
    for (kind, mut q) in backends(N) {
        f.drop_cache().unwrap();
        let mem = common::CallerMemory::new(N, LEN);
        for i in 0..N {
            q.push(Read {
                file: &f,
                offset: (i * LEN) as u64,
                len: LEN,
                // SAFETY: piece `i` is lent once, and looked at only after
                // the queue (and every `Buf` of it) is dropped below.
                buf: unsafe { mem.lend(i) },
                user_data: i as u64,
                ioprio: 0,
                cache: None,
            })
            .unwrap();
        }
        q.submit().unwrap();
        drop(q); // waits for the kernel: never hands memory back early
        for i in 0..N {
            if let Err(e) = nowait::pattern::check((i * LEN) as u64, mem.piece(i)) {
                panic!("{kind}: read {i} had not landed when the drop returned: {e}");
            }
        }
    }
}

/// An unaligned direct read ending exactly at the largest file position
/// (i64::MAX) starts past the last aligned offset below it: its bounce
/// buffer is empty, and the read is end of file (0 bytes), not a panic
/// (regression: the copy out of the empty bounce buffer indexed past it).
#[test]
fn unaligned_direct_read_ending_at_the_largest_offset_is_end_of_file() {
    let dir = match common::direct_dir() {
        Ok(d) => d,
        Err(why) => {
            return common::skip(
                "unaligned_direct_read_ending_at_the_largest_offset_is_end_of_file",
                &why,
            )
        }
    };
    let path = pattern_file(dir.path(), "f.dat", 1 << 20);
    let f = File::open(&path, Direct::Auto).unwrap();
    assert!(f.is_direct(), "{}: opened buffered", path.display());
    for (kind, mut q) in backends(4) {
        let (r, b) = q.read_at(&f, i64::MAX as u64 - 100, Buf::new(100));
        assert_eq!(r.unwrap(), 0, "{kind}");
        assert!(b.as_slice().is_empty(), "{kind}");
    }
}

#[test]
fn file_outlives_its_handle_while_reads_are_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 1 << 20);
    for (_, mut q) in backends(8) {
        let f = File::open(&path, Direct::Off).unwrap();
        for i in 0..8u64 {
            q.push(Read {
                file: &f,
                offset: i * 4096,
                len: 4096,
                buf: Buf::new(4096),
                user_data: i,
                ioprio: 0,
                cache: None,
            })
            .unwrap();
        }
        drop(f); // the slots keep the descriptor open
        let mut out = Vec::new();
        q.drain(&mut out).unwrap();
        for c in out {
            assert_eq!(c.result.unwrap(), 4096);
            nowait::pattern::check(c.user_data * 4096, c.buf.as_slice()).unwrap();
        }
    }
}
