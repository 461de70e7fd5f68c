//! The shared known-answer vectors of tests/vectors/*.json, which every
//! binding runs (docs/PROTOCOL.md defines what they pin).

mod common;

use common::*;
use pot::merkle::{leaf_hash, verify_consistency, verify_inclusion};
use pot::{
    Commitment, Digest, Dtype, ErrorKind, Ledger, LedgerConfig, Log, ScheduleEntry, SeededSchedule, Spec, State,
    StepLeaf, TensorAssembler, Tree, protocol,
};
use serde_json::{Value, json};

fn concat_hex(list: &[Value]) -> Vec<u8> {
    list.iter().flat_map(|h| unhex(h.as_str().unwrap())).collect()
}

fn is_hash(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.len() == 64)
}

// ---------------------------------------------------------------- rfc6962

#[test]
fn rfc6962_roots_from_the_leaf_inputs() {
    let v = load("rfc6962.json");
    let leaves: Vec<Vec<u8>> = arr(&v, "leaf_inputs").iter().map(|l| unhex(s(l, "hex"))).collect();
    let mut tree = Tree::in_memory().unwrap();
    let mut log = Log::new().unwrap();
    assert_eq!(tree.root(0).unwrap(), digest(&v["empty_tree_root"], "hex"));
    assert_eq!(log.root().unwrap(), digest(&v["empty_tree_root"], "hex"));
    let roots = arr(&v, "roots");
    for (i, leaf) in leaves.iter().enumerate() {
        assert_eq!(tree.append(leaf).unwrap(), i as u64);
        log.append(leaf).unwrap();
        let want = roots.iter().find(|r| u(r, "tree_size") == i as u64 + 1).expect("a root per size");
        assert_eq!(log.root().unwrap(), digest(want, "hex"), "log root of {} leaves", i + 1);
    }
    for r in roots {
        assert_eq!(tree.root(u(r, "tree_size")).unwrap(), digest(r, "hex"), "tree root {r}");
    }
    // Every complete subtree is the root of a tree of just its leaves.
    for n in arr(&v, "node_hashes") {
        let range = arr(n, "covers_leaves");
        let (lo, hi) = (range[0].as_u64().unwrap() as usize, range[1].as_u64().unwrap() as usize);
        let mut sub = Tree::in_memory().unwrap();
        for leaf in &leaves[lo..hi] {
            sub.append(leaf).unwrap();
        }
        assert_eq!(sub.root(sub.size()).unwrap(), digest(n, "hex"), "node {n}");
    }
    for k in arr(&v, "hasher_kats") {
        match s(k, "op") {
            "empty_root" => assert_eq!(pot::sha256(b"").unwrap(), digest(k, "hex")),
            "leaf" => assert_eq!(leaf_hash(&unhex(s(k, "data_hex"))).unwrap(), digest(k, "hex")),
            // The C API hashes 32-byte children only; these KATs use short ones.
            "children" => {}
            op => panic!("unknown KAT op {op}"),
        }
    }
}

#[test]
fn rfc6962_tree_proofs_equal_the_published_ones() {
    let v = load("rfc6962.json");
    let mut tree = Tree::in_memory().unwrap();
    for l in arr(&v, "leaf_inputs") {
        tree.append(&unhex(s(l, "hex"))).unwrap();
    }
    let mut n = 0;
    for p in arr(&v, "inclusion_proofs") {
        let (index, size) = (u(p, "leaf_index"), u(p, "tree_size"));
        let want = concat_hex(arr(p, "proof"));
        assert_eq!(tree.inclusion_proof(index, size).unwrap(), want, "inclusion {index}/{size}");
        let leaf = leaf_hash(&unhex(s(p, "leaf_input_hex"))).unwrap();
        verify_inclusion(index, size, &leaf, &want, &digest(p, "root")).unwrap();
        n += 1;
    }
    for p in arr(&v, "consistency_proofs") {
        let (size1, size2) = (u(p, "size1"), u(p, "size2"));
        let want = concat_hex(arr(p, "proof"));
        assert_eq!(tree.consistency_proof(size1, size2).unwrap(), want, "consistency {size1}->{size2}");
        verify_consistency(size1, size2, &digest(p, "root1"), &digest(p, "root2"), &want).unwrap();
        n += 1;
    }
    assert_eq!(n, 7 + 5);
}

