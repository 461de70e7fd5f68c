//! The LibTorch replay layer through the safe API: availability, the
//! program digest, a toy recorded run served from its checkpoint directory
//! (no TorchScript needed), and, when POT_REPLAY_FIXTURE names a directory
//! made by tests/replay/make_fixture.sh, a real run's opening verified by
//! replay end to end.

mod common;

use common::TempDir;
use pot::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Serialises the tests that use LibTorch's process-wide default generator:
/// `Recorder::begin_step` seeds it outside libpot's replay lock, so it must
/// not run while another test thread replays (pot.h: a replay must not
/// overlap LibTorch work of the application's own).
static TORCH: Mutex<()> = Mutex::new(());

/// SHA-256(0x0e || "pot/v1/program" || "abc"), computed independently of
/// libpot with Python's hashlib:
/// `hashlib.sha256(b"\x0e" + b"pot/v1/program" + b"abc").hexdigest()`.
const PROGRAM_ABC_DIGEST: &str = "fdfe6bb1377b889ae8fb1ccec3a96526a75d1aa9acafb8fa67f4a12a67461824";

/// The spec of the toy runs: SGD whose rate shrinks by 0.9 after every step
/// (an exponential schedule; the recorder refuses a state holding another
/// rate than the spec's).
fn spec_for(program: &Digest) -> Spec {
    // The recorder and the bitwise replay refuse a class other than this process's.
    let class = pot::replay::hardware_class().unwrap_or("cpu-x86_64/aten:avx2/onednn:avx2");
    Spec::from_json(&format!(
        r#"{{"framework": "pytorch", "framework_version": "1.13.1", "model_program_digest": "{program}",
            "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
            "optimizer": {{"kind": "sgd", "lr": 0.1}}, "batch_size": 2, "intra_op_threads": 1,
            "hardware_class": "{class}", "seed_policy": {{"kind": "per_step", "base_seed": 7}},
            "norm_bucket_resolution": 16,
            "lr_schedule": {{"phases": [{{"kind": "exponential", "gamma": 0.9}}]}}}}"#
    ))
    .unwrap()
}

/// A directory with program.pt = "abc" and a spec naming its digest.
fn abc_program(tag: &str) -> (TempDir, PathBuf, Spec) {
    let dir = TempDir::new(tag);
    let program = dir.path("program.pt");
    std::fs::write(&program, b"abc").unwrap();
    let spec = spec_for(&program_digest_file(&program).unwrap());
    (dir, program, spec)
}

