//! Ending the child processes of the kill tests.

use std::process::Child;
use std::time::{Duration, Instant};

/// Kills `child` (SIGKILL) unless it has already ended, by itself at an armed crash point;
/// true if it had.
pub fn kill_unless_ended(child: &mut Child) -> bool {
    if child.try_wait().unwrap().is_some() {
        return true;
    }
    child.kill().unwrap(); // SIGKILL on Unix
    false
}

/// Lets `child` run until `deadline` or its end, whichever comes first, then kills it as
/// [`kill_unless_ended`] does; true if it had ended.
pub fn kill_at(child: &mut Child, deadline: Instant) -> bool {
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
    kill_unless_ended(child)
}
