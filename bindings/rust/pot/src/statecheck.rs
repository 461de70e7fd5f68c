//! State statistics and the rules over consecutive states
//! (docs/PROTOCOL.md 5.2-5.3): per tensor of a state its element count,
//! max |x|, L2 norm and its non-finite, subnormal and zero elements, in a
//! table whose bytes every implementation computes alike; and the flags of
//! a step, what honest training does not do in one step. A flag is a reason
//! to replay the step, never a verdict.

use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{ByteList, digest_out, string_out};
use crate::{Digest, Safetensors, sys};

/// A statistics table: its canonical bytes, validated.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("pot-doc-stats-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let (a, b) = (dir.join("a.safetensors"), dir.join("b.safetensors"));
/// for (path, v) in [(&a, 0.5f32), (&b, 1e15f32)] {
///     let data: Vec<u8> = [v, -0.25].iter().flat_map(|x| x.to_le_bytes()).collect();
///     let mut w = pot::SafetensorsWriter::new()?;
///     w.add("param/wpe", pot::Dtype::F32, &[2], &data)?;
///     w.write(path)?;
/// }
/// let before = pot::StateStats::of(&pot::Safetensors::open(&a)?, 0)?;
/// let after = pot::StateStats::of(&pot::Safetensors::open(&b)?, 0)?;
/// let flags = pot::state_flags(&before, &after)?;
/// assert_eq!(flags[0].rule, "max_abs_jump");
/// assert_eq!(flags[0].tensor, "param/wpe");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StateStats {
    table: Vec<u8>,
    digest: Digest,
}

/// One tensor's row of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorStats {
    /// The tensor's name.
    pub name: String,
    /// Its safetensors dtype ("F32", "BF16", ...).
    pub dtype: String,
    /// Its element count.
    pub elements: u64,
    /// The largest |x| of a finite element (0 for types that are not floating point).
    pub max_abs: f64,
    /// `None` when the sum of squares overflows binary64 (F64 tensors only).
    pub l2_norm: Option<f64>,
    /// NaN and infinite elements.
    pub nonfinite: u64,
    /// Subnormal elements, as check 28 counts them (BF16, F32, F64).
    pub subnormal: u64,
    /// Zero elements (+0 and -0).
    pub zeros: u64,
}

/// One rule a step trips: `max_abs_jump`, `norm_jump`, `norm_collapse`,
/// `saturated`, `nonfinite` or `changed`, the tensor, and the compared
/// statistic before and after (`None` for an overflowed norm).
#[derive(Debug, Clone, PartialEq)]
pub struct StateFlag {
    /// The rule's name.
    pub rule: String,
    /// The tensor it names.
    pub tensor: String,
    /// The compared statistic in the earlier state (0 when absent there).
    pub before: Option<f64>,
    /// And in the later one.
    pub after: Option<f64>,
}

fn bad(what: &str) -> Error {
    Error::new(ErrorKind::Internal, format!("libpot's statistics JSON lacks {what}"))
}

fn parse(text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::Internal, format!("libpot returned bad JSON: {e}")))
}

impl StateStats {
    /// Validates a table's bytes (`pot_state_stats_digest`).
    ///
    /// # Errors
    /// [`Malformed`](ErrorKind::Malformed), or [`Limit`](ErrorKind::Limit)
    /// past 2^20 tensors, for bytes no state's statistics could be.
    pub fn decode(table: &[u8]) -> Result<StateStats> {
        let digest =
            digest_out(|out, err| unsafe { sys::pot_state_stats_digest(out, table.as_ptr(), table.len(), err) })?;
        Ok(StateStats { table: table.to_vec(), digest })
    }

    /// The statistics of a safetensors state (`pot_safetensors_stats`); the bytes
    /// do not depend on `threads` (0 = every core).
    pub fn of(file: &Safetensors, threads: u32) -> Result<StateStats> {
        let table =
            crate::ffi::bytes_out(|out, err| unsafe { sys::pot_safetensors_stats(out, file.as_ptr(), threads, err) })?;
        StateStats::decode(&table)
    }

    /// The canonical bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.table
    }

    /// `tagged("pot/v1/state-stats", table)`.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// The table as JSON (`pot_state_stats_to_json`).
    pub fn to_json(&self) -> Result<String> {
        string_out(|out, err| unsafe { sys::pot_state_stats_to_json(out, self.table.as_ptr(), self.table.len(), err) })
    }

    /// The rows, in name order.
    pub fn tensors(&self) -> Result<Vec<TensorStats>> {
        let v = parse(&self.to_json()?)?;
        let rows = v["tensors"].as_array().ok_or_else(|| bad("tensors"))?;
        rows.iter()
            .map(|r| {
                let u = |k: &str| r[k].as_u64().ok_or_else(|| bad(k));
                let s = |k: &str| r[k].as_str().map(str::to_owned).ok_or_else(|| bad(k));
                Ok(TensorStats {
                    name: s("name")?,
                    dtype: s("dtype")?,
                    elements: u("elements")?,
                    max_abs: r["max_abs"].as_f64().ok_or_else(|| bad("max_abs"))?,
                    l2_norm: r["l2_norm"].as_f64(),
                    nonfinite: u("nonfinite")?,
                    subnormal: u("subnormal")?,
                    zeros: u("zeros")?,
                })
            })
            .collect()
    }
}

fn flags_of(v: &serde_json::Value) -> Result<Vec<StateFlag>> {
    v.as_array()
        .ok_or_else(|| bad("the list"))?
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().map(str::to_owned).ok_or_else(|| bad(k));
            Ok(StateFlag {
                rule: s("rule")?,
                tensor: s("tensor")?,
                before: f["before"].as_f64(),
                after: f["after"].as_f64(),
            })
        })
        .collect()
}

/// A step of a run whose statistics trip a rule, with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedStep {
    /// The step.
    pub step: u64,
    /// Its flags, as [`state_flags`] gives them.
    pub flags: Vec<StateFlag>,
}

pub(crate) fn flagged_steps(text: &str) -> Result<Vec<FlaggedStep>> {
    let v = parse(text)?;
    v.as_array()
        .ok_or_else(|| bad("the list"))?
        .iter()
        .map(|s| {
            Ok(FlaggedStep { step: s["step"].as_u64().ok_or_else(|| bad("step"))?, flags: flags_of(&s["flags"])? })
        })
        .collect()
}

/// The flagged steps of a run (`pot_run_flags`, docs/PROTOCOL.md 5.3):
/// `tables[i]` is the table of `S_{i+1}`; step 1 is compared with an empty
/// table. What a miner seals its run with on the ledger (docs/ledger.md 2.3)
/// and lists in every opening (check 32,
/// [`OpeningCheck::RunFlags`](crate::OpeningCheck::RunFlags)).
pub fn run_flags(tables: &[StateStats]) -> Result<Vec<FlaggedStep>> {
    let list = ByteList::new(tables.iter().map(|t| t.table.as_slice()));
    let text = string_out(|out, err| unsafe { sys::pot_run_flags(out, list.ptrs(), list.lens(), list.len(), err) })?;
    flagged_steps(&text)
}

/// The flags of the step from the state of `before` to that of `after`
/// (`pot_state_flags`), by tensor in name order; empty when none.
pub fn state_flags(before: &StateStats, after: &StateStats) -> Result<Vec<StateFlag>> {
    let text = string_out(|out, err| unsafe {
        sys::pot_state_flags(
            out,
            before.table.as_ptr(),
            before.table.len(),
            after.table.as_ptr(),
            after.table.len(),
            err,
        )
    })?;
    flags_of(&parse(&text)?)
}