#[test]
fn rfc6962_verifier_probes() {
    let v = load("rfc6962.json");
    let probes = &v["verifier_probes"];
    let (mut ran, mut total) = (0, 0);
    for p in arr(probes, "inclusion") {
        total += 1;
        // The C API takes 32-byte digests: probes with other lengths cannot be expressed.
        if !(is_hash(&p["leaf_hash"]) && is_hash(&p["root"]) && arr(p, "proof").iter().all(is_hash)) {
            continue;
        }
        ran += 1;
        let r = verify_inclusion(
            u(p, "leaf_index"),
            u(p, "tree_size"),
            &digest(p, "leaf_hash"),
            &concat_hex(arr(p, "proof")),
            &digest(p, "root"),
        );
        assert_eq!(r.is_err(), p["want_error"].as_bool().unwrap(), "inclusion probe {}: {r:?}", s(p, "desc"));
        if let Err(e) = r {
            assert!(!e.message().is_empty());
        }
    }
    for p in arr(probes, "consistency") {
        total += 1;
        if !(is_hash(&p["root1"]) && is_hash(&p["root2"]) && arr(p, "proof").iter().all(is_hash)) {
            continue;
        }
        ran += 1;
        let r = verify_consistency(
            u(p, "size1"),
            u(p, "size2"),
            &digest(p, "root1"),
            &digest(p, "root2"),
            &concat_hex(arr(p, "proof")),
        );
        assert_eq!(r.is_err(), p["want_error"].as_bool().unwrap(), "consistency probe {}: {r:?}", s(p, "desc"));
    }
    assert_eq!((ran, total), (143, 196));
}

// ---------------------------------------------------------------- hash

/// One entry of hash.json "tensor_digests", with its bytes generated.
struct TensorVector {
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    data: Vec<u8>,
    digest: Digest,
}

fn tensor_vectors(v: &Value) -> Vec<TensorVector> {
    arr(v, "tensor_digests")
        .iter()
        .map(|t| TensorVector {
            name: s(t, "name").to_owned(),
            dtype: Dtype::from_name(s(t, "dtype")).unwrap(),
            shape: arr(t, "shape").iter().map(|d| d.as_u64().unwrap()).collect(),
            data: stream(s(t, "seed"), u(t, "nbytes") as usize),
            digest: digest(t, "digest"),
        })
        .collect()
}

#[test]
fn hash_tensor_digests() {
    let v = load("hash.json");
    assert_eq!(u(&v, "chunk_size"), pot::CHUNK_SIZE as u64);
    let tensors = tensor_vectors(&v);
    assert_eq!(tensors.len(), 20);
    for t in &tensors {
        assert_eq!(pot::tensor_digest(&t.name, t.dtype, &t.shape, &t.data, 1).unwrap(), t.digest, "{}", t.name);
        // The digest does not depend on the thread count.
        assert_eq!(pot::tensor_digest(&t.name, t.dtype, &t.shape, &t.data, 0).unwrap(), t.digest, "{}", t.name);
    }
}

#[test]
fn hash_state_digests_and_tensor_proofs() {
    let v = load("hash.json");
    let tensors = tensor_vectors(&v);
    let by_name = |n: &str| tensors.iter().find(|t| t.name == n).unwrap();
    for sv in arr(&v, "state_digests") {
        let mut state = State::new().unwrap();
        state.set_threads(1).unwrap();
        let names: Vec<&str> = arr(sv, "tensors").iter().map(|n| n.as_str().unwrap()).collect();
        for n in &names {
            let t = by_name(n);
            state.add_tensor(n, t.dtype, &t.shape, &t.data).unwrap();
        }
        assert_eq!(state.len(), names.len());
        let root = state.digest().unwrap();
        assert_eq!(root, digest(sv, "digest"), "{}", s(sv, "comment"));
        for tp in arr(sv, "tensor_proofs") {
            let tensor = s(tp, "tensor");
            let proof = state.tensor_proof(tensor).unwrap();
            assert_eq!(hex(&proof), s(tp, "proof"), "proof of {tensor}");
            State::verify_tensor(&root, &by_name(tensor).digest, &proof).unwrap();
            if let Some(other) = names.iter().find(|n| **n != tensor) {
                let e = State::verify_tensor(&root, &by_name(other).digest, &proof).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ProofMismatch);
            }
        }
        // A state of digests computed elsewhere is the same state.
        let mut from_digests = State::new().unwrap();
        for n in &names {
            from_digests.add_tensor_digest(n, &by_name(n).digest).unwrap();
        }
        assert_eq!(from_digests.digest().unwrap(), root);
    }
}

