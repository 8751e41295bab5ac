//! PostgreSQL's cancel request: a short connection of its own that names the
//! session by its key, so it works while the session's own connection is busy
//! running the query to cancel (a client timeout, the end of a run).

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::message::frontend;

use super::connection::{Address, Stream};

/// What a cancel request needs: the server's address and the session's key.
/// Cheap to clone; usable while the connection is busy.
#[derive(Debug, Clone)]
pub struct WireCancel {
    pub(super) address: Address,
    pub(super) process_id: i32,
    pub(super) secret_key: i32,
}

impl WireCancel {
    /// Asks the server to cancel whatever the session runs now (PostgreSQL's
    /// cancel request, on a connection of its own). Waits until the server has
    /// read it, up to 2 s.
    pub async fn cancel_query(&self) -> io::Result<()> {
        let send = async {
            let mut stream = Stream::connect(&self.address).await?;
            let mut out = BytesMut::with_capacity(16);
            frontend::cancel_request(self.process_id, self.secret_key, &mut out);
            stream.write_all(&mut out).await?;
            // The server closes the connection once it has the request.
            let mut input = BytesMut::with_capacity(64);
            loop {
                input.clear();
                if stream.read(&mut input).await? == 0 {
                    break;
                }
            }
            Ok(())
        };
        tokio::time::timeout(Duration::from_secs(2), send)
            .await
            .unwrap_or_else(|_| Err(io::Error::other("the cancel request timed out")))
    }
}
