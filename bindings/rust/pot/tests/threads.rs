//! Threads: handles are Send (each thread its own), and the read-only ones
//! pot.h allows to share (Safetensors, Spec, Commitment, Tree reads) are Sync.

mod common;

use common::{TempDir, load, s, stream, u};
use pot::*;
use std::sync::Arc;
use std::thread;

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

/// Compiles only while `T` is not `Sync`: with `T: Sync` both impls apply
/// and the call is ambiguous (the `static_assertions` trick).
trait NotSync<A> {
    fn check() {}
}
impl<T: ?Sized> NotSync<()> for T {}
impl<T: ?Sized + Sync> NotSync<u8> for T {}

#[test]
fn send_and_sync_are_what_pot_h_allows() {
    assert_send::<State>();
    assert_send::<TensorAssembler>();
    assert_send::<Safetensors>();
    assert_send::<SafetensorsWriter<'static>>();
    assert_send::<Log>();
    assert_send::<Tree>();
    assert_send::<Spec>();
    assert_send::<Commitment>();
    assert_send::<Opening>();
    assert_send::<Verdict>();
    assert_send::<Ledger>();
    assert_send::<LossCheckParams>();
    assert_send::<Error>();

    assert_sync::<Safetensors>();
    assert_sync::<Spec>();
    assert_sync::<Commitment>();
    assert_sync::<Tree>();
    assert_sync::<Error>();

    <State as NotSync<_>>::check();
    <TensorAssembler as NotSync<_>>::check();
    <SafetensorsWriter<'static> as NotSync<_>>::check();
    <Log as NotSync<_>>::check();
    <Opening as NotSync<_>>::check();
    <Verdict as NotSync<_>>::check();
    <Ledger as NotSync<_>>::check();
    <LossCheckParams as NotSync<_>>::check();
}

#[test]
fn each_thread_with_its_own_handles() {
    let v = load("hash.json");
    let states = v["state_digests"].as_array().unwrap().clone();
    let tensors = v["tensor_digests"].as_array().unwrap().clone();
    let tensors = Arc::new(tensors);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (states, tensors) = (states.clone(), Arc::clone(&tensors));
            thread::spawn(move || {
                for sv in &states {
                    let mut state = State::new().unwrap();
                    state.set_threads(1).unwrap();
                    for name in sv["tensors"].as_array().unwrap() {
                        let tv = tensors.iter().find(|x| x["name"] == *name).unwrap();
                        let shape: Vec<u64> =
                            tv["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
                        let data = stream(s(tv, "seed"), u(tv, "nbytes") as usize);
                        state
                            .add_tensor(
                                name.as_str().unwrap(),
                                Dtype::from_name(s(tv, "dtype")).unwrap(),
                                &shape,
                                &data,
                            )
                            .unwrap();
                    }
                    assert_eq!(state.digest().unwrap().to_hex(), s(sv, "digest"), "thread {t}");
                }
                let mut log = Log::new().unwrap();
                let mut tree = Tree::in_memory().unwrap();
                for i in 0..(100 + t as u64) {
                    log.append(&i.to_le_bytes()).unwrap();
                    tree.append(&i.to_le_bytes()).unwrap();
                }
                assert_eq!(log.root().unwrap(), tree.root(tree.size()).unwrap());
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
                let e = ledger.apply(r#"{"call": "challenge_info", "challenge_id": 7}"#).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::NotFound);
                log.save().unwrap()
            })
        })
        .collect();
    let saved: Vec<Vec<u8>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (t, bytes) in saved.iter().enumerate() {
        assert_eq!(Log::load(bytes).unwrap().size(), 100 + t as u64);
    }
}

#[test]
fn a_handle_moves_to_another_thread() {
    let mut state = State::new().unwrap();
    state.add_tensor("a", Dtype::U8, &[1], &[1]).unwrap();
    let here = state.digest().unwrap();
    let there = thread::spawn(move || {
        state.add_tensor("b", Dtype::U8, &[1], &[2]).unwrap();
        state
    })
    .join()
    .unwrap();
    assert_eq!(there.len(), 2);
    assert_ne!(there.digest().unwrap(), here);
}

#[test]
fn shared_tree_reads() {
    let mut tree = Tree::in_memory().unwrap();
    for i in 0u32..300 {
        tree.append(&i.to_le_bytes()).unwrap();
    }
    let tree = &tree; // shared, read-only: &Tree is Send because Tree is Sync
    let root = tree.root(300).unwrap();
    thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                for index in (t..300).step_by(4) {
                    let proof = tree.inclusion_proof(index, 300).unwrap();
                    let leaf = tree.leaf_hash(index).unwrap();
                    merkle::verify_inclusion(index, 300, &leaf, &proof, &root).unwrap();
                    let size1 = index + 1;
                    let c = tree.consistency_proof(size1, 300).unwrap();
                    merkle::verify_consistency(size1, 300, &tree.root(size1).unwrap(), &root, &c).unwrap();
                }
            });
        }
    });
}

#[test]
fn shared_read_only_handles() {
    let dir = TempDir::new("threads");
    let path = dir.path("state.safetensors");
    let big = stream("big", 1 << 20);
    let small = stream("small", 1000);
    let mut w = SafetensorsWriter::new().unwrap();
    w.add("big", Dtype::U8, &[1 << 20], &big).unwrap();
    w.add("small", Dtype::U8, &[1000], &small).unwrap();
    w.write(&path).unwrap();
    drop(w);
    let file = Arc::new(Safetensors::open(&path).unwrap());
    let want = file.digest(1).unwrap();

    let v = load("protocol.json");
    let commitment = Arc::new(Commitment::from_json(&v["commitments"][0]["json"].to_string()).unwrap());
    let spec = Arc::new(Spec::from_json(&v["specs"][0]["json"].to_string()).unwrap());
    let (run_id, spec_digest) = (commitment.run_id().unwrap(), spec.digest().unwrap());

    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (file, commitment, spec) = (Arc::clone(&file), Arc::clone(&commitment), Arc::clone(&spec));
            thread::spawn(move || {
                for _ in 0..3 {
                    assert_eq!(file.digest(1).unwrap(), want);
                    let t = file.get("big").unwrap().unwrap();
                    assert_eq!(t.digest(1).unwrap(), tensor_digest("big", Dtype::U8, &[1 << 20], t.data, 1).unwrap());
                    assert_eq!(commitment.run_id().unwrap(), run_id);
                    assert_eq!(spec.digest().unwrap(), spec_digest);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