#[test]
fn hash_chunk_ranges() {
    let v = load("hash.json");
    let tensors = tensor_vectors(&v);
    for c in arr(&v, "chunk_ranges") {
        let t = tensors.iter().find(|t| t.name == s(c, "tensor")).unwrap();
        let data = &t.data;
        let mut records = Vec::new();
        for r in arr(c, "records") {
            let (offset, length) = (u(r, "offset") as usize, u(r, "length") as usize);
            let record =
                pot::chunk_range_hash(&data[offset..offset + length], offset as u64, data.len() as u64, 1).unwrap();
            assert_eq!(hex(&record), s(r, "record"), "{} at {offset}", s(c, "comment"));
            records.push(record);
        }
        // Records may arrive in any order.
        for order in [false, true] {
            let mut asm = TensorAssembler::new(&t.name, t.dtype, &t.shape).unwrap();
            let mut rs: Vec<&Vec<u8>> = records.iter().collect();
            if order {
                rs.reverse();
            }
            for r in rs {
                asm.add(r).unwrap();
            }
            let got = asm.finish().unwrap();
            assert_eq!(got, digest(c, "digest"));
            assert_eq!(got, t.digest);
        }
    }
}

#[test]
fn hash_log_states() {
    let v = load("hash.json");
    for l in arr(&v, "log_states") {
        let n = u(l, "leaves");
        let mut log = Log::new().unwrap();
        let mut tree = Tree::in_memory().unwrap();
        for i in 0..n {
            log.append(&i.to_le_bytes()).unwrap();
            tree.append(&i.to_le_bytes()).unwrap();
        }
        assert_eq!(log.size(), n);
        assert_eq!(log.root().unwrap(), digest(l, "root"));
        assert_eq!(tree.root(n).unwrap(), digest(l, "root"));
        let saved = log.save().unwrap();
        assert_eq!(hex(&saved), s(l, "saved"));
        let resumed = Log::load(&saved).unwrap();
        assert_eq!((resumed.size(), resumed.root().unwrap()), (n, digest(l, "root")));
    }
}

