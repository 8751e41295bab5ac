//! The expression language against pgbench's documentation (every example of
//! its operator and function tables), its own regression test (the values it
//! prints with `--random-seed=5432`), and the shape of each random
//! distribution (chi-square over 100,000 draws from fixed seeds, bounds loose
//! enough that only a wrong distribution fails).

use super::*;

/// The outside variables of pgbench's expression test (`-Dfoo=-10.1 ...`) and a few more.
fn outside() -> Vec<(String, String)> {
    [
        ("foo", "-10.1"),
        ("bla", "false"),
        ("i", "+3"),
        ("n", "null"),
        ("t", "t"),
        ("f", "of"),
        ("d", "1.0"),
        ("x", "10"),
        ("text", "abc"),
        ("empty", ""),
        ("maxint", "9223372036854775807"),
        ("minint", "-9223372036854775808"),
        ("huge", "99999999999999999999"),
    ]
    .iter()
    .map(|(name, value)| (name.to_string(), value.to_string()))
    .collect()
}

/// Runs `\set r <expression>` as client 0 of a run seeded with 5432, as
/// pgbench's expression test does, and returns `r` (or the failure).
fn value(expression: &str) -> Result<Scalar, EvalError> {
    let script = parse("expr.sql", &format!("\\set r {expression}"))
        .unwrap_or_else(|error| panic!("{expression}: {error}"));
    let seeds = RandomSeeds::new(5432, 1);
    let (mut prng, automatic) = seeds.client(0);
    let mut vars = script.new_vars(automatic, &outside());
    let mut cursor = Cursor::default();
    match script.step(&mut cursor, &mut vars, &mut prng) {
        Ok(Step::Done) => {}
        Ok(other) => panic!("{expression}: {other:?}"),
        Err(failure) => return Err(failure.error),
    }
    let slot = script.variable_slot("r").unwrap();
    Ok(vars.get(slot).unwrap().to_scalar("r").unwrap())
}

fn int(expression: &str) -> i64 {
    match value(expression) {
        Ok(Scalar::Int(result)) => result,
        other => panic!("{expression}: {other:?}"),
    }
}

fn double(expression: &str) -> f64 {
    match value(expression) {
        Ok(Scalar::Double(result)) => result,
        other => panic!("{expression}: {other:?}"),
    }
}

fn boolean(expression: &str) -> bool {
    match value(expression) {
        Ok(Scalar::Bool(result)) => result,
        other => panic!("{expression}: {other:?}"),
    }
}

fn error(expression: &str) -> String {
    match value(expression) {
        Err(error) => error.to_string(),
        Ok(result) => panic!("{expression}: expected an error, got {result:?}"),
    }
}

/// How a value prints into SQL (pgbench's `%.15g` for doubles).
fn text(expression: &str) -> String {
    let mut out = String::new();
    value(expression).unwrap().write_text(&mut out);
    out
}

#[test]
fn documented_operator_examples() {
    // pgbench 18, Table "pgbench Operators", in the table's order.
    assert!(boolean("not false"));
    assert!(!boolean("1 is null"));
    assert!(boolean("1 notnull"));
    assert!(!boolean("5 = 4"));
    assert!(boolean("5 <> 4"));
    assert!(!boolean("5 != 5"));
    assert!(!boolean("5 < 4"));
    assert!(!boolean("5 <= 4"));
    assert!(boolean("5 > 4"));
    assert!(boolean("5 >= 4"));
    assert_eq!(int("1 | 2"), 3);
    assert_eq!(int("1 # 3"), 2);
    assert_eq!(int("1 & 3"), 1);
    assert_eq!(int("~ 1"), -2);
    assert_eq!(int("1 << 2"), 4);
    assert_eq!(int("8 >> 2"), 2);
    assert_eq!(int("5 + 4"), 9);
    assert_eq!(double("3 - 2.0"), 1.0);
    assert_eq!(int("5 * 4"), 20);
    assert_eq!(int("5 / 3"), 1);
    assert_eq!(int("3 % 2"), 1);
    assert_eq!(double("- 2.0"), -2.0);
    // The table shows `5 or 0` and `3 and 0`, but pgbench itself refuses to
    // read a number as a boolean ("set not a bool" in its tests): so do we.
    assert_eq!(error("5 or 0"), "cannot coerce int to boolean");
    assert_eq!(error("NOT 0.0"), "cannot coerce double to boolean");
    assert!(boolean("true or 1/0 = 0"), "OR is lazy");
    assert!(!boolean("false and 1/0 = 0"), "AND is lazy");
}

