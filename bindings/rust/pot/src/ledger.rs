//! The reference ledger (docs/ledger.md): the on-chain rules as a
//! deterministic state machine driven by JSON calls.

use crate::error::Result;
use crate::ffi::{self, call, cstring, non_null};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// The configuration of a new [`Ledger`]; every field but `miner_grace`
/// must be at least 1 (`dispute_arity` 2..256).
///
/// ```
/// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 10, commit_window: 10, reveal_window: 10, max_committee_size: 3, min_stake: 1, max_rounds: 4, max_attempts: 2, dispute_window: 5, dispute_arity: 2, task_bond: 10, miner_bond: 1000, dispute_bond: 100, max_task_blocks: 100000, max_open_tasks: 8, miner_grace: 10 };
/// let ledger = pot::Ledger::new(config)?;
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LedgerConfig {
    /// Blocks from a run's seal to the height whose randomness draws its
    /// challenges.
    pub draw_delay: u64,
    /// Blocks from a challenge's issue to the end of its opening phase.
    pub opening_window: u64,
    /// Blocks from the opening to the end of the commit phase.
    pub commit_window: u64,
    /// Blocks from there to the end of the reveal phase.
    pub reveal_window: u64,
    /// The largest committee a task may ask for, 1..1024.
    pub max_committee_size: u32,
    /// The least stake a verifier registers with.
    pub min_stake: u64,
    /// The most challenge rounds a task may ask for.
    pub max_rounds: u32,
    /// The most committees a challenge gets, 1..16: an attempt that ends
    /// INCONCLUSIVE for want of participation is re-run while attempts remain.
    pub max_attempts: u32,
    /// The blocks each dispute round lasts (docs/ledger.md 2.12), >= 1.
    pub dispute_window: u64,
    /// The dispute bisection's arity, 2..256.
    pub dispute_arity: u32,
    /// The bond `post_task` locks from the owner's free balance until
    /// `prune_task` (docs/ledger.md 2.18).
    pub task_bond: u64,
    /// The bond `start_training_commitment` locks from the miner's free
    /// balance until `prune_task`; a FAIL burns it, a lost dispute pays the
    /// challenger's costs from it and burns the rest.
    pub miner_bond: u64,
    /// The bond `open_dispute` locks from the challenger's free balance
    /// until the dispute ends; it pays the miner when the challenger loses.
    pub dispute_bond: u64,
    /// A task ends at most this many blocks after its post.
    pub max_task_blocks: u64,
    /// The most tasks one owner holds at once.
    pub max_open_tasks: u32,
    /// Blocks a miner may answer a dispute past each deadline (0: none).
    pub miner_grace: u64,
}

impl LedgerConfig {
    /// The JSON object `pot_ledger_new` takes, the `config` of a `pot ledger`
    /// transcript (docs/ledger.md section 1).
    ///
    /// ```
    /// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 2, commit_window: 3, reveal_window: 4, max_committee_size: 5, min_stake: 6, max_rounds: 7, max_attempts: 8, dispute_window: 9, dispute_arity: 10, task_bond: 11, miner_bond: 12, dispute_bond: 13, max_task_blocks: 14, max_open_tasks: 15, miner_grace: 16 };
    /// assert_eq!(
    ///     config.to_json(),
    ///     r#"{"draw_delay": 1, "opening_window": 2, "commit_window": 3, "reveal_window": 4, "max_committee_size": 5, "min_stake": 6, "max_rounds": 7, "max_attempts": 8, "dispute_window": 9, "dispute_arity": 10, "task_bond": 11, "miner_bond": 12, "dispute_bond": 13, "max_task_blocks": 14, "max_open_tasks": 15, "miner_grace": 16}"#
    /// );
    /// ```
    pub fn to_json(&self) -> String {
        format!(
            r#"{{"draw_delay": {}, "opening_window": {}, "commit_window": {}, "reveal_window": {}, "max_committee_size": {}, "min_stake": {}, "max_rounds": {}, "max_attempts": {}, "dispute_window": {}, "dispute_arity": {}, "task_bond": {}, "miner_bond": {}, "dispute_bond": {}, "max_task_blocks": {}, "max_open_tasks": {}, "miner_grace": {}}}"#,
            self.draw_delay,
            self.opening_window,
            self.commit_window,
            self.reveal_window,
            self.max_committee_size,
            self.min_stake,
            self.max_rounds,
            self.max_attempts,
            self.dispute_window,
            self.dispute_arity,
            self.task_bond,
            self.miner_bond,
            self.dispute_bond,
            self.max_task_blocks,
            self.max_open_tasks,
            self.miner_grace
        )
    }
}

