//! A PostgreSQL server the test runs itself with `pg_ctl`, as an operator's
//! server would be, so a test can restart it (`pg_ctl restart -m fast`) in
//! the middle of a `--db-url` run.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use super::server::postgres_ids;

/// A PostgreSQL the test runs itself with `pg_ctl`, as an operator's server
/// would be: on a unix socket in its temp folder, as the `postgres` user when
/// the test runs as root. Stopped (immediate) on drop.
pub struct OperatorServer {
    folder: tempfile::TempDir,
    bin_dir: PathBuf,
    user: Option<(u32, u32)>,
}

impl OperatorServer {
    pub fn start() -> OperatorServer {
        OperatorServer::start_with("")
    }

    /// [`OperatorServer::start`] with more `postgres` options, e.g.
    /// `-c shared_preload_libraries=pg_stat_statements`.
    pub fn start_with(extra_options: &str) -> OperatorServer {
        let bin_dir = super::server_binaries().bin_dir.clone();
        let folder = tempfile::Builder::new()
            .prefix("operator-test-")
            .tempdir()
            .unwrap();
        let user = postgres_ids();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(folder.path(), Some(uid), Some(gid)).unwrap();
        }
        let server = OperatorServer {
            folder,
            bin_dir,
            user,
        };
        let data = server.data_dir();
        server.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        let options = format!(
            "-k {} -p 5432 -c listen_addresses= {extra_options}",
            server.folder.path().display()
        );
        server.pg_ctl(&["start", "-o", &options]);
        server
    }

    pub fn data_dir(&self) -> PathBuf {
        self.folder.path().join("data")
    }

    pub fn connection_string(&self) -> String {
        format!(
            "host={} port=5432 user=postgres dbname=postgres",
            self.folder.path().display()
        )
    }

    /// `pg_ctl <action> -w -D data -l log <args>`; panics with its output if it fails.
    pub fn pg_ctl(&self, args: &[&str]) -> Output {
        let data = self.data_dir();
        let log = self.folder.path().join("server.log");
        let mut all = vec![args[0], "-w", "-D", data.to_str().unwrap()];
        all.extend(["-l", log.to_str().unwrap()]);
        all.extend(&args[1..]);
        self.run("pg_ctl", &all)
    }

    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        let mut command = Command::new(self.bin_dir.join(program));
        command
            .args(args)
            .current_dir(self.folder.path())
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.user {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid).env("HOME", "/tmp");
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

impl Drop for OperatorServer {
    fn drop(&mut self) {
        let data = self.data_dir();
        let mut command = Command::new(self.bin_dir.join("pg_ctl"));
        command
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = self.user {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        let _ = command.status();
    }
}
