//! Reading a project's migrations folder: its layout, the order of its
//! migrations, which of them are new, and each one's statements with the
//! transaction they run in. (Being built: issue 27, item 1.)