/// The reference ledger (`pot_ledger`): runs, checkpoint roots, challenges,
/// openings, witness commitments and reveals, verdicts. Every refused call
/// leaves it exactly as it was.
///
/// `Send`, not `Sync`: pot.h says one handle must not be used by two
/// threads at once (as a runtime executes extrinsics one at a time).
///
/// ```
/// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 10, commit_window: 10, reveal_window: 10, max_committee_size: 3, min_stake: 1, max_rounds: 4, max_attempts: 2, dispute_window: 5, dispute_arity: 2, task_bond: 10, miner_bond: 1000, dispute_bond: 100, max_task_blocks: 100000, max_open_tasks: 8, miner_grace: 10 };
/// let mut ledger = pot::Ledger::new(config)?;
/// let refused = ledger.apply(r#"{"call": "run_info", "run_id": "00000000000000000000000000000000000000000000000000000000000000ff"}"#);
/// assert_eq!(refused.unwrap_err().kind(), pot::ErrorKind::NotFound);
/// let state = ledger.save()?;
/// assert_eq!(pot::Ledger::load(&state)?.save()?, state);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Ledger {
    raw: NonNull<sys::pot_ledger>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule,
// stated again for the ledger.
unsafe impl Send for Ledger {}

impl Ledger {
    /// A new, empty ledger.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming a field
    /// that is 0.
    ///
    /// ```
    /// let bad = pot::LedgerConfig { draw_delay: 1, opening_window: 0, commit_window: 1, reveal_window: 1, max_committee_size: 1, min_stake: 1, max_rounds: 1, max_attempts: 1, dispute_window: 1, dispute_arity: 2, task_bond: 1, miner_bond: 1, dispute_bond: 1, max_task_blocks: 1, max_open_tasks: 1, miner_grace: 0 };
    /// let err = pot::Ledger::new(bad).unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::InvalidArgument);
    /// assert!(err.message().contains("opening_window"));
    /// ```
    pub fn new(config: LedgerConfig) -> Result<Ledger> {
        Ledger::from_config_json(&config.to_json())
    }

