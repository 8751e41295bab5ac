//! PostgreSQL behind the engine seam: every part of a run that speaks to a
//! PostgreSQL server or knows its catalog.
//!
//! - [`errors`]: its SQLSTATEs as the neutral codes and classes of the results;

pub mod errors;
