//! Failure paths: each returns the documented ErrorKind and a message.

mod common;

use common::TempDir;
use pot::merkle::{leaf_hash, verify_consistency, verify_inclusion};
use pot::{Commitment, Digest, Dtype, ErrorKind, Ledger, LedgerConfig, Log, Safetensors, Spec, State, Tree, protocol};

fn kind<T: std::fmt::Debug>(r: pot::Result<T>) -> ErrorKind {
    let e = r.unwrap_err();
    assert!(!e.message().is_empty(), "{e:?} has an empty message");
    assert!(e.to_string().starts_with(e.kind().name()));
    e.kind()
}

#[test]
fn malformed_hex() {
    for bad in ["", "00", "zz", &"0".repeat(63), &"0".repeat(66), &format!("{}xy", "0".repeat(62))] {
        assert_eq!(kind(bad.parse::<Digest>()), ErrorKind::Malformed, "{bad:?}");
    }
    assert_eq!(kind(Digest::from_slice(&[0; 33])), ErrorKind::Malformed);
}

#[test]
fn proofs_of_the_wrong_length() {
    let mut tree = Tree::in_memory().unwrap();
    for i in 0u8..5 {
        tree.append(&[i]).unwrap();
    }
    let root = tree.root(5).unwrap();
    let leaf = leaf_hash(&[2]).unwrap();
    let proof = tree.inclusion_proof(2, 5).unwrap();
    verify_inclusion(2, 5, &leaf, &proof, &root).unwrap();
    // One hash too few, one too many: POT_E_PROOF_LENGTH.
    assert_eq!(kind(verify_inclusion(2, 5, &leaf, &proof[32..], &root)), ErrorKind::ProofLength);
    let mut longer = proof.clone();
    longer.extend_from_slice(&[0; 32]);
    assert_eq!(kind(verify_inclusion(2, 5, &leaf, &longer, &root)), ErrorKind::ProofLength);
    // Not a multiple of 32 bytes: malformed; more than 128 hashes: limit.
    assert_eq!(kind(verify_inclusion(2, 5, &leaf, &proof[1..], &root)), ErrorKind::Malformed);
    assert_eq!(kind(verify_inclusion(2, 5, &leaf, &[0; 32 * 129], &root)), ErrorKind::Limit);
    // Right length, wrong hashes: mismatch. Index past the size: out of range.
    let mut flipped = proof.clone();
    flipped[0] ^= 1;
    assert_eq!(kind(verify_inclusion(2, 5, &leaf, &flipped, &root)), ErrorKind::ProofMismatch);
    assert_eq!(kind(verify_inclusion(5, 5, &leaf, &proof, &root)), ErrorKind::OutOfRange);

    let c = tree.consistency_proof(2, 5).unwrap();
    let root2 = tree.root(2).unwrap();
    verify_consistency(2, 5, &root2, &root, &c).unwrap();
    assert_eq!(kind(verify_consistency(2, 5, &root2, &root, &c[32..])), ErrorKind::ProofLength);
    assert_eq!(kind(verify_consistency(2, 5, &root2, &root, &[])), ErrorKind::ProofLength);
    assert_eq!(kind(verify_consistency(0, 5, &root2, &root, &c)), ErrorKind::OutOfRange);
    assert_eq!(kind(verify_consistency(5, 2, &root, &root2, &c)), ErrorKind::OutOfRange);
    // The tree refuses proofs for sizes it does not have.
    assert_eq!(kind(tree.inclusion_proof(0, 6)), ErrorKind::OutOfRange);
    assert_eq!(kind(tree.consistency_proof(0, 5)), ErrorKind::OutOfRange);
    assert_eq!(kind(tree.root(6)), ErrorKind::OutOfRange);
}

#[test]
fn tensors_and_states() {
    assert_eq!(kind(pot::tensor_digest("w", Dtype::F32, &[2], &[0; 7], 1)), ErrorKind::InvalidArgument);
    assert_eq!(kind(pot::tensor_digest("", Dtype::U8, &[1], &[0], 1)), ErrorKind::InvalidArgument);
    assert_eq!(kind(pot::tensor_digest("a\0b", Dtype::U8, &[1], &[0], 1)), ErrorKind::InvalidArgument);
    assert_eq!(
        kind(pot::tensor_digest(&"n".repeat(pot::MAX_NAME_BYTES + 1), Dtype::U8, &[1], &[0], 1)),
        ErrorKind::Limit
    );
    assert_eq!(kind(pot::tensor_digest("w", Dtype::U8, &[1; 33], &[0], 1)), ErrorKind::Limit);
    assert_eq!(kind(Dtype::from_name("F8")), ErrorKind::Unsupported);

    let mut s = State::new().unwrap();
    s.add_tensor("x", Dtype::U8, &[1], &[0]).unwrap();
    assert_eq!(kind(s.add_tensor("x", Dtype::U8, &[1], &[0])), ErrorKind::Duplicate);
    assert_eq!(kind(s.tensor_proof("y")), ErrorKind::NotFound);
    let root = s.digest().unwrap();
    assert_eq!(kind(State::verify_tensor(&root, &root, b"junk")), ErrorKind::Malformed);
    assert_eq!(kind(pot::chunk_range_hash(&[0; 10], 1, 20, 1)), ErrorKind::InvalidArgument);
}

