//! A whole miner-to-verifier round through the safe API (the Rust twin of
//! samples/protocol_flow): dataset, seeded schedule, states, step log,
//! commitment, challenges, openings; then verification, a witness verdict,
//! and tampered inputs rejected at the right check.

mod common;

use common::TempDir;
use pot::*;
use std::path::{Path, PathBuf};

const SAMPLES: u64 = 8;
const STEPS: u64 = 6;

struct Run {
    dir: TempDir,
    commitment: Commitment,
    log_root: Digest,
    states: Vec<Digest>,
    manifests: Vec<(u64, Vec<u8>)>,
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn write_vector(path: &Path, name: &str, v: &[f32]) {
    let data = f32s(v);
    let mut w = SafetensorsWriter::new().unwrap();
    w.add(name, Dtype::F32, &[v.len() as u64], &data).unwrap();
    w.write(path).unwrap();
    // The bytes in memory are the file written.
    assert_eq!(w.to_bytes().unwrap(), std::fs::read(path).unwrap());
}

fn state_path(dir: &TempDir, t: u64) -> PathBuf {
    dir.path(&format!("state-{t}.safetensors"))
}

fn mine() -> Run {
    let dir = TempDir::new("opening");
    let sched = SeededSchedule { seed: 1234, dataset_size: SAMPLES, batch_size: 2, microbatches: 1 };
    let mut dataset = Tree::in_memory().unwrap();
    let mut samples = Vec::new();
    for i in 0..SAMPLES {
        let path = dir.path(&format!("sample-{i}.safetensors"));
        write_vector(&path, "x", &[i as f32, (i * i) as f32]);
        let bytes = std::fs::read(&path).unwrap();
        dataset.append(&sample_digest(&bytes).unwrap().0).unwrap();
        samples.push(bytes);
    }
    let mut schedule = Tree::in_memory().unwrap();
    let mut log = Tree::in_memory().unwrap();
    let mut w = [0.5f32, -1.0, 2.0, 0.25];
    let mut states = Vec::new();
    for t in 0..=STEPS {
        if t > 0 {
            for x in &mut w {
                *x = *x * 0.9 + 0.01 * t as f32;
            }
            schedule.append(&sched.entry(t).unwrap()).unwrap();
        }
        write_vector(&state_path(&dir, t), "param/w", &w);
        states.push(safetensors::digest_file(state_path(&dir, t), 1).unwrap());
    }
    assert_eq!(schedule.root(STEPS).unwrap(), sched.root(STEPS).unwrap());
    let json = format!(
        r#"{{"initial_state_digest": "{}", "schedule_root": "{}", "task_id": "7777777777777777777777777777777777777777777777777777777777777777",
            "dataset_root": "{}", "dataset_size": {SAMPLES}, "spec_digest": "{}",
            "declared_steps": {STEPS}, "miner_identity": "6d696e6572"}}"#,
        states[0],
        schedule.root(STEPS).unwrap(),
        dataset.root(SAMPLES).unwrap(),
        Digest::default()
    );
    let commitment = Commitment::from_json(&json).unwrap();
    let run_id = commitment.run_id().unwrap();
    // Leaf t names the run and commits the update norm of the state files.
    let leaf = |t: u64| {
        let pre = Safetensors::open(state_path(&dir, t - 1)).unwrap();
        let post = Safetensors::open(state_path(&dir, t)).unwrap();
        let update_norm = protocol::update_norm(&pre, &post, "param/").unwrap();
        let stats_digest = pot::StateStats::of(&post, 1).unwrap().digest();
        StepLeaf { run_id, step: t, state_digest: states[t as usize], stats_digest, loss: 1.0 / t as f64, update_norm }
    };
    for t in 1..=STEPS {
        assert_eq!(log.append(&leaf(t).encode().unwrap()).unwrap(), t - 1);
    }
    let log_root = log.root(STEPS).unwrap();
    // The run record (check 32): every leaf, every table, the flagged steps.
    let leaves: Vec<u8> = (1..=STEPS).flat_map(|t| leaf(t).encode().unwrap()).collect();
    let tables: Vec<pot::StateStats> = (1..=STEPS)
        .map(|t| pot::StateStats::of(&Safetensors::open(state_path(&dir, t)).unwrap(), 1).unwrap())
        .collect();
    let flagged: Vec<u64> = pot::run_flags(&tables).unwrap().iter().map(|s| s.step).collect();
    let table_bytes: Vec<&[u8]> = tables.iter().map(|t| t.as_bytes()).collect();

    let mut manifests = Vec::new();
    for t in protocol::challenge_derive(b"beacon", &run_id, STEPS, 2).unwrap() {
        let mut o = Opening::new(&run_id, t, STEPS, &states[t as usize - 1]).unwrap();
        if t > 1 {
            let pre = leaf(t - 1);
            o.set_pre_leaf(&pre.encode().unwrap(), &log.inclusion_proof(t - 2, STEPS).unwrap()).unwrap();
        }
        let post = leaf(t);
        o.set_post_leaf(&post.encode().unwrap(), &log.inclusion_proof(t - 1, STEPS).unwrap()).unwrap();
        let entry = sched.entry(t).unwrap();
        o.set_schedule(&entry, &schedule.inclusion_proof(t - 1, STEPS).unwrap()).unwrap();
        for index in ScheduleEntry::decode(&entry).unwrap().indices {
            o.add_sample(index, &samples[index as usize], &dataset.inclusion_proof(index, SAMPLES).unwrap()).unwrap();
        }
        o.set_state_refs(Some(&format!("state-{}.safetensors", t - 1)), None).unwrap();
        o.set_run_record(&leaves, &table_bytes, &flagged).unwrap();
        let manifest = o.encode().unwrap();
        assert_ne!(o.digest().unwrap(), sha256(&manifest).unwrap()); // tagged, not plain
        manifests.push((t, manifest));
    }
    Run { dir, commitment, log_root, states, manifests }
}

