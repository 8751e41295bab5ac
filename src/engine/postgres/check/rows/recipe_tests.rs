//! The tests of `recipe.rs`.

use super::super::catalog::{CheckConstraint, TypeInfo};
use super::*;

fn integer_type(name: &str) -> TypeInfo {
    TypeInfo {
        name: name.into(),
        kind: 'b',
        category: 'N',
        base: 0,
        base_typmod: -1,
        element: 0,
        not_null: false,
        has_default: false,
    }
}

fn serial(attnum: i16, name: &str, type_oid: u32, default: &str) -> CatalogColumn {
    CatalogColumn {
        attnum,
        name: name.into(),
        type_oid,
        typmod: -1,
        not_null: true,
        default: Some(default.into()),
        identity: false,
        generated: false,
        sequence: Some(format!("public.t_{name}_seq")),
    }
}

#[test]
fn serial_keys_are_numbered_on_the_client_when_their_type_has_room() {
    let catalog = Catalog {
        types: [(20, integer_type("int8")), (21, integer_type("int2"))].into(),
        ..Catalog::default()
    };
    let table = CatalogTable {
        oid: 1,
        name: "t".into(),
        sql_name: "public.t".into(),
        columns: vec![
            serial(1, "id", 20, "nextval('t_id_seq'::regclass)"),
            serial(2, "small", 21, "nextval('t_small_seq'::regclass)"),
            serial(3, "bounded", 20, "nextval('t_bounded_seq'::regclass)"),
            serial(4, "fixed", 20, "42"),
        ],
        unique_keys: Vec::new(),
        foreign_keys: Vec::new(),
        checks: vec![CheckConstraint {
            name: "bounded_check".into(),
            columns: vec![3],
            definition: "CHECK ((bounded >= 1000))".into(),
        }],
    };
    let input = RecipeInput {
        catalog: &catalog,
        table: &table,
        nulled: Vec::new(),
        parent_rows: Vec::new(),
        rows: 100_000,
        seed: 1,
    };
    let recipe = table_recipe(&input).unwrap();
    // Only `id`: `small` has no room for 100,000 rows, a CHECK bounds
    // `bounded`, and `fixed` is no sequence's.
    assert_eq!(recipe.sql, "COPY public.t (\"id\") FROM STDIN");
    assert!(matches!(
        recipe.columns.as_slice(),
        [Column::Value {
            kind: ValueKind::Int { bits: 64 },
            distinct: Some(Index::Row),
            ..
        }]
    ));
    assert_eq!(
        recipe.after_sql,
        ["SELECT setval('public.t_id_seq', GREATEST(100000, \
             pg_sequence_last_value('public.t_id_seq'), s.seqmin)) FROM pg_sequence s \
             WHERE s.seqrelid = 'public.t_id_seq'::regclass AND s.seqincrement > 0"]
    );
}

#[test]
fn a_table_goes_in_binary_only_when_every_sent_column_has_an_encoding() {
    let text = TypeInfo {
        category: 'S',
        ..integer_type("text")
    };
    let text_array = TypeInfo {
        category: 'A',
        element: 25,
        ..integer_type("_text")
    };
    let catalog = Catalog {
        types: [(20, integer_type("int8")), (25, text), (1009, text_array)].into(),
        ..Catalog::default()
    };
    let column = |attnum, name: &str, type_oid| CatalogColumn {
        attnum,
        name: name.into(),
        type_oid,
        typmod: -1,
        not_null: true,
        default: None,
        identity: false,
        generated: false,
        sequence: None,
    };
    let recipe = |columns| {
        let table = CatalogTable {
            oid: 1,
            name: "t".into(),
            sql_name: "public.t".into(),
            columns,
            unique_keys: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
        };
        let input = RecipeInput {
            catalog: &catalog,
            table: &table,
            nulled: Vec::new(),
            parent_rows: Vec::new(),
            rows: 10,
            seed: 1,
        };
        table_recipe(&input).unwrap()
    };
    let plain = recipe(vec![column(1, "id", 20), column(2, "name", 25)]);
    assert_eq!(plain.binary, Some(vec![Encoding::Int8, Encoding::Bytes]));
    // An array has no binary encoding here: the whole table goes as text.
    let tagged = recipe(vec![
        column(1, "id", 20),
        column(2, "name", 25),
        column(3, "tags", 1009),
    ]);
    assert_eq!(tagged.binary, None);
}

#[test]
fn the_shifted_mixed_radix_gives_each_row_its_own_combination() {
    let (a, b, c) = (7, 5, 3);
    let digit = |divisor, size| Index::Radix {
        divisor,
        first_size: a,
        size,
    };
    let combinations: std::collections::HashSet<_> = (1..=a * b * c)
        .map(|i| (digit(1, a).at(i), digit(a, b).at(i), digit(a * b, c).at(i)))
        .collect();
    assert_eq!(combinations.len() as u64, a * b * c);
    // The first rows already spread over the second digit.
    let seconds: std::collections::HashSet<_> = (1..=a).map(|i| digit(a, b).at(i)).collect();
    assert_eq!(seconds.len() as u64, b);
    assert_eq!(Index::Row.at(9), 9);
}