#[test]
fn hash_state_stats_and_flags() {
    let v = load("hash.json");
    for sv in arr(&v, "state_stats") {
        let table = pot::StateStats::decode(&unhex(s(sv, "table"))).unwrap();
        assert_eq!(table.digest(), digest(sv, "digest"), "{sv}");
        assert_eq!(table.tensors().unwrap().len(), sv["rows"].as_array().unwrap().len());
    }
    let cases = arr(&v, "state_flags");
    assert!(cases.len() >= 4);
    for fv in cases {
        let before = pot::StateStats::decode(&unhex(s(fv, "before"))).unwrap();
        let after = pot::StateStats::decode(&unhex(s(fv, "after"))).unwrap();
        let got: Vec<Value> = pot::state_flags(&before, &after)
            .unwrap()
            .into_iter()
            .map(|f| json!({"rule": f.rule, "tensor": f.tensor, "before": f.before, "after": f.after}))
            .collect();
        assert_eq!(Value::Array(got), fv["flags"], "{}", s(fv, "comment"));
    }
    // The flagged steps of a run (pot_run_flags).
    for rv in arr(&v, "run_flags") {
        let tables: Vec<pot::StateStats> = rv["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| pot::StateStats::decode(&unhex(t.as_str().unwrap())).unwrap())
            .collect();
        let got: Vec<Value> = pot::run_flags(&tables)
            .unwrap()
            .into_iter()
            .map(|st| {
                let flags: Vec<Value> = st
                    .flags
                    .into_iter()
                    .map(|f| json!({"rule": f.rule, "tensor": f.tensor, "before": f.before, "after": f.after}))
                    .collect();
                json!({"step": st.step, "flags": flags})
            })
            .collect();
        assert_eq!(Value::Array(got), rv["flagged"], "{}", s(rv, "comment"));
    }
}

// ---------------------------------------------------------------- protocol

#[test]
fn protocol_seeds_leaves_challenges() {
    let v = load("protocol.json");
    for sd in arr(&v, "seeds") {
        let run = digest(sd, "run_id");
        assert_eq!(protocol::seed_derive(u(sd, "base_seed"), &run, u(sd, "step")).unwrap(), u(sd, "seed"), "{sd}");
    }
    for l in arr(&v, "step_leaves") {
        let bits = u64::from_le_bytes(unhex(s(l, "loss_bits")).try_into().unwrap());
        let norm_bits = u64::from_le_bytes(unhex(s(l, "update_norm_bits")).try_into().unwrap());
        let leaf = StepLeaf {
            run_id: digest(l, "run_id"),
            step: u(l, "step"),
            state_digest: digest(l, "state_digest"),
            stats_digest: digest(l, "stats_digest"),
            loss: f64::from_bits(bits),
            update_norm: f64::from_bits(norm_bits),
        };
        let bytes = leaf.encode().unwrap();
        assert_eq!(hex(&bytes), s(l, "leaf"), "{}", s(l, "comment"));
        assert_eq!(leaf_hash(&bytes).unwrap(), digest(l, "leaf_hash"));
        let back = StepLeaf::decode(&bytes).unwrap();
        assert_eq!(
            (back.run_id, back.step, back.state_digest, back.loss.to_bits(), back.update_norm.to_bits()),
            (leaf.run_id, leaf.step, leaf.state_digest, bits, norm_bits)
        );
    }
    for c in arr(&v, "challenges") {
        let steps = protocol::challenge_derive(
            &unhex(s(c, "beacon")),
            &digest(c, "run_id"),
            u(c, "num_steps"),
            u(c, "rounds") as usize,
        )
        .unwrap();
        let want: Vec<u64> = arr(c, "steps").iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(steps, want, "{}", s(c, "comment"));
    }
}

#[test]
fn protocol_detection_and_norm_buckets() {
    let v = load("protocol.json");
    for d in arr(&v, "detection") {
        let (steps, forged, k) = (u(d, "steps"), u(d, "forged"), u(d, "challenges"));
        let p = protocol::detection_probability(steps, forged, k).unwrap();
        let want = d["probability"].as_f64().unwrap();
        assert!((p - want).abs() < 1e-12, "{d}: {p}");
        // challenges_needed is the smallest k reaching that probability.
        let needed = protocol::challenges_needed(steps, forged, want * (1.0 - 1e-12)).unwrap();
        assert!(needed <= k, "{d}: needed {needed}");
    }
    for b in arr(&v, "norm_buckets") {
        let norm = b["norm"].as_f64().unwrap();
        let resolution = u(b, "resolution") as u32;
        assert_eq!(protocol::norm_bucket(norm, resolution).unwrap(), i(b, "bucket"), "{b}");
    }
    assert_eq!(protocol::norm_bucket(0.0, 8).unwrap(), protocol::norm_bucket_zero());
    assert!(
        protocol::norm_buckets_match(5, 6) && protocol::norm_buckets_match(6, 5) && protocol::norm_buckets_match(5, 5)
    );
    assert!(!protocol::norm_buckets_match(5, 7));
    let zero = protocol::norm_bucket_zero();
    assert!(protocol::norm_buckets_match(zero, zero) && !protocol::norm_buckets_match(zero, zero + 1));
}

#[test]
fn protocol_specs() {
    let v = load("protocol.json");
    for sp in arr(&v, "specs") {
        let spec = Spec::from_json(&sp["json"].to_string()).unwrap();
        assert_eq!(hex(&spec.encode().unwrap()), s(sp, "canonical"));
        assert_eq!(spec.digest().unwrap(), digest(sp, "digest"));
        let decoded = Spec::decode(&unhex(s(sp, "canonical"))).unwrap();
        assert_eq!(decoded.digest().unwrap(), digest(sp, "digest"));
        let again = Spec::from_json(&decoded.to_json().unwrap()).unwrap();
        assert_eq!(again.digest().unwrap(), digest(sp, "digest"));
        let json = &sp["json"];
        // Absent under the reproducible arithmetic (PROTOCOL.md 14.6): 0.
        assert_eq!(spec.intra_op_threads() as u64, json["intra_op_threads"].as_u64().unwrap_or(0));
        assert_eq!(spec.norm_bucket_resolution() as u64, u(json, "norm_bucket_resolution"));
        // Parameter groups (PROTOCOL.md 14.5): without a schedule each
        // group's rate is its optimizer's lr.
        let groups = json["param_groups"].as_array().cloned().unwrap_or_default();
        assert_eq!(spec.group_count() as usize, 1 + groups.len());
        for (g, grp) in groups.iter().enumerate() {
            let rates = spec.group_learning_rates(g as u32 + 1, 1, 2).unwrap();
            if json.get("lr_schedule").is_none() {
                let lr = grp["optimizer"]["lr"].as_f64().unwrap();
                assert_eq!(rates, [lr, lr]);
            }
        }
        assert_eq!(spec.group_learning_rates(spec.group_count(), 1, 1).unwrap_err().kind(), pot::ErrorKind::OutOfRange);
        let policy = spec.seed_policy().unwrap();
        match s(&json["seed_policy"], "kind") {
            "per_step" => {
                assert_eq!(policy, pot::SeedPolicy::PerStep { base_seed: u(&json["seed_policy"], "base_seed") })
            }
            "none" => assert_eq!(policy, pot::SeedPolicy::None),
            k => panic!("unexpected seed policy {k}"),
        }
    }
}

#[test]
fn protocol_learning_rates() {
    // Each schedule's rates, every kind and both tables, bit for bit (PROTOCOL.md 14.3).
    let v = load("protocol.json");
    let lrs = arr(&v, "learning_rates");
    assert!(lrs.len() >= 4);
    for lr in lrs {
        let spec = Spec::from_json(&v["specs"][u(lr, "spec") as usize]["json"].to_string()).unwrap();
        let want = arr(lr, "rates_le");
        let got = spec.group_learning_rates(u(lr, "group") as u32, u(lr, "first"), want.len()).unwrap();
        for (r, w) in got.iter().zip(want) {
            assert_eq!(hex(&r.to_le_bytes()), w.as_str().unwrap());
        }
    }
}

#[test]
fn protocol_tasks() {
    let v = load("protocol.json");
    let tasks = arr(&v, "tasks");
    assert!(!tasks.is_empty());
    for t in tasks {
        let task = pot::Task::from_json(&t["json"].to_string()).unwrap();
        assert_eq!(hex(&task.encode().unwrap()), s(t, "canonical"));
        assert_eq!(task.id().unwrap(), digest(t, "task_id"));
        let decoded = pot::Task::decode(&unhex(s(t, "canonical"))).unwrap();
        assert_eq!(decoded.id().unwrap(), digest(t, "task_id"));
        assert_eq!(pot::Task::from_json(&decoded.to_json().unwrap()).unwrap().id().unwrap(), digest(t, "task_id"));
        assert_eq!(
            task.spec().unwrap().digest().unwrap(),
            pot::Spec::from_json(&t["json"]["spec"].to_string()).unwrap().digest().unwrap()
        );
        // The vectors' commitments of this task answer to it; one with another S_0 does not.
        let mut own = 0;
        for c in arr(&v, "commitments") {
            let commitment = Commitment::from_json(&c["json"].to_string()).unwrap();
            if commitment.task_id().unwrap() != task.id().unwrap() {
                continue;
            }
            own += 1;
            task.check_commitment(&commitment).unwrap();
            let mut other = c["json"].clone();
            other["initial_state_digest"] = serde_json::Value::String("00".repeat(32));
            let other = Commitment::from_json(&other.to_string()).unwrap();
            let e = task.check_commitment(&other).unwrap_err();
            assert_eq!(e.kind(), pot::ErrorKind::InvalidArgument);
            assert!(e.message().contains("initial_state_digest"), "{}", e.message());
        }
        assert!(own > 0);
        // A run-seeded uniform task: each miner's commitment carries the
        // root of its own uniform draws (PROTOCOL.md 16.3).
        if task.run_seeded_uniform().unwrap() {
            assert!(task.run_seeded().unwrap());
            let spec = &t["json"]["spec"];
            let (n, batch) = (u(&t["json"], "dataset_size"), u(spec, "batch_size"));
            for c in arr(&v, "commitments") {
                if c["json"]["task_id"].as_str() != Some(&task.id().unwrap().to_hex()) {
                    continue;
                }
                let miner = unhex(s(&c["json"], "miner_identity"));
                let steps = c["json"]["declared_steps"].as_u64().unwrap();
                let seed = task.run_schedule_seed(&miner, steps).unwrap();
                let stream = pot::uniform_schedule_stream(seed, n, 0, (steps * batch) as usize).unwrap();
                let mut tree = pot::Tree::in_memory().unwrap();
                for (i, chunk) in stream.chunks(batch as usize).enumerate() {
                    let entry = pot::ScheduleEntry {
                        step: i as u64 + 1,
                        microbatch_sizes: vec![batch as u32],
                        indices: chunk.to_vec(),
                    };
                    tree.append(&entry.encode(n).unwrap()).unwrap();
                }
                assert_eq!(tree.root(steps).unwrap().to_hex(), s(&c["json"], "schedule_root"));
            }
        } else if task.run_seeded().unwrap() {
            // A run-seeded task gives each miner its own schedule seed and commitment.
            let seeds: Vec<_> =
                arr(&v, "run_schedule_seeds").iter().filter(|r| digest(r, "task_id") == task.id().unwrap()).collect();
            assert!(!seeds.is_empty());
            for r in seeds {
                let miner = unhex(s(r, "miner_identity"));
                let steps = r["declared_steps"].as_u64().unwrap();
                let seed = task.run_schedule_seed(&miner, steps).unwrap();
                assert_eq!(seed, r["seed"].as_u64().unwrap());
                let commitment = task.commitment(&miner, steps).unwrap();
                task.check_commitment(&commitment).unwrap();
                // The run's schedule, read in one pass, hashes to the root the task gives it.
                let spec = &t["json"]["spec"];
                let schedule = pot::SeededSchedule {
                    seed,
                    dataset_size: u(&t["json"], "dataset_size"),
                    batch_size: u(spec, "batch_size") as u32,
                    microbatches: spec.get("grad_accum_microbatches").map_or(1, |m| m.as_u64().unwrap()) as u32,
                };
                let mut tree = pot::Tree::in_memory().unwrap();
                for (i, mbs) in schedule.steps(steps).unwrap().into_iter().enumerate() {
                    let entry = pot::ScheduleEntry {
                        step: i as u64 + 1,
                        microbatch_sizes: mbs.iter().map(|m| m.len() as u32).collect(),
                        indices: mbs.concat(),
                    };
                    tree.append(&entry.encode(schedule.dataset_size).unwrap()).unwrap();
                }
                assert_eq!(tree.root(steps).unwrap(), commitment.digests().unwrap().schedule_root);
            }
        } else {
            assert_eq!(task.run_schedule_seed(b"m", 1).unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
        }
        let mut bytes = unhex(s(t, "canonical"));
        bytes[1] = 1; // protocol_version 1
        assert_eq!(pot::Task::decode(&bytes).unwrap_err().kind(), pot::ErrorKind::Unsupported);
    }
}

#[test]
fn protocol_commitments_and_schedules() {
    let v = load("protocol.json");
    for c in arr(&v, "commitments") {
        let commitment = Commitment::from_json(&c["json"].to_string()).unwrap();
        assert_eq!(hex(&commitment.encode().unwrap()), s(c, "canonical"));
        assert_eq!(commitment.run_id().unwrap(), digest(c, "run_id"));
        let decoded = Commitment::decode(&unhex(s(c, "canonical"))).unwrap();
        assert_eq!(decoded.run_id().unwrap(), digest(c, "run_id"));
        let json = &c["json"];
        assert_eq!(decoded.declared_steps(), u(json, "declared_steps"));
        assert_eq!(decoded.dataset_size(), u(json, "dataset_size"));
        let d = decoded.digests().unwrap();
        assert_eq!(d.initial_state, digest(json, "initial_state_digest"));
        assert_eq!(d.schedule_root, digest(json, "schedule_root"));
        assert_eq!(d.dataset_root, digest(json, "dataset_root"));
        assert_eq!(d.spec, digest(json, "spec_digest"));
        let again = Commitment::from_json(&decoded.to_json().unwrap()).unwrap();
        assert_eq!(again.run_id().unwrap(), digest(c, "run_id"));
    }
    for e in arr(&v, "schedule_entries") {
        let micro = arr(e, "microbatches");
        let entry = ScheduleEntry {
            step: u(e, "step"),
            indices: micro.iter().flat_map(|m| m.as_array().unwrap().iter().map(|x| x.as_u64().unwrap())).collect(),
            microbatch_sizes: micro.iter().map(|m| m.as_array().unwrap().len() as u32).collect(),
        };
        assert_eq!(hex(&entry.encode(0).unwrap()), s(e, "entry"));
        let decoded = ScheduleEntry::decode(&unhex(s(e, "entry"))).unwrap();
        assert_eq!(decoded, entry);
        let groups: Vec<Vec<u64>> = decoded.microbatches().map(<[u64]>::to_vec).collect();
        let want: Vec<Vec<u64>> =
            micro.iter().map(|m| m.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()).collect();
        assert_eq!(groups, want);
    }
    for ss in arr(&v, "seeded_schedules") {
        let sched = SeededSchedule {
            seed: u(ss, "seed"),
            dataset_size: u(ss, "dataset_size"),
            batch_size: u(ss, "batch_size") as u32,
            microbatches: u(ss, "microbatches") as u32,
        };
        let entries = arr(ss, "entries");
        assert_eq!(entries.len() as u64, u(ss, "steps"));
        let mut tree = Tree::in_memory().unwrap();
        for (i, want) in entries.iter().enumerate() {
            let entry = sched.entry(i as u64 + 1).unwrap();
            assert_eq!(hex(&entry), want.as_str().unwrap(), "entry {}", i + 1);
            tree.append(&entry).unwrap();
        }
        assert_eq!(sched.root(u(ss, "steps")).unwrap(), digest(ss, "root"));
        assert_eq!(tree.root(tree.size()).unwrap(), digest(ss, "root"));
    }
}

#[test]
fn protocol_witness_commitments() {
    let v = load("protocol.json");
    for w in arr(&v, "witness_commitments") {
        let st = w["statement"].to_string();
        let (salt, identity) = (unhex(s(w, "salt")), unhex(s(w, "identity")));
        let c = pot::witness::commitment(&st, &salt, &identity).unwrap();
        assert_eq!(c, digest(w, "commitment"), "{}", s(w, "comment"));
        pot::witness::verify_reveal(&c, &st, &salt, &identity).unwrap();
        // The same statement on another challenge does not open it.
        let mut other = w["statement"].clone();
        other["challenge_id"] = (u(&w["statement"], "challenge_id") + 1).into();
        let e = pot::witness::verify_reveal(&c, &other.to_string(), &salt, &identity).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ProofMismatch);
        let e = pot::witness::verify_reveal(&c, &st, &salt, b"someone else").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ProofMismatch);
    }
}

