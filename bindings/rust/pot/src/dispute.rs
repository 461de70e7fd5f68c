//! Refereed disputes: the step bisection (docs/PROTOCOL.md section 22.1),
//! operator traces and the referee's ruling (sections 22.2, 22.3).
//!
//! Two parties that agree on the state digest of step `lo` and claim
//! different digests of step `hi` narrow `(lo, hi]` round by round to one
//! step: each round both claim the digests of the round's points, and the
//! interval becomes the stretch before the first point where they differ.
//! With one honest party the agreed digests are true, so the referee's
//! decision of the last step goes against the dishonest party.

use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{bytes_out, call, cstring, digest_out, non_null, string_out};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// The smallest arity of a step bisection.
pub const MIN_ARITY: u32 = sys::POT_BISECTION_MIN_ARITY;
/// The largest arity of a step bisection.
pub const MAX_ARITY: u32 = sys::POT_BISECTION_MAX_ARITY;
/// The most points a round has (`MAX_ARITY - 1`).
pub const MAX_POINTS: usize = sys::POT_BISECTION_MAX_POINTS as usize;

/// The steps both parties claim in a round over `(lo, hi]`:
/// `lo + floor(j (hi - lo) / arity)` for `j = 1..arity`, or every step of
/// `lo+1..hi` when the interval is shorter than the arity.
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) for `lo >= hi` or an
/// arity outside 2..=256.
///
/// ```
/// assert_eq!(pot::dispute::points(0, 200, 4)?, vec![50, 100, 150]);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn points(lo: u64, hi: u64, arity: u32) -> Result<Vec<u64>> {
    let mut buf = [0u64; MAX_POINTS];
    let mut count = buf.len();
    call(|err| unsafe { sys::pot_bisection_points(buf.as_mut_ptr(), &mut count, lo, hi, arity, err) })?;
    Ok(buf[..count].to_vec())
}

/// The most rounds a bisection of `(lo, hi]` takes: `ceil(log_arity(hi - lo))`.
///
/// ```
/// assert_eq!(pot::dispute::rounds(0, 200, 2)?, 8);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn rounds(lo: u64, hi: u64, arity: u32) -> Result<u32> {
    let mut out = 0u32;
    call(|err| unsafe { sys::pot_bisection_rounds(&mut out, lo, hi, arity, err) })?;
    Ok(out)
}

/// Where a step bisection stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BisectionState {
    /// The interval `(lo, hi]` still disputed.
    pub lo: u64,
    /// Its last step.
    pub hi: u64,
    /// Points per round plus one.
    pub arity: u32,
    /// Rounds played so far.
    pub rounds_played: u32,
    /// `hi == lo + 1`: the dispute is step `hi`.
    pub done: bool,
    /// The digest both parties claim for `S_lo`.
    pub agreed: Digest,
    /// A's claim for `S_hi`.
    pub a_hi: Digest,
    /// B's claim for `S_hi`.
    pub b_hi: Digest,
}

