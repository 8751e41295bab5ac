//! The connection against a socket pair whose other end plays the server's
//! side of the protocol (packets as MariaDB frames them); what the server
//! does with a statement is the real servers' to show (tests/suite).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::super::connect::{ConnectOptions, open_on};
use super::super::packet::tests::handshake_payload;
use super::*;
use crate::engine::mariadb::wire::socket::Address;

fn deadline() -> Deadline {
    Deadline {
        end: Some(Instant::now() + Duration::from_secs(10)),
        stop: Arc::new(AtomicBool::new(false)),
    }
}

/// `payload` framed as packet `sequence`.
fn framed(sequence: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    out.push(sequence);
    out.extend_from_slice(payload);
    out
}

/// Reads one packet from the client: its sequence and payload.
fn read_packet(server: &mut UnixStream) -> (u8, Vec<u8>) {
    let mut header = [0; 4];
    server.read_exact(&mut header).unwrap();
    let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let mut payload = vec![0; length];
    server.read_exact(&mut payload).unwrap();
    (header[3], payload)
}

fn options(password: &str) -> ConnectOptions {
    ConnectOptions {
        address: Address::Unix("/test".into()),
        resolved: Vec::new(),
        user: "app".to_string(),
        password: password.to_string(),
        database: Some("stallbench".to_string()),
    }
}

/// Logs a client in against a server thread that runs `serve` after the
/// handshake it sends (`plugin` its first authentication plugin).
fn logged_in(
    password: &str,
    plugin: &'static str,
    serve: impl FnOnce(&mut UnixStream) + Send + 'static,
) -> (Result<MariaConnection, MariaWireError>, JoinHandle<()>) {
    let (client, mut server) = UnixStream::pair().unwrap();
    let thread = std::thread::spawn(move || {
        server
            .write_all(&framed(0, &handshake_payload(plugin)))
            .unwrap();
        serve(&mut server);
    });
    let socket = Socket::from_fd(client.into()).unwrap();
    (open_on(socket, &options(password), &deadline()), thread)
}

/// An OK packet with `status`.
fn ok(status: u16) -> Vec<u8> {
    let mut payload = vec![0, 0, 0];
    payload.extend_from_slice(&status.to_le_bytes());
    payload.extend_from_slice(&[0, 0]);
    payload
}

/// Serves the rest of a login: reads the response, says OK.
fn accept_login(server: &mut UnixStream) {
    let (sequence, response) = read_packet(server);
    assert_eq!(sequence, 1);
    assert!(response.ends_with(b"stallbench\0mysql_native_password\0"));
    server.write_all(&framed(2, &ok(2))).unwrap();
}

#[test]
fn a_login_switched_to_native_password_answers_the_new_scramble() {
    let (conn, server) = logged_in("secret", "client_ed25519", |server| {
        read_packet(server);
        let mut switch = vec![0xFE];
        switch.extend_from_slice(b"mysql_native_password\0");
        switch.extend_from_slice(&[9; 20]);
        switch.push(0);
        server.write_all(&framed(2, &switch)).unwrap();
        let (sequence, answer) = read_packet(server);
        assert_eq!(sequence, 3);
        assert_eq!(answer, packet::native_password(b"secret", &[9; 20]));
        server.write_all(&framed(4, &ok(2))).unwrap();
    });
    let conn = conn.unwrap();
    assert_eq!(conn.id(), 42);
    server.join().unwrap();
}

#[test]
fn a_switch_to_a_plugin_it_does_not_speak_is_refused_by_name() {
    let (conn, server) = logged_in("", "mysql_native_password", |server| {
        read_packet(server);
        let mut switch = vec![0xFE];
        switch.extend_from_slice(b"caching_sha2_password\0");
        switch.extend_from_slice(&[1; 20]);
        server.write_all(&framed(2, &switch)).unwrap();
    });
    let err = conn.err().expect("refused").to_string();
    assert!(err.contains("caching_sha2_password"), "{err}");
    server.join().unwrap();
}

#[test]
fn a_refused_login_is_the_servers_error() {
    let (conn, server) = logged_in("wrong", "mysql_native_password", |server| {
        read_packet(server);
        let mut err = vec![0xFF];
        err.extend_from_slice(&1045u16.to_le_bytes());
        err.extend_from_slice(b"#28000Access denied for user 'app'");
        server.write_all(&framed(2, &err)).unwrap();
    });
    match conn {
        Err(MariaWireError::Server(err)) => assert_eq!(err.code, 1045),
        other => panic!("{:?}", other.err()),
    }
    server.join().unwrap();
}

/// Column-count packet of an execute's result: one column, metadata skipped.
const ONE_COLUMN_NO_METADATA: [u8; 2] = [1, 0];

