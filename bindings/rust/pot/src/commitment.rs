//! Commitments: dataset samples, schedules and the training commitment
//! (docs/PROTOCOL.md sections 15-17).

use crate::digest::Digest;
use crate::error::Result;
use crate::ffi::{self, call, cstring, digest_out, non_null};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// Digest of one dataset sample given as safetensors bytes (a small set of
/// named tensors). The dataset root is the RFC 6962 root over sample
/// digests, each appended as 32 bytes of leaf data in dataset order.
///
/// # Errors
/// [`Malformed`](crate::ErrorKind::Malformed) for bytes that are not
/// safetensors or hold no tensor; [`Limit`](crate::ErrorKind::Limit) past 64 MiB.
///
/// ```
/// let path = std::env::temp_dir().join(format!("pot-doc-sample-{}.safetensors", std::process::id()));
/// let mut w = pot::SafetensorsWriter::new()?;
/// w.add("x", pot::Dtype::F32, &[2], &[0; 8])?;
/// w.write(&path)?;
/// let sample = std::fs::read(&path).unwrap();
/// let mut dataset = pot::Tree::in_memory()?;
/// dataset.append(&pot::sample_digest(&sample)?.0)?;
/// assert!(pot::sample_digest(b"not safetensors").is_err());
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub fn sample_digest(safetensors: &[u8]) -> Result<Digest> {
    digest_out(|out, err| unsafe { sys::pot_sample_digest(out, safetensors.as_ptr(), safetensors.len(), err) })
}

/// The schedule entry of one step: the dataset indices of its batch, split
/// into consecutive micro-batches (docs/PROTOCOL.md section 16.1).
///
/// ```
/// let entry = pot::ScheduleEntry { step: 5, indices: vec![4, 1, 9, 0, 7], microbatch_sizes: vec![3, 2] };
/// let bytes = entry.encode(10)?;
/// assert_eq!(pot::ScheduleEntry::decode(&bytes)?, entry);
/// assert_eq!(entry.microbatches().collect::<Vec<_>>(), [&[4, 1, 9][..], &[0, 7][..]]);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScheduleEntry {
    /// The step, from 1.
    pub step: u64,
    /// The dataset indices of the batch, in order.
    pub indices: Vec<u64>,
    /// Sizes of the consecutive micro-batches; they sum to `indices.len()`.
    pub microbatch_sizes: Vec<u32>,
}

impl ScheduleEntry {
    /// The entry's bytes, the leaf data of the schedule tree (leaf index
    /// `step - 1`). `dataset_size` bounds the indices (0 skips that check).
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) for an index
    /// `>= dataset_size`; [`InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// when the micro-batch sizes do not sum to the number of indices.
    ///
    /// ```
    /// let entry = pot::ScheduleEntry { step: 1, indices: vec![3], microbatch_sizes: vec![1] };
    /// assert_eq!(entry.encode(3).unwrap_err().kind(), pot::ErrorKind::OutOfRange);
    /// assert!(entry.encode(0).is_ok());
    /// ```
    pub fn encode(&self, dataset_size: u64) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_schedule_entry_encode(
                out,
                self.step,
                self.indices.as_ptr(),
                self.indices.len(),
                self.microbatch_sizes.as_ptr(),
                self.microbatch_sizes.len(),
                dataset_size,
                err,
            )
        })
    }

    /// Parses an entry.
    ///
    /// # Errors
    /// [`Malformed`](crate::ErrorKind::Malformed) for bytes that are not a
    /// canonical entry.
    ///
    /// ```
    /// assert_eq!(pot::ScheduleEntry::decode(b"junk").unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// ```
    pub fn decode(entry: &[u8]) -> Result<ScheduleEntry> {
        // First the numbers, then the values.
        let (mut count, mut micro) = (0usize, 0usize);
        call(|err| unsafe {
            sys::pot_schedule_entry_decode(
                ptr::null_mut(),
                ptr::null_mut(),
                &mut count,
                ptr::null_mut(),
                &mut micro,
                entry.as_ptr(),
                entry.len(),
                err,
            )
        })?;
        let mut step = 0u64;
        let mut indices = vec![0u64; count];
        let mut sizes = vec![0u32; micro];
        call(|err| unsafe {
            sys::pot_schedule_entry_decode(
                &mut step,
                indices.as_mut_ptr(),
                &mut count,
                sizes.as_mut_ptr(),
                &mut micro,
                entry.as_ptr(),
                entry.len(),
                err,
            )
        })?;
        indices.truncate(count);
        sizes.truncate(micro);
        Ok(ScheduleEntry { step, indices, microbatch_sizes: sizes })
    }

    /// The micro-batches: consecutive runs of `indices` of the given sizes.
    ///
    /// ```
    /// let e = pot::ScheduleEntry { step: 1, indices: vec![1, 2, 3], microbatch_sizes: vec![1, 2] };
    /// assert_eq!(e.microbatches().nth(1), Some(&[2, 3][..]));
    /// ```
    pub fn microbatches(&self) -> impl Iterator<Item = &[u64]> + '_ {
        let mut rest = &self.indices[..];
        self.microbatch_sizes.iter().map(move |&n| {
            let (head, tail) = rest.split_at((n as usize).min(rest.len()));
            rest = tail;
            head
        })
    }
}

