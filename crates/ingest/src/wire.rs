//! ingest.v1's messages (host/proto/ingest.proto) encoded and decoded by
//! hand: a handful of varints, so the plugin needs no protobuf crate.
//!
//! The host's builtin `ingest`, the plugin and the grpc-batching adapter
//! use it; a host test checks it against the messages generated from the
//! .proto.

/// Protobuf wire type of a varint field.
const VARINT: u8 = 0;
/// Protobuf wire type of a length-delimited field.
const LEN: u8 = 2;

fn key(field: u8, wire_type: u8) -> u8 {
    (field << 3) | wire_type
}

/// Appends `value` as a protobuf varint.
pub fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a varint at `*at`, advancing it.
fn get_varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes
            .get(*at)
            .ok_or("a message ends inside a varint (malformed protobuf)")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err("a varint is longer than 10 bytes (malformed protobuf)".into())
}

/// Writes `Batch { records: [Record { offset: first + i, payload }; n] }`
/// into `buf` (cleared first).
pub fn encode_batch(buf: &mut Vec<u8>, first_offset: u64, n: u64, payload: &[u8]) {
    buf.clear();
    for offset in first_offset..first_offset + n {
        // proto3 leaves fields at their default (0, empty) out.
        let record_len = if offset == 0 {
            0
        } else {
            1 + varint_len(offset)
        } + if payload.is_empty() {
            0
        } else {
            1 + varint_len(payload.len() as u64) + payload.len()
        };
        buf.push(key(1, LEN));
        put_varint(buf, record_len as u64);
        if offset != 0 {
            buf.push(key(1, VARINT));
            put_varint(buf, offset);
        }
        if !payload.is_empty() {
            buf.push(key(2, LEN));
            put_varint(buf, payload.len() as u64);
            buf.extend_from_slice(payload);
        }
    }
}

/// The most bytes `encode_batch` of `n` records of `payload_len` bytes can
/// take, whatever their offsets (a 10-byte offset varint each).
pub fn batch_len_bound(n: u64, payload_len: u64) -> u64 {
    let payload = if payload_len == 0 {
        0
    } else {
        1 + varint_len(payload_len) as u64 + payload_len
    };
    let record = 11 + payload;
    n.saturating_mul(1 + varint_len(record) as u64 + record)
}

/// Skips a field of `wire_type` at `*at`.
fn skip(bytes: &[u8], at: &mut usize, wire_type: u8) -> Result<(), String> {
    match wire_type {
        VARINT => get_varint(bytes, at).map(drop),
        LEN => {
            let len = get_varint(bytes, at)? as usize;
            *at = at
                .checked_add(len)
                .filter(|end| *end <= bytes.len())
                .ok_or("a field runs past the end of its message (malformed protobuf)")?;
            Ok(())
        }
        1 => {
            *at += 8;
            Ok(())
        }
        5 => {
            *at += 4;
            Ok(())
        }
        other => Err(format!("unknown protobuf wire type {other}")),
    }
}

/// The number of records in an encoded `Batch`. Batches concatenate: the
/// bytes of two batches are one batch holding both sets of records (protobuf
/// merges repeated fields), which is how an adapter coalesces them.
pub fn count_records(bytes: &[u8]) -> Result<u64, String> {
    let (mut at, mut records) = (0, 0);
    while at < bytes.len() {
        let tag = get_varint(bytes, &mut at)?;
        let wire_type = (tag & 7) as u8;
        if tag >> 3 == 1 && wire_type == LEN {
            records += 1;
        }
        skip(bytes, &mut at, wire_type)?;
    }
    Ok(records)
}

/// Reads `Ack { next_offset }`.
pub fn decode_ack(bytes: &[u8]) -> Result<u64, String> {
    let (mut at, mut next_offset) = (0, 0);
    while at < bytes.len() {
        let tag = get_varint(bytes, &mut at)?;
        let (field, wire_type) = (tag >> 3, (tag & 7) as u8);
        if field == 1 && wire_type == VARINT {
            next_offset = get_varint(bytes, &mut at)?;
        } else {
            skip(bytes, &mut at, wire_type)?;
        }
    }
    Ok(next_offset)
}

/// Writes `EchoRequest { payload }` into `buf` (cleared first).
pub fn encode_echo(buf: &mut Vec<u8>, payload: &[u8]) {
    buf.clear();
    if !payload.is_empty() {
        buf.push(key(1, LEN));
        put_varint(buf, payload.len() as u64);
        buf.extend_from_slice(payload);
    }
}

/// The payload's length in `EchoResponse { payload }`.
pub fn decode_echo_len(bytes: &[u8]) -> Result<usize, String> {
    let (mut at, mut len) = (0, 0);
    while at < bytes.len() {
        let tag = get_varint(bytes, &mut at)?;
        let (field, wire_type) = (tag >> 3, (tag & 7) as u8);
        let start = at;
        skip(bytes, &mut at, wire_type)?;
        if field == 1 && wire_type == LEN {
            let mut inner = start;
            len = get_varint(bytes, &mut inner)? as usize;
        }
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_protobufs_examples() {
        let mut buf = Vec::new();
        put_varint(&mut buf, 150);
        assert_eq!(buf, [0x96, 0x01]);
        assert_eq!(varint_len(150), 2);
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(u64::MAX), 10);
    }

    #[test]
    fn the_batch_bound_is_reached_by_the_largest_offsets_only() {
        let mut buf = Vec::new();
        encode_batch(&mut buf, u64::MAX - 10, 3, &[1; 200]);
        assert_eq!(buf.len() as u64, batch_len_bound(3, 200));
        encode_batch(&mut buf, 0, 3, &[1; 200]);
        assert!((buf.len() as u64) < batch_len_bound(3, 200));
        encode_batch(&mut buf, u64::MAX - 10, 2, &[]);
        assert_eq!(buf.len() as u64, batch_len_bound(2, 0));
    }

    #[test]
    fn a_batch_of_two_records_is_laid_out_field_by_field() {
        let mut buf = Vec::new();
        encode_batch(&mut buf, 5, 2, b"ab");
        // records { offset: 5, payload: "ab" } records { offset: 6, ... }
        let one = |o: u8| vec![0x0a, 6, 0x08, o, 0x12, 2, b'a', b'b'];
        assert_eq!(buf, [one(5), one(6)].concat());
    }

    #[test]
    fn records_are_counted_across_concatenated_batches() {
        let (mut one, mut two) = (Vec::new(), Vec::new());
        encode_batch(&mut one, 0, 3, b"xyz");
        encode_batch(&mut two, 3, 2, b"");
        assert_eq!(count_records(&one), Ok(3));
        assert_eq!(count_records(&[one.clone(), two].concat()), Ok(5));
        assert_eq!(count_records(&[]), Ok(0));
        assert!(count_records(&one[..one.len() - 1]).is_err());
    }

    #[test]
    fn acks_decode_and_skip_unknown_fields() {
        assert_eq!(decode_ack(&[0x08, 0x96, 0x01]), Ok(150));
        assert_eq!(decode_ack(&[]), Ok(0));
        // Field 2 (bytes "x") then field 1.
        assert_eq!(decode_ack(&[0x12, 1, b'x', 0x08, 3]), Ok(3));
        assert!(decode_ack(&[0x08, 0x80]).is_err());
    }
}