// ---------------------------------------------------------------- ledger

#[test]
fn ledger_transcript() {
    let v = load("ledger_transcript.json");
    let config = &v["config"];
    // The transcript's config names a referee: its disputes play the
    // operator phase (traces, node rounds, openings, the referee's ruling).
    let mut ledger = Ledger::with_referee(
        LedgerConfig {
            draw_delay: u(config, "draw_delay"),
            opening_window: u(config, "opening_window"),
            commit_window: u(config, "commit_window"),
            reveal_window: u(config, "reveal_window"),
            max_committee_size: u(config, "max_committee_size") as u32,
            min_stake: u(config, "min_stake"),
            max_rounds: u(config, "max_rounds") as u32,
            max_attempts: u(config, "max_attempts") as u32,
            dispute_window: u(config, "dispute_window"),
            dispute_arity: u(config, "dispute_arity") as u32,
            task_bond: u(config, "task_bond"),
            miner_bond: u(config, "miner_bond"),
            dispute_bond: u(config, "dispute_bond"),
            max_task_blocks: u(config, "max_task_blocks"),
            max_open_tasks: u(config, "max_open_tasks") as u32,
            miner_grace: u(config, "miner_grace"),
        },
        &unhex(s(config, "referee")),
    )
    .unwrap();
    let calls = arr(&v, "calls");
    let mut refused = 0;
    for (n, call) in calls.iter().enumerate() {
        let mut args = call.as_object().unwrap().clone();
        let expect = args.remove("expect").map_or("ok".to_owned(), |e| e.as_str().unwrap().to_owned());
        let want = args.remove("result");
        let before = ledger.save().unwrap();
        match ledger.apply(&Value::Object(args).to_string()) {
            Ok(result) => {
                assert_eq!(expect, "ok", "call {n} ({}) succeeded", s(call, "call"));
                let got: Value = serde_json::from_str(&result).unwrap();
                if let Some(want) = want {
                    assert_eq!(got, want, "call {n} result");
                }
            }
            Err(e) => {
                assert_eq!(e.kind().name(), expect, "call {n} ({}): {e}", s(call, "call"));
                assert!(!e.message().is_empty());
                if let Some(want) = want {
                    assert_eq!(s(&want, "status"), e.kind().name());
                    assert_eq!(s(&want, "message"), e.message());
                }
                // A refused call leaves the ledger exactly as it was.
                assert_eq!(ledger.save().unwrap(), before, "call {n} changed the state");
                refused += 1;
            }
        }
    }
    assert_eq!((calls.len(), refused), (134, 46));
    let state = ledger.save().unwrap();
    assert_eq!(pot::sha256(&state).unwrap(), digest(&v, "state_sha256"));
    // Save, load, save again: the same bytes.
    assert_eq!(Ledger::load(&state).unwrap().save().unwrap(), state);
}

