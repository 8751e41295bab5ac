//! Tests of the script language, mostly through `parse`: what a script text becomes and
//! what running its commands gives.

use super::expression::ALL_FUNCTIONS;
use super::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;

fn parse_ok(text: &str) -> Script {
    parse("test.sql", text, &[]).unwrap_or_else(|error| panic!("{error}"))
}

fn parse_error(text: &str) -> String {
    match parse("workloads/x.sql", text, &[]) {
        Ok(script) => panic!("expected an error, parsed {script:?}"),
        Err(error) => error.to_string(),
    }
}

fn sql_at(script: &Script, index: usize) -> (&str, &[usize]) {
    match &script.commands[index] {
        Command::Sql { sql, params, .. } => (sql.as_str(), params.as_slice()),
        other => panic!("command {index} is not SQL: {other:?}"),
    }
}

fn line_of(command: &Command) -> usize {
    match command {
        Command::Set { line, .. } | Command::Sleep { line, .. } | Command::Sql { line, .. } => {
            *line
        }
    }
}

/// The SQL texts (with `$n` placeholders), in script order.
fn sql_texts(script: &Script) -> Vec<&str> {
    script
        .commands
        .iter()
        .filter_map(|command| match command {
            Command::Sql { sql, .. } => Some(sql.as_str()),
            _ => None,
        })
        .collect()
}

fn expr_at(script: &Script, index: usize) -> &Expr {
    match &script.commands[index] {
        Command::Set { expr, .. } => expr,
        other => panic!("command {index} is not \\set: {other:?}"),
    }
}

/// Evaluates `expression` with outside variable `x` = 10 and `t` = "abc".
fn eval_expression(expression: &str) -> Result<Value, EvalError> {
    let outside = vec![
        ("x".to_string(), "10".to_string()),
        ("t".to_string(), "abc".to_string()),
    ];
    let names: Vec<String> = outside.iter().map(|(name, _)| name.clone()).collect();
    let script = parse("test.sql", &format!("\\set result {expression}"), &names)
        .unwrap_or_else(|error| panic!("{error}"));
    let vars = script.new_vars(3, 7, &outside);
    let mut rng = SmallRng::seed_from_u64(1);
    eval(expr_at(&script, 0), &vars, &mut rng)
}

fn draws(expression: &str, count: usize) -> Vec<i64> {
    let script = parse_ok(&format!("\\set r {expression}"));
    let vars = script.new_vars(0, 1, &[]);
    let mut rng = SmallRng::seed_from_u64(42);
    (0..count)
        .map(|_| match eval(expr_at(&script, 0), &vars, &mut rng) {
            Ok(Value::Int(value)) => value,
            other => panic!("{expression} gave {other:?}"),
        })
        .collect()
}

fn mean(values: &[i64]) -> f64 {
    values.iter().map(|&value| value as f64).sum::<f64>() / values.len() as f64
}

fn param_text(value: Value) -> String {
    let mut out = String::from("prefix:");
    value.write_param(&mut out);
    out.strip_prefix("prefix:").unwrap().to_string()
}

#[test]
fn reference_script_parses() {
    let script = parse_ok(
        "\\set c random(1, 1000)\nSELECT count(*), sum(total) FROM orders WHERE customer_id = :c;",
    );
    assert_eq!(script.commands.len(), 2);
    let c_slot = script.variable_slot("c").unwrap();
    match &script.commands[0] {
        Command::Set { slot, expr, line } => {
            assert_eq!(*slot, c_slot);
            assert_eq!(*line, 1);
            assert!(matches!(
                expr,
                Expr::Call {
                    function: Function::Random,
                    ..
                }
            ));
        }
        other => panic!("{other:?}"),
    }
    let (sql, params) = sql_at(&script, 1);
    assert_eq!(
        sql,
        "SELECT count(*), sum(total) FROM orders WHERE customer_id = $1"
    );
    assert_eq!(params, &[c_slot]);
    assert_eq!(line_of(&script.commands[1]), 2);
    assert_eq!(script.name, "test.sql");
}

