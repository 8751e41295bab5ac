//! The words of a run whose load ran on the replica (alone, or beside the
//! primary's): the headline says which server its figures are, and a note
//! says why a strategy whose migration was done on the primary still stalled
//! the replica's readers.

use crate::choices::LoadOn;
use crate::metrics::Place;

use super::super::format::{format_count, format_seconds};

/// The headline with the server its figures come from: `Load on the
/// replica: <headline>`; with the load on both servers, which server judged
/// which strategy (the one whose clients fared worse); the headline alone on
/// the primary.
pub fn on_server(headline: String, places: &[Place], load_on: LoadOn) -> String {
    match load_on {
        LoadOn::Primary => headline,
        LoadOn::Replica => format!("Load on the replica: {headline}"),
        LoadOn::Both => {
            let (on_replica, on_primary): (Vec<&Place>, Vec<&Place>) =
                places.iter().partition(|place| judged_on_replica(place));
            let names = |places: &[&Place]| -> String {
                let names: Vec<&str> = places
                    .iter()
                    .map(|place| place.row.strategy.as_str())
                    .collect();
                names.join(", ")
            };
            let judged = match (on_replica.is_empty(), on_primary.is_empty()) {
                (true, _) => "the primary's clients fared worse for every strategy".to_string(),
                (false, true) => "the replica's clients fared worse for every strategy".to_string(),
                (false, false) => format!(
                    "judged by the replica for {}, by the primary for {}",
                    names(&on_replica),
                    names(&on_primary)
                ),
            };
            format!("Load on both servers ({judged}): {headline}")
        }
    }
}

/// Whether the place's figures are the replica's clients' (a load on both servers).
fn judged_on_replica(place: &Place) -> bool {
    place.row.runs.iter().any(|run| run.judged_on_replica)
}

/// With the load on the replica, one note per strategy whose migration was
/// done on the primary while the replica's readers stalled: "retry: done on
/// the primary at 6.0 s after 1 try, yet the replica's readers stalled 10 s
/// (9 s at 0 tps): the replica replays the migration's lock behind its own
/// long transactions, which a lock_timeout on the primary cannot see." With
/// the load on both servers, only for a strategy judged by the replica. None
/// on the primary.
pub fn replica_notes(places: &[Place], load_on: LoadOn) -> Vec<String> {
    if load_on == LoadOn::Primary {
        return Vec::new();
    }
    places
        .iter()
        .filter(|place| load_on == LoadOn::Replica || judged_on_replica(place))
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
            replica_notes(&replica_places(), LoadOn::Replica),
            vec![
                "retry: done on the primary at 6.0 s after 1 try, yet the replica's readers \
                 stalled 10 s (9 s at 0 tps): the replica replays the migration's lock behind \
                 its own long transactions, which a lock_timeout on the primary cannot see."
            ]
        );
    }

    #[test]
    fn the_primary_needs_no_replica_words() {
        let places = replica_places();
        assert!(replica_notes(&places, LoadOn::Primary).is_empty());
        assert_eq!(on_server("x.".into(), &places, LoadOn::Primary), "x.");
        assert_eq!(
            on_server("x.".into(), &places, LoadOn::Replica),
            "Load on the replica: x."
        );
    }

    #[test]
    fn with_both_servers_loaded_the_headline_names_the_server_that_judged_each_strategy() {
        let mut places = replica_places();
        assert_eq!(
            on_server("x.".into(), &places, LoadOn::Both),
            "Load on both servers (the primary's clients fared worse for every strategy): x."
        );
        assert!(replica_notes(&places, LoadOn::Both).is_empty());
        let retry = places
            .iter_mut()
            .find(|place| place.row.strategy == "retry");
        retry.unwrap().row.runs[0].judged_on_replica = true;
        assert_eq!(
            on_server("x.".into(), &places, LoadOn::Both),
            "Load on both servers (judged by the replica for retry, by the primary for \
             replica-aware): x."
        );
        assert_eq!(
            replica_notes(&places, LoadOn::Both),
            replica_notes(&places, LoadOn::Replica)
        );
    }
}
