//! Temp folders left behind by a harness killed with SIGKILL.
//!
//! A harness killed with `kill -9` (a CI job's timeout does that) takes its
//! server down (`PR_SET_PDEATHSIG`) but never gets to remove the server's
//! folder, tens of MB each. So each folder carries a marker naming its owner,
//! and a new run removes the folders whose owner is gone. The marker holds the
//! owner's pid, its start time (a reused pid is then not taken for the owner)
//! and its pid namespace (a pid means nothing in another namespace, such as a
//! container sharing /tmp). A folder without a readable marker, from another
//! namespace, with a live owner or with a postmaster still running in it is
//! left alone.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Throwaway server folders are named `stallbench-XXXXXX`.
pub const FOLDER_PREFIX: &str = "stallbench-";
/// The marker file inside a server folder.
const MARKER: &str = "owner";

/// The process that made a server folder, as its marker records it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// Field 22 of `/proc/<pid>/stat`: clock ticks from boot to the process's start.
    start_ticks: u64,
    /// The link text of `/proc/self/ns/pid`, e.g. `pid:[4026531836]`.
    pid_namespace: String,
}

impl Owner {
    /// This process.
    fn current() -> anyhow::Result<Owner> {
        let pid = std::process::id();
        let start_ticks = process_start_ticks(pid)
            .with_context(|| format!("reading this process's start time from /proc/{pid}/stat"))?;
        Ok(Owner {
            pid,
            start_ticks,
            pid_namespace: current_pid_namespace()?,
        })
    }

    fn to_marker(&self) -> String {
        format!(
            "pid={}\nstart_ticks={}\npid_namespace={}\n",
            self.pid, self.start_ticks, self.pid_namespace
        )
    }

    /// Reads a marker written by [`Owner::to_marker`]; `None` if anything is missing or malformed.
    fn from_marker(text: &str) -> Option<Owner> {
        let value = |key: &str| {
            text.lines()
                .filter_map(|line| line.split_once('='))
                .find(|(name, _)| *name == key)
                .map(|(_, value)| value.trim())
        };
        let pid_namespace = value("pid_namespace")?;
        if pid_namespace.is_empty() {
            return None;
        }
        Some(Owner {
            pid: value("pid")?.parse().ok()?,
            start_ticks: value("start_ticks")?.parse().ok()?,
            pid_namespace: pid_namespace.to_string(),
        })
    }

    /// Gone for sure: same pid namespace as ours, and no live process with its pid
    /// and start time (`running_start_ticks` is what `/proc/<pid>/stat` says now).
    fn is_gone(&self, our_pid_namespace: &str, running_start_ticks: Option<u64>) -> bool {
        self.pid_namespace == our_pid_namespace && running_start_ticks != Some(self.start_ticks)
    }
}

/// Writes the marker naming this process as the owner of `folder`.
pub fn mark(folder: &Path) -> anyhow::Result<()> {
    let path = folder.join(MARKER);
    std::fs::write(&path, Owner::current()?.to_marker())
        .with_context(|| format!("writing the owner marker {}", path.display()))
}

/// Removes the server folders in `base` whose owner is gone; returns them.
/// A folder that cannot be removed gets a warning and is not returned.
pub fn remove_left_behind(base: &Path) -> Vec<PathBuf> {
    let Ok(our_pid_namespace) = current_pid_namespace() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.filter_map(|entry| entry.ok()) {
        let folder = entry.path();
        let is_server_folder = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(FOLDER_PREFIX));
        if !is_server_folder || !folder.is_dir() {
            continue;
        }
        let Some(owner) = std::fs::read_to_string(folder.join(MARKER))
            .ok()
            .and_then(|text| Owner::from_marker(&text))
        else {
            continue;
        };
        let gone = owner.is_gone(&our_pid_namespace, process_start_ticks(owner.pid));
        if !gone || postmaster_running(&folder) {
            continue;
        }
        match std::fs::remove_dir_all(&folder) {
            Ok(()) => removed.push(folder),
            Err(err) => stderrln!(
                "warning: cannot remove {}, left by a stallbench killed earlier ({err}); \
                 remove it by hand",
                folder.display()
            ),
        }
    }
    removed
}

/// The line a run prints after removing `folders`; `None` when there were none.
pub fn removed_message(folders: &[PathBuf]) -> Option<String> {
    let names: Vec<String> = folders
        .iter()
        .map(|folder| folder.display().to_string())
        .collect();
    match names.len() {
        0 => None,
        1 => Some(format!(
            "removed 1 folder left by a stallbench killed earlier: {}",
            names[0]
        )),
        count => Some(format!(
            "removed {count} folders left by stallbench runs killed earlier: {}",
            names.join(", ")
        )),
    }
}

/// The start time of a live process, `None` if there is none with that pid or it is a zombie.
fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (state, start_ticks) = parse_stat(&stat)?;
    (state != 'Z').then_some(start_ticks)
}

/// The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line.
/// The command name (field 2) is in parentheses and may hold spaces and `)`.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4 to 21 come between the state and the start time.
    let start_ticks = fields.nth(18)?.parse().ok()?;
    Some((state, start_ticks))
}

