//! The keys of the parents' rows, read once per parent and key columns and
//! kept while a table still to be filled refers to them (a parent of five
//! children is read once, not five times; a parent no one needs any more
//! is let go, so a schema of a hundred tables holds only the keys it still
//! needs).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use bytes::BufMut;
use futures_util::TryStreamExt;
use tokio::sync::OnceCell;
use tokio_postgres::Client;

use super::catalog::{CatalogTable, ForeignKey};
use super::generate::ParentKeys;
use super::sql_text::quote_ident;

/// A parent and the columns of its key a foreign key refers to.
type KeyName = (u32, Vec<String>);

/// The parents' keys read so far, and how many foreign keys of tables
/// still to fill refer to each.
#[derive(Debug, Default)]
pub(super) struct ParentCache {
    /// Each parent's keys, read by the first table that needs them while
    /// the others of its step wait for them.
    keys: RefCell<HashMap<KeyName, Rc<OnceCell<Rc<ParentKeys>>>>>,
    uses: RefCell<HashMap<KeyName, usize>>,
}

fn name(key: &ForeignKey) -> KeyName {
    (key.parent_oid, key.parent_columns.clone())
}

impl ParentCache {
    /// A cache for filling `tables`: each foreign key to another table is one use.
    pub fn new<'a>(tables: impl IntoIterator<Item = &'a CatalogTable>) -> Self {
        let cache = ParentCache::default();
        for table in tables {
            for key in (table.foreign_keys.iter()).filter(|key| key.parent_oid != table.oid) {
                *cache.uses.borrow_mut().entry(name(key)).or_default() += 1;
            }
        }
        cache
    }

    /// The keys of `key`'s parent rows whose key is set, in key order: read
    /// on `client` the first time.
    pub async fn keys(
        &self,
        client: &Client,
        key: &ForeignKey,
    ) -> Result<Rc<ParentKeys>, tokio_postgres::Error> {
        let cell = self.keys.borrow_mut().entry(name(key)).or_default().clone();
        let keys =
            cell.get_or_try_init(|| async { read_parent_keys(client, key).await.map(Rc::new) });
        keys.await.cloned()
    }

    /// `table` is filled (or skipped): its foreign keys' parents lose a use,
    /// and a parent's keys no one else needs are let go.
    pub fn done_with(&self, table: &CatalogTable) {
        for key in (table.foreign_keys.iter()).filter(|key| key.parent_oid != table.oid) {
            let mut uses = self.uses.borrow_mut();
            let left = uses.entry(name(key)).or_insert(1);
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.keys.borrow_mut().remove(&name(key));
            }
        }
    }
}

/// The keys of `key`'s parent rows whose key is set, in key order, as
/// `COPY ... TO STDOUT` writes them (the text form the rows are sent in).
async fn read_parent_keys(
    client: &Client,
    key: &ForeignKey,
) -> Result<ParentKeys, tokio_postgres::Error> {
    let columns: Vec<String> = (key.parent_columns.iter())
        .map(|column| quote_ident(column))
        .collect();
    let set: Vec<String> = (columns.iter())
        .map(|column| format!("{column} IS NOT NULL"))
        .collect();
    let sql = format!(
        "COPY (SELECT {columns} FROM {} WHERE {} ORDER BY {columns}) TO STDOUT",
        key.parent_sql,
        set.join(" AND "),
        columns = columns.join(", "),
    );
    let text = (client.copy_out(sql.as_str()).await?)
        .try_fold(Vec::new(), |mut text, chunk| async move {
            text.put(chunk);
            Ok(text)
        })
        .await?;
    Ok(ParentKeys::from_copy(columns.len(), text))
}
