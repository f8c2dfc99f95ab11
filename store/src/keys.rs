//! Byte layout of every key the store writes.
//!
//! Integers are big-endian so sled's lexicographic order is numeric order:
//! campaigns iterate by id, runs by slot then attempt, the queue by position.

use crate::{CampaignId, RunKey};

/// `campaigns`, `plans`: the campaign id.
pub(crate) fn campaign(id: CampaignId) -> [u8; 8] {
    id.to_be_bytes()
}

/// `runs`, `histograms`: campaign, slot, attempt.
pub(crate) fn run(key: RunKey) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&key.campaign.to_be_bytes());
    out[8..12].copy_from_slice(&key.slot.to_be_bytes());
    out[12..].copy_from_slice(&key.attempt.to_be_bytes());
    out
}

/// `finals`, and the prefix of one slot's attempts in `runs`.
pub(crate) fn slot(id: CampaignId, slot: u32) -> [u8; 12] {
    let mut out = [0; 12];
    out[..8].copy_from_slice(&id.to_be_bytes());
    out[8..].copy_from_slice(&slot.to_be_bytes());
    out
}

/// `blobs`: the campaign id followed by the blob's name in UTF-8. The fixed
/// width id keeps one campaign's blobs contiguous whatever the names are.
pub(crate) fn blob(id: CampaignId, name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + name.len());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out
}

/// `calibrations`: the machine's name in UTF-8, a 0 byte (which no hostname
/// contains, so one machine's prefix never matches another's), then the time
/// in ms: one machine's calibrations are contiguous and in time order.
pub(crate) fn calibration(machine: &str, created_unix_ms: u64) -> Vec<u8> {
    let mut out = calibration_prefix(machine);
    out.extend_from_slice(&created_unix_ms.to_be_bytes());
    out
}

/// The prefix of one machine's calibrations.
pub(crate) fn calibration_prefix(machine: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(machine.len() + 9);
    out.extend_from_slice(machine.as_bytes());
    out.push(0);
    out
}

pub(crate) fn decode_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

pub(crate) fn decode_u32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

pub(crate) fn decode_run(bytes: &[u8]) -> Option<RunKey> {
    if bytes.len() != 16 {
        return None;
    }
    Some(RunKey {
        campaign: decode_u64(&bytes[..8])?,
        slot: decode_u32(&bytes[8..12])?,
        attempt: decode_u32(&bytes[12..])?,
    })
}

pub(crate) fn decode_slot(bytes: &[u8]) -> Option<u32> {
    if bytes.len() != 12 {
        return None;
    }
    decode_u32(&bytes[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_keys_sort_by_campaign_then_slot_then_attempt() {
        let keys = [
            RunKey {
                campaign: 1,
                slot: 2,
                attempt: 0,
            },
            RunKey {
                campaign: 1,
                slot: 256,
                attempt: 0,
            },
            RunKey {
                campaign: 1,
                slot: 2,
                attempt: 1,
            },
            RunKey {
                campaign: 256,
                slot: 0,
                attempt: 0,
            },
            RunKey {
                campaign: 1,
                slot: 3,
                attempt: 0,
            },
        ];
        let mut by_bytes = keys.to_vec();
        by_bytes.sort_by_key(|k| run(*k));
        let mut by_value = keys.to_vec();
        by_value.sort();
        assert_eq!(by_bytes, by_value);
    }

    #[test]
    fn run_key_round_trips_and_rejects_wrong_length() {
        let key = RunKey {
            campaign: 0x0102_0304_0506_0708,
            slot: 9,
            attempt: 10,
        };
        let bytes = run(key);
        assert_eq!(bytes[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(bytes[8..], [0, 0, 0, 9, 0, 0, 0, 10]);
        assert_eq!(decode_run(&bytes), Some(key));
        assert_eq!(decode_run(&bytes[..15]), None);
    }

    #[test]
    fn slot_key_is_the_prefix_of_its_run_keys() {
        let key = RunKey {
            campaign: 7,
            slot: 3,
            attempt: 2,
        };
        assert!(run(key).starts_with(&slot(7, 3)));
        assert!(run(key).starts_with(&campaign(7)));
        assert_eq!(decode_slot(&slot(7, 3)), Some(3));
    }

    #[test]
    fn blob_keys_of_one_campaign_share_its_prefix() {
        assert_eq!(
            blob(1, "report"),
            [0, 0, 0, 0, 0, 0, 0, 1, b'r', b'e', b'p', b'o', b'r', b't']
        );
        assert!(!blob(2, "x").starts_with(&campaign(1)));
    }
}