/// Each finalization's outcome record, decoded from its bytes alone, says
/// what the finalize_challenge result said; a broken record is refused.
#[test]
fn outcome_records_decode() {
    let v = load("ledger_transcript.json");
    let finals: Vec<&Value> =
        arr(&v, "calls").iter().filter(|c| s(c, "call") == "finalize_challenge" && s(c, "expect") == "ok").collect();
    // Challenge 0 twice (a re-run), then step 1's challenge, never opened.
    assert_eq!(finals.len(), 3);
    for (c, (challenge, attempt)) in finals.iter().zip([(0, 1), (0, 2), (1, 1)]) {
        let r = &c["result"];
        let record = unhex(s(r, "outcome"));
        let o: Value = serde_json::from_str(&pot::ledger::decode_outcome(&record).unwrap()).unwrap();
        assert_eq!((u(c, "challenge_id"), u(&o, "challenge_id"), u(&o, "attempt")), (challenge, challenge, attempt));
        for key in
            ["verdict", "cause", "cluster_size", "cluster_stake", "minority", "silent", "misconfigured", "unreplayed"]
        {
            assert_eq!(o[key], r[key], "{key}");
        }
        let mut longer = record.clone();
        longer.push(0);
        assert_eq!(pot::ledger::decode_outcome(&longer).unwrap_err().kind(), pot::ErrorKind::Malformed);
    }
    assert_eq!(pot::ledger::decode_outcome(&vec![0u8; 266_351]).unwrap_err().kind(), pot::ErrorKind::Limit);
}