#[test]
fn documented_function_examples() {
    // pgbench 18, Table "pgbench Functions", in the table's order.
    assert_eq!(int("abs(-17)"), 17);
    assert_eq!(double("debug(5432.1)"), 5432.1);
    assert_eq!(double("double(5432)"), 5432.0);
    assert_eq!(text("exp(1.0)"), "2.71828182845905");
    assert_eq!(double("exp(1.0)"), std::f64::consts::E);
    assert_eq!(int("greatest(5, 4, 3, 2)"), 5);
    assert_eq!(int("hash(10, 5432)"), -5817877081768721676);
    assert_eq!(int("hash_fnv1a(10, 5432)"), -7793829335365542153);
    assert_eq!(int("hash_murmur2(10, 5432)"), -5817877081768721676);
    assert_eq!(int("int(5.4 + 3.8)"), 9);
    assert_eq!(double("least(5, 4, 3, 2.1)"), 2.1);
    assert_eq!(double("ln(2.718281828459045)"), 1.0);
    assert_eq!(int("mod(54, 32)"), 22);
    for i in 0..8 {
        let permuted = int(&format!("permute({i}, 4)"));
        assert!((0..4).contains(&permuted), "permute({i}, 4) = {permuted}");
    }
    assert_eq!(double("pi()"), std::f64::consts::PI);
    assert_eq!(text("pi()"), "3.14159265358979");
    assert_eq!(double("pow(2.0, 10)"), 1024.0);
    assert_eq!(double("power(2.0, 10)"), 1024.0);
    for (expression, low, high) in [
        ("random(1, 10)", 1, 10),
        ("random_exponential(1, 10, 3.0)", 1, 10),
        ("random_gaussian(1, 10, 2.5)", 1, 10),
        ("random_zipfian(1, 10, 1.5)", 1, 10),
    ] {
        let drawn = int(expression);
        assert!((low..=high).contains(&drawn), "{expression} = {drawn}");
    }
    assert_eq!(text("sqrt(2.0)"), "1.4142135623731");
    // hash with one argument uses :default_seed.
    assert!(boolean("hash(10) = hash(10, :default_seed)"));
    assert!(boolean("permute(3, 10) = permute(3, 10, :default_seed)"));
}

