//! Token-stream datasets (docs/PROTOCOL.md 15.1): a train.bin of uint16
//! tokens committed where it lies, windows proven from it and checked into
//! their samples, a forged proof refused.

mod common;

use common::TempDir;
use pot::{Dtype, ErrorKind, Stream, shard_root_file};

#[test]
fn windows_prove_their_samples() {
    let dir = TempDir::new("stream");
    let mut shards = Vec::new();
    for (s, n) in [(0u64, 4000u64), (1, 1500)] {
        let bytes: Vec<u8> = (0..n).flat_map(|j| (((s + 31 * j) % 50257) as u16).to_le_bytes()).collect();
        let path = dir.path(&format!("train{s}.bin"));
        std::fs::write(&path, bytes).unwrap();
        let (root, tokens) = shard_root_file(&path, Dtype::U16).unwrap();
        assert_eq!(tokens, n);
        shards.push(format!(r#"{{"tokens": {tokens}, "root": "{}"}}"#, root.to_hex()));
    }
    let json = format!(
        r#"{{"token_dtype": "U16", "output_dtype": "I64", "window": 33,
            "views": [{{"name": "x", "start": 0, "length": 32}}, {{"name": "y", "start": 1, "length": 32}}],
            "shards": [{}]}}"#,
        shards.join(", ")
    );
    let s = Stream::from_json(&json).unwrap();
    assert_eq!(s.size(), (4000 - 32) + (1500 - 32));
    assert_eq!(Stream::decode(&s.encode().unwrap()).unwrap().root().unwrap(), s.root().unwrap());
    for i in [0, 2030, 3967, 3968, s.size() - 1] {
        let (shard, offset) = s.locate(i).unwrap();
        let proof = s.prove_window(i, &dir.path(&format!("train{shard}.bin"))).unwrap();
        let sample = s.check_window(i, &proof).unwrap();
        assert_eq!(s.sample(i, &dir.path(&format!("train{shard}.bin"))).unwrap(), sample);
        // y, the last tensor, starts with token offset + 1 of the shard.
        let y0 = u64::from_le_bytes(sample[sample.len() - 32 * 8..][..8].try_into().unwrap());
        assert_eq!(y0, (u64::from(shard) + 31 * (offset + 1)) % 50257, "window {i}");
        let mut forged = proof.clone();
        forged[20] ^= 1;
        assert_eq!(s.check_window(i, &forged).unwrap_err().kind(), ErrorKind::ProofMismatch);
    }
    assert_eq!(s.locate(s.size()).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert_eq!(Stream::from_json(r#"{"token_dtype": "F32"}"#).unwrap_err().kind(), ErrorKind::InvalidArgument);
}
