//! The system user that owns and runs the throwaway server: ourselves, or,
//! when we are root (initdb refuses root), the `postgres` system user.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// The system user that owns and runs the server when it is not us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerUser {
    pub uid: u32,
    pub gid: u32,
}

/// initdb refuses root: when we are root, the server runs as the `postgres`
/// system user; `None` when it runs as ourselves.
pub fn server_user() -> anyhow::Result<Option<ServerUser>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("postgres").expect("no NUL in a literal");
    // SAFETY: getpwnam returns a pointer to static storage or null; we copy out at once.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        bail!(
            "running as root, and there is no `postgres` system user to run the throwaway server \
             (initdb refuses root); create it with `useradd --system postgres`, \
             run stallbench as another user, or use --db-url"
        );
    }
    // SAFETY: checked non-null above.
    let (uid, gid) = unsafe { ((*entry).pw_uid, (*entry).pw_gid) };
    Ok(Some(ServerUser { uid, gid }))
}

/// Gives `path` to the server user.
pub fn chown(path: &Path, user: &ServerUser) -> anyhow::Result<()> {
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
        .with_context(|| format!("giving {} to the postgres user", path.display()))
}

/// Makes `command` run as the server user, if there is one.
pub fn as_user(command: &mut Command, user: Option<&ServerUser>) {
    if let Some(user) = user {
        command.uid(user.uid).gid(user.gid).env("HOME", "/tmp");
    }
}
