//! kv futures (WIT 0.3.0's `future` resource): a call issued now and waited
//! for later, typed by what it answers. Issue several, then wait: against a
//! cluster (or an embedded target with a simulated round trip) their round
//! trips overlap, so ten reads cost about one.
//!
//! ```ignore
//! let futures: Vec<_> = keys.iter().map(|k| tr.start_get(k)).collect();
//! let values = kv::join_all(futures)?; // one round trip, not ten
//! ```

use crate::bindings::blocklab::bench0_3_0::kv as raw;
use crate::kv::{Error, Rows};
use std::marker::PhantomData;

/// A versionstamp: the commit version (8 bytes, big-endian) and the
/// transaction's order in its batch (2 bytes, big-endian).
pub type Versionstamp = [u8; 10];

/// One batch of a range read by selectors: its rows, and whether more lie
/// past a row or byte limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeBatch {
    pub rows: Rows,
    pub more: bool,
}

/// What a future's answer converts to.
pub trait FromAnswer: Sized {
    #[doc(hidden)]
    fn from_answer(answer: raw::Answer) -> Result<Self, Error>;
}

fn mismatch(want: &str) -> Error {
    Error::Other {
        code: 4100,
        message: format!(
            "internal_error (4100): the host answered a future with another kind than {want}"
        ),
    }
}

impl FromAnswer for Option<Vec<u8>> {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        match answer {
            raw::Answer::Value(v) => Ok(v),
            _ => Err(mismatch("a value")),
        }
    }
}

impl FromAnswer for Vec<u8> {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        match answer {
            raw::Answer::Key(k) => Ok(k),
            _ => Err(mismatch("a key")),
        }
    }
}

impl FromAnswer for u64 {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        match answer {
            raw::Answer::Version(v) | raw::Answer::Size(v) => Ok(v),
            _ => Err(mismatch("a version or size")),
        }
    }
}

impl FromAnswer for RangeBatch {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        match answer {
            raw::Answer::Range(r) => Ok(RangeBatch {
                rows: Rows::from_packed(r.rows)?,
                more: r.more,
            }),
            _ => Err(mismatch("a range")),
        }
    }
}

impl FromAnswer for Versionstamp {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        match answer {
            raw::Answer::Versionstamp(s) => {
                Versionstamp::try_from(s.as_slice()).map_err(|_| mismatch("a 10-byte versionstamp"))
            }
            _ => Err(mismatch("a versionstamp")),
        }
    }
}

impl FromAnswer for raw::Answer {
    fn from_answer(answer: raw::Answer) -> Result<Self, Error> {
        Ok(answer)
    }
}

enum Inner {
    Host(raw::Future),
    /// Answered without the host (an adapter refusing a call, say).
    Ready(Result<raw::Answer, Error>),
}

/// A call in flight that answers a `T`.
pub struct Future<T> {
    inner: Inner,
    _answer: PhantomData<T>,
}

impl<T> std::fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("kv::Future")
    }
}

impl<T: FromAnswer> Future<T> {
    pub(crate) fn host(raw: raw::Future) -> Future<T> {
        Future {
            inner: Inner::Host(raw),
            _answer: PhantomData,
        }
    }

    /// A future answered already, without the host: what an adapter
    /// returns for a call it answers itself (or refuses).
    pub fn ready(answer: Result<raw::Answer, Error>) -> Future<T> {
        Future {
            inner: Inner::Ready(answer),
            _answer: PhantomData,
        }
    }

    /// Whether [`Future::wait`] would return at once.
    pub fn is_ready(&self) -> bool {
        match &self.inner {
            Inner::Host(f) => f.is_ready(),
            Inner::Ready(_) => true,
        }
    }

    /// Blocks until the answer is ready; may be called again.
    pub fn wait(&self) -> Result<T, Error> {
        T::from_answer(self.wait_raw()?)
    }

    /// The answer as it crossed the boundary (adapters forward it as is).
    pub fn wait_raw(&self) -> Result<raw::Answer, Error> {
        match &self.inner {
            Inner::Host(f) => Ok(f.wait()?),
            Inner::Ready(answer) => answer.clone(),
        }
    }

    /// The same future, answering the raw answer (adapters forward it).
    pub fn erase(self) -> Future<raw::Answer> {
        Future {
            inner: self.inner,
            _answer: PhantomData,
        }
    }

    /// The host resource, for [`wait_all`] and adapters; `None` when
    /// answered without the host.
    pub fn as_raw(&self) -> Option<&raw::Future> {
        match &self.inner {
            Inner::Host(f) => Some(f),
            Inner::Ready(_) => None,
        }
    }
}

/// Any future, whatever it answers, for waiting on a mixed set.
pub trait AnyFuture {
    #[doc(hidden)]
    fn host_future(&self) -> Option<&raw::Future>;
}

impl<T: FromAnswer> AnyFuture for Future<T> {
    fn host_future(&self) -> Option<&raw::Future> {
        self.as_raw()
    }
}

/// Blocks until every one of `futures` is ready (one crossing: their round
/// trips overlap).
pub fn wait_all(futures: &[&dyn AnyFuture]) {
    let raw: Vec<&raw::Future> = futures.iter().filter_map(|f| f.host_future()).collect();
    if !raw.is_empty() {
        raw::wait_all(&raw);
    }
}

/// Blocks until one of `futures` is ready; the index of the first ready.
pub fn wait_any(futures: &[&dyn AnyFuture]) -> usize {
    if let Some(i) = futures.iter().position(|f| f.host_future().is_none()) {
        return i;
    }
    let raw: Vec<&raw::Future> = futures.iter().filter_map(|f| f.host_future()).collect();
    raw::wait_any(&raw) as usize
}

/// Waits for all of `futures` at once and returns their answers in order,
/// or the first error.
pub fn join_all<T: FromAnswer>(futures: Vec<Future<T>>) -> Result<Vec<T>, Error> {
    let all: Vec<&dyn AnyFuture> = futures.iter().map(|f| f as &dyn AnyFuture).collect();
    wait_all(&all);
    futures.iter().map(Future::wait).collect()
}