fn current_pid_namespace() -> anyhow::Result<String> {
    let link = std::fs::read_link("/proc/self/ns/pid")
        .context("reading this process's pid namespace from /proc/self/ns/pid")?;
    Ok(link.to_string_lossy().into_owned())
}

/// A postmaster still runs in `folder`, the primary's or the standby's:
/// its `postmaster.pid` names a live process whose command line holds the
/// folder (a harness killed a moment ago leaves a server that is still
/// shutting down).
fn postmaster_running(folder: &Path) -> bool {
    [
        folder.join("data"),
        folder.join(super::standby::FOLDER).join("data"),
    ]
    .iter()
    .any(|data_dir| running_in(folder, data_dir))
}

/// The postmaster of `data_dir`, in `folder`, still runs.
fn running_in(folder: &Path, data_dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(data_dir.join("postmaster.pid")) else {
        return false;
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|line| line.trim().parse::<u32>().ok())
    else {
        return false;
    };
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    String::from_utf8_lossy(&cmdline).contains(&*folder.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            pid: 4242,
            start_ticks: 123456,
            pid_namespace: "pid:[4026531836]".to_string(),
        }
    }

    #[test]
    fn a_marker_reads_back() {
        assert_eq!(Owner::from_marker(&owner().to_marker()), Some(owner()));
    }

    #[test]
    fn a_malformed_marker_is_unreadable() {
        for text in [
            "",
            "pid=4242\nstart_ticks=123456\n",
            "pid=x\nstart_ticks=123456\npid_namespace=pid:[1]\n",
            "pid=4242\nstart_ticks=-1\npid_namespace=pid:[1]\n",
            "pid=4242\nstart_ticks=123456\npid_namespace=\n",
            "\u{0}\u{ff}garbage",
        ] {
            assert_eq!(Owner::from_marker(text), None, "{text:?}");
        }
    }

    #[test]
    fn only_an_owner_that_is_gone_from_our_namespace_counts_as_gone() {
        let owner = owner();
        let ours = "pid:[4026531836]";
        assert!(owner.is_gone(ours, None), "no process with that pid");
        assert!(owner.is_gone(ours, Some(999)), "the pid was reused");
        assert!(!owner.is_gone(ours, Some(123456)), "the owner runs");
        assert!(
            !owner.is_gone("pid:[4026532000]", None),
            "another namespace: its pids are not ours to judge"
        );
    }

    #[test]
    fn stat_lines_give_state_and_start_time() {
        let stat = "4242 (stall bench) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000 10";
        assert_eq!(parse_stat(stat), Some(('S', 123456)));
        let odd_name = "7 (a) b) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0";
        assert_eq!(parse_stat(odd_name), Some(('Z', 99)));
        assert_eq!(parse_stat("7 (short) S 1"), None);
    }

    #[test]
    fn this_process_is_alive_and_its_marker_says_so() {
        let me = Owner::current().unwrap();
        let ours = current_pid_namespace().unwrap();
        assert!(!me.is_gone(&ours, process_start_ticks(me.pid)));
    }

    #[test]
    fn folders_of_live_or_unknown_owners_stay_and_those_of_gone_ones_go() {
        let base = tempfile::tempdir().unwrap();
        let make = |name: &str, marker: Option<String>| {
            let folder = base.path().join(name);
            std::fs::create_dir(&folder).unwrap();
            if let Some(marker) = marker {
                std::fs::write(folder.join(MARKER), marker).unwrap();
            }
            folder
        };
        let namespace = current_pid_namespace().unwrap();
        let gone = Owner {
            start_ticks: process_start_ticks(std::process::id()).unwrap() + 1,
            pid: std::process::id(),
            pid_namespace: namespace,
        };
        let left = make("stallbench-gone", Some(gone.to_marker()));
        let live = make(
            "stallbench-live",
            Some(Owner::current().unwrap().to_marker()),
        );
        let unmarked = make("stallbench-unmarked", None);
        let unreadable = make("stallbench-bad", Some("pid=1".to_string()));
        let other = make("other-gone", Some(gone.to_marker()));

        let removed = remove_left_behind(base.path());
        assert_eq!(removed, std::slice::from_ref(&left));
        assert!(!left.exists());
        for kept in [live, unmarked, unreadable, other] {
            assert!(kept.exists(), "{} should stay", kept.display());
        }
    }

    #[test]
    fn the_message_counts_the_folders() {
        assert_eq!(removed_message(&[]), None);
        assert_eq!(
            removed_message(&[PathBuf::from("/tmp/stallbench-a")]).unwrap(),
            "removed 1 folder left by a stallbench killed earlier: /tmp/stallbench-a"
        );
        assert_eq!(
            removed_message(&[
                PathBuf::from("/tmp/stallbench-a"),
                PathBuf::from("/tmp/stallbench-b")
            ])
            .unwrap(),
            "removed 2 folders left by stallbench runs killed earlier: \
             /tmp/stallbench-a, /tmp/stallbench-b"
        );
    }
}
