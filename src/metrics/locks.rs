//! The lock queue as the server saw it: sampled sessions, per-second figures,
//! and the chain of who blocks whom at the worst moment.

use std::collections::HashMap;

use crate::choices::Side;
use crate::role::Role;

/// One session at one sample moment that waited for a lock or blocked another session.
#[derive(Debug, Clone, PartialEq)]
pub struct LockSample {
    /// When the sample was taken, on the run clock.
    pub t_s: f64,
    pub pid: u32,
    /// `reader-3`, `report`, `ddl`, `observer`, `startup` (the standby's
    /// replay), or `external:<pid>` for sessions not of this run.
    pub role: String,
    /// The session's state as the server reports it (`active`, `idle in
    /// transaction`); empty when hidden (another user's session without pg_read_all_stats).
    pub state: String,
    pub wait_event_type: String,
    pub wait_event: String,
    /// The lock it waits for, else the strongest lock it holds on a workload table.
    pub lock_mode: String,
    /// The table (or lock type) of that lock.
    pub relation: String,
    /// False while the session waits for `lock_mode`.
    pub granted: bool,
    /// Roles of the sessions the server says block it.
    pub blocked_by: Vec<String>,
    /// How long it has waited for the lock (0 when granted).
    pub wait_ms: f64,
    /// The server it was sampled on: the primary (the lock observer) or the
    /// hot standby (the replica observer).
    pub server: Side,
}

impl LockSample {
    /// Whether it waits for a row lock: the `transactionid` of the row's
    /// holder, or the `tuple` lock of the row's first waiter (PostgreSQL's
    /// row locks live in the row, not in the lock table).
    pub fn waits_for_row(&self) -> bool {
        !self.granted
            && self.wait_event_type == "Lock"
            && matches!(self.wait_event.as_str(), "transactionid" | "tuple")
    }

    /// The table of the row it waits for, if it waits for a row and the
    /// table was seen (a `transactionid` wait without the waiter's tuple
    /// lock names none).
    pub fn row_table(&self) -> Option<&str> {
        let named = !matches!(self.relation.as_str(), "" | "transactionid" | "tuple");
        (self.waits_for_row() && named).then_some(self.relation.as_str())
    }

    /// Its lock for people: `AccessShareLock on orders`, or for a row wait
    /// `row of jobs (ShareLock on transactionid)`.
    pub fn lock_text(&self) -> String {
        match (self.waits_for_row(), self.row_table()) {
            (true, Some(table)) => {
                format!("row of {table} ({} on {})", self.lock_mode, self.wait_event)
            }
            (true, None) => format!("row ({} on {})", self.lock_mode, self.wait_event),
            (false, _) => format!("{} on {}", self.lock_mode, self.relation),
        }
    }
}

/// When the lock observer first saw each wait, for waits the server does not
/// time: PostgreSQL's lock view has `waitstart` from version 14 on (null for a
/// moment after a wait begins). Such a wait's time is the time since its first
/// sighting, short by less than one sample interval.
#[derive(Debug, Default)]
pub struct WaitSightings {
    first_seen_s: HashMap<WaitKey, f64>,
}

/// One wait: the waiting session's pid, the lock mode and the object.
pub type WaitKey = (u32, String, String);

impl WaitSightings {
    /// Records the waits seen in the sample taken at `t_s`, forgets the ones
    /// no longer seen (ended, or granted), and returns how long each of
    /// `waits` has been seen, in ms, in their order.
    pub fn sighted(&mut self, t_s: f64, waits: &[WaitKey]) -> Vec<f64> {
        self.first_seen_s.retain(|key, _| waits.contains(key));
        waits
            .iter()
            .map(|key| {
                let first_s = *self.first_seen_s.entry(key.clone()).or_insert(t_s);
                (t_s - first_s) * 1000.0
            })
            .collect()
    }
}

/// Lock figures of one second of the timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondLocks {
    /// Most sessions seen at once whose blockers include the DDL session.
    pub waiting_behind_ddl: u32,
    /// The longest lock wait seen in this second.
    pub oldest_wait_ms: f64,
}

/// Everything the lock observer and the server log say about one strategy.
#[derive(Debug, Clone, Default)]
pub struct LockReport {
    /// One entry per second of the timeline (may be shorter when read back from files).
    pub per_second: Vec<SecondLocks>,
    /// Every sampled session that waited for a lock or blocked another, in time order.
    pub samples: Vec<LockSample>,
    /// The sample moment with the most sessions waiting behind the DDL, ties
    /// broken by the longest wait (see [`is_worse_moment`]): the chain at its worst.
    pub worst: Vec<LockSample>,
    /// Sentences from the throwaway server's log (empty on `--db-url`).
    pub server_log: Vec<String>,
    /// When the observer was without a connection; empty when read back from files.
    pub observer_gaps: Vec<ObserverGap>,
}