/// One dispute's step bisection (`pot_bisection`), played round by round.
///
/// ```
/// let (s0, x, y) = (pot::sha256(b"S_0")?, pot::sha256(b"x")?, pot::sha256(b"y")?);
/// let mut b = pot::StepBisection::new(0, 10, 4, &s0, &x, &y)?;
/// while !b.state()?.done {
///     let n = b.points()?.len();
///     b.play_round(&vec![x; n], &vec![x; n])?; // they agree everywhere but at 10
/// }
/// assert_eq!((b.state()?.lo, b.state()?.hi), (9, 10));
/// # Ok::<(), pot::Error>(())
/// ```
pub struct StepBisection {
    raw: NonNull<sys::pot_bisection>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for StepBisection {}

impl StepBisection {
    /// A bisection of `(lo, hi]`: both parties agree that `S_lo` has
    /// digest `agreed`; A claims `a_hi` for `S_hi`, B `b_hi`.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for `lo >= hi`, an
    /// arity outside 2..=256, or `a_hi == b_hi` (nothing is disputed).
    pub fn new(lo: u64, hi: u64, arity: u32, agreed: &Digest, a_hi: &Digest, b_hi: &Digest) -> Result<StepBisection> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe {
            sys::pot_bisection_new(&mut raw, lo, hi, arity, agreed.as_ptr(), a_hi.as_ptr(), b_hi.as_ptr(), err)
        })?;
        Ok(StepBisection { raw: non_null(raw)? })
    }

    /// Where the bisection stands.
    pub fn state(&self) -> Result<BisectionState> {
        // SAFETY: pot_bisection_info is plain data; zero is a valid value.
        let mut info: sys::pot_bisection_info = unsafe { std::mem::zeroed() };
        info.struct_size = size_of::<sys::pot_bisection_info>() as u32;
        call(|err| unsafe { sys::pot_bisection_info_get(&mut info, self.raw.as_ptr(), err) })?;
        Ok(BisectionState {
            lo: info.lo,
            hi: info.hi,
            arity: info.arity,
            rounds_played: info.rounds_played,
            done: info.done != 0,
            agreed: Digest::new(info.agreed.bytes),
            a_hi: Digest::new(info.a_hi.bytes),
            b_hi: Digest::new(info.b_hi.bytes),
        })
    }

    /// The steps both parties claim this round.
    ///
    /// # Errors
    /// [`State`](ErrorKind::State) once the bisection is done.
    pub fn points(&self) -> Result<Vec<u64>> {
        let s = self.state()?;
        if s.done {
            return Err(Error::new(ErrorKind::State, format!("the step bisection is done at step {}", s.hi)));
        }
        points(s.lo, s.hi, s.arity)
    }

    /// Plays the current round: A's and B's digests for
    /// [`points`](Self::points), in order.
    ///
    /// # Errors
    /// [`State`](ErrorKind::State) once done;
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) (nothing changes)
    /// when a list is not one digest per point.
    pub fn play_round(&mut self, a_claims: &[Digest], b_claims: &[Digest]) -> Result<()> {
        if a_claims.len() != b_claims.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "A claims {} digests and B {}: each party claims one per point",
                    a_claims.len(),
                    b_claims.len()
                ),
            ));
        }
        call(|err| unsafe {
            sys::pot_bisection_play_round(
                self.raw.as_ptr(),
                a_claims.as_ptr().cast(),
                b_claims.as_ptr().cast(),
                a_claims.len(),
                err,
            )
        })
    }
}

impl Drop for StepBisection {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_bisection_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for StepBisection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state() {
            Ok(s) => f
                .debug_struct("StepBisection")
                .field("lo", &s.lo)
                .field("hi", &s.hi)
                .field("arity", &s.arity)
                .field("rounds_played", &s.rounds_played)
                .finish(),
            Err(_) => f.debug_struct("StepBisection").finish_non_exhaustive(),
        }
    }
}

/// The operator trace of one replayed step (`pot_op_trace`,
/// docs/PROTOCOL.md 22.2), made by [`Replay::trace`](crate::Replay::trace):
/// the top-level ATen operators of its forward, backward, clipping and
/// optimizer update, then a node listing `S_t`, as the leaves of an RFC 6962
/// tree. The operator bisection is a [`StepBisection`] over node counts,
/// each party claiming [`root(p)`](Self::root) at every point `p`.
pub struct OpTrace {
    raw: NonNull<sys::pot_op_trace>,
}

// SAFETY: a trace is immutable once made; pot.h says reads are thread-safe.
unsafe impl Send for OpTrace {}
unsafe impl Sync for OpTrace {}

impl OpTrace {
    pub(crate) fn from_raw(raw: *mut sys::pot_op_trace) -> Result<OpTrace> {
        Ok(OpTrace { raw: non_null(raw)? })
    }

    /// The number of nodes.
    pub fn len(&self) -> Result<u64> {
        let mut n = 0u64;
        call(|err| unsafe { sys::pot_op_trace_size(&mut n, self.raw.as_ptr(), err) })?;
        Ok(n)
    }

