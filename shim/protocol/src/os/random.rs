//! The random-source seam (§T): temp-name suffixes (A2), runner instance ids and tokens (H4).

use rustix::io::Errno;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::Mutex;

/// A source of 64-bit random values.
pub trait RandomSource: Send + Sync + Debug {
    /// The next random value.
    fn next_u64(&self) -> u64;
}

/// The OS CSPRNG (`getrandom`), ≥ 64 bits per value (A2 ⊕).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn next_u64(&self) -> u64 {
        let mut bytes = [0u8; 8];
        let mut filled = 0;
        while filled < bytes.len() {
            match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
                Ok(n) => filled += n,
                Err(Errno::INTR) => {}
                // getrandom cannot fail on a supported kernel; fall back to the address-space
                // randomisation of a fresh allocation rather than a constant.
                Err(_) => return fallback_entropy(),
            }
        }
        u64::from_ne_bytes(bytes)
    }
}

fn fallback_entropy() -> u64 {
    let boxed = Box::new(0u8);
    let address = std::ptr::from_ref::<u8>(&boxed) as usize as u64;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    address.rotate_left(17) ^ u64::from(nanos) ^ u64::from(std::process::id())
}

/// A scripted source for tests: returns the queued values in order, then counts up from the
/// last one.
#[derive(Debug, Default)]
pub struct SequenceRandom {
    queue: Mutex<(VecDeque<u64>, u64)>,
}

impl SequenceRandom {
    /// A source returning `values` first.
    pub fn new(values: impl IntoIterator<Item = u64>) -> Self {
        Self {
            queue: Mutex::new((values.into_iter().collect(), 0)),
        }
    }
}

impl RandomSource for SequenceRandom {
    fn next_u64(&self) -> u64 {
        let mut guard = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let (queue, last) = &mut *guard;
        let value = queue.pop_front().unwrap_or_else(|| last.wrapping_add(1));
        *last = value;
        value
    }
}

/// A random UUIDv4 in lowercase hyphenated form (`runnerProcessInstanceId`, tokens; H4).
pub fn uuid_v4(random: &dyn RandomSource) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random.next_u64().to_be_bytes());
    bytes[8..].copy_from_slice(&random.next_u64().to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_version_and_variant_bits() {
        let id = uuid_v4(&SequenceRandom::new([u64::MAX, 0]));
        assert_eq!(id, "ffffffff-ffff-4fff-8000-000000000000");
        let real = uuid_v4(&OsRandom);
        assert_eq!(real.len(), 36);
        assert_ne!(real, uuid_v4(&OsRandom));
    }

    #[test]
    fn sequence_continues_after_the_queue() {
        let r = SequenceRandom::new([5, 9]);
        assert_eq!([r.next_u64(), r.next_u64(), r.next_u64()], [5, 9, 10]);
    }
}
