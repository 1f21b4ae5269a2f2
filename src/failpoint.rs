//! Crash points for the kill tests, compiled in only with the cargo feature `failpoints`
//! (off by default, so the shipped library and CLI ignore the variable below).
//!
//! With the feature, when the environment variable `KSTATE_FAILPOINT_ODDS` holds a number
//! N > 0, every named point in the commit path kills the process with SIGKILL with
//! probability 1/N. Tests use it to make real kills land inside the narrow windows of a
//! spilled commit that random external kills rarely hit; it is read once and costs one
//! branch when unset. `KSTATE_FAILPOINT_ONLY`, a comma-separated list of point names,
//! restricts the kills to those points (with odds 1, a test kills the process exactly at
//! the first of them it reaches). Without the feature, [`hit`] is an empty inline function.

/// A named crash point; without the `failpoints` feature it does nothing.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn hit(_name: &str) {}

/// A named crash point; kills the process at the configured odds.
#[cfg(feature = "failpoints")]
pub(crate) fn hit(name: &str) {
    armed::hit(name);
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};

    use once_cell::sync::Lazy;

    static ODDS: Lazy<u64> = Lazy::new(|| {
        std::env::var("KSTATE_FAILPOINT_ODDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    });

    static RNG: Lazy<AtomicU64> = Lazy::new(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        AtomicU64::new(nanos ^ (u64::from(std::process::id()) << 32) | 1)
    });

    /// The points `KSTATE_FAILPOINT_ONLY` names; `None` (every point) when it is unset.
    static ONLY: Lazy<Option<Vec<String>>> = Lazy::new(|| {
        std::env::var("KSTATE_FAILPOINT_ONLY")
            .ok()
            .map(|s| s.split(',').map(|n| n.trim().to_owned()).collect())
    });

    pub(super) fn hit(name: &str) {
        let odds = *ODDS;
        if odds == 0
            || ONLY
                .as_ref()
                .is_some_and(|only| !only.iter().any(|n| n == name))
        {
            return;
        }
        // xorshift64: good enough to scatter kills, no dependency needed.
        let mut x = RNG.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        RNG.store(x, Ordering::Relaxed);
        if x % odds == 0 {
            // SAFETY: kill(2) with our own pid and a valid signal number has no memory
            // effects.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}
