//! `stallbench check DIR --load FILE.toml`: a workload file (as `capture`
//! writes one) is the check's traffic: its weighted scripts, its clients and
//! its rate, on the database check builds from the migrations; a script on a
//! table the migrations do not make is refused before any run (exit 2).

use crate::check::migrations_folder;
use crate::common::*;

/// Two weighted scripts on `items`, 2 clients, open loop at 40 transactions/s.
const WORKLOAD: &str = r#"
name = "captured-test"
description = "two weighted scripts"
setup = ""

[load]
clients = 2
duration = "60s"
rate = 40.0

[[load.scripts]]
name = "01-select-items"
sql = '''
\set p1 random(1, 500)
SELECT name FROM items WHERE id = :p1;
'''
weight = 750

[[load.scripts]]
name = "02-update-items"
sql = '''
\set p1 random(1, 500)
UPDATE items SET name = 'x' WHERE id = :p1;
'''
weight = 250

[[strategies]]
name = "naive"
"#;

const MIGRATIONS: [(&str, &str); 2] = [
    (
        "0001_init.sql",
        "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);\n",
    ),
    (
        "0002_add_note.sql",
        "ALTER TABLE items ADD COLUMN note text;\n",
    ),
];

#[test]
fn a_workload_file_is_the_checks_load_and_a_table_it_lacks_is_refused() {
    require_postgres();
    let _cpus = cpus_shared();
    let dir = tempfile::tempdir().unwrap();
    let migrations = migrations_folder(dir.path(), &MIGRATIONS);
    let workload = dir.path().join("w.toml");
    std::fs::write(&workload, WORKLOAD).unwrap();
    let out = dir.path().join("out");
    let check = |load: &std::path::Path, out: &std::path::Path| {
        stallbench_command()
            .arg("check")
            .arg(&migrations)
            .args(["--rows", "500", "--measure", "all", "--deploy", "naive"])
            .args(["--recommend", "naive", "--blocker", "none"])
            .args(["--hold", "1s", "--duration", "4s"])
            .args(["--quiet", "--load"])
            .arg(load)
            .arg("--out")
            .arg(out)
            .assert()
    };
    let assert = check(&workload, &out);
    assert.code(0);
    let check_md = std::fs::read_to_string(out.join("check.md")).unwrap();
    assert!(
        check_md.contains(
            "01-select-items (weight 750), 02-update-items (weight 250), 40 transactions/s"
        ),
        "{check_md}"
    );
    let written = std::fs::read_to_string(out.join("0002_add_note").join("workload.toml")).unwrap();
    let file: toml::Value = toml::from_str(&written).unwrap();
    let load = &file["load"];
    assert_eq!(load["clients"].as_integer(), Some(2), "{written}");
    assert_eq!(load["rate"].as_float(), Some(40.0), "{written}");
    let scripts: Vec<(String, i64)> = load["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let name = s["name"].as_str().unwrap_or_default().to_string();
            (name, s["weight"].as_integer().unwrap())
        })
        .collect();
    assert_eq!(scripts.len(), 2, "{written}");
    assert!(
        scripts
            .iter()
            .any(|(name, weight)| name.contains("01-select-items") && *weight == 750),
        "{written}"
    );
    assert!(
        scripts
            .iter()
            .any(|(name, weight)| name.contains("02-update-items") && *weight == 250),
        "{written}"
    );

    // A captured workload on a table the migrations do not make.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, WORKLOAD.replace("UPDATE items", "UPDATE orders")).unwrap();
    let assert = check(&other, &dir.path().join("out2")).code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("script 02-update-items uses table orders")
            && stderr.contains("remove that script"),
        "{stderr}"
    );
}