fn verify(run: &Run, t: u64, manifest: &[u8]) -> Result<(), OpeningFailure> {
    let (pre, post) = (state_path(&run.dir, t - 1), state_path(&run.dir, t));
    verify_opening(&run.commitment, t, STEPS, &run.log_root, manifest, Some(&pre), Some(&post), 1)
}

#[test]
fn honest_openings_pass() {
    let run = mine();
    assert_eq!(run.manifests.len(), 2);
    for (t, manifest) in &run.manifests {
        verify(&run, *t, manifest).unwrap();
        // Without the state files, everything but their digests is checked.
        verify_opening(&run.commitment, *t, STEPS, &run.log_root, manifest, None, None, 0).unwrap();
    }
}

#[test]
fn tampering_is_caught_at_the_right_check() {
    let run = mine();
    let (t, manifest) = &run.manifests[0];
    let t = *t;

    let f = verify_opening(&run.commitment, t, STEPS, &Digest::new([9; 32]), manifest, None, None, 1).unwrap_err();
    assert_eq!(f.check, Some(OpeningCheck::PostLeafProof));
    assert_eq!(f.error.kind(), ErrorKind::ProofMismatch);
    assert!(f.to_string().contains("post_leaf_proof"));

    let f = verify_opening(&run.commitment, t, STEPS, &run.log_root, &manifest[1..], None, None, 1).unwrap_err();
    assert_eq!(f.check, Some(OpeningCheck::Manifest));

    // The run sealed on the ledger with none (this smooth run flags none):
    // the same; a ledger naming step 2 fails every opening at check 32.
    let mut sealed = Commitment::decode(&run.commitment.encode().unwrap()).unwrap();
    sealed.set_sealed_flags(&[]).unwrap();
    verify_opening(&sealed, t, STEPS, &run.log_root, manifest, None, None, 1).unwrap();
    sealed.set_sealed_flags(&[2]).unwrap();
    let f = verify_opening(&sealed, t, STEPS, &run.log_root, manifest, None, None, 1).unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::RunFlags), ErrorKind::ProofMismatch));
    assert!(f.error.message().contains("the run sealed on the ledger with 2"), "{f}");
    assert_eq!(sealed.set_sealed_flags(&[3, 2]).unwrap_err().kind(), ErrorKind::InvalidArgument);

    // A valid opening of another step does not answer this challenge.
    let (other, other_manifest) = &run.manifests[1];
    let f = verify_opening(&run.commitment, t, STEPS, &run.log_root, other_manifest, None, None, 1).unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::Step), ErrorKind::ProofMismatch));
    assert!(f.error.message().contains(&format!("step {other}")), "{f}");
    // ... even with states that match it: the step check comes first.
    let (pre, post) = (state_path(&run.dir, other - 1), state_path(&run.dir, *other));
    let f = verify_opening(&run.commitment, t, STEPS, &run.log_root, other_manifest, Some(&pre), Some(&post), 1);
    assert_eq!(f.unwrap_err().check, Some(OpeningCheck::Step));
    // A step past the run is refused whatever the manifest.
    let f = verify_opening(&run.commitment, STEPS + 1, STEPS, &run.log_root, manifest, None, None, 1).unwrap_err();
    assert_eq!(f.check, Some(OpeningCheck::Step));

    // A rewritten post-state file.
    write_vector(&state_path(&run.dir, t), "param/w", &[1.0, 2.0, 3.0, 4.0]);
    let f = verify(&run, t, manifest).unwrap_err();
    assert_eq!(f.check, Some(OpeningCheck::PostStateDigest));
    assert_eq!(f.error.kind(), ErrorKind::ProofMismatch);
    // A missing pre-state file.
    std::fs::remove_file(state_path(&run.dir, t - 1)).unwrap();
    let f = verify(&run, t, manifest).unwrap_err();
    assert_eq!((f.check, f.error.kind()), (Some(OpeningCheck::PreStateDigest), ErrorKind::Io));
}