#[test]
fn program_digest_of_a_file() {
    let (dir, program, _) = abc_program("program-digest");
    assert_eq!(program_digest_file(&program).unwrap(), PROGRAM_ABC_DIGEST.parse::<Digest>().unwrap());
    assert_eq!(program_digest_file(dir.path("missing.pt")).unwrap_err().kind(), ErrorKind::Io);
    assert_eq!(program_digest_file("a\0b").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn availability_matches_what_the_calls_do() {
    let (dir, program, spec) = abc_program("availability");
    let other = spec_for(&Digest::new([1; 32]));
    let missing = dir.path("missing.pt");
    if !replay::available() {
        eprintln!("libpot was built without LibTorch: every replay entry point must say Unsupported");
        assert_eq!(Replay::new(&spec, &program).unwrap_err().kind(), ErrorKind::Unsupported);
        assert_eq!(Recorder::new(dir.path("ck"), &spec, &program, 1).unwrap_err().kind(), ErrorKind::Unsupported);
        assert_eq!(Checkpoints::open(dir.path("ck")).unwrap_err().kind(), ErrorKind::Unsupported);
        let zero = Digest::default();
        let c = Commitment::from_json(&format!(
            r#"{{"initial_state_digest": "{zero}", "schedule_root": "{zero}", "task_id": "7777777777777777777777777777777777777777777777777777777777777777",
                "dataset_root": "{zero}", "dataset_size": 1, "spec_digest": "{zero}",
                "declared_steps": 1, "miner_identity": "6d696e6572"}}"#
        ))
        .unwrap();
        let f = verify_step(&c, &spec, &program, 1, 1, &zero, b"m", Path::new("pre"), None, VerifyMode::Bitwise, 0)
            .unwrap_err();
        assert_eq!((f.check, f.error.kind()), (None, ErrorKind::Unsupported));
        assert_eq!(f.verification, StepVerification::default());
        return;
    }
    assert_eq!(Replay::new(&spec, &missing).unwrap_err().kind(), ErrorKind::Io);
    // A program whose digest is not the spec's.
    assert_eq!(Replay::new(&other, &program).unwrap_err().kind(), ErrorKind::ProofMismatch);
    // The spec's digest, but not TorchScript.
    let err = Replay::new(&spec, &program).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");

    assert_eq!(Recorder::new(dir.path("ck-missing"), &spec, &missing, 1).unwrap_err().kind(), ErrorKind::Io);
    assert_eq!(Recorder::new(dir.path("ck-other"), &other, &program, 1).unwrap_err().kind(), ErrorKind::ProofMismatch);
    assert_eq!(Recorder::new(dir.path("ck-zero"), &spec, &program, 0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(Checkpoints::open(dir.path("nothing-here")).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn learning_rates_are_the_specs() {
    let spec = spec_for(&Digest::new([3; 32]));
    let mut want = vec![0.1f64];
    for _ in 1..6 {
        let last = *want.last().unwrap();
        want.push(last * 0.9); // ExponentialLR: lr * gamma after every step
    }
    assert_eq!(spec.learning_rates(1, 6).unwrap(), want);
    assert_eq!(spec.learning_rates(4, 3).unwrap(), want[3..]);
    assert!(spec.learning_rates(9, 0).unwrap().is_empty());
    assert_eq!(spec.learning_rates(0, 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(spec.learning_rates(1 << 32, 2).unwrap_err().kind(), ErrorKind::OutOfRange);
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The digest of a toy state, through `State`.
fn state_digest(w: &[u8], lr: &[u8]) -> Digest {
    let mut s = State::new().unwrap();
    s.add_tensor("param/w", Dtype::F32, &[(w.len() / 4) as u64], w).unwrap();
    s.add_tensor("hparam/lr", Dtype::F64, &[], lr).unwrap();
    s.digest().unwrap()
}

fn stats_digest(w: &[u8], lr: &[u8]) -> Digest {
    let mut s = State::new().unwrap();
    s.add_tensor("param/w", Dtype::F32, &[(w.len() / 4) as u64], w).unwrap();
    s.add_tensor("hparam/lr", Dtype::F64, &[], lr).unwrap();
    s.stats().unwrap().digest()
}

fn state_writer<'a>(w: &'a [u8], lr: &'a [u8]) -> SafetensorsWriter<'a> {
    let mut sw = SafetensorsWriter::new().unwrap();
    sw.add("param/w", Dtype::F32, &[(w.len() / 4) as u64], w).unwrap();
    sw.add("hparam/lr", Dtype::F64, &[], lr).unwrap();
    sw
}

/// A toy run recorded with a checkpoint every step (so nothing is
/// replayed), served from its checkpoint directory and verified.
#[test]
fn recorder_and_checkpoints_serve_a_verifiable_opening() {
    if !replay::available() {
        eprintln!("skipped: libpot was built without LibTorch (availability_matches_what_the_calls_do checks it)");
        return;
    }
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    const SAMPLES: u64 = 4;
    const STEPS: u64 = 3;
    let (dir, program, spec) = abc_program("recorder");
    let data = dir.path("samples");
    std::fs::create_dir(&data).unwrap();
    let mut dataset = Tree::in_memory().unwrap();
    for i in 0..SAMPLES {
        let bytes = f32s(&[i as f32, 1.0]);
        let mut w = SafetensorsWriter::new().unwrap();
        w.add("x", Dtype::F32, &[2], &bytes).unwrap();
        let path = data.join(format!("{i:06}.safetensors"));
        w.write(&path).unwrap();
        dataset.append(&sample_digest(&std::fs::read(&path).unwrap()).unwrap().0).unwrap();
    }
    let sched = SeededSchedule { seed: 99, dataset_size: SAMPLES, batch_size: 2, microbatches: 1 };
    let entries: Vec<Vec<u8>> = (1..=STEPS).map(|t| sched.entry(t).unwrap()).collect();

    let ck = dir.path("ck");
    let mut rec = Recorder::new(&ck, &spec, &program, 1).unwrap();
    assert_eq!(Recorder::new(&ck, &spec, &program, 1).unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(rec.begin_step(1).unwrap_err().kind(), ErrorKind::State); // S_0 first

    let mut w = vec![0.5f32, -1.0, 2.0];
    let mut lr = 0.1f64;
    let (w0, lr0) = (f32s(&w), lr.to_le_bytes());
    let d0 = rec.start(&state_writer(&w0, &lr0)).unwrap();
    assert_eq!(d0, state_digest(&w0, &lr0));
    let json = format!(
        r#"{{"initial_state_digest": "{d0}", "schedule_root": "{}", "task_id": "7777777777777777777777777777777777777777777777777777777777777777",
            "dataset_root": "{}", "dataset_size": {SAMPLES}, "spec_digest": "{}",
            "declared_steps": {STEPS}, "miner_identity": "6d696e6572"}}"#,
        sched.root(STEPS).unwrap(),
        dataset.root(SAMPLES).unwrap(),
        spec.digest().unwrap()
    );
    let commitment = Commitment::from_json(&json).unwrap();
    assert_eq!(rec.set_commitment(&commitment, &entries[..2]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    rec.set_commitment(&commitment, &entries).unwrap();

    let mut log = Tree::in_memory().unwrap();
    let mut states = vec![d0];
    let mut losses = vec![0.0];
    for t in 1..=STEPS {
        assert_eq!(rec.begin_step(t).unwrap(), protocol::seed_derive(7, &commitment.run_id().unwrap(), t).unwrap());
        let before = w.clone();
        w.iter_mut().for_each(|x| *x *= 0.5);
        lr *= 0.9;
        let (wb, lrb) = (f32s(&w), lr.to_le_bytes());
        let loss = 1.0 / (t + 1) as f64;
        let d = rec.end_step(&state_writer(&wb, &lrb), loss).unwrap();
        assert_eq!(d, state_digest(&wb, &lrb), "step {t}");
        // The recorder's leaf names the run and commits the update norm; the
        // same leaf built here (the norm of section 13 by hand) gives the
        // same roots.
        let sum: f64 = before.iter().zip(&w).fold(0.0, |s, (a, b)| {
            let d = f64::from(*b) - f64::from(*a);
            s + d * d
        });
        let leaf = StepLeaf {
            run_id: commitment.run_id().unwrap(),
            step: t,
            state_digest: d,
            stats_digest: stats_digest(&wb, &lrb),
            loss,
            update_norm: sum.sqrt(),
        };
        log.append(&leaf.encode().unwrap()).unwrap();
        states.push(d);
        losses.push(loss);
    }
    assert_eq!(rec.begin_step(STEPS + 1).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert_eq!(rec.size(), STEPS);
    for size in 1..=STEPS {
        assert_eq!(rec.root(size).unwrap(), log.root(size).unwrap(), "root({size})");
    }
    assert_eq!(rec.root(STEPS + 1).unwrap_err().kind(), ErrorKind::OutOfRange);
    let root = log.root(STEPS).unwrap();
    let proof = rec.consistency_proof(1, STEPS).unwrap();
    merkle::verify_consistency(1, STEPS, &rec.root(1).unwrap(), &root, &proof).unwrap();
    assert_eq!(rec.finish().unwrap(), root);
    drop(rec);

    let mut cp = Checkpoints::open(&ck).unwrap();
    assert_eq!(cp.size(), STEPS);
    let (pre, n) = cp.state_path(1, &data).unwrap();
    assert!(pre.starts_with(&ck) && n == 0, "{} {n}", pre.display());
    assert_eq!(safetensors::digest_file(&pre, 1).unwrap(), states[1]);
    assert_eq!(cp.state_path(STEPS + 1, &data).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert_eq!(cp.opening(0, STEPS, &data, false).unwrap_err().kind(), ErrorKind::OutOfRange);
    // A miner's claims in a ledger dispute: each committed leaf and its
    // proof in the sealed root (docs/ledger.md 2.13).
    for t in 1..=STEPS {
        let (leaf, proof) = cp.leaf(t, STEPS).unwrap();
        let decoded = StepLeaf::decode(&leaf).unwrap();
        assert_eq!((decoded.step, decoded.state_digest), (t, states[t as usize]));
        merkle::verify_inclusion(t - 1, STEPS, &merkle::leaf_hash(&leaf).unwrap(), &proof, &root).unwrap();
    }
    for (t, size) in [(0, STEPS), (STEPS + 1, STEPS), (2, 1), (1, STEPS + 1)] {
        assert_eq!(cp.leaf(t, size).unwrap_err().kind(), ErrorKind::OutOfRange);
    }

    let step = 2;
    let m = cp.opening(step, STEPS, &data, true).unwrap();
    let (post, _) = cp.state_path(step, &data).unwrap();
    verify_opening(&commitment, step, STEPS, &root, &m, Some(&pre), Some(&post), 1).unwrap();
    // verify_step gets past every check of verify_opening and the spec, and
    // stops at the program, which is not TorchScript: the task's (its digest
    // is the spec's), check 30.
    let f =
        verify_step(&commitment, &spec, &program, step, STEPS, &root, &m, &pre, Some(&post), VerifyMode::Bitwise, 0)
            .unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::TaskProgram), ErrorKind::InvalidArgument), "{f}");
    assert!(f.to_string().starts_with("step rejected at task_program: "), "{f}");
    assert_eq!(f.verification.replay, None);
    assert_eq!(f.verification.committed_state_digest, states[step as usize]);
    assert_eq!(f.verification.committed_loss, losses[step as usize]);
    // Another spec than the commitment's.
    let other = spec_for(&Digest::new([1; 32]));
    let f = verify_step(&commitment, &other, &program, step, STEPS, &root, &m, &pre, None, VerifyMode::Bitwise, 0)
        .unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::Spec), ErrorKind::ProofMismatch));
    // A wrong pre-state: the checks of verify_opening come first.
    let outcome =
        verify_step(&commitment, &spec, &program, step, STEPS, &root, &m, &post, None, VerifyMode::Bitwise, 0);
    let f = outcome.clone().unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::PreStateDigest), ErrorKind::ProofMismatch));
    // What the member witnesses (docs/PROTOCOL.md 19): the failed check, in
    // this process's environment (threads 0: the spec's).
    let run_id = commitment.run_id().unwrap();
    let st = witness_statement(&outcome, &spec, &run_id, step, 4, VerifyMode::Bitwise, 0).unwrap();
    let j: Value = serde_json::from_str(&st).unwrap();
    assert_eq!(
        (j["kind"].as_str(), j["check"].as_str(), j["challenge_id"].as_u64()),
        (Some("invalid_opening"), Some("pre_state_digest"), Some(4)),
        "{st}"
    );
    assert_eq!(j["environment"]["framework_version"].as_str(), Some(replay::framework_version().unwrap()));
    assert_eq!(j["environment"]["hardware_class"].as_str(), Some(replay::hardware_class().unwrap()));
    assert_eq!(j["environment"]["intra_op_threads"].as_u64(), Some(1));
    let salt = witness::salt().unwrap();
    let c = witness::commitment(&st, &salt, b"rust").unwrap();
    witness::verify_reveal(&c, &st, &salt, b"rust").unwrap();
    // The norm-bucket path needs the served S_t: refused before any check.
    let f = verify_step(&commitment, &spec, &program, step, STEPS, &root, &m, &pre, None, VerifyMode::NormBucket, 0)
        .unwrap_err();
    assert_eq!((f.check, f.error.kind()), (None, ErrorKind::InvalidArgument));
    let e: Error = f.into();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // The directory reopened as after a crash: the run continues after its
    // last checkpoint (every step here), with the same log.
    let (resumed, at, state) = Recorder::resume(&ck).unwrap();
    assert_eq!((at, resumed.size()), (STEPS, STEPS));
    assert!(state.ends_with(format!("checkpoints/{STEPS:012}.safetensors")), "{}", state.display());
    assert_eq!(resumed.root(STEPS).unwrap(), root);
    assert_eq!(Recorder::resume(dir.path("nothing-here")).unwrap_err().kind(), ErrorKind::NotFound);
}

/// The directory tests/replay/make_fixture.sh prepares.
struct Fixture {
    dir: PathBuf,
    run: PathBuf,
    record: Value,
    meta: Value,
    schedule: Value,
}

impl Fixture {
    fn load() -> Option<Fixture> {
        let Some(dir) = std::env::var_os("POT_REPLAY_FIXTURE").filter(|d| !d.is_empty()) else {
            eprintln!(
                "skipped: POT_REPLAY_FIXTURE is not set (make a fixture with \
                 tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)"
            );
            return None;
        };
        assert!(replay::available(), "POT_REPLAY_FIXTURE is set but libpot was built without LibTorch");
        let dir = PathBuf::from(dir);
        let run = dir.join("run");
        let json = |p: PathBuf| -> Value {
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
                .unwrap()
        };
        Some(Fixture {
            record: json(dir.join("record.json")),
            meta: json(run.join("run.json")),
            schedule: json(run.join("schedule.json")),
            dir,
            run,
        })
    }

    fn state(&self, t: u64) -> PathBuf {
        self.run.join(format!("states/{t:06}.safetensors"))
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Serves and verifies the opening of step 5 of the fixture's recorded run,
/// and replays step 5 directly.
#[test]
fn end_to_end_replay_of_a_recorded_run() {
    let Some(fx) = Fixture::load() else { return };
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    const STEP: u64 = 5;
    let samples = fx.run.join("samples");
    let program = fx.run.join("program.pt");
    // A private copy of the checkpoint directory: re-derived states are
    // cached in it, and the counts below assume an empty cache.
    let tmp = TempDir::new("replay-e2e");
    let ck = tmp.path("ck");
    copy_dir(&fx.dir.join("ck"), &ck);

    let spec = Spec::from_json(&std::fs::read_to_string(fx.run.join("spec.json")).unwrap()).unwrap();
    let commitment = Commitment::decode(&std::fs::read(ck.join("commitment.bin")).unwrap()).unwrap();
    let root: Digest = fx.record["root"].as_str().unwrap().parse().unwrap();
    let size = fx.record["size"].as_u64().unwrap();
    assert_eq!(commitment.run_id().unwrap().to_hex(), fx.record["run_id"].as_str().unwrap());
    assert_eq!(size, 6);

    let mut cp = Checkpoints::open(&ck).unwrap();
    assert_eq!(cp.size(), size);
    // Checkpoints every 3 steps: S_4 is re-derived from S_3 (one replay),
    // then cached.
    let (pre, n) = cp.state_path(STEP - 1, &samples).unwrap();
    assert_eq!(n, 1);
    let manifest = cp.opening(STEP, size, &samples, false).unwrap();
    assert_eq!(cp.state_path(STEP - 1, &samples).unwrap(), (pre.clone(), 0));
    let want = safetensors::digest_file(fx.state(STEP), 0).unwrap();

    verify_opening(&commitment, STEP, size, &root, &manifest, Some(&pre), None, 0).unwrap();
    let v = verify_step(&commitment, &spec, &program, STEP, size, &root, &manifest, &pre, None, VerifyMode::Bitwise, 0)
        .unwrap_or_else(|f| panic!("{f}"));
    let replayed = v.replay.expect("the replay ran");
    assert_eq!(replayed.post_state_digest, v.committed_state_digest);
    assert_eq!(v.committed_state_digest, want);
    assert_eq!(replayed.loss.to_bits(), v.committed_loss.to_bits());
    // Check 27's evidence: the honest step's gradient moved parameters.
    let g = replayed.gradient;
    assert!(!g.ignored && g.gradient_elements > 0 && g.gradient_elements <= g.param_elements, "{g:?}");
    assert_eq!(g.learning_rate.to_bits(), spec.learning_rates(STEP, 1).unwrap()[0].to_bits());

    // The same manifest with the pre-state of another step (S_2, re-derived
    // from S_0 with two replays).
    let (other, n) = cp.state_path(2, &samples).unwrap();
    assert_eq!(n, 2);
    let f =
        verify_step(&commitment, &spec, &program, STEP, size, &root, &manifest, &other, None, VerifyMode::Bitwise, 0)
            .unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::PreStateDigest), ErrorKind::ProofMismatch), "{f}");
    assert_eq!(f.verification.replay, None);

    // The cross-architecture path, with S_5 served too.
    let served = cp.opening(STEP, size, &samples, true).unwrap();
    let (post, _) = cp.state_path(STEP, &samples).unwrap();
    let b = verify_step(
        &commitment,
        &spec,
        &program,
        STEP,
        size,
        &root,
        &served,
        &pre,
        Some(&post),
        VerifyMode::NormBucket,
        0,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    let br = b.replay.expect("the replay ran");
    assert!(protocol::norm_buckets_match(b.committed_norm_bucket, br.norm_bucket));

    // Replay step 5 directly from the trainer's S_4.
    let mut r = Replay::new(&spec, &program).unwrap();
    let names = r.input_names().unwrap();
    let forward_args: Vec<&str> =
        fx.meta["forward_args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(names, forward_args);
    assert_eq!(r.input_name(names.len()).unwrap_err().kind(), ErrorKind::OutOfRange);
    let micro = fx.schedule[(STEP - 1) as usize].as_array().unwrap();
    let mut entry = ScheduleEntry { step: STEP, indices: Vec::new(), microbatch_sizes: Vec::new() };
    for mb in micro {
        let mb = mb.as_array().unwrap();
        entry.microbatch_sizes.push(mb.len() as u32);
        entry.indices.extend(mb.iter().map(|i| i.as_u64().unwrap()));
    }
    let entry = entry.encode(fx.meta["dataset_size"].as_u64().unwrap()).unwrap();
    let batch: Vec<Vec<u8>> = ScheduleEntry::decode(&entry)
        .unwrap()
        .indices
        .iter()
        .map(|i| std::fs::read(samples.join(format!("{i:06}.safetensors"))).unwrap())
        .collect();
    let s5 = Safetensors::open(fx.state(STEP)).unwrap();
    let lr = s5.get("hparam/lr").unwrap().expect("S_5 has hparam/lr");
    // torch's scheduler wrote the spec's rate of step 6 into S_5.
    let held = f64::from_le_bytes(lr.data.try_into().unwrap());
    assert_eq!(held.to_bits(), spec.learning_rates(STEP + 1, 1).unwrap()[0].to_bits());

    let out = tmp.path("s5.safetensors");
    // Under per_step the seed names the run: a step without its run is refused.
    let err = r.step(None, fx.state(STEP - 1), &entry, &batch, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("names its run"), "{}", err.message());
    let run_id = commitment.run_id().unwrap();
    let got = r.step(Some(&run_id), fx.state(STEP - 1), &entry, &batch, Some(&out)).unwrap();
    assert_eq!(got.post_state_digest, want, "the digest of states/000005.safetensors");
    // The step's gradient, which a witness states: set, and the same on a
    // second replay of the step (bitwise, one environment).
    let again = r.step(Some(&run_id), fx.state(STEP - 1), &entry, &batch, None).unwrap();
    assert_ne!(got.gradient_digest, Digest::default());
    assert_eq!(again.gradient_digest, got.gradient_digest);
    assert_eq!(safetensors::digest_file(&out, 0).unwrap(), want);
    let bits = u64::from_str_radix(fx.meta["loss_bits"][(STEP - 1) as usize].as_str().unwrap(), 16).unwrap();
    assert_eq!(got.loss.to_bits(), bits);
    assert_eq!(got, replayed);
    // A batch that does not fit the entry.
    let err = r.step(Some(&run_id), fx.state(STEP - 1), &entry, &batch[1..], None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

/// Traces step 5 of the fixture's run twice (one root), bisects the honest
/// trace against a forger's whose node k has another result, and has the
/// referee rule: the forger, who sent the honest node's opening under its
/// own root, loses at rule 1 (docs/PROTOCOL.md 22.3).
#[test]
fn operator_trace_bisection_and_referee() {
    let Some(fx) = Fixture::load() else { return };
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    const STEP: u64 = 5;
    const K: u64 = 17;
    let spec = Spec::from_json(&std::fs::read_to_string(fx.run.join("spec.json")).unwrap()).unwrap();
    let mut replay = Replay::new(&spec, fx.run.join("program.pt")).unwrap();
    let mut entry = ScheduleEntry { step: STEP, indices: Vec::new(), microbatch_sizes: Vec::new() };
    for mb in fx.schedule[(STEP - 1) as usize].as_array().unwrap() {
        let mb = mb.as_array().unwrap();
        entry.microbatch_sizes.push(mb.len() as u32);
        entry.indices.extend(mb.iter().map(|i| i.as_u64().unwrap()));
    }
    let batch: Vec<Vec<u8>> = entry
        .indices
        .iter()
        .map(|i| std::fs::read(fx.run.join(format!("samples/{i:06}.safetensors"))).unwrap())
        .collect();
    let entry = entry.encode(fx.meta["dataset_size"].as_u64().unwrap()).unwrap();
    let run_id: Digest = fx.record["run_id"].as_str().unwrap().parse().unwrap();
    let pre = fx.state(STEP - 1);

    let a = replay.trace(Some(&run_id), &pre, &entry, &batch).unwrap();
    let b = replay.trace(Some(&run_id), &pre, &entry, &batch).unwrap();
    let n = a.len().unwrap();
    assert!(n > 50 && b.len().unwrap() == n && a.root(n).unwrap() == b.root(n).unwrap());
    assert_eq!(a.replay_result().unwrap().post_state_digest, safetensors::digest_file(fx.state(STEP), 0).unwrap());

    let node = a.node(K).unwrap();
    let mut j: Value = serde_json::from_str(&dispute::op_node_json(&node).unwrap()).unwrap();
    j["outputs"][0]["tensor"]["chunk_root"] = Value::from("ff".repeat(32));
    let forged = dispute::op_node_from_json(&j.to_string()).unwrap();
    assert_ne!(forged, node);
    let mut tree = Tree::in_memory().unwrap();
    for i in 0..n {
        tree.append(&if i == K { forged.clone() } else { a.node(i).unwrap() }).unwrap();
    }
    let mut bis =
        StepBisection::new(0, n, 3, &a.root(0).unwrap(), &a.root(n).unwrap(), &tree.root(n).unwrap()).unwrap();
    while !bis.state().unwrap().done {
        let pts = bis.points().unwrap();
        let ca: Vec<Digest> = pts.iter().map(|&p| a.root(p).unwrap()).collect();
        let cb: Vec<Digest> = pts.iter().map(|&p| tree.root(p).unwrap()).collect();
        bis.play_round(&ca, &cb).unwrap();
    }
    let s = bis.state().unwrap();
    assert_eq!(s.hi, K + 1);
    let opening = replay.open_op_node(Some(&run_id), &pre, &entry, &batch, K).unwrap();
    let pre_digest = safetensors::digest_file(&pre, 0).unwrap();
    let d = OpDispute {
        index: K,
        agreed_root: s.agreed,
        a_root: a.root(K + 1).unwrap(),
        b_root: tree.root(K + 1).unwrap(),
        a_opening: &opening,
        b_opening: &opening,
    };
    let ruling = replay.referee_decide_op(Some(&run_id), &pre, &pre_digest, &entry, &batch, &d).unwrap();
    assert!(!ruling.a_loses && ruling.b_loses && ruling.rule == "opening", "{ruling:?}");
    let err = replay.referee_decide_op(Some(&run_id), &pre, &Digest::default(), &entry, &batch, &d).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProofMismatch);
    let err = replay.open_op_node(Some(&run_id), &pre, &entry, &batch, n + 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfRange);
}

/// A `StepInput` (`pot_step_input`) holds one parsed sample per index of its
/// entry: a bad sample is refused as it is added, naming its position and
/// dataset index, and one too many with `OutOfRange`. No LibTorch needed.
#[test]
fn a_step_input_holds_one_parsed_sample_per_index() {
    let dir = TempDir::new("step-input");
    let x: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut w = SafetensorsWriter::new().unwrap();
    w.add("x", Dtype::F32, &[2], &x).unwrap();
    let good = w.to_bytes().unwrap();
    let entry = ScheduleEntry { step: 7, indices: vec![3, 5], microbatch_sizes: vec![2] }.encode(0).unwrap();
    let mut input = StepInput::new(Some(&Digest::new([0; 32])), dir.path("pre.safetensors"), &entry, &[&good]).unwrap();
    assert_eq!((input.step(), input.sample_count()), (7, 1));
    let err = input.add_sample(&good[..5]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Malformed);
    assert!(err.message().contains("sample 1 (dataset index 5)"), "{err}");
    assert_eq!(input.sample_count(), 1);
    input.add_sample(&good).unwrap();
    let err = input.add_sample(&good).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfRange);
    assert_eq!(input.sample_count(), 2);
    let no_samples: [&[u8]; 0] = [];
    let err = StepInput::new(None, "pre", &entry[..entry.len() - 1], &no_samples).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Malformed);
}