/// Each ended dispute's record (docs/PROTOCOL.md 20.2), decoded from its
/// bytes alone, says what the call that ended it said.
#[test]
fn dispute_records_decode() {
    let v = load("ledger_transcript.json");
    let ends: Vec<&Value> = arr(&v, "calls")
        .iter()
        .filter(|c| {
            // Any dispute call may end one: claims, traces, openings, rulings.
            s(c, "expect") == "ok" && c["result"]["ended"] == Value::Bool(true)
        })
        .map(|c| &c["result"])
        .collect();
    assert_eq!(ends.len(), 3);
    for r in &ends {
        let record = unhex(s(r, "record"));
        let d: Value = serde_json::from_str(&pot::ledger::decode_outcome(&record).unwrap()).unwrap();
        assert_eq!(d, r["outcome"]);
        let mut longer = record.clone();
        longer.push(0);
        assert_eq!(pot::ledger::decode_outcome(&longer).unwrap_err().kind(), pot::ErrorKind::Malformed);
    }
    let summary: Vec<(&Value, &Value, &Value)> =
        ends.iter().map(|r| (&r["outcome"]["end"], &r["outcome"]["rule"], &r["outcome"]["losers"])).collect();
    assert_eq!(
        summary,
        [
            (&json!("ruled"), &json!("source"), &json!(["challenger"])),
            (&json!("miner_default"), &Value::Null, &json!(["miner"])),
            (&json!("referee_ruled"), &json!("operator"), &json!(["challenger"])),
        ]
    );
}

