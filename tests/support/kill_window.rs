//! When the kill tests kill: over the time a whole run of their worker takes on this
//! machine, measured without a kill, so that some kills land before the end and some after.

/// The span kill moments are drawn from: 5/4 of the longest unkilled run measured so far.
pub struct KillWindow {
    what: &'static str,
    whole_ms: u64,
}

/// Rounds between two measurements while no round has seen the end.
const MEASURE_EVERY: usize = 10;

impl KillWindow {
    /// The window after a first unkilled run of `what` that took `ms`.
    pub fn measured(what: &'static str, ms: u64) -> KillWindow {
        let mut w = KillWindow { what, whole_ms: 0 };
        w.record(ms);
        w
    }

    /// Before round `round`: while no round so far has seen the run end (`seen_end` false),
    /// every [`MEASURE_EVERY`] rounds takes another unkilled run (`measure`, its milliseconds)
    /// and keeps the longest. A window measured on an idle moment is too short on a busy
    /// machine (a CI rehearsal beside a benchmark: 50 kills, all before the end), and the end
    /// would go untested.
    pub fn before_round(&mut self, round: usize, seen_end: bool, measure: impl FnOnce() -> u64) {
        if round > 0 && round % MEASURE_EVERY == 0 && !seen_end {
            let ms = measure();
            self.record(ms);
        }
    }

    /// The span to draw a kill moment from, in milliseconds.
    pub fn span_ms(&self) -> u64 {
        self.whole_ms * 5 / 4
    }

    fn record(&mut self, ms: u64) {
        println!("{} without kills took {ms} ms", self.what);
        self.whole_ms = self.whole_ms.max(ms.max(20));
    }
}
