//! Tests of the script language through `parse` and `step`: what a script
//! text becomes, where its commands go, and what running them gives.

use super::*;

fn parse_ok(text: &str) -> Script {
    parse("test.sql", text).unwrap_or_else(|error| panic!("{error}"))
}

fn parse_error(text: &str) -> String {
    match parse("workloads/x.sql", text) {
        Ok(script) => panic!("expected an error, parsed {script:?}"),
        Err(error) => error.to_string(),
    }
}

fn automatic() -> Automatic {
    Automatic {
        client_id: 3,
        default_seed: 5432,
        random_seed: 7,
    }
}

fn sql_at(script: &Script, index: usize) -> &SqlCommand {
    match &script.commands[index] {
        ScriptCommand::Sql(sql) => sql,
        other => panic!("command {index} is not SQL: {other:?}"),
    }
}

fn slot(script: &Script, name: &str) -> usize {
    script.variable_slot(name).unwrap()
}

/// Runs a whole transaction; SQL commands are recorded (as their text for the
/// simple protocol) and skipped, sleeps and shell commands recorded.
fn run(script: &Script, vars: &mut Vars) -> Result<Vec<String>, ScriptFailure> {
    let mut prng = Prng::new(1);
    let mut cursor = Cursor::default();
    let mut done = Vec::new();
    loop {
        match script.step(&mut cursor, vars, &mut prng)? {
            Step::Done => return Ok(done),
            Step::Sql(sql) => {
                let mut text = String::new();
                sql.render_simple(vars, &mut text);
                done.push(text);
            }
            Step::Sleep { duration_us } => done.push(format!("sleep {duration_us}")),
            Step::Shell { command, .. } => done.push(format!("shell {command}")),
            Step::StartPipeline => done.push("start".into()),
            Step::SyncPipeline => done.push("sync".into()),
            Step::EndPipeline => done.push("end".into()),
        }
    }
}

fn run_ok(text: &str) -> (Script, Vars, Vec<String>) {
    let script = parse_ok(text);
    let mut vars = script.new_vars(automatic(), &[]);
    let done = run(&script, &mut vars).unwrap_or_else(|failure| panic!("{failure:?}"));
    (script, vars, done)
}

#[test]
fn the_builtin_scripts_parse_and_bind_their_variables() {
    let tpcb = parse_ok(builtin::find("tpcb-like").unwrap().text);
    assert_eq!(tpcb.commands.len(), 11);
    let update = sql_at(&tpcb, 5);
    assert_eq!(
        update.sql,
        "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
    );
    assert_eq!(
        update.params,
        vec![
            Param::Value {
                slot: slot(&tpcb, "delta")
            },
            Param::Value {
                slot: slot(&tpcb, "aid")
            }
        ]
    );
    assert_eq!(update.line, 6);
    assert_eq!(update.number, 1);
    assert_eq!(tpcb.sql_commands().count(), 7);
    let select = parse_ok(builtin::find("select").unwrap().text);
    assert_eq!(
        sql_at(&select, 1).sql,
        "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
    );
    assert_eq!(
        builtin::find("simple-update").unwrap().name,
        "simple-update"
    );
    assert!(builtin::find("s").unwrap_err().contains("ambiguous"));
    assert!(builtin::find("nope").unwrap_err().contains("tpcb-like"));
    // A run: aid stays within 1..=100000 * scale, delta within +-5000.
    let mut vars = tpcb.new_vars(automatic(), &[("scale".into(), "2".into())]);
    for _ in 0..1000 {
        let done = run(&tpcb, &mut vars).unwrap();
        assert_eq!(done.len(), 7);
        let aid = vars
            .get(slot(&tpcb, "aid"))
            .unwrap()
            .to_scalar("aid")
            .unwrap();
        assert!(matches!(aid, Scalar::Int(1..=200_000)), "{aid:?}");
        let delta = vars.get(slot(&tpcb, "delta")).unwrap().to_scalar("delta");
        assert!(matches!(delta, Ok(Scalar::Int(-5000..=5000))), "{delta:?}");
    }
}

