//! FoundationDB 7.3's atomic operations, byte for byte: what a mutation of
//! each type makes of the value already stored (absent or present) and its
//! operand. One implementation for every side that applies them: the
//! embedded engine at commit and in its read-your-writes view, and any
//! plugin that wants to predict a result.
//!
//! Each function follows its namesake in `fdbclient/include/fdbclient/
//! Atomic.h` (apple/foundationdb, tag 7.3.79). At API version 730 the
//! client sends `and` as `AndV2` and `min` as `MinV2` (`Transaction::
//! atomicOp` in `fdbclient/NativeAPI.actor.cpp`), so those are the ones
//! here: an absent value takes the operand as is.

use alloc::vec::Vec;

use crate::limits;

/// An atomic operation (FoundationDB's `MutationRef::Type` for the atomic
/// ones a client may send; versionstamped sets are separate calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MutationType {
    /// Little-endian addition, carry dropped past the operand's length.
    Add,
    BitAnd,
    BitOr,
    BitXor,
    /// Little-endian unsigned maximum.
    Max,
    /// Little-endian unsigned minimum.
    Min,
    /// Lexicographic maximum of the byte strings.
    ByteMax,
    /// Lexicographic minimum of the byte strings.
    ByteMin,
    /// Clears the key when its value equals the operand (or is absent).
    CompareAndClear,
    /// Appends the operand unless the result would exceed 100,000 bytes.
    AppendIfFits,
}

impl MutationType {
    /// Every type, in the order of FoundationDB's option list.
    pub const ALL: [MutationType; 10] = [
        MutationType::Add,
        MutationType::BitAnd,
        MutationType::BitOr,
        MutationType::BitXor,
        MutationType::Max,
        MutationType::Min,
        MutationType::ByteMax,
        MutationType::ByteMin,
        MutationType::CompareAndClear,
        MutationType::AppendIfFits,
    ];

    /// FoundationDB's name (`fdbclient/vexillographer/fdb.options`).
    pub fn name(self) -> &'static str {
        match self {
            MutationType::Add => "add",
            MutationType::BitAnd => "bit_and",
            MutationType::BitOr => "bit_or",
            MutationType::BitXor => "bit_xor",
            MutationType::Max => "max",
            MutationType::Min => "min",
            MutationType::ByteMax => "byte_max",
            MutationType::ByteMin => "byte_min",
            MutationType::CompareAndClear => "compare_and_clear",
            MutationType::AppendIfFits => "append_if_fits",
        }
    }
}

/// The value after `op` with `operand` over `existing` (`None`: absent);
/// `None` back means the key is cleared (only `compare_and_clear` clears).
pub fn apply(op: MutationType, existing: Option<&[u8]>, operand: &[u8]) -> Option<Vec<u8>> {
    let value = match op {
        MutationType::Add => add(existing, operand),
        // AndV2: an absent value takes the operand.
        MutationType::BitAnd if existing.is_none() => operand.to_vec(),
        MutationType::BitAnd => bitwise(existing, operand, |a, b| a & b, false),
        MutationType::BitOr => bitwise(existing, operand, |a, b| a | b, true),
        MutationType::BitXor => bitwise(existing, operand, |a, b| a ^ b, true),
        MutationType::Max => max(existing, operand),
        // MinV2: an absent value takes the operand.
        MutationType::Min if existing.is_none() => operand.to_vec(),
        MutationType::Min => min(existing, operand),
        MutationType::ByteMax => match existing {
            Some(e) if e > operand => e.to_vec(),
            _ => operand.to_vec(),
        },
        MutationType::ByteMin => match existing {
            Some(e) if e < operand => e.to_vec(),
            _ => operand.to_vec(),
        },
        MutationType::CompareAndClear => {
            return match existing {
                Some(e) if e != operand => Some(e.to_vec()),
                _ => None,
            };
        }
        MutationType::AppendIfFits => append_if_fits(existing, operand),
    };
    Some(value)
}