#[test]
fn pgbench_regression_test_values() {
    // pgbench's expression test, run with --random-seed=5432 as client 0: the
    // random functions must draw exactly what pgbench draws.
    let script = parse(
        "seeded.sql",
        "\\set i1 random(10, 19)\n\\set i2 random_exponential(100, 199, 10.0)\n\
         \\set i3 random_gaussian(1000, 1999, 10.0)\n\\set id random_zipfian(1, 9, 1.3)",
    )
    .unwrap();
    let seeds = RandomSeeds::new(5432, 1);
    let (mut prng, automatic) = seeds.client(0);
    let mut vars = script.new_vars(automatic, &[]);
    assert_eq!(
        script.step(&mut Cursor::default(), &mut vars, &mut prng),
        Ok(Step::Done)
    );
    for (name, expected) in [("i1", 17), ("i2", 104), ("i3", 1498), ("id", 3)] {
        let slot = script.variable_slot(name).unwrap();
        assert_eq!(vars.get(slot), Some(&Value::int(expected)), "{name}");
    }
    assert_eq!(int(":random_seed"), 5432);
    // The rest of that test, value by value.
    assert_eq!(int("abs(-4)"), 4);
    assert_eq!(int("11 + least(-5, -4, -3, -2)"), 6);
    assert_eq!(int("int(7.3)"), 7);
    assert_eq!(int("17 / (4|1) + ( 4 + (7 >> 2))"), 8);
    assert_eq!(int("- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1"), 9);
    assert_eq!(int("10 + (0 + 0 * 0 - 0 / 1)"), 10);
    assert_eq!(
        int("64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)"),
        12
    );
    assert_eq!(double("sqrt(+1.5 * 2.0) * abs(-0.8E1)").round(), 14.0);
    assert_eq!(double("double(1 + 1) * (-75.0 / :foo)").round(), 15.0);
    assert_eq!(double("pi() * 4.9").round(), 15.0);
    assert_eq!(double("greatest(4, 2, -1.17) * 4.0 * Ln(Exp(1.0))"), 16.0);
    assert_eq!(text("least(-5.18, .0E0, 1.0/0) * -3.3"), "17.094");
    assert_eq!(double("pow(-3,3)"), -27.0);
    assert_eq!(double("pow(0,0)"), 1.0);
    assert_eq!(double("pow(0.0,0.0)"), 1.0);
    assert_eq!(double("pow(-2,-3)"), -0.125);
    assert_eq!(double("pow(-2.0,-3.0)"), -0.125);
    assert_eq!(double("power(-5.0,-5.0)"), -0.00032);
    assert_eq!(text("pow(9223372036854775807, 2)"), "8.50705917302346e+37");
    assert_eq!(text("pow(10,30)"), "1e+30");
    assert!(!boolean("1.0 = 0.0 and 1.0 != 0.0"));
    assert!(boolean("0 = 1 Or 1.0 = 1"));
    assert_eq!(int("case when 0 < 1 then 32 else 0 end"), 32);
    assert_eq!(int("case when true then 33 else 0 end"), 33);
    assert_eq!(
        double("case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end "),
        34.0
    );
    assert_eq!(
        int(
            "case when (1 > 0) and (1 >= 0) and (0 < 1) and (0 <= 1) and (0 != 1) and (0 = 0) and (0 <> 1) then 35 else 0 end"
        ),
        35
    );
    assert_eq!(
        double("CASE WHEN NOT FALSE THEN 3 * 12.3333334 END").round(),
        37.0
    );
    assert_eq!(
        int("case when false then 0 when 1-1 <> 0 then 1 else 38 end"),
        38
    );
    assert_eq!(
        int("10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)"),
        39
    );
    assert!(boolean(
        "NOT (0 > 1) AND (1 <= 1) AND NOT (0 >= 1) AND (0 < 1) AND NOT (false and true) AND (false OR TRUE) AND (NOT :f) AND (NOT FALSE) AND NOT (NOT TRUE)"
    ));
    assert_eq!(value("NULL + NULL * exp(NULL)"), Ok(Scalar::Null));
    assert!(boolean("NOT (NULL IS NOT NULL OR 0.0 IS NULL)"));
    assert!(boolean("NULL IS NULL AND :d IS NOT NULL AND :d NOTNULL"));
    assert!(boolean(
        "NULL ISNULL AND NOT NULL IS TRUE AND NULL IS NOT FALSE"
    ));
    assert_eq!(int("CASE WHEN :n IS NULL THEN 46 ELSE NULL END"), 46);
    assert!(boolean(":n IS NULL AND NOT :f AND :t"));
    assert!(boolean(
        "CASE WHEN 1 THEN TRUE END AND CASE WHEN 1.0 THEN TRUE END AND CASE WHEN :n THEN NULL ELSE TRUE END"
    ));
    assert_eq!(int("-9223372036854775808"), i64::MIN);
    assert_eq!(int("-(:minint + 1)"), i64::MAX);
    // Lazy evaluation: the branch not taken is not evaluated.
    assert_eq!(int("case when 0 = 0 then -1 else (1 / 0) end"), -1);
    assert_eq!(
        int("case when 0 = 0 or (1 / 0) < 0 then -1 else (1 / 0) end"),
        -1
    );
    assert_eq!(
        int("case when 0 > 0 and (1 / 0) < 0 then (1 / 0) else 1 end"),
        1
    );
}