    /// Whether the trace has no node (never, for a replayed step).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The RFC 6962 root of the first `size` nodes.
    ///
    /// # Errors
    /// [`OutOfRange`](ErrorKind::OutOfRange) past [`len`](Self::len).
    pub fn root(&self, size: u64) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_op_trace_root(out, self.raw.as_ptr(), size, err) })
    }

    /// Node `index`'s leaf data (its leaf hash is SHA-256(0x00 || data)).
    pub fn node(&self, index: u64) -> Result<Vec<u8>> {
        bytes_out(|out, err| unsafe { sys::pot_op_trace_node(out, self.raw.as_ptr(), index, err) })
    }

    /// The RFC 6962 inclusion proof of node `index` among the first `size`.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<u8>> {
        bytes_out(|out, err| unsafe { sys::pot_op_trace_inclusion_proof(out, self.raw.as_ptr(), index, size, err) })
    }

    /// The RFC 6962 consistency proof from the first `size1` nodes to `size2`.
    pub fn consistency_proof(&self, size1: u64, size2: u64) -> Result<Vec<u8>> {
        bytes_out(|out, err| unsafe { sys::pot_op_trace_consistency_proof(out, self.raw.as_ptr(), size1, size2, err) })
    }

    /// The results of the replay that recorded the trace.
    pub fn replay_result(&self) -> Result<crate::ReplayResult> {
        let mut out =
            sys::pot_replay_result { struct_size: size_of::<sys::pot_replay_result>() as u32, ..Default::default() };
        call(|err| unsafe { sys::pot_op_trace_replay_result(&mut out, self.raw.as_ptr(), err) })?;
        Ok(crate::ReplayResult::from_sys(&out))
    }
}

impl Drop for OpTrace {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_op_trace_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for OpTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpTrace").field("len", &self.len().ok()).finish()
    }
}

/// A node's leaf data as JSON (`pot_op_node_json`): name, overload, inputs,
/// outputs, each value an object naming its kind.
///
/// # Errors
/// [`Malformed`](ErrorKind::Malformed) / [`Limit`](ErrorKind::Limit) for
/// bytes that are not one node.
pub fn op_node_json(node: &[u8]) -> Result<String> {
    string_out(|out, err| unsafe { sys::pot_op_node_json(out, node.as_ptr(), node.len(), err) })
}

/// The inverse of [`op_node_json`] (`pot_op_node_from_json`).
///
/// # Errors
/// [`Malformed`](ErrorKind::Malformed) naming the field,
/// [`Limit`](ErrorKind::Limit) past a bound.
///
/// ```
/// let node = r#"{"name": "aten::t", "overload": "", "inputs": [{"int": 3}], "outputs": []}"#;
/// let data = pot::dispute::op_node_from_json(node)?;
/// assert_eq!(&data[..15], b"\x0epot/v1/op-node");
/// let back: serde_json::Value = serde_json::from_str(&pot::dispute::op_node_json(&data)?).unwrap();
/// assert_eq!(back["inputs"][0]["int"], 3);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn op_node_from_json(json: &str) -> Result<Vec<u8>> {
    let text = cstring(json, "node JSON")?;
    bytes_out(|out, err| unsafe { sys::pot_op_node_from_json(out, text.as_ptr(), err) })
}

/// The end of an operator bisection and the parties' openings: node `index`
/// is the first that differs; both agree on `agreed_root` for the first
/// `index` nodes and claim `a_root` and `b_root` for the first `index + 1`.
#[derive(Debug, Clone)]
pub struct OpDispute<'a> {
    /// The disputed node.
    pub index: u64,
    /// The agreed root of the first `index` nodes.
    pub agreed_root: Digest,
    /// A's root of the first `index + 1` nodes.
    pub a_root: Digest,
    /// B's root of the first `index + 1` nodes.
    pub b_root: Digest,
    /// A's opening ([`Replay::open_op_node`](crate::Replay::open_op_node)).
    pub a_opening: &'a [u8],
    /// B's opening.
    pub b_opening: &'a [u8],
}

/// The referee's ruling on a disputed node (`pot_referee_decide_op`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRuling {
    /// Party A loses.
    pub a_loses: bool,
    /// Party B loses.
    pub b_loses: bool,
    /// `opening`, `source`, `operator`, `post_state` or `step`.
    pub rule: String,
    /// Who lost and why.
    pub reason: String,
    /// One operator was run.
    pub executed: bool,
    /// The whole step was replayed.
    pub replayed: bool,
}

impl OpRuling {
    pub(crate) fn from_json(text: &str) -> Result<OpRuling> {
        let bad = |what: &str| Error::new(ErrorKind::Internal, format!("the ruling's {what} is missing"));
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("the ruling is not JSON: {e}")))?;
        let flag = |k: &str| v[k].as_bool().ok_or_else(|| bad(k));
        let text = |k: &str| v[k].as_str().map(str::to_owned).ok_or_else(|| bad(k));
        Ok(OpRuling {
            a_loses: flag("a_loses")?,
            b_loses: flag("b_loses")?,
            rule: text("rule")?,
            reason: text("reason")?,
            executed: flag("executed")?,
            replayed: flag("replayed")?,
        })
    }
}