/// A seeded schedule: epoch-wise permutations of the dataset from `seed`
/// (docs/PROTOCOL.md section 16.2). `batch_size` must be a multiple of
/// `microbatches`.
///
/// ```
/// let s = pot::SeededSchedule { seed: 7, dataset_size: 10, batch_size: 4, microbatches: 2 };
/// let mut tree = pot::Tree::in_memory()?;
/// for step in 1..=6 {
///     tree.append(&s.entry(step)?)?;
/// }
/// assert_eq!(s.root(6)?, tree.root(6)?);
/// assert_eq!(pot::ScheduleEntry::decode(&s.entry(3)?)?.indices.len(), 4);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeededSchedule {
    /// The permutation seed.
    pub seed: u64,
    /// Samples in the dataset.
    pub dataset_size: u64,
    /// Samples per step.
    pub batch_size: u32,
    /// Micro-batches per step.
    pub microbatches: u32,
}

impl SeededSchedule {
    /// The entry bytes of step `step` (from 1).
    ///
    /// ```
    /// let s = pot::SeededSchedule { seed: 1, dataset_size: 8, batch_size: 2, microbatches: 1 };
    /// assert_eq!(pot::ScheduleEntry::decode(&s.entry(1)?)?.step, 1);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn entry(&self, step: u64) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_seeded_schedule_entry(
                out,
                self.seed,
                self.dataset_size,
                self.batch_size,
                self.microbatches,
                step,
                err,
            )
        })
    }

    /// Positions `first .. first + count` of the schedule's index stream
    /// `perm_0 || perm_1 || ...` (docs/PROTOCOL.md 16.2): step `t`'s entry
    /// holds positions `(t-1)*B .. t*B`, micro-batch `j` the `j`-th `B/M`
    /// of them. One call costs about `count + dataset_size` draws, so read a
    /// whole schedule with one call ([`steps`](SeededSchedule::steps)), not
    /// one [`entry`](SeededSchedule::entry) per step.
    ///
    /// # Errors
    /// [`Limit`](crate::ErrorKind::Limit) for `count` above
    /// [`MAX_STREAM_POSITIONS`](crate::MAX_STREAM_POSITIONS) (before
    /// allocating), [`InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for an empty dataset.
    ///
    /// ```
    /// let s = pot::SeededSchedule { seed: 3, dataset_size: 5, batch_size: 2, microbatches: 1 };
    /// let all = s.stream(0, 12)?;
    /// assert_eq!(s.stream(4, 8)?, all[4..]);
    /// let mut epoch = all[..5].to_vec();
    /// epoch.sort();
    /// assert_eq!(epoch, [0, 1, 2, 3, 4]); // each epoch is a permutation
    /// assert_eq!(s.stream(0, pot::MAX_STREAM_POSITIONS + 1).unwrap_err().kind(), pot::ErrorKind::Limit);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn stream(&self, first: u64, count: usize) -> Result<Vec<u64>> {
        crate::error::check_count(count, crate::MAX_STREAM_POSITIONS, "positions", "MAX_STREAM_POSITIONS")?;
        let mut out = vec![0u64; count];
        // SAFETY: out holds count u64; the call writes at most that many.
        call(|err| unsafe {
            sys::pot_seeded_schedule_stream(out.as_mut_ptr(), count, self.seed, self.dataset_size, first, err)
        })?;
        Ok(out)
    }

    /// Steps `1..=steps` of the schedule, each as its micro-batches of
    /// dataset indices (what the training loop feeds), read from the index
    /// stream in one call. Under a run-seeded task, the run's schedule is
    /// this with the seed of
    /// [`Task::run_schedule_seed`](crate::Task::run_schedule_seed), the
    /// task's dataset size and the spec's batch size and micro-batches (the
    /// task's bounds keep it within one call).
    ///
    /// # Errors
    /// As [`entry`](SeededSchedule::entry), and
    /// [`Limit`](crate::ErrorKind::Limit) when `steps * batch_size` exceeds
    /// [`MAX_STREAM_POSITIONS`](crate::MAX_STREAM_POSITIONS).
    ///
    /// ```
    /// let s = pot::SeededSchedule { seed: 9, dataset_size: 7, batch_size: 4, microbatches: 2 };
    /// let steps = s.steps(3)?;
    /// let e = pot::ScheduleEntry::decode(&s.entry(3)?)?;
    /// assert_eq!(steps[2], e.microbatches().map(<[u64]>::to_vec).collect::<Vec<_>>());
    /// assert_eq!(s.steps(1 << 23).unwrap_err().kind(), pot::ErrorKind::Limit);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn steps(&self, steps: u64) -> Result<Vec<Vec<Vec<u64>>>> {
        // Checks batch_size and microbatches the way an entry does.
        self.entry(1)?;
        let batch = u64::from(self.batch_size);
        let total = steps.checked_mul(batch).filter(|&n| n <= crate::MAX_STREAM_POSITIONS as u64).ok_or_else(|| {
            crate::Error::new(
                crate::ErrorKind::Limit,
                format!(
                    "{steps} steps of {batch} samples exceed MAX_STREAM_POSITIONS ({})",
                    crate::MAX_STREAM_POSITIONS
                ),
            )
        })?;
        let per = (self.batch_size / self.microbatches) as usize;
        let stream = self.stream(0, total as usize)?;
        Ok(stream.chunks(batch as usize).map(|step| step.chunks(per).map(<[u64]>::to_vec).collect()).collect())
    }

    /// The root of the schedule's first `steps` entries.
    ///
    /// ```
    /// let s = pot::SeededSchedule { seed: 1, dataset_size: 8, batch_size: 2, microbatches: 1 };
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(&s.entry(1)?)?;
    /// assert_eq!(s.root(1)?, tree.root(1)?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn root(&self, steps: u64) -> Result<Digest> {
        digest_out(|out, err| unsafe {
            sys::pot_seeded_schedule_root(
                out,
                self.seed,
                self.dataset_size,
                self.batch_size,
                self.microbatches,
                steps,
                err,
            )
        })
    }
}