#[test]
fn permute_is_a_permutation_with_pgbench_s_values() {
    for size in [2i64, 3, 4, 5, 16] {
        let mut seen: Vec<i64> = (0..size)
            .map(|i| int(&format!("permute({i}, {size})")))
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..size).collect::<Vec<_>>(), "size {size}");
    }
    assert_eq!(int("permute(7, 1)"), 0);
    assert!(boolean(
        "permute(0, 2, 5431) = 0 and permute(1, 2, 5431) = 1 and permute(0, 2, 5433) = 1 and permute(1, 2, 5433) = 0"
    ));
    // pgbench's check of permute's portability across architectures.
    let size = i64::MAX - 10;
    let expected = [
        520382784483822430,
        1143715004660802862,
        447293596416496998,
        916527772266572956,
        2763809008686028849,
        8648551549198294572,
        4542876852200565125,
    ];
    for (offset, expected) in expected.iter().enumerate() {
        let i = size - 1 - offset as i64;
        assert_eq!(
            int(&format!("permute({i}, {size}, 5432)")),
            *expected,
            "permute({i})"
        );
    }
    // Values outside the range are taken modulo the size.
    assert!(boolean("permute(3, 10, 1) = permute(13, 10, 1)"));
    assert_eq!(
        error("permute(0, 0)"),
        "permute size parameter must be greater than zero"
    );
}

#[test]
fn arithmetic_types_and_overflow() {
    assert_eq!(int("7 / 2"), 3);
    assert_eq!(int("-7 / 2"), -3);
    assert_eq!(int("-7 % 3"), -1);
    assert_eq!(int("7 % -3"), 1);
    assert_eq!(int(":minint % -1"), 0);
    assert_eq!(
        int("5.5 % 2"),
        0,
        "% rounds a double to the nearest integer first"
    );
    assert_eq!(int("int(2.5)"), 2, "rounding halves to even, as C's rint");
    assert_eq!(int("int(-3.7)"), -4);
    assert_eq!(double("7 / 2.0"), 3.5);
    assert_eq!(
        text("1.0 / 0"),
        "inf",
        "double division by zero is not an error"
    );
    assert_eq!(int(":i + 1"), 4, "outside text +3 is the integer 3");
    assert_eq!(double(":foo * 2"), -20.2);
    assert_eq!(error("1 / 0"), "division by zero");
    assert_eq!(error("1 % 0"), "division by zero");
    assert_eq!(error("(1<<62) + (1<<62)"), "bigint add out of range");
    assert_eq!(
        error("0 - (1<<62) - (1<<62) - (1<<62)"),
        "bigint sub out of range"
    );
    assert_eq!(error("2 * (1<<62)"), "bigint mul out of range");
    assert_eq!(error(":minint / -1"), "bigint div out of range");
    assert_eq!(error("- :minint"), "bigint sub out of range");
    assert_eq!(
        error("int(1E32)"),
        "double to int overflow for 100000000000000000000000000000000"
    );
    assert_eq!(error("TRUE + 2"), "cannot coerce boolean to int");
    assert_eq!(error("ln(TRUE)"), "cannot coerce boolean to double");
    assert_eq!(error("random(FALSE, TRUE)"), "cannot coerce boolean to int");
    assert_eq!(
        error(":text + 1"),
        "malformed variable \"text\" value: \"abc\""
    );
    assert_eq!(
        error(":huge + 1"),
        "value \"99999999999999999999\" is out of range for type bigint"
    );
    assert_eq!(error(":empty + 1"), "variable \"empty\" is empty");
    assert_eq!(
        error(":nosuchvariable"),
        "undefined variable \"nosuchvariable\""
    );
    assert_eq!(
        error("least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)"),
        "too many function arguments, maximum is 16"
    );
    assert_eq!(int("abs(-4) + greatest(1, 2) + least(3, 4)"), 9);
    assert_eq!(double("greatest(1, 2.5)"), 2.5);
    assert_eq!(value("1 + NULL"), Ok(Scalar::Null));
    assert_eq!(value("NOT NULL"), Ok(Scalar::Null));
    assert_eq!(value("NULL AND FALSE"), Ok(Scalar::Null));
    assert_eq!(value("TRUE AND NULL"), Ok(Scalar::Null));
    assert!(!boolean("0 IS TRUE"), "IS compares the type too");
}