/// A time the lock observer had lost its connection: nothing was sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct ObserverGap {
    /// When it noticed the loss, on the run clock.
    pub lost_s: f64,
    /// When it was connected again; `None` if the run ended first.
    pub back_s: Option<f64>,
}

impl LockReport {
    /// Lock figures of `second`, zeros if none were recorded.
    pub fn second(&self, second: u32) -> SecondLocks {
        self.per_second
            .get(second as usize)
            .copied()
            .unwrap_or_default()
    }
}

/// Whether `moment` is a worse lock queue than `worst_so_far` (both the
/// sessions of one sample): anyone waiting at all; every waiter with its
/// blocker named (a waiter blocked by no one is being handed its lock at that
/// instant, and its chain would end in nobody); more sessions waiting behind
/// the DDL; as many, and the DDL itself still waiting (so the chain keeps its
/// root blocker, not the instant after the DDL got its lock); then a longer
/// wait. The first of equal moments stays the worst.
pub fn is_worse_moment(moment: &[LockSample], worst_so_far: &[LockSample]) -> bool {
    let now = severity(moment);
    let worst = severity(worst_so_far);
    (now.waits, now.blockers_named, now.behind_ddl, now.ddl_waits)
        .cmp(&(
            worst.waits,
            worst.blockers_named,
            worst.behind_ddl,
            worst.ddl_waits,
        ))
        .then(now.longest_wait_ms.total_cmp(&worst.longest_wait_ms))
        .is_gt()
}

/// The lock samples of both servers, in time order, and the worst moment
/// across them: the primary's (`primary_worst`), unless one of the standby's
/// `standby_moments` (each look's sessions) is worse by [`is_worse_moment`],
/// where the startup process replaying the DDL's lock counts as the DDL.
/// One moment is one server's: the two observers sample apart.
pub fn across_servers<'a>(
    primary: Vec<LockSample>,
    primary_worst: Vec<LockSample>,
    standby_moments: impl IntoIterator<Item = &'a [LockSample]>,
) -> (Vec<LockSample>, Vec<LockSample>) {
    let mut samples = primary;
    let mut standby_worst: &[LockSample] = &[];
    for moment in standby_moments {
        samples.extend_from_slice(moment);
        if is_worse_moment(moment, standby_worst) {
            standby_worst = moment;
        }
    }
    // Stable: each server's samples keep their order.
    samples.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let worst = if is_worse_moment(standby_worst, &primary_worst) {
        standby_worst.to_vec()
    } else {
        primary_worst
    };
    (samples, worst)
}

/// How bad one sample moment is, in the order [`is_worse_moment`] compares.
struct MomentSeverity {
    /// Anyone waits (a wait PostgreSQL 13 does not time still counts).
    waits: bool,
    /// Every waiter names the session it waits for.
    blockers_named: bool,
    /// Sessions waiting behind the DDL (or, on the standby, behind the
    /// startup process replaying its lock).
    behind_ddl: usize,
    /// The DDL itself (or its replay) waits.
    ddl_waits: bool,
    /// The longest wait among the waiters.
    longest_wait_ms: f64,
}

fn severity(moment: &[LockSample]) -> MomentSeverity {
    let waiting: Vec<&LockSample> = moment.iter().filter(|s| !s.granted).collect();
    // On the standby the startup process replays the DDL's lock: who waits
    // behind it waits behind the DDL.
    let is_ddl = |role: &String| matches!(Role::parse(role), Some(Role::Ddl | Role::Startup));
    MomentSeverity {
        waits: !waiting.is_empty(),
        blockers_named: waiting.iter().all(|s| !s.blocked_by.is_empty()),
        behind_ddl: waiting
            .iter()
            .filter(|s| s.blocked_by.iter().any(is_ddl))
            .count(),
        ddl_waits: waiting.iter().any(|s| is_ddl(&s.role)),
        longest_wait_ms: waiting.iter().map(|s| s.wait_ms).fold(0.0, f64::max),
    }
}

