//! One job of `long_job`: what it was asked to do, the answer and the cancellation it got, and
//! its state at any instant.
//!
//! The state is a pure function of those and the wall clock (`Record::at`). That is what lets a
//! task survive a restart (its file holds only a `Record`, nothing that a running thread would
//! have to rebuild), and what keeps the polls, the notifications and `tasks/result` from ever
//! disagreeing: they all ask the same function. Nothing here does IO, so the timeline is tested
//! with made-up instants.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::super::super::jsonrpc::INTERNAL_ERROR;
use super::super::text_result;

/// The JSON-RPC error a job run with `fail` ends with.
pub(super) const JOB_FAILED: &str = "the job failed";

/// Which era a task was created in. A task is only found by requests of its own era: the two
/// show it in different shapes (`ttl` and `ttlMs`, an `isError` result failed or completed).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TaskEra {
    /// The 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`).
    Modern,
    /// The 2025-11-25 revision's experimental tasks.
    Session,
}

/// The arguments of `long_job`, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct JobSpec {
    pub(super) ms: u64,
    pub(super) poll_ms: u64,
    pub(super) ask: bool,
    pub(super) fail: bool,
    pub(super) error_result: bool,
    pub(super) text: String,
    pub(super) ttl_ms: u64,
}

/// The client's answer to the job's one input request (`confirm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Answer {
    /// When it arrived (ms since the Unix epoch).
    pub(super) at_ms: u64,
    /// `action: "accept"` with `content.ok == true`; anything else declines.
    pub(super) accepted: bool,
}

/// Everything a task is: what its file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) task_id: String,
    pub(super) era: TaskEra,
    /// When it was created (ms since the Unix epoch): the job's time is measured from here.
    pub(super) created_ms: u64,
    pub(super) job: JobSpec,
    #[serde(default)]
    pub(super) answer: Option<Answer>,
    /// Set only while the task was not yet terminal, so a cancelled task never "ended" before.
    #[serde(default)]
    pub(super) cancelled_ms: Option<u64>,
}

/// A task's status, as both eras name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// How a job ended: what the `tools/call` would have answered.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum End {
    /// A `CallToolResult` (with `isError: true` for `error_result`).
    Result(Value),
    /// The JSON-RPC error `{code: -32603, message: "the job failed"}`.
    Failed,
}

impl End {
    pub(super) fn error_json() -> Value {
        json!({ "code": INTERNAL_ERROR, "message": JOB_FAILED })
    }
}

/// Where a job is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Phase {
    Working,
    InputRequired,
    Ended(End),
    Cancelled,
}

/// A task's state at one instant.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Snapshot {
    pub(super) phase: Phase,
    /// When it entered this phase: the task's `lastUpdatedAt`.
    pub(super) updated_ms: u64,
}

impl Snapshot {
    /// The status in `era`'s words: 2025-11-25 calls a tool result with `isError` a failed task,
    /// the Tasks extension a completed one (its `failed` is for JSON-RPC errors only).
    pub(super) fn status(&self, era: TaskEra) -> Status {
        match &self.phase {
            Phase::Working => Status::Working,
            Phase::InputRequired => Status::InputRequired,
            Phase::Cancelled => Status::Cancelled,
            Phase::Ended(End::Failed) => Status::Failed,
            Phase::Ended(End::Result(result))
                if era == TaskEra::Session && result["isError"] == json!(true) =>
            {
                Status::Failed
            }
            Phase::Ended(End::Result(_)) => Status::Completed,
        }
    }
}

impl Record {
    /// When the job asks for input (`ask`): half-way.
    fn asks_at(&self) -> u64 {
        self.created_ms.saturating_add(self.job.ms / 2)
    }

    /// When the job resumes after an accepting answer, and when it then ends.
    fn resumed(&self, answer: Answer) -> (u64, u64) {
        let resume = answer.at_ms.max(self.asks_at());
        (resume, resume.saturating_add(self.job.ms - self.job.ms / 2))
    }

    /// The task's state at `now` (ms since the Unix epoch).
    pub(super) fn at(&self, now: u64) -> Snapshot {
        let snapshot = |phase, updated_ms| Snapshot { phase, updated_ms };
        if let Some(cancelled) = self.cancelled_ms {
            return snapshot(Phase::Cancelled, cancelled);
        }
        let (working_since, end) = if self.job.ask {
            let asks = self.asks_at();
            if now < asks {
                return snapshot(Phase::Working, self.created_ms);
            }
            match self.answer {
                None => return snapshot(Phase::InputRequired, asks),
                Some(answer) if !answer.accepted => {
                    let declined = End::Result(text_result("declined"));
                    return snapshot(Phase::Ended(declined), answer.at_ms.max(asks));
                }
                Some(answer) => self.resumed(answer),
            }
        } else {
            (self.created_ms, self.created_ms.saturating_add(self.job.ms))
        };
        if now < end {
            snapshot(Phase::Working, working_since)
        } else {
            snapshot(Phase::Ended(self.job.end()), end)
        }
    }

