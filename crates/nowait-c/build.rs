//! Gives libnowait.so a soname, so programs linked against it record
//! `libnowait.so.0` and an installed library can be upgraded in place.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnowait.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