/// One level of the chain: sessions with the same lock, the same state and the same blockers.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainLink {
    /// Roles in this group, e.g. `reader-1`, `reader-2`.
    pub roles: Vec<String>,
    pub pids: Vec<u32>,
    pub lock_mode: String,
    pub relation: String,
    /// True for the root (holds the lock), false for waiters.
    pub holds: bool,
    pub blocked_by: Vec<String>,
    pub wait_ms: f64,
    /// The server the group's sessions were sampled on.
    pub server: Side,
    /// The group waits for a row lock (see [`LockSample::waits_for_row`]);
    /// `relation` is then the row's table, or empty when it was not seen.
    pub row_wait: bool,
}

/// Orders the sessions of one sample moment as a chain: the roots (blocking others
/// while not waiting) first, then each level of waiters behind the one before.
pub fn chain(worst: &[LockSample]) -> Vec<ChainLink> {
    let mut placed: Vec<&LockSample> = Vec::new();
    let mut levels: Vec<Vec<&LockSample>> = Vec::new();
    let roots: Vec<&LockSample> = worst.iter().filter(|s| s.granted).collect();
    if !roots.is_empty() {
        placed.extend(&roots);
        levels.push(roots);
    }
    loop {
        let next: Vec<&LockSample> = worst
            .iter()
            .filter(|s| !placed.iter().any(|p| p.pid == s.pid))
            .filter(|s| {
                s.blocked_by
                    .iter()
                    .all(|blocker| placed.iter().any(|p| &p.role == blocker))
            })
            .collect();
        if next.is_empty() {
            break;
        }
        placed.extend(&next);
        levels.push(next);
    }
    // Whatever is left waits in a cycle (a deadlock): list it last as is.
    let rest: Vec<&LockSample> = worst
        .iter()
        .filter(|s| !placed.iter().any(|p| p.pid == s.pid))
        .collect();
    if !rest.is_empty() {
        levels.push(rest);
    }
    let mut links = Vec::new();
    for level in levels {
        for sample in level {
            let row_wait = sample.waits_for_row();
            let relation = match row_wait {
                true => sample.row_table().unwrap_or_default().to_string(),
                false => sample.relation.clone(),
            };
            let same = links.iter_mut().find(|link: &&mut ChainLink| {
                (link.lock_mode == sample.lock_mode || (link.row_wait && row_wait))
                    && link.row_wait == row_wait
                    && link.relation == relation
                    && link.holds == sample.granted
                    && link.blocked_by == sample.blocked_by
                    && link.server == sample.server
                    && !sample.granted
            });
            match same {
                Some(link) => {
                    link.roles.push(sample.role.clone());
                    link.pids.push(sample.pid);
                    link.wait_ms = link.wait_ms.max(sample.wait_ms);
                }
                None => links.push(ChainLink {
                    roles: vec![sample.role.clone()],
                    pids: vec![sample.pid],
                    lock_mode: sample.lock_mode.clone(),
                    relation,
                    holds: sample.granted,
                    blocked_by: sample.blocked_by.clone(),
                    wait_ms: sample.wait_ms,
                    server: sample.server,
                    row_wait,
                }),
            }
        }
    }
    links
}

/// Roles with the repeated ones said once with their count, in the order
/// they first appear: the application pool's connections all share one name,
/// so ten of them read `reader-pool ×10`, not the name ten times.
pub fn group_repeated(roles: &[String]) -> Vec<String> {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for role in roles {
        match counted.iter_mut().find(|(seen, _)| *seen == role.as_str()) {
            Some((_, count)) => *count += 1,
            None => counted.push((role, 1)),
        }
    }
    counted
        .into_iter()
        .map(|(role, count)| match count {
            1 => role.to_string(),
            _ => format!("{role} ×{count}"),
        })
        .collect()
}

/// One sampled session of the reference moment, for unit tests.
#[cfg(test)]
pub(crate) fn sample(
    pid: u32,
    role: &str,
    mode: &str,
    granted: bool,
    blocked_by: &[&str],
) -> LockSample {
    LockSample {
        t_s: 8.2,
        pid,
        role: role.into(),
        state: "active".into(),
        wait_event_type: if granted { "Timeout" } else { "Lock" }.into(),
        wait_event: if granted { "PgSleep" } else { "relation" }.into(),
        lock_mode: mode.into(),
        relation: "orders".into(),
        granted,
        blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
        wait_ms: if granted { 0.0 } else { 2300.0 },
        server: Side::Primary,
    }
}

/// The moment the reference article shows, for unit tests: report 100, ALTER 108, four readers.
#[cfg(test)]
pub(crate) fn reference_moment() -> Vec<LockSample> {
    vec![
        sample(90, "reader-1", "AccessShareLock", false, &["ddl"]),
        sample(108, "ddl", "AccessExclusiveLock", false, &["report"]),
        sample(92, "reader-3", "AccessShareLock", false, &["ddl"]),
        sample(100, "report", "AccessShareLock", true, &[]),
        sample(91, "reader-2", "AccessShareLock", false, &["ddl"]),
        sample(93, "reader-4", "AccessShareLock", false, &["ddl"]),
    ]
}

