//! The words of a run whose load ran on the replica: the headline says which
//! server its figures are, and a note says why a strategy whose migration
//! was done on the primary still stalled the replica's readers.

use crate::choices::Side;
use crate::metrics::Place;

use super::super::format::{format_count, format_seconds};

/// The headline with the server its figures come from: `Load on the
/// replica: <headline>`; the headline alone on the primary.
pub fn on_server(headline: String, load_on: Side) -> String {
    match load_on {
        Side::Primary => headline,
        Side::Replica => format!("Load on the replica: {headline}"),
    }
}

/// With the load on the replica, one note per strategy whose migration was
/// done on the primary while the replica's readers stalled: "retry: done on
/// the primary at 6.0 s after 1 try, yet the replica's readers stalled 10 s
/// (9 s at 0 tps): the replica replays the migration's lock behind its own
/// long transactions, which a lock_timeout on the primary cannot see." None
/// on the primary.
pub fn replica_notes(places: &[Place], load_on: Side) -> Vec<String> {
    if load_on == Side::Primary {
        return Vec::new();
    }
    places
        .iter()
        .filter_map(|place| {
            let row = &place.row;
            let done_at_s = row.migration_done_at_s()?;
            let stall_s = row.longest_stall_s();
            if stall_s.median < 1.0 {
                return None;
            }
            let tries = row.ddl_tries().median;
            Some(format!(
                "{}: done on the primary at {} s after {} {}, yet the replica's readers stalled \
                 {} s ({} s at 0 tps): the replica replays the migration's lock behind its own \
                 long transactions, which a lock_timeout on the primary cannot see.",
                row.strategy,
                format_seconds(done_at_s.median),
                format_count(tries),
                if tries == 1.0 { "try" } else { "tries" },
                format_count(stall_s.median),
                format_count(row.zero_tps_seconds().median),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ranking::rank_rows;
    use crate::testing::neutral_row as row;

    /// retry done on the primary at 6.0 s in one try with the replica stalled
    /// 10 s; replica-aware done at 16.1 s without a stall.
    fn replica_places() -> Vec<Place> {
        let mut retry = row("retry", 0);
        retry.runs[0].longest_stall_s = 10;
        retry.runs[0].zero_tps_seconds = 9;
        retry.runs[0].worst_second_tps = 0;
        retry.runs[0].migration_done_at_s = Some(6.04);
        retry.runs[0].ddl_tries = 1;
        let mut aware = row("replica-aware", 1);
        aware.runs[0].migration_done_at_s = Some(16.1);
        aware.runs[0].ddl_tries = 1;
        rank_rows(vec![retry, aware])
    }

    #[test]
    fn a_migration_done_on_the_primary_that_stalled_the_replica_is_explained() {
        assert_eq!(
            replica_notes(&replica_places(), Side::Replica),
            vec![
                "retry: done on the primary at 6.0 s after 1 try, yet the replica's readers \
                 stalled 10 s (9 s at 0 tps): the replica replays the migration's lock behind \
                 its own long transactions, which a lock_timeout on the primary cannot see."
            ]
        );
    }

    #[test]
    fn the_primary_needs_no_replica_words() {
        assert!(replica_notes(&replica_places(), Side::Primary).is_empty());
        assert_eq!(on_server("x.".into(), Side::Primary), "x.");
        assert_eq!(
            on_server("x.".into(), Side::Replica),
            "Load on the replica: x."
        );
    }
}
