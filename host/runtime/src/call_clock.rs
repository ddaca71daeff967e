//! The two clocks of one plugin call: the guest's own execution, which excludes the time it
//! spends blocked in host calls (reads, HTTP), and the wall clock, which includes it.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct CallClock {
    started: Instant,
    /// How long the guest's own code may run.
    guest_limit: Duration,
    /// How long the whole call may take.
    budget: Duration,
    /// Time spent in host calls that have returned.
    in_host: Duration,
    /// When the host call in progress started.
    entered: Option<Instant>,
}

impl CallClock {
    pub fn new(guest_limit: Duration, budget: Duration) -> Self {
        Self {
            started: Instant::now(),
            guest_limit,
            budget: budget.max(guest_limit),
            in_host: Duration::ZERO,
            entered: None,
        }
    }

    /// The guest calls into the host.
    pub fn enter_host(&mut self) {
        self.entered.get_or_insert_with(Instant::now);
    }

    /// A host call returns to the guest.
    pub fn leave_host(&mut self) {
        if let Some(at) = self.entered.take() {
            self.in_host += at.elapsed();
        }
    }

    pub fn guest_limit(&self) -> Duration {
        self.guest_limit
    }

    /// Time the guest's own code has run.
    pub fn guest_time(&self) -> Duration {
        let in_host = self.in_host + self.entered.map_or(Duration::ZERO, |at| at.elapsed());
        self.started.elapsed().saturating_sub(in_host)
    }

    /// Execution time the guest has left.
    pub fn guest_left(&self) -> Duration {
        self.guest_limit.saturating_sub(self.guest_time())
    }

    /// How long the whole call may take.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// When the call's wall-clock budget runs out: no host call may last beyond it.
    pub fn budget_end(&self) -> Instant {
        self.started + self.budget
    }

    /// Wall-clock time the call has left.
    pub fn budget_left(&self) -> Duration {
        self.budget_end().saturating_duration_since(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_time_is_not_guest_time() {
        let mut clock = CallClock::new(Duration::from_millis(50), Duration::from_secs(5));
        clock.enter_host();
        std::thread::sleep(Duration::from_millis(80));
        assert!(
            clock.guest_time() < Duration::from_millis(40),
            "{:?}",
            clock.guest_time()
        );
        clock.leave_host();
        assert!(clock.guest_left() > Duration::ZERO);
        assert!(clock.budget_left() <= Duration::from_secs(5) - Duration::from_millis(80));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(clock.guest_left(), Duration::ZERO);
    }

    #[test]
    fn the_budget_is_never_shorter_than_the_guest_limit() {
        let clock = CallClock::new(Duration::from_secs(2), Duration::from_millis(1));
        assert!(clock.budget_left() > Duration::from_secs(1));
    }
}
