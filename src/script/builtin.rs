//! pgbench's built-in scripts (`pgbench -b NAME`), word for word as pgbench 18
//! defines them, and how a name on the command line finds one (any
//! unambiguous prefix, as pgbench allows: `-b select` is `select-only`).

/// A built-in script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name `-b` takes.
    pub name: &'static str,
    /// pgbench's description.
    pub description: &'static str,
    /// The script.
    pub text: &'static str,
}

/// The built-in scripts, in pgbench's order; `tpcb-like` is the default.
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        description: "<builtin: TPC-B (sort of)>",
        text: "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    },
    Builtin {
        name: "simple-update",
        description: "<builtin: simple update>",
        text: "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    },
    Builtin {
        name: "select-only",
        description: "<builtin: select only>",
        text: "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    },
];

/// The built-in script `name` names: its full name or an unambiguous prefix.
pub fn find(name: &str) -> Result<&'static Builtin, String> {
    let names = || {
        BUILTINS
            .iter()
            .map(|builtin| builtin.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let matching: Vec<&Builtin> = BUILTINS
        .iter()
        .filter(|builtin| builtin.name.starts_with(name))
        .collect();
    match matching.as_slice() {
        [one] if !name.is_empty() => Ok(one),
        [] | [_] => Err(format!(
            "no built-in script is called \"{name}\"; the built-in scripts are {}",
            names()
        )),
        _ => Err(format!(
            "\"{name}\" is ambiguous: {} built-in scripts start with it; the built-in scripts are {}",
            matching.len(),
            names()
        )),
    }
}