#[test]
fn outside_text_reads_as_pgbench_reads_a_variable() {
    let cases = [
        ("t", Scalar::Bool(true)),
        ("TRU", Scalar::Bool(true)),
        ("yes", Scalar::Bool(true)),
        ("on", Scalar::Bool(true)),
        ("of", Scalar::Bool(false)),
        ("off", Scalar::Bool(false)),
        ("n", Scalar::Bool(false)),
        ("NULL", Scalar::Null),
        ("007", Scalar::Int(7)),
        (" -3", Scalar::Int(-3)),
        ("1.5e3", Scalar::Double(1500.0)),
        ("-inf", Scalar::Double(f64::NEG_INFINITY)),
    ];
    for (text, expected) in cases {
        assert_eq!(value::scalar_from_text("v", text), Ok(expected), "{text:?}");
    }
    for text in ["o", "nu", "trueXXX", "12abc", "1e400"] {
        assert!(value::scalar_from_text("v", text).is_err(), "{text:?}");
    }
}

#[test]
fn doubles_print_like_c_percent_15g() {
    for (expression, expected) in [
        ("0.1", "0.1"),
        ("1.0 / 3", "0.333333333333333"),
        ("1e20", "1e+20"),
        ("1e-5", "1e-05"),
        ("123456789012345678.0", "1.23456789012346e+17"),
        ("-0.0", "0"),
        ("-1.5", "-1.5"),
        ("100.0", "100"),
        ("0.0001", "0.0001"),
        ("sqrt(-1.0)", "nan"),
        ("-1.0 / 0", "-inf"),
    ] {
        assert_eq!(text(expression), expected, "{expression}");
    }
    assert_eq!(text("TRUE"), "true");
    assert_eq!(text("NULL"), "NULL");
}

/// `count` draws of `expression` by one generator seeded with `seed`.
fn draws(expression: &str, count: usize, seed: u64) -> Vec<i64> {
    let script = parse("draws.sql", &format!("\\set r {expression}")).unwrap();
    let (_, automatic) = RandomSeeds::new(seed, 1).client(0);
    let mut vars = script.new_vars(automatic, &[]);
    let mut prng = Prng::new(seed);
    let slot = script.variable_slot("r").unwrap();
    (0..count)
        .map(|_| {
            script
                .step(&mut Cursor::default(), &mut vars, &mut prng)
                .unwrap();
            match vars.get(slot) {
                Some(Value::Scalar(Scalar::Int(drawn))) => *drawn,
                other => panic!("{expression}: {other:?}"),
            }
        })
        .collect()
}

/// Pearson's chi-square of `values` over `low..=high` against `probabilities`.
fn chi_square(values: &[i64], low: i64, probabilities: &[f64]) -> f64 {
    let mut counts = vec![0u64; probabilities.len()];
    for value in values {
        let index = usize::try_from(value - low).expect("a value below the range");
        counts[index] += 1;
    }
    let total = values.len() as f64;
    counts
        .iter()
        .zip(probabilities)
        .map(|(&observed, &p)| {
            let expected = total * p;
            (observed as f64 - expected).powi(2) / expected
        })
        .sum()
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * z);
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-z * z).exp();
    0.5 * (1.0 + if x < 0.0 { -erf } else { erf })
}

/// Bound on chi-square with 9 degrees of freedom: a true distribution exceeds it
/// with probability about 1e-6, and the seeds are fixed, so the tests cannot flake.
const CHI_SQUARE_9_DF_BOUND: f64 = 45.0;

