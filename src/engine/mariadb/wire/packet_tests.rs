use super::*;
use crate::engine::ErrorClass;
use crate::engine::mariadb::errors::class_of;

/// A MariaDB 10.11 handshake payload: protocol 10, version, connection id
/// 42, scramble `1..=20`, capabilities without `CLIENT_MYSQL` and with
/// metadata caching among the extended ones.
pub(crate) fn handshake_payload(plugin: &str) -> Vec<u8> {
    let capabilities: u32 =
        0xF7FE | (CLIENT_PLUGIN_AUTH | CLIENT_DEPRECATE_EOF | CLIENT_MULTI_RESULTS) & 0xFFFF_0000;
    let mut payload = vec![10];
    payload.extend_from_slice(b"5.5.5-10.11.6-MariaDB\0");
    payload.extend_from_slice(&42u32.to_le_bytes());
    payload.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    payload.push(0);
    payload.extend_from_slice(&(capabilities as u16).to_le_bytes());
    payload.push(45);
    payload.extend_from_slice(&2u16.to_le_bytes());
    payload.extend_from_slice(&((capabilities >> 16) as u16).to_le_bytes());
    payload.push(21);
    payload.extend_from_slice(&[0; 6]);
    payload.extend_from_slice(&(MARIADB_CLIENT_CACHE_METADATA | 1).to_le_bytes());
    payload.extend_from_slice(&[9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    payload.push(0);
    payload.extend_from_slice(plugin.as_bytes());
    payload.push(0);
    payload
}

#[test]
fn length_encoded_integers_round_trip_at_every_width() {
    for value in [
        0,
        250,
        251,
        0xFFFF,
        0x1_0000,
        0xFF_FFFF,
        0x100_0000,
        u64::MAX,
    ] {
        let mut out = Vec::new();
        put_lenenc(&mut out, value);
        let width = match value {
            0..=250 => 1,
            251..=0xFFFF => 3,
            0x1_0000..=0xFF_FFFF => 4,
            _ => 9,
        };
        assert_eq!(out.len(), width, "{value}");
        let mut reader = Reader::new(&out);
        assert_eq!(reader.lenenc(), Some(value));
        assert!(reader.is_empty());
    }
    // 0xFB is NULL in a text row, 0xFF no integer; a cut integer is none.
    assert_eq!(Reader::new(&[0xFB]).lenenc(), None);
    assert_eq!(Reader::new(&[0xFC, 1]).lenenc(), None);
}

#[test]
fn a_mariadb_handshake_is_read_with_its_scramble_and_extended_capabilities() {
    let handshake = parse_handshake(&handshake_payload("mysql_native_password")).unwrap();
    assert_eq!(handshake.server_version, "5.5.5-10.11.6-MariaDB");
    assert_eq!(handshake.connection_id, 42);
    assert_eq!(handshake.scramble, (1..=20).collect::<Vec<u8>>());
    assert_eq!(handshake.plugin, "mysql_native_password");
    assert_eq!(handshake.capabilities & CLIENT_MYSQL, 0);
    let (capabilities, extended) = client_capabilities(&handshake, true);
    assert_eq!(extended, MARIADB_CLIENT_CACHE_METADATA);
    assert_ne!(capabilities & CLIENT_DEPRECATE_EOF, 0);
    assert_ne!(capabilities & CLIENT_CONNECT_WITH_DB, 0);
    assert_eq!(capabilities & CLIENT_MYSQL, 0);
}

#[test]
fn another_protocol_or_a_cut_handshake_is_refused() {
    let mut payload = handshake_payload("mysql_native_password");
    payload[0] = 9;
    let err = parse_handshake(&payload).unwrap_err().to_string();
    assert!(err.contains("protocol version 9"), "{err}");
    let payload = handshake_payload("x");
    assert!(parse_handshake(&payload[..20]).is_err());
}

#[test]
fn the_native_password_scramble_matches_a_known_vector() {
    // mysql_common's test vector (scramble.rs, should_compute_scrambled_password).
    let scramble = [
        0x4e, 0x52, 0x33, 0x48, 0x50, 0x3a, 0x71, 0x49, 0x59, 0x61, 0x5f, 0x39, 0x3d, 0x64, 0x62,
        0x3f, 0x53, 0x64, 0x7b, 0x60,
    ];
    let password = [0x47, 0x21, 0x69, 0x64, 0x65, 0x72, 0x32, 0x37];
    assert_eq!(
        native_password(&password, &scramble),
        [
            0x09, 0xcf, 0xf8, 0x85, 0x5e, 0x9e, 0x70, 0x53, 0x40, 0xff, 0x22, 0x70, 0xd8, 0xfb,
            0x9f, 0xad, 0xba, 0x90, 0x6b, 0x70,
        ]
    );
    assert!(native_password(b"", &scramble).is_empty());
}

#[test]
fn the_handshake_response_carries_user_database_and_plugin() {
    let mut out = Vec::new();
    let response = HandshakeResponse {
        capabilities: CLIENT_PROTOCOL_41 | CLIENT_CONNECT_WITH_DB,
        extended: MARIADB_CLIENT_CACHE_METADATA,
        user: "root",
        auth: &[],
        database: Some("stallbench"),
        plugin: "mysql_native_password",
    };
    handshake_response(&mut out, &response).unwrap();
    let length = u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize;
    assert_eq!(length, out.len() - 4);
    assert_eq!(out[3], 1, "sequence 1");
    let payload = &out[4..];
    assert_eq!(
        &payload[28..32],
        &MARIADB_CLIENT_CACHE_METADATA.to_le_bytes()
    );
    assert_eq!(
        &payload[32..],
        b"root\0\0stallbench\0mysql_native_password\0"
    );
}

#[test]
fn an_err_packet_keeps_number_sqlstate_and_message_and_gets_its_class() {
    let mut payload = vec![0xFF];
    payload.extend_from_slice(&1205u16.to_le_bytes());
    payload.extend_from_slice(b"#HY000Lock wait timeout exceeded; try restarting transaction");
    let err = parse_err(&payload);
    assert_eq!(err.code, 1205);
    assert_eq!(err.sqlstate, "HY000");
    assert!(err.message.starts_with("Lock wait timeout"));
    assert_eq!(class_of(err.code, &err.sqlstate), ErrorClass::LockTimeout);
    let mut payload = vec![0xFF];
    payload.extend_from_slice(&1213u16.to_le_bytes());
    payload.extend_from_slice(b"#40001Deadlock found");
    let err = parse_err(&payload);
    assert_eq!(class_of(err.code, &err.sqlstate), ErrorClass::Deadlock);
}

#[test]
fn ok_and_eof_packets_give_the_transaction_status() {
    let ok = parse_ok(&[0x00, 3, 0, STATUS_IN_TRANS as u8, 0, 0, 0]).unwrap();
    assert_eq!(ok.affected_rows, 3);
    assert_eq!(ok.status, STATUS_IN_TRANS);
    let eof = parse_eof(&[0xFE, 0, 0, STATUS_MORE_RESULTS as u8, 0]);
    assert_eq!(eof.status, STATUS_MORE_RESULTS);
    assert!(is_eof(&[0xFE, 0, 0, 2, 0], false));
    assert!(is_eof(&[0xFE, 0, 0, 2, 0, 0, 0], true));
    // A text row whose first value is 8-byte length-encoded is no EOF.
    assert!(!is_eof(&[0xFE; 12], false));
    assert!(!is_eof(&[0x00, 1], true));
    assert!(parse_ok(&[0x00, 1]).is_err());
}

#[test]
fn execute_sends_the_types_only_when_they_change() {
    let mut bound = Vec::new();
    let mut first = Vec::new();
    execute(&mut first, 7, &[Param::Int(42), Param::Null], &mut bound).unwrap();
    let payload = &first[4..];
    assert_eq!(payload[0], COM_STMT_EXECUTE);
    assert_eq!(&payload[1..5], &7u32.to_le_bytes());
    assert_eq!(payload[5], 0, "no cursor");
    assert_eq!(&payload[6..10], &1u32.to_le_bytes());
    assert_eq!(payload[10], 0b10, "the second parameter is NULL");
    assert_eq!(payload[11], 1, "types follow");
    assert_eq!(&payload[12..16], &[TYPE_LONGLONG, 0, TYPE_NULL, 0]);
    assert_eq!(&payload[16..], &42i64.to_le_bytes());
    assert_eq!(bound, [TYPE_LONGLONG, TYPE_NULL]);

    // The same types again: none sent, as libmariadb does (24 bytes for one int).
    let mut again = Vec::new();
    execute(&mut again, 7, &[Param::Int(5), Param::Null], &mut bound).unwrap();
    assert_eq!(again[4 + 11], 0);
    assert_eq!(again.len(), 4 + 12 + 8);
    let mut one = Vec::new();
    let mut one_bound = vec![TYPE_LONGLONG];
    execute(&mut one, 1, &[Param::Int(5)], &mut one_bound).unwrap();
    assert_eq!(one.len() - 4, 20);

    // A NULL where an int was keeps the int's type; text changes it.
    let mut null = Vec::new();
    execute(&mut null, 7, &[Param::Null, Param::Null], &mut bound).unwrap();
    assert_eq!(null[4 + 11], 0);
    let mut text = Vec::new();
    execute(
        &mut text,
        7,
        &[Param::Int(1), Param::Text("ab")],
        &mut bound,
    )
    .unwrap();
    assert_eq!(text[4 + 11], 1);
    assert_eq!(bound, [TYPE_LONGLONG, TYPE_VAR_STRING]);
    assert_eq!(&text[text.len() - 3..], &[2, b'a', b'b']);
}

#[test]
fn a_command_is_framed_with_sequence_zero() {
    let mut out = Vec::new();
    command(&mut out, COM_QUERY, b"COMMIT").unwrap();
    assert_eq!(out, b"\x07\x00\x00\x00\x03COMMIT");
}

#[test]
fn a_packet_too_long_is_cut_from_the_buffer_whole() {
    let mut out = b"before".to_vec();
    let long = "x".repeat(MAX_PAYLOAD);
    let err = command(&mut out, COM_QUERY, long.as_bytes()).unwrap_err();
    assert!(matches!(err, MariaWireError::Refused { .. }), "{err}");
    assert_eq!(out, b"before");
    let mut bound = vec![TYPE_LONGLONG];
    execute(&mut out, 1, &[Param::Text(&long)], &mut bound).unwrap_err();
    assert_eq!(out, b"before");
    assert!(bound.is_empty(), "the types go again with the next execute");
}
