//! include/nowait.h is generated from this crate by cbindgen. This test
//! regenerates it and fails when the checked-in header differs, so the
//! header can never drift from the library (CI runs it with the workspace
//! tests). `NOWAIT_BLESS_HEADER=1 cargo test -p nowait-c --test header`
//! rewrites the header instead.
//!
//! cbindgen runs as a library here rather than as the `cbindgen` binary:
//! `cargo install cbindgen` would add minutes to a fresh CI machine, while
//! the library builds with the test in seconds.

use std::path::PathBuf;

#[test]
fn header_is_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen parses src/")
        .write(&mut generated);
    let generated = c89_comments(&String::from_utf8(generated).expect("UTF-8 header"));
    let path = dir.join("include/nowait.h");
    if std::env::var_os("NOWAIT_BLESS_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/nowait.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/nowait.h is stale: it differs from what cbindgen generates from src/. \
         Regenerate it with: NOWAIT_BLESS_HEADER=1 cargo test -p nowait-c --test header"
    );
}

/// cbindgen ends the lines of its C++ guards with `//` comments, which C89
/// does not have (`#endif // __cplusplus` is an extra token there): the
/// same words as `/* */` comments. Every other comment in the header is
/// already one.
fn c89_comments(header: &str) -> String {
    let mut out = String::with_capacity(header.len());
    for line in header.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let code = body.split("//").next().unwrap_or(body);
        let is_guard = code.trim_start().starts_with("#endif") || code.trim() == "}";
        match body.split_once("//") {
            Some((code, comment)) if is_guard => {
                out.push_str(&format!("{code}/* {} */", comment.trim()));
                out.push_str(&line[body.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}