/// The replica's moment of the issue, for unit tests: the report (3026) on
/// the standby holds `orders`, the startup process (2950) replays the DDL's
/// AccessExclusiveLock behind it, four readers wait behind the replay.
#[cfg(test)]
pub(crate) fn replica_moment() -> Vec<LockSample> {
    let mut moment = vec![
        sample(3031, "reader-1", "AccessShareLock", false, &["startup"]),
        sample(2950, "startup", "AccessExclusiveLock", false, &["report"]),
        sample(3026, "report", "AccessShareLock", true, &[]),
        sample(3032, "reader-2", "AccessShareLock", false, &["startup"]),
        sample(3033, "reader-3", "AccessShareLock", false, &["startup"]),
        sample(3034, "reader-4", "AccessShareLock", false, &["startup"]),
    ];
    for sample in &mut moment {
        sample.server = Side::Replica;
    }
    moment
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_comes_first_then_each_level_behind_it() {
        let links = chain(&reference_moment());
        assert_eq!(links.len(), 3);
        assert_eq!(links[0].roles, ["report"]);
        assert!(links[0].holds);
        assert_eq!(links[1].roles, ["ddl"]);
        assert_eq!(links[1].blocked_by, ["report"]);
        assert_eq!(links[2].roles.len(), 4);
        assert_eq!(links[2].blocked_by, ["ddl"]);
    }

    /// `moment` taken at `t_s` with each waiter's wait set to `wait_ms`.
    fn at(t_s: f64, wait_ms: f64, mut moment: Vec<LockSample>) -> Vec<LockSample> {
        for sample in &mut moment {
            sample.t_s = t_s;
            if !sample.granted {
                sample.wait_ms = wait_ms;
            }
        }
        moment
    }

    /// The worst of `moments` as the observer picks it, sample after sample.
    fn worst_of(moments: &[Vec<LockSample>]) -> f64 {
        let mut worst: &[LockSample] = &[];
        for moment in moments {
            if is_worse_moment(moment, worst) {
                worst = moment;
            }
        }
        worst[0].t_s
    }

    #[test]
    fn the_worst_moment_has_most_waiters_behind_the_ddl_then_the_longest_wait() {
        let full = reference_moment();
        let two_readers: Vec<LockSample> = full
            .iter()
            .filter(|s| !matches!(s.role.as_str(), "reader-3" | "reader-4"))
            .cloned()
            .collect();
        let ddl_alone: Vec<LockSample> = full
            .iter()
            .filter(|s| !s.role.starts_with("reader-"))
            .cloned()
            .collect();
        // The first sample of the stall has all four readers behind the DDL,
        // waiting 5 ms; later samples have them waiting longer.
        let samples = vec![
            at(2.0, 3_000.0, ddl_alone.clone()),
            at(3.0, 5.0, full.clone()),
            at(4.0, 4_000.0, two_readers.clone()),
            at(5.0, 8_000.0, full.clone()),
            at(6.0, 8_000.0, full.clone()),
            at(7.0, 9_000.0, two_readers),
        ];
        assert_eq!(worst_of(&samples), 5.0);
        assert_eq!(worst_of(&samples[..3]), 3.0);
        assert_eq!(worst_of(&samples[..1]), 2.0);
        // A waiter behind someone else than the DDL, with a wait not measured
        // (PostgreSQL 13), still makes a worst moment.
        let unmeasured = at(
            1.0,
            0.0,
            vec![sample(
                90,
                "reader-1",
                "RowExclusiveLock",
                false,
                &["report"],
            )],
        );
        assert!(is_worse_moment(&unmeasured, &[]));
        assert!(!is_worse_moment(&[], &unmeasured));
    }

    #[test]
    fn a_moment_whose_waiter_names_no_blocker_is_not_the_worst() {
        // At 5.0 s the report has just ended: the DDL still shows as waiting,
        // blocked by no one, for a moment, with its longest wait yet.
        let handover: Vec<LockSample> = reference_moment()
            .into_iter()
            .filter(|s| s.role != "report")
            .map(|mut s| {
                if s.role == "ddl" {
                    s.blocked_by.clear();
                }
                s
            })
            .collect();
        let samples = vec![
            at(3.0, 2_000.0, reference_moment()),
            at(5.0, 4_000.0, handover.clone()),
        ];
        assert_eq!(worst_of(&samples), 3.0);
        // Alone, it still is a moment when sessions waited.
        assert_eq!(worst_of(&samples[1..]), 5.0);
    }

    #[test]
    fn an_untimed_wait_lasts_from_its_first_sighting_until_it_is_no_longer_seen() {
        let key = |pid: u32, mode: &str| (pid, mode.to_string(), "orders".to_string());
        let mut sightings = WaitSightings::default();
        assert_eq!(
            sightings.sighted(6.0, &[key(108, "AccessExclusiveLock")]),
            [0.0]
        );
        let both = [key(108, "AccessExclusiveLock"), key(90, "AccessShareLock")];
        let waited = sightings.sighted(6.2, &both);
        assert!(
            (waited[0] - 200.0).abs() < 1e-6 && waited[1] == 0.0,
            "{waited:?}"
        );
        let waited = sightings.sighted(9.0, &both);
        assert!((waited[0] - 3000.0).abs() < 1e-6, "{waited:?}");
        assert!((waited[1] - 2800.0).abs() < 1e-6, "{waited:?}");
        // Granted at 9.2 s: a later wait of the same session starts again.
        assert!(sightings.sighted(9.2, &[]).is_empty());
        assert_eq!(
            sightings.sighted(9.4, &[key(108, "AccessExclusiveLock")]),
            [0.0]
        );
        // Another lock of the same session is another wait.
        let waited = sightings.sighted(9.6, &[key(108, "ShareLock")]);
        assert_eq!(waited, [0.0]);
    }

    #[test]
    fn a_deadlock_cycle_is_listed_after_the_rest() {
        let moment = vec![
            sample(173, "ddl-a", "AccessExclusiveLock", false, &["ddl-b"]),
            sample(174, "ddl-b", "AccessExclusiveLock", false, &["ddl-a"]),
        ];
        let links = chain(&moment);
        let roles: Vec<&str> = links
            .iter()
            .flat_map(|l| l.roles.iter().map(String::as_str))
            .collect();
        assert_eq!(roles, ["ddl-a", "ddl-b"]);
    }

    #[test]
    fn repeated_roles_are_said_once_with_their_count() {
        let roles: Vec<String> = ["ddl", "reader-pool", "reader-3", "reader-pool"]
            .iter()
            .map(|role| role.to_string())
            .collect();
        assert_eq!(
            group_repeated(&roles),
            ["ddl", "reader-pool ×2", "reader-3"]
        );
        assert!(group_repeated(&[]).is_empty());
    }

    #[test]
    fn the_standby_s_moment_is_the_worst_when_the_primary_s_is_milder() {
        let replica = replica_moment();
        // On the primary, at most one reader waited behind the DDL, briefly.
        let primary: Vec<LockSample> = reference_moment()
            .into_iter()
            .filter(|s| matches!(s.role.as_str(), "report" | "ddl" | "reader-1"))
            .collect();
        let (samples, worst) =
            across_servers(primary.clone(), primary.clone(), [replica.as_slice()]);
        assert_eq!(worst, replica);
        assert_eq!(samples.len(), primary.len() + replica.len());
        // The four readers behind the replay count as behind the DDL.
        let links = chain(&worst);
        let roles: Vec<&str> = links.iter().map(|l| l.roles[0].as_str()).collect();
        assert_eq!(roles, ["report", "startup", "reader-1"]);
        assert!(links.iter().all(|link| link.server == Side::Replica));
        // A worse primary keeps its own moment; no standby moment, the primary's.
        let (_, worst) = across_servers(reference_moment(), reference_moment(), [&replica[..3]]);
        assert_eq!(worst, reference_moment());
        let (samples, worst) = across_servers(primary.clone(), primary.clone(), []);
        assert_eq!((samples, worst), (primary.clone(), primary));
    }

    #[test]
    fn samples_of_both_servers_are_in_time_order() {
        let mut late = replica_moment();
        for sample in &mut late {
            sample.t_s = 9.0;
        }
        let (samples, _) = across_servers(reference_moment(), Vec::new(), [late.as_slice()]);
        let mut early = replica_moment();
        for sample in &mut early {
            sample.t_s = 1.0;
        }
        let (with_early, _) = across_servers(reference_moment(), Vec::new(), [early.as_slice()]);
        assert_eq!(samples[0].server, Side::Primary);
        assert_eq!(with_early[0].server, Side::Replica);
        assert!(with_early.windows(2).all(|pair| pair[0].t_s <= pair[1].t_s));
    }
}
