//! Tasks (the Tasks extension, `io.modelcontextprotocol/tasks`): a server may run a
//! `tools/call` as a task that outlives the request, and the client learns its end by polling
//! it. [`CallTool`](crate::CallTool) does that transparently; a call whose deadline passes
//! while its task runs is answered [`Error::TaskTimeout`](crate::Error::TaskTimeout) with the
//! task's [`TaskHandle`], and the task is not cancelled.

mod handle;

pub use handle::TaskHandle;
