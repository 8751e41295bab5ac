//! What the row generator knows of a schema, read from the catalogs once:
//! its tables (pg_class), their columns (pg_attribute, pg_attrdef), the
//! types (pg_type, pg_enum), the unique keys (pg_index, with the columns an
//! expression index reads from pg_depend), the foreign keys and CHECKs
//! (pg_constraint). Plain data; nothing here decides a value.

use std::collections::HashMap;

use tokio_postgres::Client;

/// The tables of the schemas and the types their columns use.
#[derive(Debug, Clone, Default)]
pub(super) struct Catalog {
    /// Ordinary and partitioned tables (not partitions: rows go through
    /// their parent), by name.
    pub tables: Vec<CatalogTable>,
    pub types: HashMap<u32, TypeInfo>,
    /// Each enum's labels in their order.
    pub enum_labels: HashMap<u32, Vec<String>>,
}

#[derive(Debug, Clone)]
pub(super) struct CatalogTable {
    pub oid: u32,
    pub name: String,
    /// `"schema"."name"`, quoted for SQL.
    pub sql_name: String,
    pub columns: Vec<CatalogColumn>,
    pub unique_keys: Vec<UniqueKey>,
    pub foreign_keys: Vec<ForeignKey>,
    pub checks: Vec<CheckConstraint>,
}

#[derive(Debug, Clone)]
pub(super) struct CatalogColumn {
    pub attnum: i16,
    pub name: String,
    pub type_oid: u32,
    pub typmod: i32,
    pub not_null: bool,
    /// The default expression (`nextval(...)`, `now()`), if any.
    pub default: Option<String>,
    pub identity: bool,
    /// A generated column (stored or virtual): never inserted into.
    pub generated: bool,
    /// The sequence of a serial or identity column (`app.users_id_seq`).
    pub sequence: Option<String>,
}

/// A primary key, unique constraint or unique index, by its columns.
#[derive(Debug, Clone)]
pub(super) struct UniqueKey {
    pub name: String,
    pub columns: Vec<i16>,
}

#[derive(Debug, Clone)]
pub(super) struct ForeignKey {
    pub name: String,
    pub columns: Vec<i16>,
    pub parent_oid: u32,
    /// `"schema"."table"` of the referenced table (which may be in another schema).
    pub parent_sql: String,
    /// The referenced columns' names, in the key's order.
    pub parent_columns: Vec<String>,
}

#[derive(Debug, Clone)]
pub(super) struct CheckConstraint {
    pub name: String,
    pub columns: Vec<i16>,
    /// `CHECK (...)` as pg_get_constraintdef writes it.
    pub definition: String,
}

/// A type as the catalogs describe it (base types, domains, enums).
#[derive(Debug, Clone)]
pub(super) struct TypeInfo {
    pub name: String,
    /// pg_type.typtype: `b` base, `d` domain, `e` enum.
    pub kind: char,
    /// pg_type.typcategory: `A` array, `S` string, `N` numeric, ...
    pub category: char,
    /// A domain's base type and its typmod.
    pub base: u32,
    pub base_typmod: i32,
    /// An array's element type.
    pub element: u32,
    /// A domain's NOT NULL.
    pub not_null: bool,
    /// A domain's default.
    pub has_default: bool,
}

const TABLES: &str = "
SELECT c.oid, c.relname::text, format('%I.%I', n.nspname, c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY ($1) AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY n.nspname, c.relname";

const COLUMNS: &str = "
SELECT a.attrelid, a.attnum, a.attname::text, a.atttypid, a.atttypmod, a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attidentity <> '', a.attgenerated <> '',
       pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname)
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = ANY ($1) AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum";

/// Unique indexes (primary keys and unique constraints have one), each with
/// its key columns and the columns its expressions read.
const UNIQUE_KEYS: &str = "
SELECT i.indrelid, ic.relname::text,
       ARRAY(SELECT DISTINCT k FROM unnest((i.indkey::int2[])[0:i.indnkeyatts - 1]) k WHERE k > 0
             UNION
             SELECT d.refobjsubid::int2 FROM pg_depend d
             WHERE i.indexprs IS NOT NULL AND d.classid = 'pg_class'::regclass
               AND d.objid = i.indexrelid AND d.refobjid = i.indrelid AND d.refobjsubid > 0)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE n.nspname = ANY ($1) AND i.indisunique