    /// The next instant after `now` at which the state changes by itself, if any (an answer or
    /// a cancellation changes it too, but those come from outside).
    pub(super) fn next_change(&self, now: u64) -> Option<u64> {
        if self.cancelled_ms.is_some() {
            return None;
        }
        let end = if self.job.ask {
            let asks = self.asks_at();
            if now < asks {
                return Some(asks);
            }
            match self.answer {
                Some(answer) if answer.accepted => self.resumed(answer).1,
                _ => return None,
            }
        } else {
            self.created_ms.saturating_add(self.job.ms)
        };
        (now < end).then_some(end)
    }

    /// When the task may be forgotten: `ttl_ms` after its creation.
    pub(super) fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.job.ttl_ms)
    }

    pub(super) fn is_expired(&self, now: u64) -> bool {
        now >= self.expires_ms()
    }
}

impl JobSpec {
    /// How the job ends once its time is up (and it was not declined).
    pub(super) fn end(&self) -> End {
        if self.fail {
            End::Failed
        } else if self.error_result {
            let mut result = text_result(self.text.clone());
            result["isError"] = json!(true);
            End::Result(result)
        } else {
            End::Result(text_result(self.text.clone()))
        }
    }
}

pub(super) use super::iso8601::iso8601;

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ms: u64, ask: bool) -> Record {
        Record {
            task_id: "t".into(),
            era: TaskEra::Modern,
            created_ms: 1_000,
            job: JobSpec {
                ms,
                poll_ms: 10,
                ask,
                fail: false,
                error_result: false,
                text: "done".into(),
                ttl_ms: 5_000,
            },
            answer: None,
            cancelled_ms: None,
        }
    }

    #[test]
    fn a_job_works_for_its_time_then_completes() {
        let job = record(100, false);
        assert_eq!(job.at(1_099).phase, Phase::Working);
        assert_eq!(job.next_change(1_099), Some(1_100));
        let done = job.at(5_000);
        assert_eq!(done.phase, Phase::Ended(End::Result(text_result("done"))));
        assert_eq!(done.updated_ms, 1_100, "it ended when its time was up");
        assert_eq!(job.next_change(1_100), None);
    }

    #[test]
    fn an_asking_job_waits_half_way_for_its_answer() {
        let mut job = record(100, true);
        assert_eq!(job.at(1_049).phase, Phase::Working);
        let waiting = job.at(9_000);
        assert_eq!(waiting.phase, Phase::InputRequired);
        assert_eq!(waiting.updated_ms, 1_050);
        assert_eq!(
            job.next_change(9_000),
            None,
            "it waits for as long as it takes"
        );

        job.answer = Some(Answer {
            at_ms: 2_000,
            accepted: true,
        });
        let resumed = job.at(2_010);
        assert_eq!((resumed.phase, resumed.updated_ms), (Phase::Working, 2_000));
        assert_eq!(job.next_change(2_010), Some(2_050), "the remaining half");
        assert_eq!(job.at(2_050).status(TaskEra::Modern), Status::Completed);

        job.answer = Some(Answer {
            at_ms: 2_000,
            accepted: false,
        });
        let declined = job.at(2_000);
        assert_eq!(
            declined.phase,
            Phase::Ended(End::Result(text_result("declined")))
        );
    }

    #[test]
    fn the_eras_name_an_error_result_differently() {
        let mut job = record(0, false);
        job.job.error_result = true;
        let ended = job.at(1_000);
        assert_eq!(ended.status(TaskEra::Modern), Status::Completed);
        assert_eq!(ended.status(TaskEra::Session), Status::Failed);
        job.job.fail = true;
        assert_eq!(job.at(1_000).phase, Phase::Ended(End::Failed));
    }

    #[test]
    fn a_cancelled_job_stays_cancelled() {
        let mut job = record(100, false);
        job.cancelled_ms = Some(1_010);
        let cancelled = job.at(99_999);
        assert_eq!(
            (cancelled.phase, cancelled.updated_ms),
            (Phase::Cancelled, 1_010)
        );
        assert_eq!(job.next_change(1_020), None);
    }

    #[test]
    fn a_record_survives_its_file() {
        let mut job = record(100, true);
        job.answer = Some(Answer {
            at_ms: 1_060,
            accepted: true,
        });
        let text = serde_json::to_string(&job).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), job);
    }

    #[test]
    fn instants_are_written_in_iso_8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_764_066_600_000), "2025-11-25T10:30:00.000Z");
        assert_eq!(iso8601(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }
}