#[test]
fn protocol_bisections() {
    let v = load("protocol.json");
    let cases = arr(&v, "bisection_points");
    assert!(cases.len() >= 8);
    for c in cases {
        let (lo, hi, k) = (u(c, "lo"), u(c, "hi"), u(c, "arity") as u32);
        let want: Vec<u64> = arr(c, "points").iter().map(|p| p.as_u64().unwrap()).collect();
        assert_eq!(pot::dispute::points(lo, hi, k).unwrap(), want, "{c}");
        assert_eq!(u64::from(pot::dispute::rounds(lo, hi, k).unwrap()), u(c, "rounds"), "{c}");
    }
    for d in arr(&v, "bisection_disputes") {
        let mut b = pot::StepBisection::new(
            u(d, "lo"),
            u(d, "hi"),
            u(d, "arity") as u32,
            &digest(d, "agreed"),
            &digest(d, "a_hi"),
            &digest(d, "b_hi"),
        )
        .unwrap();
        for r in arr(d, "rounds") {
            let want: Vec<u64> = arr(r, "points").iter().map(|p| p.as_u64().unwrap()).collect();
            assert_eq!(b.points().unwrap(), want);
            let claims = |key: &str| -> Vec<Digest> {
                arr(r, key).iter().map(|x| Digest::from_hex(x.as_str().unwrap()).unwrap()).collect()
            };
            b.play_round(&claims("a"), &claims("b")).unwrap();
        }
        let (s, end) = (b.state().unwrap(), &d["end"]);
        assert!(s.done);
        assert_eq!((s.lo, s.hi, u64::from(s.rounds_played)), (u(end, "lo"), u(end, "hi"), u(end, "rounds_played")));
        assert_eq!((s.agreed, s.a_hi, s.b_hi), (digest(end, "agreed"), digest(end, "a_hi"), digest(end, "b_hi")));
    }
}

#[test]
fn protocol_op_nodes() {
    let v = load("protocol.json");
    let nodes = arr(&v, "op_nodes");
    assert!(nodes.len() >= 7);
    let mut log = pot::Log::new().unwrap();
    for n in nodes {
        let data = unhex(s(n, "leaf_data"));
        assert_eq!(pot::dispute::op_node_from_json(&n["node"].to_string()).unwrap(), data, "{}", n["comment"]);
        let back: Value = serde_json::from_str(&pot::dispute::op_node_json(&data).unwrap()).unwrap();
        assert_eq!(back, n["node"]);
        assert_eq!(leaf_hash(&data).unwrap(), digest(n, "leaf_hash"));
        log.append(&data).unwrap();
    }
    assert_eq!(log.root().unwrap(), digest(&v["op_trace_root"], "root"));
    let err = pot::dispute::op_node_from_json(r#"{"name": "aten::mm"}"#).unwrap_err();
    assert_eq!(err.kind(), pot::ErrorKind::Malformed);
    assert_eq!(pot::dispute::op_node_json(b"nope").unwrap_err().kind(), pot::ErrorKind::Malformed);
}