#[test]
fn witnesses_replay_and_decide() {
    let run = mine();
    let (t, _) = run.manifests[0];
    let run_id = run.commitment.run_id().unwrap();
    let opened = run.states[t as usize];
    let pre = Safetensors::open(state_path(&run.dir, t - 1)).unwrap();
    let post = Safetensors::open(state_path(&run.dir, t)).unwrap();
    let norm = protocol::update_norm(&pre, &post, "").unwrap();
    assert!(norm > 0.0);
    let bucket = protocol::norm_bucket(norm, 16).unwrap();

    let mut verdict = Verdict::new(WitnessMode::Bitwise, 2).unwrap();
    for who in [&b"alice"[..], b"bob", b"carol"] {
        let replayed = if who == b"carol" { Digest::new([0xee; 32]) } else { opened };
        let salt = witness::salt().unwrap();
        let st = format!(
            r#"{{"run_id": "{run_id}", "step": {t}, "challenge_id": 1, "mode": "bitwise", "kind": "replayed",
                "replayed_state": "{replayed}", "bucket": {bucket}, "gradient_digest": "{replayed}", "environment":
                {{"framework_version": "1.13.0", "intra_op_threads": 1, "hardware_class": "cpu"}}}}"#
        );
        let c = witness::commitment(&st, &salt, who).unwrap();
        witness::verify_reveal(&c, &st, &salt, who).unwrap();
        verdict.add_reveal(who, &replayed, bucket).unwrap();
    }
    let d = verdict.decide(&opened, None).unwrap();
    assert_eq!((d.outcome, d.cluster_size), (VerdictOutcome::Pass, 2));
    let d = verdict.decide(&Digest::new([1; 32]), None).unwrap();
    assert_eq!(d.outcome, VerdictOutcome::Fail);
    assert_eq!(verdict.reason(), d.reason);
}