/// `doLittleEndianAdd`: the result has the operand's length.
fn add(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    if existing.is_empty() || operand.is_empty() {
        return operand.to_vec();
    }
    let mut carry = 0u16;
    operand
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let sum = u16::from(b) + u16::from(existing.get(i).copied().unwrap_or(0)) + carry;
            carry = sum >> 8;
            sum as u8
        })
        .collect()
}

/// `doAnd` (past the existing value's end, bytes are 0) and `doOr`/`doXor`
/// (an empty existing value gives the operand; past its end, the operand's
/// bytes).
fn bitwise(
    existing: Option<&[u8]>,
    operand: &[u8],
    f: impl Fn(u8, u8) -> u8,
    empty_gives_operand: bool,
) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    if operand.is_empty() || (empty_gives_operand && existing.is_empty()) {
        return operand.to_vec();
    }
    operand
        .iter()
        .enumerate()
        .map(|(i, &b)| match existing.get(i) {
            Some(&e) => f(e, b),
            None if empty_gives_operand => b,
            None => 0,
        })
        .collect()
}

/// The existing value cut or zero-padded to the operand's length.
fn fit(existing: &[u8], len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = existing.iter().copied().take(len).collect();
    v.resize(len, 0);
    v
}

/// Compares `operand` with `existing` as little-endian unsigned numbers of
/// the operand's length (`doMax`/`doMin`'s loops, from the high byte down).
fn compare_le(existing: &[u8], operand: &[u8]) -> core::cmp::Ordering {
    for i in (0..operand.len()).rev() {
        let e = existing.get(i).copied().unwrap_or(0);
        match operand[i].cmp(&e) {
            core::cmp::Ordering::Equal => continue,
            other => return other,
        }
    }
    core::cmp::Ordering::Equal
}

/// `doMax`.
fn max(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    if existing.is_empty() || operand.is_empty() {
        return operand.to_vec();
    }
    match compare_le(existing, operand) {
        core::cmp::Ordering::Less => fit(existing, operand.len()),
        _ => operand.to_vec(),
    }
}

/// `doMin` (reached with a present value: `MinV2` handles absent).
fn min(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    if operand.is_empty() {
        return operand.to_vec();
    }
    match compare_le(existing, operand) {
        core::cmp::Ordering::Greater => fit(existing, operand.len()),
        _ => operand.to_vec(),
    }
}

/// `doAppendIfFits`: the existing value unchanged when the sum would pass
/// `VALUE_SIZE_LIMIT`.
fn append_if_fits(existing: Option<&[u8]>, operand: &[u8]) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    if existing.is_empty() {
        return operand.to_vec();
    }
    if operand.is_empty() || existing.len() + operand.len() > limits::VALUE_BYTES {
        return existing.to_vec();
    }
    [existing, operand].concat()
}

/// A versionstamp: the commit version (8 bytes, big-endian) and the
/// transaction's order in its commit batch (2 bytes, big-endian), as
/// `placeVersionstamp` in Atomic.h lays them out.
pub fn versionstamp(version: u64, batch_order: u16) -> [u8; 10] {
    let mut stamp = [0u8; 10];
    stamp[..8].copy_from_slice(&version.to_be_bytes());
    stamp[8..].copy_from_slice(&batch_order.to_be_bytes());
    stamp
}

/// Whether a 10-byte versionstamp fits in `len` bytes at `offset`
/// (`transformVersionstampKey`: `pos + 10 > key.size()` is
/// `client_invalid_operation`).
pub fn stamp_fits(len: usize, offset: u32) -> bool {
    usize::try_from(offset).is_ok_and(|o| o.checked_add(10).is_some_and(|end| end <= len))
}