#[test]
fn sql_variables_casts_quotes_and_parentheses() {
    let script = parse_ok(
        "\\set id 5\nSELECT :id::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, :id + :id;",
    );
    let sql = sql_at(&script, 1);
    assert_eq!(
        sql.sql,
        "SELECT $1::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, $2 + $3"
    );
    // One parameter per use, as pgbench numbers them.
    let id = Param::Value {
        slot: slot(&script, "id"),
    };
    assert_eq!(sql.params, vec![id, id, id]);
    // The simple protocol substitutes inside quotes too, as pgbench does.
    let (_, _, done) = run_ok("\\set id 5\nSELECT :id::int, ':id', $$ :id $$;");
    assert_eq!(done, vec!["SELECT 5::int, '5', $$ 5 $$"]);
    // A ';' inside parentheses does not end the statement (psql's rule).
    let script = parse_ok("SELECT (1; 2);\nSELECT 3");
    assert_eq!(sql_at(&script, 0).sql, "SELECT (1; 2)");
    assert_eq!(sql_at(&script, 1).sql, "SELECT 3");
    // Non-ASCII variable names.
    let script = parse_ok("\\set größe 5\nSELECT :größe;");
    assert_eq!(sql_at(&script, 1).sql, "SELECT $1");
}

#[test]
fn multi_line_statements_comments_and_semicolons_in_quotes() {
    let text = "\
-- a full-line comment

\\set a 1
\\set b 2
SELECT :a, -- trailing comment; with a semicolon
       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$, /* ; /* nested ; */ */ :b
  FROM t;
INSERT INTO t VALUES (:b)
";
    let script = parse_ok(text);
    assert_eq!(script.commands.len(), 4);
    let sql = sql_at(&script, 2);
    assert_eq!(
        sql.sql,
        "SELECT $1, \n       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$,   $2\n  FROM t"
    );
    assert_eq!(sql.line, 5);
    assert_eq!(sql_at(&script, 3).sql, "INSERT INTO t VALUES ($1)");
    assert_eq!(sql_at(&script, 3).line, 8);
}

#[test]
fn compound_statements_are_one_command_sent_as_one_query() {
    let (script, _, done) = run_ok("\\set x 7\nSELECT 1 \\; SELECT :x \\; ;\nSELECT 2;");
    let sql = sql_at(&script, 1);
    assert!(sql.compound);
    assert_eq!(done, vec!["SELECT 1 ; SELECT 7 ;", "SELECT 2"]);
    // pgbench's own test: empty statements around the compound.
    let script = parse_ok("\\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n");
    assert!(sql_at(&script, 0).compound);
    assert!(sql_at(&script, 0).results.is_some());
}

#[test]
fn meta_command_continues_after_trailing_backslash() {
    let (script, vars, _) = run_ok("\\set a 1 + \\\n  2\nSELECT :a;");
    assert_eq!(sql_at(&script, 1).line, 3);
    assert_eq!(vars.get(slot(&script, "a")), Some(&Value::int(3)));
}

#[test]
fn sleep_units_literals_and_variables() {
    let (_, _, done) = run_ok(
        "\\sleep 10 ms\n\\sleep 2\n\\set pause 250\n\\sleep :pause us\n\\SLEEP 3 S\n\\sleep 5ms\n\\sleep -5 s",
    );
    assert_eq!(
        done,
        vec![
            "sleep 10000",
            "sleep 2000000",
            "sleep 250",
            "sleep 3000000",
            "sleep 5000",
            "sleep 0"
        ]
    );
    // A double variable sleeps its text's integer part, as pgbench's atoi does.
    let (_, _, done) = run_ok("\\set one 1.0\n\\sleep :one ms\n\\set d 2.5\n\\sleep :d");
    assert_eq!(done, vec!["sleep 1000", "sleep 2000000"]);
    let script = parse_ok("\\sleep :nap ms");
    let mut vars = script.new_vars(automatic(), &[("nap".into(), "abc".into())]);
    let failure = run(&script, &mut vars).unwrap_err();
    assert_eq!(
        failure.error.to_string(),
        "invalid sleep time \"abc\" for variable \"nap\""
    );
    let mut vars = script.new_vars(automatic(), &[]);
    assert_eq!(
        run(&script, &mut vars).unwrap_err().error,
        EvalError::UndefinedVariable { name: "nap".into() }
    );
}

