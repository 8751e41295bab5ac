//! The load's own thread: a single-threaded runtime, as pgbench runs its
//! clients on one thread, for the PostgreSQL load's workers. (The MariaDB
//! load runs a thread per client with a client of its own,
//! `engine::mariadb::wire`.)

use std::future::Future;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::Error;

/// A single-threaded runtime on its own OS thread for the load workers, as
/// pgbench runs its clients on one thread: a query's round trip (worker,
/// socket, worker) then never wakes another thread. The observer, the blocker
/// and the DDL stay on the main runtime. The thread ends when this is dropped.
pub struct LoadRuntime {
    handle: tokio::runtime::Handle,
    /// Dropped with the `LoadRuntime`: the thread's `block_on` returns.
    _stop: oneshot::Sender<()>,
}

impl LoadRuntime {
    /// Starts the runtime's thread.
    pub fn start() -> Result<LoadRuntime, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| Error::runtime(format!("starting the load runtime: {err}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("stallbench-load".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|err| Error::runtime(format!("starting the load thread: {err}")))?;
        Ok(LoadRuntime {
            handle,
            _stop: stop,
        })
    }

    /// Runs `future` on the load thread.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }
}