/// Positions `first .. first + count` of the uniform schedule's index stream
/// (docs/PROTOCOL.md 16.3): each position an index drawn uniformly from
/// `0..dataset_size` on its own, with replacement (any dataset size >= 1);
/// steps and micro-batches take positions as in
/// [`SeededSchedule::stream`]. Under a `run_seeded_uniform` task the run's
/// index stream is this with the seed of
/// [`Task::run_schedule_seed`](crate::Task::run_schedule_seed). A call
/// costs `count` draws.
///
/// # Errors
/// [`Limit`](crate::ErrorKind::Limit) for `count` above
/// [`MAX_STREAM_POSITIONS`](crate::MAX_STREAM_POSITIONS) (before
/// allocating), [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for
/// an empty dataset.
///
/// ```
/// let all = pot::uniform_schedule_stream(7, 1 << 40, 0, 64)?;
/// assert!(all.iter().all(|&i| i < 1 << 40));
/// assert_eq!(pot::uniform_schedule_stream(7, 1 << 40, 10, 5)?, all[10..15]);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn uniform_schedule_stream(seed: u64, dataset_size: u64, first: u64, count: usize) -> Result<Vec<u64>> {
    crate::error::check_count(count, crate::MAX_STREAM_POSITIONS, "positions", "MAX_STREAM_POSITIONS")?;
    let mut out = vec![0u64; count];
    // SAFETY: out holds count u64; the call writes at most that many.
    call(|err| unsafe { sys::pot_uniform_schedule_stream(out.as_mut_ptr(), count, seed, dataset_size, first, err) })?;
    Ok(out)
}

/// A validated training commitment (`pot_commitment`, docs/PROTOCOL.md
/// section 17): the task, initial state, schedule, dataset and spec of a run.
///
/// `Send` and `Sync`: pot.h documents it as immutable, and every method
/// takes `&self`.
///
/// ```
/// let c = pot::Commitment::from_json(r#"{
///   "initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
///   "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
///   "task_id": "7777777777777777777777777777777777777777777777777777777777777777",
///   "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000,
///   "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
///   "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
/// assert_eq!(c.run_id()?.to_hex(), "5c5b101aaaa73254c9650c4091e63c11a150869c1d8191a83190105b3630507a");
/// assert_eq!((c.declared_steps(), c.dataset_size()), (200, 5000));
/// assert_eq!(c.digests()?.dataset_root, pot::Digest::new([0xcc; 32]));
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Commitment {
    raw: NonNull<sys::pot_commitment>,
}

// SAFETY: no thread affinity; every method but set_sealed_flags (which takes
// &mut self, so no other reference reads meanwhile) takes &self and only reads.
unsafe impl Send for Commitment {}
// SAFETY: as above.
unsafe impl Sync for Commitment {}