#[test]
fn prepare_execute_and_query_read_their_answers_to_the_end() {
    let (conn, server) = logged_in("", "mysql_native_password", |server| {
        accept_login(server);
        // COM_STMT_PREPARE: one parameter, one column; their definitions.
        let (_, prepare) = read_packet(server);
        assert_eq!(prepare[0], COM_STMT_PREPARE);
        let mut prepared = vec![0];
        prepared.extend_from_slice(&5u32.to_le_bytes());
        prepared.extend_from_slice(&1u16.to_le_bytes());
        prepared.extend_from_slice(&1u16.to_le_bytes());
        prepared.extend_from_slice(&[0, 0, 0]);
        let mut answer = framed(1, &prepared);
        answer.extend(framed(2, b"\x03defparam"));
        answer.extend(framed(3, b"\x03defcolumn"));
        server.write_all(&answer).unwrap();
        // COM_STMT_EXECUTE: two rows, metadata skipped, sent in two pieces.
        let (_, execute) = read_packet(server);
        assert_eq!(execute[0], packet::COM_STMT_EXECUTE);
        let mut answer = framed(1, &ONE_COLUMN_NO_METADATA);
        answer.extend(framed(2, &[0, 0, 1, b'a']));
        answer.extend(framed(3, &[0, 0, 1, b'b']));
        let mut closing = vec![0xFE];
        closing.extend_from_slice(&ok(0)[1..]);
        answer.extend(framed(4, &closing));
        let (first, second) = answer.split_at(7);
        server.write_all(first).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        server.write_all(second).unwrap();
        // BEGIN: an OK saying a transaction is open.
        let (_, query) = read_packet(server);
        assert_eq!(&query, b"\x03BEGIN");
        server.write_all(&framed(1, &ok(STATUS_IN_TRANS))).unwrap();
        // An execute that fails.
        read_packet(server);
        let mut err = vec![0xFF];
        err.extend_from_slice(&1205u16.to_le_bytes());
        err.extend_from_slice(b"#HY000Lock wait timeout exceeded");
        server.write_all(&framed(1, &err)).unwrap();
    });
    let mut conn = conn.unwrap();
    let deadline = deadline();
    let mut statement = conn
        .prepare("SELECT c FROM t WHERE id = ?", &deadline)
        .unwrap();
    let rows = conn
        .execute(&mut statement, &[Param::Int(7)], &deadline)
        .unwrap();
    assert_eq!(rows, 2);
    assert!(!conn.in_transaction());
    conn.query("BEGIN", &deadline).unwrap();
    assert!(conn.in_transaction());
    match conn.execute(&mut statement, &[Param::Int(8)], &deadline) {
        Err(MariaWireError::Server(err)) => {
            assert_eq!((err.code, err.sqlstate.as_str()), (1205, "HY000"))
        }
        other => panic!("{other:?}"),
    }
    let err = conn.query("SELECT 1", &deadline).unwrap_err();
    assert!(matches!(err, MariaWireError::Lost { .. }), "{err}");
    server.join().unwrap();
}

#[test]
fn a_result_set_with_its_metadata_and_several_results_is_read_whole() {
    let (conn, server) = logged_in("", "mysql_native_password", |server| {
        accept_login(server);
        read_packet(server);
        // Two result sets (a procedure's), each with its column definition.
        let mut answer = Vec::new();
        for (more, first_sequence) in [(STATUS_MORE_RESULTS, 1u8), (0, 5)] {
            answer.extend(framed(first_sequence, &[1]));
            answer.extend(framed(first_sequence + 1, b"\x03defcolumn"));
            answer.extend(framed(first_sequence + 2, &[1, b'x']));
            let mut closing = vec![0xFE];
            closing.extend_from_slice(&ok(more)[1..]);
            answer.extend(framed(first_sequence + 3, &closing));
        }
        server.write_all(&answer).unwrap();
    });
    let mut conn = conn.unwrap();
    assert_eq!(conn.query("CALL p()", &deadline()).unwrap(), 2);
    server.join().unwrap();
}

#[test]
fn an_execute_reads_metadata_when_the_server_sends_it() {
    let header = payload_header(&[2, 1], true, packet::MARIADB_CLIENT_CACHE_METADATA).unwrap();
    assert_eq!(
        header,
        ResultHeader {
            columns: 2,
            metadata_follows: true
        }
    );
    let header = payload_header(&[2, 0], true, packet::MARIADB_CLIENT_CACHE_METADATA).unwrap();
    assert!(!header.metadata_follows);
    // A text result always has its definitions; so has a server without caching.
    assert!(
        payload_header(&[2, 0], false, packet::MARIADB_CLIENT_CACHE_METADATA)
            .unwrap()
            .metadata_follows
    );
    assert!(payload_header(&[2], true, 0).unwrap().metadata_follows);
}

#[test]
fn a_packet_out_of_sequence_breaks_the_protocol() {
    let (conn, server) = logged_in("", "mysql_native_password", |server| {
        accept_login(server);
        let (sequence, _) = read_packet(server);
        assert_eq!(sequence, 0);
        // A result set whose row skips a number (a packet lost or left over).
        let mut answer = framed(1, &[1]);
        answer.extend(framed(2, b"\x03defcolumn"));
        answer.extend(framed(4, &[1, b'x']));
        server.write_all(&answer).unwrap();
    });
    let mut conn = conn.unwrap();
    let err = conn.query("SELECT 'x'", &deadline()).unwrap_err();
    assert!(matches!(err, MariaWireError::Lost { .. }), "{err}");
    assert!(err.to_string().contains("packets out of order"), "{err}");
    server.join().unwrap();
}

#[test]
fn a_login_answered_out_of_sequence_breaks_the_protocol() {
    let (conn, server) = logged_in("", "mysql_native_password", |server| {
        read_packet(server);
        server.write_all(&framed(1, &ok(2))).unwrap();
    });
    let err = conn.err().expect("out of order").to_string();
    assert!(err.contains("packets out of order"), "{err}");
    server.join().unwrap();
}