#[test]
fn automatic_and_outside_variables() {
    let script = parse_ok(
        "SELECT :client_id, :scale, :default_seed, :random_seed, :count, :ratio, :label, :missing;",
    );
    let outside = [
        ("count".to_string(), "42".to_string()),
        ("ratio".to_string(), "0.5".to_string()),
        ("label".to_string(), "t".to_string()),
        ("unused".to_string(), "x".to_string()),
    ];
    let vars = script.new_vars(automatic(), &outside);
    let sql = sql_at(&script, 0);
    let mut texts = Vec::new();
    for index in 0..sql.params.len() {
        let mut text = String::new();
        let defined = sql.write_param(index, &vars, &mut text);
        texts.push(defined.then_some(text));
    }
    let expected = ["3", "1", "5432", "7", "42", "0.5", "t"];
    for (text, expected) in texts.iter().zip(expected) {
        assert_eq!(text.as_deref(), Some(expected));
    }
    // An undefined variable is SQL NULL, as pgbench sends it.
    assert_eq!(texts[7], None);
    // Outside text is typed only when an expression reads it: `t` is true.
    assert_eq!(
        vars.get(slot(&script, "label")).unwrap().to_scalar("label"),
        Ok(Scalar::Bool(true))
    );
    // An outside scale overrides the automatic one.
    let vars = script.new_vars(automatic(), &[("scale".into(), "10".into())]);
    let mut text = String::new();
    sql.write_param(1, &vars, &mut text);
    assert_eq!(text, "10");
    // Simple protocol: an undefined variable stays as written.
    let mut text = String::new();
    sql.render_simple(&vars, &mut text);
    assert!(text.ends_with(", :missing"), "{text}");
}

#[test]
fn nested_if_elif_else_run_the_right_branches() {
    // pgbench's own nested-if test: only the 'correct' statements run.
    let text = "
\\if false
  SELECT 1 / 0;
  \\if true
    SELECT 1 / 0;
  \\elif true
    SELECT 1 / 0;
  \\else
    SELECT 1 / 0;
  \\endif
  SELECT 1 / 0;
\\elif false
  \\if true
    SELECT 1 / 0;
  \\elif true
    SELECT 1 / 0;
  \\else
    SELECT 1 / 0;
  \\endif
\\else
  \\if false
    SELECT 1 / 0;
  \\elif false
    SELECT 1 / 0;
  \\else
    SELECT 'correct';
  \\endif
\\endif
\\if true
  SELECT 'correct';
\\else
  \\if true
    SELECT 1 / 0;
  \\elif true
    SELECT 1 / 0;
  \\else
    SELECT 1 / 0;
  \\endif
\\endif
";
    let (_, _, done) = run_ok(text);
    assert_eq!(done, vec!["SELECT 'correct'", "SELECT 'correct'"]);
    // pgbench's if tests: each chooses one branch; skipped branches are not evaluated.
    let text = "\\set nope 0
\\if 1 > 0
\\set a 65
\\elif 0
\\set nope 1
\\else
\\set nope 1
\\endif
\\if 1 < 0
\\set nope 1
\\elif 1 > 0
\\set b 74
\\else
\\set nope 1
\\endif
\\if 1 < 0
\\set nope 1
\\elif 1 < 0
\\set nope 1
\\else
\\set c 83
\\endif
\\if 1 = 0
\\set nope 1/0
\\elif 1 <> 0
\\set d 93
\\endif
";
    let (script, vars, _) = run_ok(text);
    for (name, value) in [("nope", 0), ("a", 65), ("b", 74), ("c", 83), ("d", 93)] {
        assert_eq!(
            vars.get(slot(&script, name)),
            Some(&Value::int(value)),
            "{name}"
        );
    }
}

#[test]
fn gset_and_aset_store_columns_as_pgbench_does() {
    let script = parse_ok(
        "SELECT 1 AS i1, 2 AS i2 \\gset\nSELECT 3 AS i3 \\gset x_\n\\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\nSELECT :i1, :x_i3, :i6, :i7;",
    );
    let mut vars = script.new_vars(automatic(), &[]);
    let set = |columns: &[&str], rows: usize, values: &[&str]| ResultSet {
        columns: Some(columns.iter().map(|c| c.to_string()).collect()),
        rows,
        last_row: values.iter().map(|v| Some(v.to_string())).collect(),
    };
    let target = |index: usize| sql_at(&script, index).results.clone().unwrap();
    script
        .store_results(&target(0), &[set(&["i1", "i2"], 1, &["1", "2"])], &mut vars)
        .unwrap();
    script
        .store_results(&target(1), &[set(&["i3"], 1, &["3"])], &mut vars)
        .unwrap();
    let aset_results = [
        set(&["i6"], 1, &["6"]),
        set(&["i6"], 0, &[]),
        set(&["i7"], 2, &["7"]),
    ];
    script
        .store_results(&target(2), &aset_results, &mut vars)
        .unwrap();
    for (name, text) in [("i1", "1"), ("x_i3", "3"), ("i6", "6"), ("i7", "7")] {
        assert_eq!(
            vars.get(slot(&script, name)),
            Some(&Value::Text(text.into())),
            "{name}"
        );
    }
    // \gset: no row, two rows or a command without rows fail the transaction.
    let gset = target(0);
    for (results, rows) in [
        (vec![set(&["i1"], 0, &[])], 0),
        (vec![set(&["i1"], 2, &["2"])], 2),
        (vec![ResultSet::default()], 0),
    ] {
        assert_eq!(
            script.store_results(&gset, &results, &mut vars),
            Err(EvalError::GsetRows { rows })
        );
    }
    // A column whose name is not a variable name cannot be stored.
    assert_eq!(
        script.store_results(&gset, &[set(&["?column?"], 1, &["1"])], &mut vars),
        Err(EvalError::BadColumnName {
            name: "?column?".into()
        })
    );
    // NULL is empty text.
    let null = ResultSet {
        columns: Some(vec!["i1".into()]),
        rows: 1,
        last_row: vec![None],
    };
    script.store_results(&gset, &[null], &mut vars).unwrap();
    assert_eq!(
        vars.get(slot(&script, "i1")),
        Some(&Value::Text(String::new()))
    );
}