    /// A new, empty ledger whose `referee` (1..256 bytes) rules on operator
    /// disputes where the ledger cannot (docs/ledger.md 2.17); a ledger made
    /// with [`Ledger::new`] has none, and its disputes end when their step
    /// is found.
    ///
    /// # Errors
    /// As [`Ledger::new`]; [`InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for an empty referee or one over 256 bytes.
    ///
    /// ```
    /// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 1, commit_window: 1, reveal_window: 1, max_committee_size: 1, min_stake: 1, max_rounds: 1, max_attempts: 1, dispute_window: 1, dispute_arity: 2, task_bond: 1, miner_bond: 1, dispute_bond: 1, max_task_blocks: 1, max_open_tasks: 1, miner_grace: 0 };
    /// let ledger = pot::Ledger::with_referee(config, b"referee")?;
    /// let err = pot::Ledger::with_referee(config, b"").unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::InvalidArgument);
    /// # drop(ledger);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn with_referee(config: LedgerConfig, referee: &[u8]) -> Result<Ledger> {
        let json = config.to_json();
        let hex: String = referee.iter().map(|b| format!("{b:02x}")).collect();
        Ledger::from_config_json(&format!(r#"{}, "referee": "{}"}}"#, &json[..json.len() - 1], hex))
    }

    fn from_config_json(config: &str) -> Result<Ledger> {
        let json = cstring(config, "ledger config")?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_ledger_new(&mut raw, json.as_ptr(), err) })?;
        Ok(Ledger { raw: non_null(raw)? })
    }

    /// Restores a state saved with [`Ledger::save`].
    ///
    /// # Errors
    /// [`Malformed`](crate::ErrorKind::Malformed) unless the bytes are
    /// exactly a state `save` produces (every invariant re-checked);
    /// [`Limit`](crate::ErrorKind::Limit) past 64 MiB.
    ///
    /// ```
    /// assert_eq!(pot::Ledger::load(b"junk").unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// ```
    pub fn load(state: &[u8]) -> Result<Ledger> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_ledger_load(&mut raw, state.as_ptr(), state.len(), err) })?;
        Ok(Ledger { raw: non_null(raw)? })
    }

    /// The canonical state bytes: saving, loading and saving again gives the
    /// same bytes.
    ///
    /// ```
    /// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 1, commit_window: 1, reveal_window: 1, max_committee_size: 1, min_stake: 1, max_rounds: 1, max_attempts: 1, dispute_window: 1, dispute_arity: 2, task_bond: 1, miner_bond: 1, dispute_bond: 1, max_task_blocks: 1, max_open_tasks: 1, miner_grace: 0 };
    /// assert!(!pot::Ledger::new(config)?.save()?.is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn save(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_ledger_save(out, self.raw.as_ptr(), err) })
    }

    /// Applies one call, a JSON object (docs/ledger.md section 5), and
    /// returns its JSON result.
    ///
    /// # Errors
    /// A refused call returns its specific status
    /// ([`State`](crate::ErrorKind::State),
    /// [`Permission`](crate::ErrorKind::Permission),
    /// [`Conflict`](crate::ErrorKind::Conflict),
    /// [`NotFound`](crate::ErrorKind::NotFound),
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch)...) with a message,
    /// and leaves the ledger exactly as it was.
    ///
    /// ```
    /// let config = pot::LedgerConfig { draw_delay: 1, opening_window: 10, commit_window: 10, reveal_window: 10, max_committee_size: 3, min_stake: 1, max_rounds: 4, max_attempts: 2, dispute_window: 5, dispute_arity: 2, task_bond: 10, miner_bond: 1000, dispute_bond: 100, max_task_blocks: 100000, max_open_tasks: 8, miner_grace: 10 };
    /// let mut ledger = pot::Ledger::new(config)?;
    /// let result = ledger.apply(r#"{"call": "challenge_info", "challenge_id": 0}"#);
    /// let err = result.unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::NotFound);
    /// assert!(!err.message().is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn apply(&mut self, call_json: &str) -> Result<String> {
        let json = cstring(call_json, "ledger call")?;
        ffi::string_out(|out, err| unsafe { sys::pot_ledger_apply(out, self.raw.as_ptr(), json.as_ptr(), err) })
    }
}

/// Decodes an outcome record (docs/PROTOCOL.md 20.1: the bytes of a
/// `finalize_challenge` result's `"outcome"` hex, a leaf of the ledger's
/// outcome log) to its JSON object: `challenge_id`, `attempt`, `run_id`,
/// `step`, `mode`, `verdict`, `cause`, `cluster_size`, `cluster_stake`,
/// `committee_stake` and the `minority`, `silent`, `misconfigured` and
/// `unreplayed` identities (hex). A dispute record (20.2, the log's other
/// kind of leaf: the `"record"` hex of a dispute call that ended the
/// dispute) gives `dispute_id`, `run_id`, `miner`, `challenger`, `lo`,
/// `hi`, `end`, `rounds`, `step`, `agreed`, `miner_digest`,
/// `challenger_digest` and `losers`. [`ErrorKind::Malformed`](crate::ErrorKind)
/// names the broken rule; `Limit` past 266,350 bytes.
///
/// ```
/// let err = pot::ledger::decode_outcome(b"not a record").unwrap_err();
/// assert_eq!(err.kind(), pot::ErrorKind::Malformed);
/// ```
pub fn decode_outcome(record: &[u8]) -> Result<String> {
    ffi::string_out(|out, err| unsafe { sys::pot_ledger_outcome_decode(out, record.as_ptr(), record.len(), err) })
}

impl Drop for Ledger {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_ledger_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger").finish_non_exhaustive()
    }
}
