//! What the CLI tests share: running the `kstate` binary.

use std::ffi::OsStr;
use std::process::Command;

/// Runs `kstate` with `args`: its exit code and its stdout followed by its stderr.
pub fn kstate<I: AsRef<OsStr>>(args: &[I]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kstate"))
        .args(args)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}