#[test]
fn defined_tests_in_sql_and_expressions() {
    let script = parse_ok("SELECT :{?x} AS a, ':{?x}' \\gset\n\\if :{?x}\n\\set y 1\n\\endif");
    let sql = sql_at(&script, 0);
    assert_eq!(sql.sql, "SELECT $1::boolean AS a, ':{?x}'");
    let mut vars = script.new_vars(automatic(), &[]);
    let mut text = String::new();
    assert!(sql.write_param(0, &vars, &mut text));
    assert_eq!(text, "false");
    sql.render_simple(&vars, &mut text);
    assert_eq!(text, "SELECT FALSE AS a, ':{?x}'");
    vars.set(slot(&script, "x"), Value::int(1));
    sql.render_simple(&vars, &mut text);
    assert_eq!(text, "SELECT TRUE AS a, ':{?x}'");
}

#[test]
fn shell_and_pipeline_commands_become_steps() {
    let (_, _, done) = run_ok(
        "\\set n 5\n\\shell echo ::literal :n plain\n\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline",
    );
    assert_eq!(
        done,
        vec![
            "shell echo :literal 5 plain",
            "start",
            "SELECT 1",
            "sync",
            "SELECT 2",
            "end"
        ]
    );
    let script = parse_ok("\\setshell out echo 3");
    let ScriptCommand::Shell { assign, .. } = &script.commands[0] else {
        panic!("not a shell command");
    };
    assert_eq!(*assign, Some(slot(&script, "out")));
    assert_eq!(script.first_shell_line(), Some(1));
    let script = parse_ok("\\shell echo :undefined");
    let mut vars = script.new_vars(automatic(), &[]);
    let failure = run(&script, &mut vars).unwrap_err();
    assert_eq!(
        failure.error.to_string(),
        "undefined variable \":undefined\""
    );
    let long = format!("\\shell echo {}", "x".repeat(300));
    let script = parse_ok(&long);
    let mut vars = script.new_vars(automatic(), &[]);
    assert_eq!(
        run(&script, &mut vars).unwrap_err().error.to_string(),
        "shell command is too long"
    );
}

#[test]
fn runtime_failures_name_the_script_line_and_command() {
    let script = parse_ok("SELECT 1;\n\\set y 10 / (:client_id - 3)\nSELECT :y;");
    let mut vars = script.new_vars(automatic(), &[]);
    let failure = run(&script, &mut vars).unwrap_err();
    assert_eq!(failure.line, 2);
    assert_eq!(
        script.failure_message(&failure),
        "\"test.sql:2\" \\set y 10 / (:client_id - 3): division by zero"
    );
}

#[test]
fn parse_errors_name_the_file_line_and_column() {
    let message = parse_error("SELECT 1;\n\n\\set x random_zipf(1, 10, 1.5)");
    assert!(
        message.starts_with("workloads/x.sql line 3 column 8: unknown function random_zipf"),
        "{message}"
    );
    assert!(message.contains("random_zipfian"), "{message}");
    let message = parse_error("\\set x 1 +");
    assert!(
        message.starts_with("workloads/x.sql line 1 column 11:"),
        "{message}"
    );
    let message = parse_error("  \\set x (1 + 2");
    assert!(
        message.starts_with("workloads/x.sql line 1 column 16: expected ')'"),
        "{message}"
    );
    let message = parse_error("\\set i ;");
    assert!(
        message.contains("column 8: unexpected character ';'"),
        "{message}"
    );
    let message = parse_error("\\set i 1 < 2 < 3");
    assert!(message.contains("do not chain"), "{message}");
    let message = parse_error("\\set i ln(1.0, 2.0)");
    assert!(
        message.contains("ln() takes 1 arguments, 2 given"),
        "{message}"
    );
    let message = parse_error("\\set i greatest()");
    assert!(message.contains("at least 1"), "{message}");
    let message = parse_error("\\set i CASE TRUE THEN 1 ELSE 0 END");
    assert!(message.contains("WHEN"), "{message}");
    let message = parse_error("\\set i 99999999999999999999");
    assert!(
        message.contains("bigint constant 99999999999999999999 is out of range"),
        "{message}"
    );
    let message = parse_error("\\set i 1e400");
    assert!(
        message.contains("double constant 1e400 is out of range"),
        "{message}"
    );
    let message = parse_error("\\set i 9223372036854775808");
    assert!(
        message.contains("unexpected number 9223372036854775808"),
        "{message}"
    );
}