#[test]
fn random_is_uniform_over_its_range() {
    let values = draws("random(1, 10)", 100_000, 11);
    assert!(values.iter().all(|v| (1..=10).contains(v)));
    let chi = chi_square(&values, 1, &[0.1; 10]);
    assert!(chi < CHI_SQUARE_9_DF_BOUND, "chi-square {chi}");
    assert!(draws("random(-3, -3)", 100, 1).iter().all(|&v| v == -3));
    let wide = draws("random(-4611686018427387903, 4611686018427387903)", 1000, 2);
    assert!(wide.iter().any(|&v| v < 0) && wide.iter().any(|&v| v > 0));
    assert_eq!(error("random(5,3)"), "empty range given to random");
    assert_eq!(
        error("random(:minint, :maxint)"),
        "random range is too large"
    );
}

#[test]
fn random_exponential_follows_pgbench_s_distribution() {
    // pgbench: P(i) = f(i) - f(i + 1), f(x) = exp(-p (x - min) / (max - min + 1)) / (1 - exp(-p)).
    let parameter = 3.0f64;
    let f = |x: f64| (-parameter * (x - 1.0) / 10.0).exp() / (1.0 - (-parameter).exp());
    let probabilities: Vec<f64> = (1..=10).map(|i| f(i as f64) - f(i as f64 + 1.0)).collect();
    let values = draws("random_exponential(1, 10, 3.0)", 100_000, 12);
    assert!(values.iter().all(|v| (1..=10).contains(v)));
    let chi = chi_square(&values, 1, &probabilities);
    assert!(chi < CHI_SQUARE_9_DF_BOUND, "chi-square {chi}");
    assert_eq!(
        error("random_exponential(0, 10, 0.0)"),
        "exponential parameter must be greater than zero (not 0)"
    );
}

#[test]
fn random_gaussian_follows_pgbench_s_distribution() {
    // pgbench: P(i) = f(i + 0.5) - f(i - 0.5), f(x) = PHI(2 p (x - mu) / (max - min + 1)) / (2 PHI(p) - 1).
    let parameter = 2.5f64;
    let mu = 5.5;
    let f = |x: f64| phi(2.0 * parameter * (x - mu) / 10.0) / (2.0 * phi(parameter) - 1.0);
    let probabilities: Vec<f64> = (1..=10)
        .map(|i| f(i as f64 + 0.5) - f(i as f64 - 0.5))
        .collect();
    let values = draws("random_gaussian(1, 10, 2.5)", 100_000, 13);
    assert!(values.iter().all(|v| (1..=10).contains(v)));
    let chi = chi_square(&values, 1, &probabilities);
    assert!(chi < CHI_SQUARE_9_DF_BOUND, "chi-square {chi}");
    assert_eq!(
        error("random_gaussian(0, 10, 1.0)"),
        "gaussian parameter must be at least 2.0 (not 1)"
    );
}

#[test]
fn random_zipfian_follows_pgbench_s_distribution() {
    // Bounded Zipf: P(k) proportional to k^-s over 1..=n.
    let s = 1.5f64;
    let weights: Vec<f64> = (1..=10).map(|k| (k as f64).powf(-s)).collect();
    let total: f64 = weights.iter().sum();
    let probabilities: Vec<f64> = weights.iter().map(|w| w / total).collect();
    let values = draws("random_zipfian(1, 10, 1.5)", 100_000, 14);
    assert!(values.iter().all(|v| (1..=10).contains(v)));
    let chi = chi_square(&values, 1, &probabilities);
    assert!(chi < CHI_SQUARE_9_DF_BOUND, "chi-square {chi}");
    // Shifted ranges keep the shape.
    assert!(
        draws("random_zipfian(4000, 4999, 1.07)", 1000, 15)
            .iter()
            .all(|v| (4000..=4999).contains(v))
    );
    assert_eq!(
        error("random_zipfian(0, 10, 1)"),
        "zipfian parameter must be in range [1.001, 1000] (not 1)"
    );
    assert_eq!(
        error("random_zipfian(0, 10, 1000000)"),
        "zipfian parameter must be in range [1.001, 1000] (not 1000000)"
    );
}
