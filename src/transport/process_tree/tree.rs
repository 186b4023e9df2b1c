//! Processes as `/proc` shows them, and a server's tree among them: who descends from whom,
//! and which descendants are outside the server's process group.

use std::collections::{HashMap, HashSet, VecDeque};

/// The most descendants remembered: a fork bomb cannot make a snapshot unbounded.
pub(super) const MAX_DESCENDANTS: usize = 4096;

/// A process, as `/proc` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Start time in clock ticks since boot: with the pid, it names one process for good.
    pub start: u64,
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may itself contain
/// spaces and parentheses, so the fields are read after the last `)`.
pub(super) fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) ... starttime(19).
    Some(Proc {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

pub(super) fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

/// Every process on the system (empty without `/proc`). About 20 µs a process: not on the
/// actor's thread.
pub(super) fn all_processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// The processes of one reading of `/proc`, indexed by parent: built once, asked about any
/// number of servers.
pub(super) struct Tree {
    children: HashMap<i32, Vec<Proc>>,
}

impl Tree {
    pub fn of(processes: Vec<Proc>) -> Self {
        let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
        for p in processes {
            children.entry(p.ppid).or_default().push(p);
        }
        Tree { children }
    }

    /// The descendants of `root` that are not in the process group `group` (those the
    /// group's signals miss), nearest first, at most [`MAX_DESCENDANTS`].
    pub fn strays(&self, root: i32, group: i32) -> Vec<Proc> {
        let mut seen = HashSet::from([root]);
        let mut queue = VecDeque::from([root]);
        let mut strays = Vec::new();
        while let Some(parent) = queue.pop_front() {
            for child in self.children.get(&parent).into_iter().flatten() {
                if seen.len() > MAX_DESCENDANTS || !seen.insert(child.pid) {
                    continue;
                }
                if child.pgrp != group {
                    strays.push(*child);
                }
                queue.push_back(child.pid);
            }
        }
        strays
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgrp: i32) -> Proc {
        Proc {
            pid,
            ppid,
            pgrp,
            start: pid as u64 * 10,
        }
    }

    #[test]
    fn parses_stat_lines_with_awkward_names() {
        let stat = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 92 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(
            parse_stat(4242, stat),
            Some(Proc {
                pid: 4242,
                ppid: 17,
                pgrp: 4242,
                start: 987654
            })
        );
        assert_eq!(parse_stat(1, "1 (init"), None);
        assert_eq!(parse_stat(1, "1 (x) S 0"), None);
    }

    #[test]
    fn finds_descendants_that_left_the_group_at_any_depth() {
        // 100 leads group 100. 101 stays in it; 102 left (setsid); 103, a child of 102, is in
        // 102's group; 104, a grandchild through 101, left too. 200 is unrelated.
        let tree = Tree::of(vec![
            p(100, 1, 100),
            p(101, 100, 100),
            p(102, 100, 102),
            p(103, 102, 102),
            p(104, 101, 104),
            p(200, 1, 200),
            p(201, 200, 201),
        ]);
        let strays: Vec<i32> = tree.strays(100, 100).iter().map(|p| p.pid).collect();
        assert_eq!(
            strays,
            [102, 104, 103],
            "breadth first: children, then grandchildren"
        );
        assert!(tree.strays(999, 999).is_empty());
        // One reading answers for any server in it.
        let other: Vec<i32> = tree.strays(200, 200).iter().map(|p| p.pid).collect();
        assert_eq!(other, [201]);
    }

    #[test]
    fn a_cycle_in_a_bad_snapshot_ends() {
        let tree = Tree::of(vec![p(100, 101, 100), p(101, 100, 7)]);
        assert_eq!(tree.strays(100, 100).len(), 1);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_is_found_among_all() {
        let me = std::process::id() as i32;
        let all = all_processes();
        assert!(all.iter().any(|p| p.pid == me), "/proc lists this process");
    }
}
