//! The spinners of a long wait: one per server while it connects, on stderr, only when stderr
//! is a terminal (nothing at all otherwise, so logs and pipes stay clean).
//!
//! Its own room because it is the only part of mcpctl that draws on the terminal, through
//! `indicatif`; the waiting itself is the session's.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_supervisor::protocol::text::server_text;
use mcp_supervisor::ServerStatus;

/// How often a spinner turns.
const TICK: Duration = Duration::from_millis(100);

/// One spinner per server, or none at all when stderr is not a terminal.
pub(crate) struct Spinners {
    bars: Option<(MultiProgress, HashMap<String, ProgressBar>)>,
}

impl Spinners {
    /// Spinners for these servers, if stderr is a terminal.
    pub(crate) fn new(names: &[&str]) -> Spinners {
        if !std::io::stderr().is_terminal() {
            return Spinners { bars: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        // The template is a constant: it cannot fail, but a spinner is not worth a panic.
        let style =
            ProgressStyle::with_template(&format!("{{spinner}} {{prefix:<{width}}}  {{msg}}"))
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bars = names
            .iter()
            .map(|&name| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                bar.set_prefix(server_text(name));
                bar.set_message("starting");
                bar.enable_steady_tick(TICK);
                (name.to_owned(), bar)
            })
            .collect();
        Spinners {
            bars: Some((multi, bars)),
        }
    }

    /// Shows each server's state; a server that has settled stops its spinner.
    pub(crate) fn update(
        &self,
        statuses: &[ServerStatus],
        settled: impl Fn(&ServerStatus) -> bool,
    ) {
        let Some((_, bars)) = &self.bars else {
            return;
        };
        for status in statuses {
            let Some(bar) = bars.get(&status.name) else {
                continue;
            };
            if bar.is_finished() {
                continue;
            }
            bar.set_message(status.state.name());
            if settled(status) {
                bar.finish();
            }
        }
    }
}

/// Takes the spinners off the terminal, also when the wait is cut short (Ctrl-C): what is
/// printed next replaces them.
impl Drop for Spinners {
    fn drop(&mut self) {
        if let Some((multi, bars)) = self.bars.take() {
            for bar in bars.values() {
                bar.finish_and_clear();
            }
            // Nothing to do if the terminal is gone.
            let _ = multi.clear();
        }
    }
}
