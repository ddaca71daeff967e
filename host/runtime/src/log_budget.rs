//! A plugin's `log` lines become the host's log lines, and the host's log is the node's disk:
//! each call may log a bounded amount, so a plugin that logs in a loop (or logs megabytes in one
//! line) costs a few hundred KiB of log per call, not gigabytes.

/// One line longer than this is cut (at a character boundary) and says how much was cut.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// What one call may log in all; further lines of the call are dropped and counted.
pub const MAX_BYTES_PER_CALL: usize = 256 * 1024;

/// What one call has logged so far.
#[derive(Debug, Default)]
pub struct LogBudget {
    used: usize,
    dropped: u64,
}

impl LogBudget {
    /// The line to log (cut to [`MAX_LINE_BYTES`]), or `None` once the call's budget is spent.
    pub fn admit(&mut self, message: String) -> Option<String> {
        if self.used >= MAX_BYTES_PER_CALL {
            self.dropped += 1;
            return None;
        }
        let line = cut(message, MAX_LINE_BYTES);
        self.used += line.len();
        Some(line)
    }

    /// Lines dropped so far in this call.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

fn cut(mut message: String, max: usize) -> String {
    if message.len() <= max {
        return message;
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let cut = message.len() - end;
    message.truncate(end);
    message.push_str(&format!("… ({cut} more bytes cut)"));
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_at_a_character_boundary() {
        let line = "é".repeat(MAX_LINE_BYTES);
        let mut budget = LogBudget::default();
        let logged = budget.admit(line.clone()).unwrap();
        assert!(logged.starts_with(&line[..MAX_LINE_BYTES]));
        assert!(logged.ends_with(&format!(
            "… ({} more bytes cut)",
            line.len() - MAX_LINE_BYTES
        )));
        assert_eq!(budget.admit("short".into()).as_deref(), Some("short"));
    }

    #[test]
    fn a_call_logs_at_most_its_budget_and_counts_the_rest() {
        let mut budget = LogBudget::default();
        let line = "x".repeat(MAX_LINE_BYTES * 4);
        let logged = budget.admit(line.clone()).unwrap().len();
        let admitted = 1
            + (1..1000)
                .filter(|_| budget.admit(line.clone()).is_some())
                .count();
        assert_eq!(admitted, MAX_BYTES_PER_CALL.div_ceil(logged));
        assert_eq!(budget.dropped(), 1000 - admitted as u64);
    }
}