#[test]
fn files() {
    let dir = TempDir::new("errors");
    assert_eq!(kind(Safetensors::open(dir.path("missing.safetensors"))), ErrorKind::Io);
    std::fs::write(dir.path("garbage.safetensors"), b"\x08\x00\x00\x00\x00\x00\x00\x00not json").unwrap();
    assert_eq!(kind(Safetensors::open(dir.path("garbage.safetensors"))), ErrorKind::Malformed);
    assert_eq!(kind(pot::safetensors::digest_file(dir.path("garbage.safetensors"), 1)), ErrorKind::Malformed);
    std::fs::write(dir.path("foreign.tree"), b"this is not a tree file at all").unwrap();
    assert_eq!(kind(Tree::open(dir.path("foreign.tree"))), ErrorKind::Malformed);
    assert_eq!(kind(Tree::open(dir.path("no/such/dir/t.tree"))), ErrorKind::Io);
}

#[test]
fn decoders() {
    assert_eq!(kind(Log::load(&[1, 0, 0, 0, 0, 0, 0, 0])), ErrorKind::Malformed);
    assert_eq!(kind(Spec::from_json("not json")), ErrorKind::Malformed);
    assert_eq!(kind(Spec::from_json(r#"{"framework": 1}"#)), ErrorKind::InvalidArgument);
    assert_eq!(kind(Spec::decode(&[0x0a])), ErrorKind::Malformed);
    assert_eq!(kind(Spec::decode(&[0; 65537])), ErrorKind::Limit);
    assert_eq!(kind(Commitment::from_json("[]")), ErrorKind::InvalidArgument);
    assert_eq!(kind(Commitment::decode(&[0xff, 0xff])), ErrorKind::Malformed);
    assert_eq!(kind(pot::StepLeaf::decode(&[0; 59])), ErrorKind::Malformed);
    assert_eq!(kind(pot::ScheduleEntry::decode(b"")), ErrorKind::Malformed);
    assert_eq!(kind(pot::sample_digest(b"")), ErrorKind::Malformed);
    assert_eq!(kind(Ledger::load(b"")), ErrorKind::Malformed);
}

#[test]
fn protocol_arguments() {
    let run = Digest::new([3; 32]);
    assert_eq!(kind(protocol::challenge_derive(b"b", &run, 0, 1)), ErrorKind::InvalidArgument);
    assert_eq!(kind(protocol::challenge_derive(b"b", &run, 3, 4)), ErrorKind::InvalidArgument);
    assert_eq!(kind(protocol::challenge_derive(b"", &run, 3, 1)), ErrorKind::InvalidArgument);
    assert_eq!(kind(protocol::challenge_derive(&[1; 1025], &run, 3, 1)), ErrorKind::Limit);
    assert_eq!(kind(protocol::challenge_derive(b"b", &run, u64::MAX, 65537)), ErrorKind::Limit);
    assert_eq!(kind(protocol::challenge_derive(b"b", &run, u64::MAX, usize::MAX)), ErrorKind::Limit);
    assert_eq!(kind(protocol::challenges_needed(100, 1, 1.5)), ErrorKind::InvalidArgument);
    assert_eq!(kind(protocol::norm_bucket(-1.0, 4)), ErrorKind::InvalidArgument);
    assert_eq!(kind(protocol::norm_bucket(1.0, 0)), ErrorKind::InvalidArgument);
    assert_eq!(
        kind(
            pot::StepLeaf { run_id: run, step: 0, state_digest: run, stats_digest: run, loss: 0.0, update_norm: 0.0 }
                .encode()
        ),
        ErrorKind::InvalidArgument
    );
    let st = format!(
        r#"{{"run_id": "{run}", "step": 1, "challenge_id": 0, "mode": "bitwise", "kind": "unavailable",
            "environment": {{"framework_version": "1.13", "intra_op_threads": 1, "hardware_class": "cpu"}}}}"#
    );
    assert_eq!(kind(pot::witness::commitment(&st, &[0; 15], b"id")), ErrorKind::InvalidArgument);
    assert_eq!(kind(pot::witness::commitment(&st, &[0; 16], b"")), ErrorKind::InvalidArgument);
    assert_eq!(kind(pot::witness::commitment("{\"run_id\":", &[0; 16], b"id")), ErrorKind::Malformed);
    let v1 = format!(r#"{{"run_id": "{run}", "step": 1, "replayed_state": "{run}", "bucket": 0}}"#);
    assert_eq!(kind(pot::witness::commitment(&v1, &[0; 16], b"id")), ErrorKind::InvalidArgument);
}

#[test]
fn verdict_and_ledger() {
    let mut v = pot::Verdict::new(pot::WitnessMode::Bitwise, 1).unwrap();
    v.add_reveal(b"a", &Digest::default(), 0).unwrap();
    v.add_reveal(b"a", &Digest::default(), 0).unwrap();
    assert_eq!(kind(v.decide(&Digest::default(), None)), ErrorKind::InvalidArgument);
    let mut nb = pot::Verdict::new(pot::WitnessMode::NormBucket, 1).unwrap();
    nb.add_reveal(b"a", &Digest::default(), 0).unwrap();
    assert_eq!(kind(nb.decide(&Digest::default(), None)), ErrorKind::InvalidArgument);
    assert_eq!(kind(pot::Verdict::new(pot::WitnessMode::Bitwise, 0)), ErrorKind::InvalidArgument);

    let mut ledger = Ledger::new(LedgerConfig {
        draw_delay: 1,
        opening_window: 1,
        commit_window: 1,
        reveal_window: 1,
        max_committee_size: 1,
        min_stake: 1,
        max_rounds: 1,
        max_attempts: 1,
        dispute_window: 1,
        dispute_arity: 2,
        task_bond: 1,
        miner_bond: 1,
        dispute_bond: 1,
        max_task_blocks: 1,
        max_open_tasks: 1,
        miner_grace: 0,
    })
    .unwrap();
    assert_eq!(kind(ledger.apply("{")), ErrorKind::Malformed);
    assert_eq!(kind(ledger.apply(r#"{"call": "no_such_call"}"#)), ErrorKind::InvalidArgument);
    assert_eq!(kind(ledger.apply("{\"call\": \"run_info\"}\0")), ErrorKind::InvalidArgument);
    let too_long = " ".repeat(pot::MAX_JSON_BYTES) + "{}";
    assert_eq!(kind(ledger.apply(&too_long)), ErrorKind::Limit);
}

#[test]
fn losscheck_parameters() {
    let mut p = pot::LossCheckParams::new().unwrap();
    for (param, bad) in [
        (pot::LossCheckParam::Window, 0.0),
        (pot::LossCheckParam::DecreaseTolerance, 1.0),
        (pot::LossCheckParam::MaxDrop, 0.0),
        (pot::LossCheckParam::FrozenMinSteps, 1.0),
        (pot::LossCheckParam::MaxFlags, 0.5),
    ] {
        let before = p.get(param).unwrap();
        assert_eq!(kind(p.set(param, bad)), ErrorKind::InvalidArgument, "{param:?} = {bad}");
        assert_eq!(p.get(param).unwrap(), before);
    }
}

#[test]
fn opening_failure_converts_into_error() {
    fn verify(c: &Commitment) -> pot::Result<()> {
        pot::verify_opening(c, 1, 1, &Digest::default(), b"", None, None, 1)?;
        Ok(())
    }
    let json = format!(
        r#"{{"initial_state_digest": "{0}", "schedule_root": "{0}", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "{0}",
            "dataset_size": 1, "spec_digest": "{0}", "declared_steps": 1, "miner_identity": "6d"}}"#,
        "0".repeat(64)
    );
    let c = Commitment::from_json(&json).unwrap();
    let failure = pot::verify_opening(&c, 1, 1, &Digest::default(), b"\xff", None, None, 1).unwrap_err();
    assert_eq!(failure.check, Some(pot::OpeningCheck::Manifest));
    assert_eq!(kind(verify(&c)), failure.error.kind());
    // A path with a NUL is refused before any check runs.
    let bad = std::path::Path::new("a\0b");
    let failure = pot::verify_opening(&c, 1, 1, &Digest::default(), b"", Some(bad), None, 1).unwrap_err();
    assert_eq!((failure.check, failure.error.kind()), (None, ErrorKind::InvalidArgument));
}

#[test]
fn bytes_that_are_no_statistics_table() {
    assert_eq!(kind(pot::StateStats::decode(&[1])), ErrorKind::Malformed);
    // A count of 2^21 tensors: past the bound, refused before reading on.
    assert_eq!(kind(pot::StateStats::decode(&[0, 0, 0x20, 0])), ErrorKind::Limit);
    // An empty table is a state of no tensors.
    let empty = pot::StateStats::decode(&[0, 0, 0, 0]).unwrap();
    assert!(empty.tensors().unwrap().is_empty());
    assert!(pot::state_flags(&empty, &empty).unwrap().is_empty());
}