/// The digests a [`Commitment`] commits to.
///
/// ```
/// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
/// let d: pot::CommitmentDigests = c.digests()?;
/// assert_eq!(d.initial_state, pot::Digest::new([0xaa; 32]));
/// assert_eq!(d.spec, pot::Digest::new([0xdd; 32]));
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommitmentDigests {
    /// Digest of the state before step 1.
    pub initial_state: Digest,
    /// Root of the schedule tree.
    pub schedule_root: Digest,
    /// Root of the dataset tree.
    pub dataset_root: Digest,
    /// Digest of the execution spec.
    pub spec: Digest,
}

impl Commitment {
    /// Parses the JSON form (docs/cli.md) and validates it.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the
    /// rule; [`Malformed`](crate::ErrorKind::Malformed) for text that is not JSON.
    ///
    /// ```
    /// assert!(pot::Commitment::from_json("{}").is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<Commitment> {
        let json = cstring(json, "commitment JSON")?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_commitment_from_json(&mut raw, json.as_ptr(), err) })?;
        Ok(Commitment { raw: non_null(raw)? })
    }

    /// Decodes canonical bytes.
    ///
    /// # Errors
    /// [`Malformed`](crate::ErrorKind::Malformed) unless canonical,
    /// [`Limit`](crate::ErrorKind::Limit) past 1024 bytes.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// let again = pot::Commitment::decode(&c.encode()?)?;
    /// assert_eq!(again.run_id()?, c.run_id()?);
    /// assert_eq!(pot::Commitment::decode(&[0u8; 2000]).unwrap_err().kind(), pot::ErrorKind::Limit);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Commitment> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_commitment_decode(&mut raw, bytes.as_ptr(), bytes.len(), err) })?;
        Ok(Commitment { raw: non_null(raw)? })
    }

    /// The canonical bytes (a `pot.v2.TrainingCommitment`).
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(&c.encode()?[..4], &[0x08, 0x02, 0x12, 0x20]);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn encode(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_commitment_encode(out, self.raw.as_ptr(), err) })
    }

    /// The JSON form.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(pot::Commitment::from_json(&c.to_json()?)?.run_id()?, c.run_id()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn to_json(&self) -> Result<String> {
        ffi::string_out(|out, err| unsafe { sys::pot_commitment_to_json(out, self.raw.as_ptr(), err) })
    }

    /// The run id, `tagged("pot/v2/run", canonical bytes)`.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// println!("run {}", c.run_id()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn run_id(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_commitment_run_id(out, self.raw.as_ptr(), err) })
    }

    /// The committed digests.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(c.digests()?.schedule_root, pot::Digest::new([0xbb; 32]));
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digests(&self) -> Result<CommitmentDigests> {
        let mut d = [sys::pot_digest::default(); 4];
        let [a, b, c, s] = &mut d;
        call(|err| unsafe { sys::pot_commitment_digests(a, b, c, s, self.raw.as_ptr(), err) })?;
        Ok(CommitmentDigests {
            initial_state: Digest(d[0].bytes),
            schedule_root: Digest(d[1].bytes),
            dataset_root: Digest(d[2].bytes),
            spec: Digest(d[3].bytes),
        })
    }

    /// Declared steps (= schedule entries).
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(c.declared_steps(), 200);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn declared_steps(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_commitment_declared_steps(self.raw.as_ptr()) }
    }

    /// Samples in the committed dataset.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(c.dataset_size(), 5000);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn dataset_size(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_commitment_dataset_size(self.raw.as_ptr()) }
    }

    /// The id of the task the run answers to.
    ///
    /// ```
    /// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 200, "miner_identity": "6d696e6572"}"#)?;
    /// assert_eq!(c.task_id()?, pot::Digest::new([0x77; 32]));
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn task_id(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_commitment_task_id(out, self.raw.as_ptr(), err) })
    }

    /// Records the flagged steps the run sealed with on the ledger
    /// (`run_info`'s `flagged_steps`, docs/ledger.md 2.3): verifying then
    /// fails an opening that lists other steps (check 32,
    /// [`OpeningCheck::RunFlags`](crate::OpeningCheck::RunFlags)), so a flag
    /// hidden from the ledger fails every challenge.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) unless the
    /// steps ascend within `1..=declared_steps`.
    pub fn set_sealed_flags(&mut self, flagged_steps: &[u64]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_commitment_set_sealed_flags(self.raw.as_ptr(), flagged_steps.as_ptr(), flagged_steps.len(), err)
        })
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pot_commitment {
        self.raw.as_ptr()
    }

    pub(crate) fn from_raw(raw: NonNull<sys::pot_commitment>) -> Commitment {
        Commitment { raw }
    }
}

impl Drop for Commitment {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_commitment_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.run_id() {
            Ok(id) => f.debug_struct("Commitment").field("run_id", &id).finish(),
            Err(_) => f.debug_struct("Commitment").finish_non_exhaustive(),
        }
    }
}