/// `bytes` with `stamp` written at `offset` (checked by [`stamp_fits`]).
pub fn place_stamp(bytes: &[u8], offset: u32, stamp: &[u8; 10]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let at = offset as usize;
    if stamp_fits(bytes.len(), offset) {
        out[at..at + 10].copy_from_slice(stamp);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn ap(op: MutationType, existing: Option<&[u8]>, operand: &[u8]) -> Option<Vec<u8>> {
        apply(op, existing, operand)
    }

    #[test]
    fn add_is_little_endian_and_takes_the_operands_length() {
        assert_eq!(ap(MutationType::Add, None, &[5]), Some(vec![5]));
        assert_eq!(
            ap(MutationType::Add, Some(&[0xff]), &[1, 0]),
            Some(vec![0, 1])
        );
        // The carry out of the operand's last byte is dropped.
        assert_eq!(
            ap(MutationType::Add, Some(&[0xff, 0xff]), &[1]),
            Some(vec![0])
        );
        assert_eq!(ap(MutationType::Add, Some(&[1, 2, 3]), &[]), Some(vec![]));
    }

    #[test]
    fn and_v2_takes_the_operand_over_absent_and_zeroes_past_the_value() {
        assert_eq!(ap(MutationType::BitAnd, None, &[0x0f]), Some(vec![0x0f]));
        assert_eq!(
            ap(MutationType::BitAnd, Some(&[0x3c]), &[0x0f, 0xff]),
            Some(vec![0x0c, 0])
        );
        assert_eq!(
            ap(MutationType::BitOr, Some(&[0x30]), &[0x0f, 0x01]),
            Some(vec![0x3f, 1])
        );
        assert_eq!(
            ap(MutationType::BitXor, Some(&[0xff, 1, 2]), &[0x0f]),
            Some(vec![0xf0])
        );
    }

    #[test]
    fn max_and_min_compare_little_endian_numbers_of_the_operands_length() {
        // 0x0100 (256) against 0x00ff (255): max keeps the existing value.
        assert_eq!(
            ap(MutationType::Max, Some(&[0, 1]), &[0xff, 0]),
            Some(vec![0, 1])
        );
        assert_eq!(ap(MutationType::Max, Some(&[1]), &[2, 0]), Some(vec![2, 0]));
        // A longer existing value is cut to the operand's length.
        assert_eq!(
            ap(MutationType::Min, Some(&[1, 0, 9]), &[2, 0]),
            Some(vec![1, 0])
        );
        assert_eq!(ap(MutationType::Min, None, &[7]), Some(vec![7]));
        assert_eq!(ap(MutationType::Min, Some(&[]), &[7]), Some(vec![0]));
    }

    #[test]
    fn byte_max_min_compare_lexicographically() {
        assert_eq!(
            ap(MutationType::ByteMax, Some(b"b"), b"ab"),
            Some(b"b".to_vec())
        );
        assert_eq!(
            ap(MutationType::ByteMin, Some(b"b"), b"ab"),
            Some(b"ab".to_vec())
        );
        assert_eq!(ap(MutationType::ByteMin, None, b"z"), Some(b"z".to_vec()));
    }

    #[test]
    fn compare_and_clear_clears_equal_or_absent_values() {
        assert_eq!(ap(MutationType::CompareAndClear, Some(b"x"), b"x"), None);
        assert_eq!(ap(MutationType::CompareAndClear, None, b"x"), None);
        assert_eq!(
            ap(MutationType::CompareAndClear, Some(b"y"), b"x"),
            Some(b"y".to_vec())
        );
    }

    #[test]
    fn append_if_fits_stops_at_the_value_limit() {
        assert_eq!(
            ap(MutationType::AppendIfFits, Some(b"ab"), b"c"),
            Some(b"abc".to_vec())
        );
        let full = vec![1u8; limits::VALUE_BYTES];
        assert_eq!(
            ap(MutationType::AppendIfFits, Some(&full), b"c"),
            Some(full.clone())
        );
    }

    #[test]
    fn versionstamps_are_big_endian_version_then_order() {
        assert_eq!(versionstamp(0x0102, 3), [0, 0, 0, 0, 0, 0, 1, 2, 0, 3]);
        assert!(stamp_fits(10, 0));
        assert!(!stamp_fits(10, 1));
        assert_eq!(
            place_stamp(b"k\0\0\0\0\0\0\0\0\0\0", 1, &versionstamp(1, 0))[8],
            1
        );
    }
}
