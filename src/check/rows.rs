//! Rows for the schema the earlier migrations built, generated from the
//! catalogs. (Being built: issue 27, item 2.)
