//! The campaign progress bar on stderr: runs done, ETA, the run in flight.
//!
//! Progress is a courtesy, never a reason to stop measuring: a write that
//! fails (stderr piped into `head` that has exited, a closed terminal) turns
//! progress off for the rest of the campaign and the runs go on being stored.

use super::supervisor::Event;
use crate::record::RunStatus;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown on stderr (`--progress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Style {
    /// A bar with the runs done, the ETA and the run in flight.
    #[default]
    Bar,
    /// One JSON event per line, for scripts.
    Json,
    /// Nothing.
    None,
}

pub struct Bar {
    bar: Option<ProgressBar>,
    json: bool,
    failed: u32,
}

impl Bar {
    /// Progress in `style` on stderr.
    pub fn new(style: Style) -> Bar {
        Bar {
            json: style == Style::Json,
            bar: (style == Style::Bar).then(|| {
                let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{elapsed_precise} [{wide_bar}] {pos}/{len} runs, ETA {eta} · {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                bar
            }),
            failed: 0,
        }
    }

    pub fn observe(&mut self, event: &Event) {
        if self.json
            && let Ok(line) = serde_json::to_string(event)
            && !write_line(&mut std::io::stderr(), &line)
        {
            self.json = false;
        }
        let Some(bar) = &self.bar else { return };
        match event {
            Event::RunStarted {
                slot,
                total,
                workload,
                arm,
                block,
                ..
            } => {
                bar.set_length(u64::from(*total));
                if bar.position() == 0 {
                    bar.set_position(u64::from(*slot));
                    bar.reset_eta();
                }
                bar.set_message(format!("{workload} block {} {arm}", block + 1));
            }
            Event::RunFinished { status, reason, .. } => {
                bar.inc(1);
                if *status == RunStatus::Failed {
                    self.failed += 1;
                    bar.println(format!(
                        "run failed: {}",
                        reason.as_deref().unwrap_or("no reason given")
                    ));
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Writes one line, reporting whether it arrived; `eprintln!` would panic on
/// a closed pipe instead (issue 12).
pub fn write_line(out: &mut dyn std::io::Write, line: &str) -> bool {
    writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
}