#[test]
fn pgbench_tpcb_like_script_parses() {
    let text = "\
\\set aid random(1, 100000 * :scale)
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
";
    let script = parse_ok(text);
    assert_eq!(script.commands.len(), 11);
    let slot = |name: &str| script.variable_slot(name).unwrap();
    let sql = sql_texts(&script);
    assert_eq!(sql.len(), 7);
    assert_eq!(sql[0], "BEGIN");
    assert_eq!(
        sql_at(&script, 5),
        (
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            &[slot("delta"), slot("aid")][..]
        )
    );
    assert_eq!(
        sql_at(&script, 9),
        (
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
            &[slot("tid"), slot("bid"), slot("aid"), slot("delta")][..]
        )
    );
    assert_eq!(sql[6], "END");
    assert_eq!(line_of(&script.commands[10]), 11);

    // Running it: aid stays within 1..=100000 * scale.
    let mut vars = script.new_vars(0, 2, &[]);
    let mut rng = SmallRng::seed_from_u64(9);
    for _ in 0..1000 {
        for command in &script.commands {
            if let Command::Set { slot, expr, .. } = command {
                let value = eval(expr, &vars, &mut rng).unwrap();
                vars.set(*slot, value);
            }
        }
        match vars.get(slot("aid")) {
            Value::Int(aid) => assert!((1..=200_000).contains(aid)),
            other => panic!("{other:?}"),
        }
        match vars.get(slot("delta")) {
            Value::Int(delta) => assert!((-5000..=5000).contains(delta)),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn arithmetic_and_precedence() {
    assert_eq!(eval_expression("1 + 2 * 3"), Ok(Value::Int(7)));
    assert_eq!(eval_expression("(1 + 2) * 3"), Ok(Value::Int(9)));
    assert_eq!(eval_expression("10 - 4 - 3"), Ok(Value::Int(3)));
    assert_eq!(eval_expression("100 / 10 / 5"), Ok(Value::Int(2)));
    assert_eq!(eval_expression("2 * :x + :scale"), Ok(Value::Int(27)));
    assert_eq!(eval_expression(":client_id"), Ok(Value::Int(3)));
    assert_eq!(eval_expression("-3 + 5"), Ok(Value::Int(2)));
    assert_eq!(eval_expression("- :x * 2"), Ok(Value::Int(-20)));
    assert_eq!(eval_expression("-(2 + 3)"), Ok(Value::Int(-5)));
    assert_eq!(eval_expression("+4"), Ok(Value::Int(4)));
    assert_eq!(eval_expression("- -4"), Ok(Value::Int(4)));
}

#[test]
fn integer_division_truncates_and_modulo_follows_c() {
    assert_eq!(eval_expression("7 / 2"), Ok(Value::Int(3)));
    assert_eq!(eval_expression("-7 / 2"), Ok(Value::Int(-3)));
    assert_eq!(eval_expression("7 / -2"), Ok(Value::Int(-3)));
    assert_eq!(eval_expression("7 % 3"), Ok(Value::Int(1)));
    assert_eq!(eval_expression("-7 % 3"), Ok(Value::Int(-1)));
    assert_eq!(eval_expression("7 % -3"), Ok(Value::Int(1)));
    assert_eq!(eval_expression("mod(-7, 3)"), Ok(Value::Int(-1)));
    assert_eq!(eval_expression("7.9 % 3"), Ok(Value::Int(1)));
    assert_eq!(
        eval_expression("(-9223372036854775807 - 1) % -1"),
        Ok(Value::Int(0))
    );
}

#[test]
fn doubles() {
    assert_eq!(eval_expression("1.5 * 2"), Ok(Value::Double(3.0)));
    assert_eq!(eval_expression("7 / 2.0"), Ok(Value::Double(3.5)));
    assert_eq!(eval_expression(".5 + 1e1"), Ok(Value::Double(10.5)));
    assert_eq!(eval_expression("2.5E-1"), Ok(Value::Double(0.25)));
    assert_eq!(eval_expression("-1.5"), Ok(Value::Double(-1.5)));
    assert_eq!(eval_expression("int(3.9)"), Ok(Value::Int(3)));
    assert_eq!(eval_expression("int(-3.9)"), Ok(Value::Int(-3)));
    assert_eq!(eval_expression("double(3)"), Ok(Value::Double(3.0)));
    assert_eq!(eval_expression("sqrt(16)"), Ok(Value::Double(4.0)));
    assert_eq!(eval_expression("pow(2, 10)"), Ok(Value::Double(1024.0)));
    assert_eq!(eval_expression("POWER(2, 3)"), Ok(Value::Double(8.0)));
    assert_eq!(eval_expression("ln(exp(2))"), Ok(Value::Double(2.0)));
    assert_eq!(
        eval_expression("pi()"),
        Ok(Value::Double(std::f64::consts::PI))
    );
    assert_eq!(eval_expression("abs(-5)"), Ok(Value::Int(5)));
    assert_eq!(eval_expression("abs(-2.5)"), Ok(Value::Double(2.5)));
    assert_eq!(eval_expression("least(3, 1.5, 2)"), Ok(Value::Double(1.5)));
    assert_eq!(eval_expression("least(3, 1, 2)"), Ok(Value::Int(1)));
    assert_eq!(eval_expression("greatest(1, 5, 3)"), Ok(Value::Int(5)));
    assert_eq!(
        eval_expression("greatest(1, 5, 3.0)"),
        Ok(Value::Double(5.0))
    );
}

#[test]
fn runtime_errors() {
    assert_eq!(eval_expression("1 / 0"), Err(EvalError::DivisionByZero));
    assert_eq!(eval_expression("1 % 0"), Err(EvalError::DivisionByZero));
    assert_eq!(eval_expression("1.0 / 0"), Err(EvalError::DivisionByZero));
    assert_eq!(eval_expression("mod(5, 0)"), Err(EvalError::DivisionByZero));
    assert_eq!(
        eval_expression(":x / (:x - 10)"),
        Err(EvalError::DivisionByZero)
    );
    assert_eq!(
        eval_expression("9223372036854775807 + 1"),
        Err(EvalError::IntegerOutOfRange { operation: "+" })
    );
    assert_eq!(
        eval_expression("(-9223372036854775807 - 1) / -1"),
        Err(EvalError::IntegerOutOfRange { operation: "/" })
    );
    assert!(matches!(
        eval_expression("int(1e30)"),
        Err(EvalError::DoubleOutOfIntegerRange { .. })
    ));
    let error = eval_expression(":t + 1").unwrap_err();
    assert_eq!(
        error.to_string(),
        "variable :t holds \"abc\", which is not a number"
    );
    assert!(matches!(
        eval_expression("random(5, 1 * :x - 9)"),
        Err(EvalError::EmptyRange { lb: 5, ub: 1, .. })
    ));
    assert!(matches!(
        eval_expression("random_gaussian(1, 10, :x / 10)"),
        Err(EvalError::BadParameter { .. })
    ));
    assert!(matches!(
        eval_expression("random_exponential(1, 10, :x - 10)"),
        Err(EvalError::BadParameter { .. })
    ));
    assert!(matches!(
        eval_expression("random(-9223372036854775807 - 1, 9223372036854775807)"),
        Err(EvalError::RangeTooLarge { .. })
    ));
}

#[test]
fn random_stays_in_range_and_hits_both_ends() {
    let values = draws("random(1, 6)", 10_000);
    assert!(values.iter().all(|value| (1..=6).contains(value)));
    for face in 1..=6 {
        assert!(values.contains(&face), "never drew {face}");
    }
    let values = draws("random(-3, -3)", 100);
    assert!(values.iter().all(|&value| value == -3));
    let values = draws("random(1, 1000)", 100_000);
    assert!(
        (mean(&values) - 500.5).abs() < 5.0,
        "mean {}",
        mean(&values)
    );
}

#[test]
fn random_exponential_is_in_range_and_skewed_to_lb() {
    let values = draws("random_exponential(1, 1000, 5.0)", 100_000);
    assert!(values.iter().all(|value| (1..=1000).contains(value)));
    // Truncated exponential: mean offset 1000 * (1/5 - e^-5 / (1 - e^-5)) - 0.5 ~ 192.7.
    let mean = mean(&values);
    assert!((mean - 193.7).abs() < 8.0, "mean {mean}");
    // Share in the first 10%: (1 - e^-0.5) / (1 - e^-5) ~ 0.396.
    let first_tenth = values.iter().filter(|&&value| value <= 100).count() as f64;
    let share = first_tenth / values.len() as f64;
    assert!((share - 0.396).abs() < 0.02, "share {share}");
    let small = draws("random_exponential(1, 3, 0.5)", 5_000);
    assert!(small.iter().all(|value| (1..=3).contains(value)));
    assert!(small.contains(&1) && small.contains(&3));
}

#[test]
fn random_gaussian_is_in_range_and_centred() {
    let values = draws("random_gaussian(1, 1000, 2.5)", 100_000);
    assert!(values.iter().all(|value| (1..=1000).contains(value)));
    let mean = mean(&values);
    assert!((mean - 500.5).abs() < 10.0, "mean {mean}");
    // pgbench: about 67% of values fall in the middle 1.0 / parameter of the range.
    let values = draws("random_gaussian(1, 1000, 4)", 100_000);
    let middle = values
        .iter()
        .filter(|&&value| (376..=625).contains(&value))
        .count() as f64;
    let share = middle / values.len() as f64;
    assert!((share - 0.683).abs() < 0.02, "share {share}");
    let small = draws("random_gaussian(1, 3, 2)", 5_000);
    assert!(small.iter().all(|value| (1..=3).contains(value)));
    assert!(small.contains(&1) && small.contains(&3));
}

#[test]
fn sql_variables_casts_and_quotes() {
    let script = parse_ok(
        "\\set id 5\nSELECT :id::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, :id + :id;",
    );
    let id = script.variable_slot("id").unwrap();
    assert_eq!(
        sql_at(&script, 1),
        (
            "SELECT $1::int, ':id', E'\\':id', \"a:id\", $$ :id $$, x::text, $1 + $1",
            &[id][..]
        )
    );
    let script = parse_ok("SELECT a[1 : 2], ':' || 'it''s :x';");
    assert_eq!(
        sql_at(&script, 0),
        ("SELECT a[1 : 2], ':' || 'it''s :x'", &[][..])
    );
}

#[test]
fn multi_line_statements_comments_and_semicolons_in_quotes() {
    let text = "\
-- a full-line comment

\\set a 1 -- trailing comment on a meta-command
\\set b 2
SELECT :a, -- trailing comment; with a semicolon
       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$, /* ; /* nested ; */ */ :b
  FROM t;
INSERT INTO t VALUES (:b)
";
    let script = parse_ok(text);
    assert_eq!(script.commands.len(), 4);
    let a = script.variable_slot("a").unwrap();
    let b = script.variable_slot("b").unwrap();
    let (sql, params) = sql_at(&script, 2);
    assert_eq!(
        sql,
        "SELECT $1, \n       ';' AS semi, \"x;y\", $body$ ; $$ ; $body$,   $2\n  FROM t"
    );
    assert_eq!(params, &[a, b]);
    assert_eq!(line_of(&script.commands[2]), 5);
    // A final statement without ';' is still a statement.
    assert_eq!(sql_at(&script, 3), ("INSERT INTO t VALUES ($1)", &[b][..]));
    assert_eq!(line_of(&script.commands[3]), 8);
}

#[test]
fn multi_line_string_keeps_line_numbers() {
    let script = parse_ok("SELECT 'a\nb';\n\n  SELECT 2;\n\\sleep 1");
    assert_eq!(sql_at(&script, 0).0, "SELECT 'a\nb'");
    assert_eq!(line_of(&script.commands[1]), 4);
    assert_eq!(line_of(&script.commands[2]), 5);
}

#[test]
fn meta_command_continues_after_trailing_backslash() {
    let script = parse_ok("\\set a 1 + \\\n  2\nSELECT :a;");
    assert_eq!(line_of(&script.commands[1]), 3);
    let vars = script.new_vars(0, 1, &[]);
    let mut rng = SmallRng::seed_from_u64(0);
    assert_eq!(
        eval(expr_at(&script, 0), &vars, &mut rng),
        Ok(Value::Int(3))
    );
}

#[test]
fn sleep_units_and_variables() {
    let outside = vec![("pause".to_string(), "250".to_string())];
    let script = parse(
        "sleep.sql",
        "\\sleep 10 ms\n\\sleep 2\n\\sleep :pause us\n\\SLEEP 3 S",
        &["pause".to_string()],
    )
    .unwrap();
    let vars = script.new_vars(0, 1, &outside);
    let durations: Vec<u64> = script
        .commands
        .iter()
        .map(|command| match command {
            Command::Sleep { .. } => script.sleep_us(command, &vars).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(durations, vec![10_000, 2_000_000, 250, 3_000_000]);

    let script = parse("sleep.sql", "\\set d -1\n\\sleep :d ms", &[]).unwrap();
    let mut vars = script.new_vars(0, 1, &[]);
    let mut rng = SmallRng::seed_from_u64(0);
    let value = eval(expr_at(&script, 0), &vars, &mut rng).unwrap();
    vars.set(script.variable_slot("d").unwrap(), value);
    let Command::Sleep {
        duration, unit_us, ..
    } = &script.commands[1]
    else {
        panic!("not a sleep: {:?}", script.commands[1]);
    };
    assert_eq!(
        sleep_duration_us(duration, *unit_us, &vars),
        Err(EvalError::NegativeSleep { amount: -1 })
    );
    vars.set(script.variable_slot("d").unwrap(), Value::Double(1.5));
    assert!(matches!(
        sleep_duration_us(duration, *unit_us, &vars),
        Err(EvalError::SleepNotInteger { .. })
    ));
}

#[test]
fn new_vars_sets_predefined_and_outside_values() {
    let names = vec![
        "count".to_string(),
        "ratio".to_string(),
        "label".to_string(),
        "scale".to_string(),
    ];
    let script = parse(
        "vars.sql",
        "SELECT :count, :ratio, :label, :client_id, :scale;",
        &names,
    )
    .unwrap();
    let outside = vec![
        ("count".to_string(), "42".to_string()),
        ("ratio".to_string(), "2.5".to_string()),
        ("label".to_string(), "abc".to_string()),
        ("unused".to_string(), "1".to_string()),
    ];
    let vars = script.new_vars(7, 3, &outside);
    let value = |name: &str| vars.get(script.variable_slot(name).unwrap()).clone();
    assert_eq!(value("count"), Value::Int(42));
    assert_eq!(value("ratio"), Value::Double(2.5));
    assert_eq!(value("label"), Value::Text("abc".to_string()));
    assert_eq!(value("client_id"), Value::Int(7));
    assert_eq!(value("scale"), Value::Int(3));
    assert_eq!(script.variable_slot("client_id"), Some(CLIENT_ID_SLOT));
    assert_eq!(script.variable_slot("scale"), Some(SCALE_SLOT));

    let overridden = script.new_vars(0, 3, &[("scale".to_string(), "10".to_string())]);
    assert_eq!(overridden.get(SCALE_SLOT), &Value::Int(10));
    assert_eq!(
        Value::from_outside_text("12345678901234567890"),
        Value::Text("12345678901234567890".to_string())
    );
    assert_eq!(
        Value::from_outside_text("Infinity"),
        Value::Text("Infinity".to_string())
    );
}

#[test]
fn params_render_like_pgbench() {
    assert_eq!(param_text(Value::Int(-42)), "-42");
    assert_eq!(param_text(Value::Double(1.5)), "1.5");
    assert_eq!(param_text(Value::Double(0.1)), "0.1");
    assert_eq!(param_text(Value::Double(1.0)), "1");
    assert_eq!(param_text(Value::Double(-0.0)), "-0");
    assert_eq!(param_text(Value::Double(100000.0)), "100000");
    assert_eq!(param_text(Value::Double(1e15)), "1e+15");
    assert_eq!(param_text(Value::Double(1e20)), "1e+20");
    assert_eq!(param_text(Value::Double(1e-5)), "1e-05");
    assert_eq!(param_text(Value::Double(0.0001)), "0.0001");
    assert_eq!(param_text(Value::Double(1.0 / 3.0)), "0.333333333333333");
    assert_eq!(
        param_text(Value::Double(std::f64::consts::PI)),
        "3.14159265358979"
    );
    assert_eq!(
        param_text(Value::Double(123456789012345678.0)),
        "1.23456789012346e+17"
    );
    assert_eq!(param_text(Value::Double(1.5e-300)), "1.5e-300");
    assert_eq!(param_text(Value::Double(f64::NAN)), "nan");
    assert_eq!(param_text(Value::Double(f64::NEG_INFINITY)), "-inf");
    assert_eq!(param_text(Value::Text("it's".to_string())), "it's");
}

#[test]
fn error_unknown_function() {
    let message = parse_error("SELECT 1;\n\n\\set x random_zipf(1, 10, 1.5)");
    assert!(
        message.starts_with(
            "workloads/x.sql line 3: unknown function random_zipf in \\set; supported: \
                 random, random_exponential, random_gaussian, abs,"
        ),
        "{message}"
    );
    for function in ALL_FUNCTIONS {
        assert_eq!(Function::from_name(function.name()), Some(function));
        assert!(message.contains(function.name()));
    }
}

#[test]
fn error_unsupported_meta_commands() {
    let message = parse_error("SELECT 1;\nSELECT 2 AS x \\gset");
    assert_eq!(
        message,
        "workloads/x.sql line 2: unsupported meta-command \\gset; stallbench supports \\set and \\sleep"
    );
    for command in [
        "\\if true",
        "\\shell ls",
        "\\setshell x ls",
        "\\startpipeline",
    ] {
        let message = parse_error(&format!("\\set a 1\n  {command}\nSELECT 1;"));
        let word = command.split_whitespace().next().unwrap();
        assert!(
            message.starts_with(&format!(
                "workloads/x.sql line 2: unsupported meta-command {word};"
            )),
            "{message}"
        );
    }
    assert!(parse_error("\\setrandom a 1 10").contains("\\set name random(lb, ub)"));
}

#[test]
fn error_undefined_variable() {
    let message = parse_error("\\set a 1\nSELECT :a,\n  :b;");
    assert!(
        message.starts_with("workloads/x.sql line 3: undefined variable :b in SQL;"),
        "{message}"
    );
    let message = parse_error("\\set a :a + 1");
    assert!(
        message.starts_with("workloads/x.sql line 1: undefined variable :a in \\set;"),
        "{message}"
    );
    let message = parse_error("SELECT 1;\n\\sleep :pause ms");
    assert!(
        message.starts_with("workloads/x.sql line 2: undefined variable :pause in \\sleep;"),
        "{message}"
    );
    // Defined from the outside, it is fine.
    assert!(parse("x.sql", "SELECT :b;", &["b".to_string()]).is_ok());
}

#[test]
fn error_unterminated_quotes_and_comments() {
    let message = parse_error("SELECT 1;\nSELECT 'abc;\nSELECT 2;");
    assert!(
        message.starts_with("workloads/x.sql line 2: unterminated quoted string"),
        "{message}"
    );
    let message = parse_error("\n\nSELECT \"abc;");
    assert!(message.starts_with("workloads/x.sql line 3: unterminated quoted identifier"));
    let message = parse_error("DO $fn$ BEGIN NULL; END $$;");
    assert!(
        message.starts_with("workloads/x.sql line 1: unterminated dollar-quoted string: the $fn$"),
        "{message}"
    );
    let message = parse_error("SELECT 1 /* oops;\n");
    assert!(message.starts_with("workloads/x.sql line 1: unterminated /* comment"));
}

#[test]
fn error_bad_set_syntax() {
    let cases = [
        ("\\set", "missing variable name"),
        ("\\set x", "missing expression"),
        ("\\set x 1 +", "bad \\set syntax: the expression ends"),
        ("\\set x (1 + 2", "missing ')'"),
        (
            "\\set x 1 2",
            "unexpected number 2 after a complete expression",
        ),
        (
            "\\set x foo + 1",
            "unexpected word \"foo\"; variables are written :foo",
        ),
        ("\\set 1x 5", "invalid variable name \"1x\""),
        ("\\set :x 5", "without the colon"),
        ("\\set x 5 & 3", "unexpected character '&'"),
        (
            "\\set x random(1)",
            "function random takes 2 argument(s) but got 1",
        ),
        ("\\set x least()", "takes at least 1 argument(s)"),
        ("\\set x 99999999999999999999", "out of the 64-bit range"),
        (
            "\\set x random_gaussian(1, 10, 1.5)",
            "random_gaussian parameter must be at least 2.0, got 1.5",
        ),
        (
            "\\set x random_exponential(1, 10, 0)",
            "random_exponential parameter must be greater than 0, got 0",
        ),
        ("\\set x random(10, -1)", "empty range in random(10, -1"),
    ];
    for (text, expected) in cases {
        let message = parse_error(&format!("SELECT 1;\n{text}\nSELECT 2;"));
        assert!(
            message.starts_with("workloads/x.sql line 2: ") && message.contains(expected),
            "{text}: {message}"
        );
    }
}

#[test]
fn error_bad_sleep_syntax_and_other_sql_problems() {
    let cases = [
        ("\\sleep", "missing duration"),
        (
            "\\sleep 10ms",
            "duration \"10ms\" is not a non-negative integer",
        ),
        ("\\sleep 1.5 s", "for fractions use a smaller unit"),
        ("\\sleep 10 min", "unknown unit \"min\"; use us, ms or s"),
        ("\\sleep 1 s extra", "too many arguments"),
        ("SELECT $1;", "positional parameter"),
    ];
    for (text, expected) in cases {
        let message = parse_error(&format!("\n{text}"));
        assert!(
            message.starts_with("workloads/x.sql line 2: ") && message.contains(expected),
            "{text}: {message}"
        );
    }
    assert!(parse_error("-- nothing\n\n").contains("script has no commands"));
}

#[test]
fn sql_statements_are_listed_in_order() {
    let script = parse_ok("\\set a 1\nSELECT 1;;\n\\sleep 1 ms\nSELECT :a;");
    let sql = sql_texts(&script);
    assert_eq!(sql, vec!["SELECT 1", "SELECT $1"]);
}

#[test]
fn deeply_nested_expressions_are_refused_before_they_exhaust_the_stack() {
    let parentheses = format!("\\set x {}1{}", "(".repeat(200), ")".repeat(200));
    let message = parse_error(&parentheses);
    assert!(message.contains("more than 100 nested"), "{message}");
    let signs = format!("\\set x {}1", "- ".repeat(400));
    assert!(parse_error(&signs).contains("more than 100 nested"));
    let nested_just_enough = format!("\\set x {}1{}", "(".repeat(99), ")".repeat(99));
    parse_ok(&nested_just_enough);
}

#[test]
fn overlong_expressions_are_refused_and_long_ones_evaluate() {
    let ones = |count: usize| vec!["1"; count].join("+");
    let message = parse_error(&format!("\\set x {}", ones(50_000)));
    assert!(
        message.contains("99999 tokens, more than 1000; split it over several \\set commands"),
        "{message}"
    );
    assert_eq!(eval_expression(&ones(500)), Ok(Value::Int(500)));
}

#[test]
fn control_characters_in_errors_are_escaped() {
    let message = parse_error("\\set x 1 +\r:\n");
    assert!(message.ends_with("in \"1 +\\r:\""), "{message}");
}

#[test]
fn a_script_opens_a_transaction_with_begin_or_start_in_any_case() {
    assert!(parse_ok("BEGIN;\nSELECT 1;\nEND;\n").opens_transaction());
    assert!(parse_ok("\\set a 1\n  start transaction;\nCOMMIT;\n").opens_transaction());
    assert!(!parse_ok("SELECT 1;\n").opens_transaction());
    assert!(!parse_ok("SELECT 'BEGIN';\n").opens_transaction());
}