ORDER BY i.indrelid, NOT i.indisprimary, ic.relname";

const CONSTRAINTS: &str = "
SELECT con.conrelid, con.conname::text, con.contype::text, con.conkey,
       con.confrelid, CASE WHEN fc.oid IS NOT NULL THEN format('%I.%I', fn.nspname, fc.relname) END,
       ARRAY(SELECT a.attname::text
             FROM unnest(con.confkey) WITH ORDINALITY AS k(num, pos)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num
             ORDER BY k.pos),
       pg_get_constraintdef(con.oid)
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class fc ON fc.oid = con.confrelid
LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace
WHERE n.nspname = ANY ($1) AND con.contype IN ('f', 'c')
ORDER BY con.conrelid, con.conname";

const TYPES: &str = "
SELECT t.oid, t.typname::text, t.typtype::text, t.typcategory::text, t.typbasetype,
       t.typtypmod, t.typelem, t.typnotnull, t.typdefaultbin IS NOT NULL OR t.typdefault IS NOT NULL
FROM pg_type t
WHERE t.typtype IN ('b', 'd', 'e')";

const ENUM_LABELS: &str = "
SELECT enumtypid, enumlabel::text FROM pg_enum ORDER BY enumtypid, enumsortorder";

/// Reads the catalog of `schemas` (the tables' order: by schema, then name).
pub(super) async fn read_catalog(
    client: &Client,
    schemas: &[&str],
) -> Result<Catalog, tokio_postgres::Error> {
    let mut tables: Vec<CatalogTable> = client
        .query(TABLES, &[&schemas])
        .await?
        .iter()
        .map(|row| CatalogTable {
            oid: row.get(0),
            name: row.get(1),
            sql_name: row.get(2),
            columns: Vec::new(),
            unique_keys: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
        })
        .collect();
    let index: HashMap<u32, usize> = tables
        .iter()
        .enumerate()
        .map(|(at, table)| (table.oid, at))
        .collect();
    for row in client.query(COLUMNS, &[&schemas]).await? {
        let Some(&at) = index.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        tables[at].columns.push(CatalogColumn {
            attnum: row.get(1),
            name: row.get(2),
            type_oid: row.get(3),
            typmod: row.get(4),
            not_null: row.get(5),
            default: row.get(6),
            identity: row.get(7),
            generated: row.get(8),
            sequence: row.get(9),
        });
    }
    for row in client.query(UNIQUE_KEYS, &[&schemas]).await? {
        if let Some(&at) = index.get(&row.get::<_, u32>(0)) {
            tables[at].unique_keys.push(UniqueKey {
                name: row.get(1),
                columns: row.get(2),
            });
        }
    }
    for row in client.query(CONSTRAINTS, &[&schemas]).await? {
        let Some(&at) = index.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        let name: String = row.get(1);
        let kind: String = row.get(2);
        let columns: Vec<i16> = row.get(3);
        if kind == "f" {
            tables[at].foreign_keys.push(ForeignKey {
                name,
                columns,
                parent_oid: row.get(4),
                parent_sql: row.get(5),
                parent_columns: row.get(6),
            });
        } else {
            tables[at].checks.push(CheckConstraint {
                name,
                columns,
                definition: row.get(7),
            });
        }
    }
    Ok(Catalog {
        tables,
        types: read_types(client).await?,
        enum_labels: read_enum_labels(client).await?,
    })
}

async fn read_types(client: &Client) -> Result<HashMap<u32, TypeInfo>, tokio_postgres::Error> {
    let first_char = |text: String| text.chars().next().unwrap_or(' ');
    Ok(client
        .query(TYPES, &[])
        .await?
        .into_iter()
        .map(|row| {
            let info = TypeInfo {
                name: row.get(1),
                kind: first_char(row.get(2)),
                category: first_char(row.get(3)),
                base: row.get(4),
                base_typmod: row.get(5),
                element: row.get(6),
                not_null: row.get(7),
                has_default: row.get(8),
            };
            (row.get(0), info)
        })
        .collect())
}

async fn read_enum_labels(
    client: &Client,
) -> Result<HashMap<u32, Vec<String>>, tokio_postgres::Error> {
    let mut labels: HashMap<u32, Vec<String>> = HashMap::new();
    for row in client.query(ENUM_LABELS, &[]).await? {
        labels.entry(row.get(0)).or_default().push(row.get(1));
    }
    Ok(labels)
}