#[test]
fn structural_errors_are_refused_before_the_run() {
    let cases = [
        ("\\gset", "\\gset must follow an SQL command"),
        ("\\set i +1\n\\gset", "\\gset must follow an SQL command"),
        (
            "SELECT 1 AS i \\gset\n\\gset",
            "\\gset must follow an SQL command",
        ),
        ("SELECT 1 \\gset a b", "too many arguments in \\gset"),
        (
            "\\if true\nSELECT 1;",
            "line 1: \\if without matching \\endif",
        ),
        ("\\endif", "\\endif without matching \\if"),
        ("\\elif 1", "\\elif without matching \\if"),
        (
            "\\if 1\n\\else\n\\else\n\\endif",
            "line 3: \\else after \\else",
        ),
        ("\\if 1\n\\else\n\\elif 1\n\\endif", "\\elif after \\else"),
        (
            "\\startpipeline\n\\startpipeline",
            "already in pipeline mode",
        ),
        ("\\endpipeline", "not in pipeline mode"),
        ("\\syncpipeline", "not in pipeline mode"),
        (
            "\\startpipeline\nSELECT 1;",
            "line 1: the pipeline started here is still open",
        ),
        (
            "\\startpipeline\nselect 1 \\gset f\n\\endpipeline",
            "\\gset is not allowed in pipeline mode",
        ),
        (
            "\\startpipeline\nSELECT 1 \\; SELECT 2;\n\\endpipeline",
            "compound statement",
        ),
        ("\\sleep", "missing argument in \\sleep"),
        ("\\sleep too many args", "too many arguments in \\sleep"),
        ("\\sleep 1 week", "unrecognized time unit \"week\""),
        ("\\sleep abc", "invalid sleep time \"abc\""),
        ("\\shell", "missing command in \\shell"),
        ("\\setshell var", "missing argument in \\setshell"),
        ("\\set", "missing argument in \\set"),
        ("\\set i", "missing expression"),
        ("\\set . 1", "invalid variable name \".\""),
        ("\\set :x 1", "without the colon"),
        ("\\else extra\n", "takes no argument"),
        ("\\nosuchcommand", "invalid command \\nosuchcommand"),
        ("\\setrandom a 1 10", "\\set name random(lb, ub)"),
        ("SELECT $1;", "positional parameter"),
        ("-- nothing\n\n", "script has no commands"),
        ("SELECT 'abc;\nSELECT 2;", "unterminated quoted string"),
    ];
    for (text, expected) in cases {
        let message = parse_error(text);
        assert!(message.contains(expected), "{text:?}: {message}");
    }
}

#[test]
fn deeply_nested_or_overlong_expressions_are_refused_before_they_exhaust_the_stack() {
    let parentheses = format!("\\set x {}1{}", "(".repeat(200), ")".repeat(200));
    assert!(parse_error(&parentheses).contains("more than 100 nested"));
    let signs = format!("\\set x {}1", "-".repeat(200));
    assert!(parse_error(&signs).contains("more than 100 nested"));
    let ones = |count: usize| vec!["1"; count].join(" + ");
    assert!(parse_error(&format!("\\set x {}", ones(50_000))).contains("more than 1000"));
    let (script, vars, _) = run_ok(&format!("\\set x {}", ones(400)));
    assert_eq!(vars.get(slot(&script, "x")), Some(&Value::int(400)));
}

#[test]
fn control_characters_in_errors_are_escaped() {
    let message = parse_error("\\set x 1 +\r:\n");
    assert!(!message.contains('\r'), "{message:?}");
}

#[test]
fn a_script_opens_a_transaction_with_begin_or_start_in_any_case() {
    assert!(parse_ok("BEGIN;\nSELECT 1;\nEND;\n").opens_transaction());
    assert!(parse_ok("\\set a 1\n  start transaction;\nCOMMIT;\n").opens_transaction());
    assert!(!parse_ok("SELECT 1;\n").opens_transaction());
    assert!(!parse_ok("SELECT 'BEGIN';\n").opens_transaction());
}
