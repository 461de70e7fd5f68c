"""An independent implementation of docs/PROTOCOL.md.

Written from the document alone, with nothing but hashlib, math and struct, so
that the library's digests are checked against a second implementation.
"""
import hashlib
import math
import struct

CHUNK = 65536
DTYPES = {  # name: (code, element size)
    "BOOL": (1, 1), "U8": (2, 1), "I8": (3, 1), "I16": (4, 2), "U16": (5, 2),
    "I32": (6, 4), "U32": (7, 4), "I64": (8, 8), "U64": (9, 8), "F16": (10, 2),
    "BF16": (11, 2), "F32": (12, 4), "F64": (13, 8),
}


def sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def tagged(tag: str, body: bytes) -> bytes:
    t = tag.encode()
    return sha256(bytes([len(t)]) + t + body)


def leaf_hash(d: bytes) -> bytes:
    return sha256(b"\x00" + d)


def node_hash(l: bytes, r: bytes) -> bytes:
    return sha256(b"\x01" + l + r)


def mth_of_hashes(hashes):
    """RFC 6962 MTH given the leaf hashes (recursive definition)."""
    n = len(hashes)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return hashes[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(mth_of_hashes(hashes[:k]), mth_of_hashes(hashes[k:]))


def mth(leaves):
    return mth_of_hashes([leaf_hash(x) for x in leaves])


def stream(seed: str, n: int) -> bytes:
    out = bytearray()
    j = 0
    while len(out) < n:
        out += sha256(seed.encode() + struct.pack("<Q", j))
        j += 1
    return bytes(out[:n])


def chunk_root(data: bytes) -> bytes:
    return mth([data[i:i + CHUNK] for i in range(0, len(data), CHUNK)])


def tensor_digest(name: str, dtype: str, shape, data: bytes) -> bytes:
    code, size = DTYPES[dtype]
    n = size
    for d in shape:
        n *= d
    assert n == len(data), (name, n, len(data))
    nb = name.encode()
    body = struct.pack("<I", len(nb)) + nb + bytes([code]) + struct.pack("<I", len(shape))
    body += b"".join(struct.pack("<Q", d) for d in shape)
    body += struct.pack("<Q", len(data)) + struct.pack("<I", CHUNK) + chunk_root(data)
    return tagged("pot/v1/tensor", body)


def state_digest(tensor_digests: dict) -> bytes:
    """tensor_digests: name -> digest. Sorted by UTF-8 bytes."""
    names = sorted(tensor_digests, key=lambda s: s.encode())
    root = mth([tensor_digests[n] for n in names])
    return tagged("pot/v1/state", struct.pack("<Q", len(names)) + root)


# State statistics (PROTOCOL 5.2): per floating type the width, the bit
# masks of the magnitude, of the non-finite range and of the smallest normal,
# whether subnormals count, and the value of magnitude bits.
FLOAT_CLASSES = {
    "F16": (2, 0x7FFF, 0x7C00, 0x0400, False, lambda a: struct.unpack("<e", struct.pack("<H", a))[0]),
    "BF16": (2, 0x7FFF, 0x7F80, 0x0080, True, lambda a: struct.unpack("<f", struct.pack("<I", a << 16))[0]),
    "F32": (4, 0x7FFFFFFF, 0x7F800000, 0x00800000, True, lambda a: struct.unpack("<f", struct.pack("<I", a))[0]),
    "F64": (8, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0x0010000000000000, True,
            lambda a: struct.unpack("<d", struct.pack("<Q", a))[0]),
}
STATS_LANES = 32


def tensor_stats(dtype: str, data: bytes):
    """(elements, max_abs, l2_norm, nonfinite, subnormal, zeros)."""
    code, size = DTYPES[dtype]
    n = len(data) // size
    if dtype not in FLOAT_CLASSES:
        zero = bytes(size)
        return n, 0.0, 0.0, 0, 0, sum(1 for i in range(n) if data[i * size:(i + 1) * size] == zero)
    width, abs_mask, inf, min_normal, count_sub, value = FLOAT_CLASSES[dtype]
    words = struct.unpack(f"<{n}{ {2: 'H', 4: 'I', 8: 'Q'}[width] }", data)
    per_chunk = CHUNK // width
    total, max_abs, nonfinite, subnormal, zeros = 0.0, 0.0, 0, 0, 0
    for c in range(0, n, per_chunk):
        lanes = [0.0] * STATS_LANES
        for j, w in enumerate(words[c:c + per_chunk]):
            a = w & abs_mask
            if a >= inf:
                nonfinite += 1
                continue
            x = value(a)
            lanes[j % STATS_LANES] += x * x
            max_abs = max(max_abs, x)
            zeros += a == 0
            subnormal += count_sub and 0 < a < min_normal
        while len(lanes) > 1:
            lanes = [lanes[k] + lanes[k + 1] for k in range(0, len(lanes), 2)]
        total += lanes[0]
    return n, max_abs, math.sqrt(total), nonfinite, subnormal, zeros


def narrow(seed: str, dtype: str, n: int) -> bytes:
    """Floats of a few binades (tests/vectors/gen_vectors.cpp): F32 element
    i = ((u32 word i of stream) >> 8) - 2^23 over 2^20; F64 the same of u64
    words >> 11, - 2^52, over 2^50; BF16 the F32 value's upper 16 bits."""
    if dtype == "F64":
        words = struct.unpack(f"<{n}Q", stream(seed, 8 * n))
        return struct.pack(f"<{n}d", *[math.ldexp((w >> 11) - 2 ** 52, -50) for w in words])
    words = struct.unpack(f"<{n}I", stream(seed, 4 * n))
    f32 = struct.pack(f"<{n}f", *[math.ldexp((w >> 8) - 2 ** 23, -20) for w in words])
    if dtype == "F32":
        return f32
    return b"".join(f32[4 * i + 2:4 * i + 4] for i in range(n))


def state_stats_table(tensors) -> bytes:
    """tensors: (name, dtype, data) in any order; the canonical table."""
    out = struct.pack("<I", len(tensors))
    for name, dtype, data in sorted(tensors, key=lambda t: t[0].encode()):
        n, max_abs, l2, nonfinite, subnormal, zeros = tensor_stats(dtype, data)
        nb = name.encode()
        out += struct.pack("<I", len(nb)) + nb + bytes([DTYPES[dtype][0]])
        out += struct.pack("<QddQQQ", n, max_abs, l2, nonfinite, subnormal, zeros)
    return out


def state_stats_digest(table: bytes) -> bytes:
    return tagged("pot/v1/state-stats", table)


def decode_stats_table(b: bytes) -> dict:
    """name -> (dtype code, elements, max_abs, l2_norm, nonfinite, subnormal, zeros)."""
    (count,), pos, rows = struct.unpack_from("<I", b), 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", b, pos)
        name = b[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        rows[name] = (b[pos],) + struct.unpack_from("<QddQQQ", b, pos + 1)
        pos += 1 + 48
    assert pos == len(b)
    return rows


def state_flags(before: bytes, after: bytes) -> list:
    """The flags of PROTOCOL 5.3, as pot_state_flags lists them (None for an
    infinite value)."""
    jump, saturated = 2.0 ** 10, 2.0 ** 40
    b, out = decode_stats_table(before), []

    def flag(rule, name, x, y):
        out.append({"rule": rule, "tensor": name, "before": None if math.isinf(x) else x,
                    "after": None if math.isinf(y) else y})
    for name, (dtype, n, mx, l2, nonfinite, _, _) in decode_stats_table(after).items():
        p = b.get(name)
        if p and (p[0] != dtype or p[1] != n):
            flag("changed", name, float(p[1]), float(n))
            continue
        if p and mx > jump * max(p[2], 1.0):
            flag("max_abs_jump", name, p[2], mx)
        if p and l2 > jump * max(p[3], 1.0):
            flag("norm_jump", name, p[3], l2)
        if p and p[3] > 1.0 and l2 < p[3] / jump:
            flag("norm_collapse", name, p[3], l2)
        if name.startswith("optim/") and mx >= saturated and not (p and p[2] >= saturated):
            flag("saturated", name, p[2] if p else 0.0, mx)
        if nonfinite > 0 and not (p and p[4] > 0):
            flag("nonfinite", name, float(p[4]) if p else 0.0, float(nonfinite))
    return out


def run_flags(tables: list) -> list:
    """The flagged steps of a run (PROTOCOL 5.3), as pot_run_flags lists
    them: tables[i] is S_{i+1}'s; step 1 against an empty table."""
    out, before = [], struct.pack("<I", 0)
    for i, t in enumerate(tables):
        flags = state_flags(before, t)
        if flags:
            out.append({"step": i + 1, "flags": flags})
        before = t
    return out


def decompose(a: int, b: int):
    out = []
    while a < b:
        level = (b - a).bit_length() - 1
        if a:
            level = min(level, (a & -a).bit_length() - 1)
        out.append((a, level))
        a += 1 << level
    return out


def right_fold(hashes):
    if not hashes:
        return sha256(b"")
    acc = hashes[-1]
    for h in reversed(hashes[:-1]):
        acc = node_hash(h, acc)
    return acc


def decode_range(rec: bytes):
    version = rec[0]
    total, offset, length = struct.unpack_from("<QQQ", rec, 1)
    (k,) = struct.unpack_from("<I", rec, 25)
    assert version == 1 and len(rec) == 29 + 32 * k
    a = offset // CHUNK
    b = a + (length + CHUNK - 1) // CHUNK
    subtrees = decompose(a, b)
    assert len(subtrees) == k
    return total, offset, length, [(s, lv, rec[29 + 32 * i:61 + 32 * i]) for i, (s, lv) in enumerate(subtrees)]


def assemble(name, dtype, shape, records) -> bytes:
    parts = sorted((decode_range(r) for r in records), key=lambda p: p[1])
    stack = []  # (start, level, hash)
    covered = 0
    total = parts[0][0] if parts else 0
    for t, offset, length, subtrees in parts:
        assert t == total and offset == covered
        for s in subtrees:
            stack.append(s)
            while len(stack) >= 2 and stack[-2][1] == stack[-1][1] and stack[-2][0] % (2 << stack[-2][1]) == 0:
                r = stack.pop()
                l = stack.pop()
                stack.append((l[0], l[1] + 1, node_hash(l[2], r[2])))
        covered = offset + length
    assert covered == total
    root = right_fold([h for _, _, h in stack])
    code, size = DTYPES[dtype]
    nb = name.encode()
    body = struct.pack("<I", len(nb)) + nb + bytes([code]) + struct.pack("<I", len(shape))
    body += b"".join(struct.pack("<Q", d) for d in shape)
    body += struct.pack("<Q", total) + struct.pack("<I", CHUNK) + root
    return tagged("pot/v1/tensor", body)


def log_saved(leaves) -> bytes:
    hashes = [leaf_hash(x) for x in leaves]
    out = struct.pack("<Q", len(hashes))
    for start, level in decompose(0, len(hashes)):
        out += mth_of_hashes(hashes[start:start + (1 << level)])
    return out


def verify_inclusion(index, size, leaf, proof, root) -> bool:
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_tensor_proof(state: bytes, tensor: bytes, proof: bytes) -> bool:
    """docs/PROTOCOL.md section 5.1."""
    index, count = struct.unpack_from("<QQ", proof, 0)
    root = proof[16:48]
    path = [proof[i:i + 32] for i in range(48, len(proof), 32)]
    if tagged("pot/v1/state", struct.pack("<Q", count) + root) != state:
        return False
    return verify_inclusion(index, count, leaf_hash(tensor), path, root)


# --- Protocol primitives (docs/PROTOCOL.md sections 9-13) -------------------

def derive_seed(base: int, run_id: bytes, step: int) -> int:
    assert len(run_id) == 32
    body = struct.pack("<Q", base) + run_id + struct.pack("<Q", step)
    return int.from_bytes(tagged("pot/v2/seed", body)[:8], "little")


def step_leaf(run_id: bytes, step: int, state: bytes, stats: bytes, loss_bits: bytes, update_norm_bits: bytes) -> bytes:
    """docs/PROTOCOL.md section 10: 132 bytes naming the run and committing the
    state, its statistics table (5.2), the loss and the update norm."""
    assert len(run_id) == 32 and len(state) == 32 and len(stats) == 32
    assert len(loss_bits) == 8 and len(update_norm_bits) == 8
    assert update_norm_bits[7] & 0x80 == 0, "an update norm's sign bit is clear"
    tag = b"pot/v3/step"
    return bytes([len(tag)]) + tag + run_id + struct.pack("<Q", step) + state + stats + loss_bits + update_norm_bits


def derive_challenges(beacon: bytes, run_id: bytes, n: int, rounds: int):
    excess = (1 << 64) % n
    out = []
    for r in range(rounds):
        counter = 0
        while True:
            d = tagged("pot/v1/challenge",
                       struct.pack("<I", len(beacon)) + beacon + run_id + struct.pack("<IQ", r, counter))
            counter += 1
            x = int.from_bytes(d[:8], "little")
            if x >= (1 << 64) - excess:
                continue
            step = 1 + x % n
            if step in out:
                continue
            out.append(step)
            break
    return out


def challenged_steps(randomness: bytes, run_id: bytes, n: int, rounds: int, flagged):
    """The steps a ledger challenges (docs/PROTOCOL.md 11): the drawn rounds,
    then, ascending, step 1 and each flagged step the draw missed."""
    drawn = derive_challenges(randomness, run_id, n, rounds)
    return drawn + sorted(({1} | set(flagged)) - set(drawn))


def draw_committee(randomness: bytes, run_id: bytes, rnd: int, candidates, size: int):
    """PROTOCOL.md section 11.1: candidates are (identity, stake) pairs; the
    members in draw order."""
    pool = sorted(candidates)
    out = []
    for j in range(min(size, len(pool))):
        total = sum(stake for _, stake in pool)
        excess = (1 << 64) % total
        counter = 0
        while True:
            d = tagged("pot/v2/committee", struct.pack("<I", len(randomness)) + randomness + run_id +
                       struct.pack("<IIQ", rnd, j, counter))
            counter += 1
            x = int.from_bytes(d[:8], "little")
            if x >= (1 << 64) - excess:
                continue
            y = x % total
            break
        before = 0
        for i, (_, stake) in enumerate(pool):
            if y < before + stake:
                break
            before += stake
        out.append(pool.pop(i))
    return out


def detection_probability(n: int, m: int, k: int):
    from fractions import Fraction
    from math import comb
    return 1 - Fraction(comb(n - m, k), comb(n, k))


def norm_bucket(norm: float, resolution: int) -> int:
    import math
    if norm == 0:
        return -(1 << 63)
    if math.isnan(norm) or math.isinf(norm):
        return (1 << 63) - 1
    return math.floor(resolution * math.log2(norm))


# --- Canonical protobuf (docs/PROTOCOL.md section 14.1) ---------------------

def varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def pb_varint(field: int, v: int) -> bytes:
    return varint(field << 3) + varint(v) if v else b""


def pb_double(field: int, v: float) -> bytes:
    bits = struct.pack("<d", v)
    return varint(field << 3 | 1) + bits if bits != bytes(8) else b""


def pb_bytes(field: int, b: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(b)) + b if b else b""


def pb_message(field: int, body: bytes) -> bytes:
    """A set submessage is written even when empty."""
    return varint(field << 3 | 2) + varint(len(body)) + body


def pb_packed(field: int, values) -> bytes:
    """A packed repeated varint field; omitted when empty."""
    body = b"".join(varint(v) for v in values)
    return varint(field << 3 | 2) + varint(len(body)) + body if body else b""


LR_KINDS = {"step": 1, "multi_step": 2, "exponential": 3, "cosine": 4, "linear": 5, "constant": 6, "lambda": 7}


def pb_packed_doubles(field: int, values) -> bytes:
    """A packed repeated double field: the 8 little-endian bytes of each."""
    body = b"".join(struct.pack("<d", float(v)) for v in values)
    return varint(field << 3 | 2) + varint(len(body)) + body if body else b""


def lr_phase_canonical(p: dict) -> bytes:
    k = p["kind"]
    if k == "step":
        body = pb_varint(1, p["step_size"]) + pb_double(2, p["gamma"])
    elif k == "multi_step":
        body = pb_packed(1, p["milestones"]) + pb_double(2, p["gamma"])
    elif k == "exponential":
        body = pb_double(1, p["gamma"])
    elif k == "cosine":
        body = pb_varint(1, p["t_max"]) + pb_double(2, p.get("eta_min", 0.0))
    elif k == "linear":
        body = pb_double(1, p["start_factor"]) + pb_double(2, p["end_factor"]) + pb_varint(3, p["total_iters"])
    elif k == "constant":
        body = pb_double(1, p["factor"]) + pb_varint(2, p["total_iters"])
    else:
        body = pb_packed_doubles(1, p["factors"])
    return pb_message(LR_KINDS[k], body)


def lr_schedule_canonical(s: dict) -> bytes:
    """pot.v2.LrSchedule (section 14.3)."""
    every = s.get("interval", 0)
    tail = pb_varint(4, 0 if every == 1 else every)
    if "rates" in s:
        return pb_packed_doubles(3, s["rates"]) + tail
    return b"".join(pb_message(1, lr_phase_canonical(p)) for p in s["phases"]) + \
        pb_packed(2, s.get("milestones", [])) + tail


def learning_rates(j: dict, n: int, group: int = 0) -> list:
    """lr(1)..lr(n) of a spec's JSON form (of parameter group `group`), by
    section 14.3's recursion."""
    base = float((j["optimizer"] if group == 0 else j["param_groups"][group - 1]["optimizer"])["lr"])
    sched = j.get("lr_schedule")
    if not sched:
        return [base] * n
    every = sched.get("interval", 1) or 1
    if every > 1:
        # Step t trains at the rate of scheduler step floor((t - 1) / every) + 1.
        per = learning_rates(dict(j, lr_schedule=dict(sched, interval=0)), (n + every - 1) // every, group)
        return [per[t // every] for t in range(n)]
    if "rates" in sched:
        r = sched["rates"]
        return [float(r[min(e, len(r) - 1)]) for e in range(n)]
    phases, ms = sched["phases"], sched.get("milestones", [])

    def lam(p, l):
        f = p["factors"]
        return base * float(f[min(l, len(f) - 1)])
    pi = 3.141592653589793

    def init(p):
        if p["kind"] == "lambda":
            return lam(p, 0)
        return base * p["start_factor"] if p["kind"] == "linear" else base * p["factor"] if p["kind"] == "constant" \
            else base

    def first(p):
        k = p["kind"]
        if k in ("step", "multi_step", "exponential"):
            return base * math.pow(p["gamma"], 0.0)
        if k == "cosine":
            eta = p.get("eta_min", 0.0)
            return eta + (base - eta) * (1 + math.cos(pi * 0.0 / float(p["t_max"]))) / 2
        if k == "linear":
            return base * (p["start_factor"] + (p["end_factor"] - p["start_factor"]) * 0.0 / float(p["total_iters"]))
        if k == "lambda":
            return lam(p, 0)
        return base * (p["factor"] + 0.0 * (1 - p["factor"]))

    def nxt(p, x, l):
        k = p["kind"]
        if k == "step":
            return x if l % p["step_size"] != 0 else x * p["gamma"]
        if k == "multi_step":
            c = p["milestones"].count(l)
            return x if c == 0 else x * math.pow(p["gamma"], float(c))
        if k == "exponential":
            return x * p["gamma"]
        if k == "cosine":
            T, eta = p["t_max"], p.get("eta_min", 0.0)
            if l >= T + 1 and (l - 1 - T) % (2 * T) == 0:
                return x + (base - eta) * (1 - math.cos(pi / float(T))) / 2
            return (1 + math.cos(pi * float(l) / float(T))) / (1 + math.cos(pi * float(l - 1) / float(T))) * \
                (x - eta) + eta
        if k == "linear":
            if l > p["total_iters"]:
                return x
            d = p["end_factor"] - p["start_factor"]
            return x * (1 + d / (float(p["total_iters"]) * p["start_factor"] + float(l - 1) * d))
        if k == "lambda":
            return lam(p, l)
        return x * (1.0 / p["factor"]) if l == p["total_iters"] else x

    out, x = [], 0.0
    for e in range(n):
        if e == 0:
            x = init(phases[0])
        else:
            k = sum(1 for m in ms if m <= e)
            if k > 0 and ms[k - 1] == e:
                x = first(phases[k])
            else:
                x = nxt(phases[k], x, e - ms[k - 1] if k > 0 else e)
        out.append(x)
    return out


# Section 14.2: each optimizer kind's oneof field number in Optimizer and
# its message's fields, numbered 1, 2, ... in this order (d: double, b: bool,
# u: uint32, s: string).
OPTIMIZERS = {
    "sgd": (1, "lr:d momentum:d dampening:d nesterov:b weight_decay:d maximize:b"),
    "adam": (2, "lr:d beta1:d beta2:d eps:d weight_decay:d amsgrad:b maximize:b"),
    "adamw": (3, "lr:d beta1:d beta2:d eps:d weight_decay:d amsgrad:b maximize:b"),
    "adadelta": (4, "lr:d rho:d eps:d weight_decay:d maximize:b"),
    "adagrad": (5, "lr:d lr_decay:d weight_decay:d initial_accumulator_value:d eps:d maximize:b"),
    "rmsprop": (6, "lr:d alpha:d eps:d weight_decay:d momentum:d centered:b maximize:b"),
    "adamax": (7, "lr:d beta1:d beta2:d eps:d weight_decay:d maximize:b"),
    "nadam": (8, "lr:d beta1:d beta2:d eps:d weight_decay:d momentum_decay:d decoupled_weight_decay:b maximize:b"),
    "radam": (9, "lr:d beta1:d beta2:d eps:d weight_decay:d decoupled_weight_decay:b maximize:b"),
    "muon": (10, "lr:d weight_decay:d momentum:d nesterov:b ns_a:d ns_b:d ns_c:d ns_steps:u eps:d adjust_lr_fn:s"),
}


def optimizer_canonical(o: dict) -> bytes:
    """pot.v2.Optimizer: the oneof member of o["kind"] (an absent field is its default)."""
    number, fields = OPTIMIZERS[o["kind"]]
    body = b""
    for i, f in enumerate(fields.split(), start=1):
        name, t = f.split(":")
        v = o.get(name)
        if t == "d":
            body += pb_double(i, float(v or 0.0))
        elif t == "s":
            body += pb_bytes(i, (v or "").encode())
        else:
            body += pb_varint(i, int(v or 0))
    return pb_message(number, body)


def spec_canonical(j: dict) -> bytes:
    opt = optimizer_canonical(j["optimizer"])
    sp = j["seed_policy"]
    if sp["kind"] == "per_step":
        policy = pb_message(1, pb_varint(1, sp["base_seed"]))
    elif sp["kind"] == "single_seed":
        policy = pb_message(2, pb_varint(1, sp["seed"]))
    else:
        policy = pb_message(3, b"")
    return (pb_bytes(1, j["framework"].encode()) + pb_bytes(2, j["framework_version"].encode()) +
            pb_bytes(3, bytes.fromhex(j["model_program_digest"])) + pb_varint(4, DTYPES[j["dtype"]][0]) +
            pb_bytes(5, j["attention_backend"].encode()) + pb_double(6, j["dropout"]) +
            pb_varint(7, int(j.get("other_rng_use", False))) + pb_message(8, opt) +
            pb_double(9, j.get("grad_clip_max_norm", 0.0)) + pb_varint(10, j.get("grad_accum_microbatches", 1)) +
            pb_varint(11, j["batch_size"]) + pb_varint(12, int(j.get("deterministic_algorithms", False))) +
            pb_varint(13, j.get("intra_op_threads", 0)) + pb_bytes(14, j.get("hardware_class", "").encode()) +
            pb_message(15, policy) + pb_varint(16, j["norm_bucket_resolution"]) +
            (pb_message(17, lr_schedule_canonical(j["lr_schedule"])) if j.get("lr_schedule") else b"") +
            b"".join(pb_message(18, pb_message(1, optimizer_canonical(g["optimizer"])) +
                                b"".join(pb_bytes(2, n.encode()) for n in g["params"]))
                     for g in j.get("param_groups", [])) +
            pb_double(19, j.get("grad_clip_value", 0.0)) +
            # Field 20: the arithmetic, absent for native (section 14.6).
            pb_bytes(20, ("" if j.get("arithmetic", "native") == "native" else j["arithmetic"]).encode()))


def commitment_canonical(j: dict) -> bytes:
    """pot.v2.TrainingCommitment (section 17)."""
    return (pb_varint(1, j.get("protocol_version", 2)) + pb_bytes(2, bytes.fromhex(j["task_id"])) +
            pb_bytes(3, bytes.fromhex(j["initial_state_digest"])) + pb_bytes(4, bytes.fromhex(j["schedule_root"])) +
            pb_bytes(5, bytes.fromhex(j["dataset_root"])) + pb_varint(6, j["dataset_size"]) +
            pb_bytes(7, bytes.fromhex(j["spec_digest"])) + pb_varint(8, j["declared_steps"]) +
            pb_bytes(9, bytes.fromhex(j["miner_identity"])))


def run_id(j: dict) -> bytes:
    return tagged("pot/v2/run", commitment_canonical(j))


CHALLENGE_MODES = {"bitwise": 1, "norm_bucket": 2}


def task_canonical(j: dict) -> bytes:
    """pot.v2.Task (section 17.1): the spec is embedded as its canonical bytes."""
    policy = j["challenge_policy"]
    return (pb_varint(1, j.get("protocol_version", 2)) + pb_bytes(2, bytes.fromhex(j["owner"])) +
            pb_bytes(3, spec_canonical(j["spec"])) + pb_bytes(4, bytes.fromhex(j["dataset_root"])) +
            pb_varint(5, j["dataset_size"]) +
            pb_message(6, pb_bytes(1, bytes.fromhex(j["initial_state"]["published_digest"]))) +
            (pb_message(7, pb_bytes(1, bytes.fromhex(j["schedule"]["listed_root"])))
             if "listed_root" in j["schedule"] else
             pb_message(7, pb_message(3 if "run_seeded_uniform" in j["schedule"] else 2, b""))) +
            pb_varint(8, j["min_steps"]) + pb_varint(9, j["max_steps"]) +
            pb_message(10, pb_varint(1, policy["rounds"]) + pb_varint(2, CHALLENGE_MODES[policy["mode"]]) +
                       pb_varint(3, policy["committee_size"])) +
            pb_varint(11, j["end_height"]))


def task_id(j: dict) -> bytes:
    return tagged("pot/v2/task", task_canonical(j))


def run_schedule_seed(task_id_: bytes, miner: bytes, declared_steps: int) -> int:
    """Section 17.3: the seed of a run's schedule under a run-seeded task."""
    body = task_id_ + struct.pack("<I", len(miner)) + miner + struct.pack("<Q", declared_steps)
    return int.from_bytes(tagged("pot/v2/run-schedule", body)[:8], "little")


def run_schedule_root(task: dict, miner: bytes, declared_steps: int) -> bytes:
    """The schedule root a run of `miner` must commit to (17.1 check 3)."""
    if "listed_root" in task["schedule"]:
        return bytes.fromhex(task["schedule"]["listed_root"])
    seed = run_schedule_seed(task_id(task), miner, declared_steps)
    spec = task["spec"]
    entries = uniform_entries if "run_seeded_uniform" in task["schedule"] else seeded_entries
    return mth(entries(seed, task["dataset_size"], spec["batch_size"], spec.get("grad_accum_microbatches", 1),
                       declared_steps))


def spec_digest(j: dict) -> bytes:
    return tagged("pot/v2/spec", spec_canonical(j))


# --- Schedules (section 16) and witnesses (section 19) ----------------------

def schedule_entry(step: int, micro) -> bytes:
    tag = b"pot/v1/sched"
    out = bytes([len(tag)]) + tag + struct.pack("<QI", step, len(micro))
    for m in micro:
        out += struct.pack("<I", len(m)) + b"".join(struct.pack("<Q", i) for i in m)
    return out


def below(seed: int, epoch: int, counter: int, m: int):
    """One uniform draw in [0, m) from the permutation stream; returns (value, next counter)."""
    excess = (1 << 64) % m
    while True:
        d = tagged("pot/v1/perm", struct.pack("<QQQ", seed, epoch, counter))
        counter += 1
        x = int.from_bytes(d[:8], "little")
        if x < (1 << 64) - excess:
            return x % m, counter


def epoch_permutation(seed: int, epoch: int, n: int):
    perm = list(range(n))
    counter = 0
    for i in range(n - 1, 0, -1):
        j, counter = below(seed, epoch, counter, i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def uniform_draw(seed: int, position: int, n: int) -> int:
    """Section 16.3: position `position` of the uniform index stream."""
    excess = (1 << 64) % n
    counter = 0
    while True:
        x = int.from_bytes(tagged("pot/v2/uniform", struct.pack("<QQQ", seed, position, counter))[:8], "little")
        counter += 1
        if x < (1 << 64) - excess:
            return x % n


def uniform_entries(seed: int, n: int, batch: int, micro: int, steps: int):
    per = batch // micro
    out = []
    for t in range(1, steps + 1):
        b = [uniform_draw(seed, p, n) for p in range((t - 1) * batch, t * batch)]
        out.append(schedule_entry(t, [b[k * per:(k + 1) * per] for k in range(micro)]))
    return out


def seeded_entries(seed: int, n: int, batch: int, micro: int, steps: int):
    stream = []
    epoch = 0
    while len(stream) < batch * steps:
        stream += epoch_permutation(seed, epoch, n)
        epoch += 1
    per = batch // micro
    out = []
    for t in range(1, steps + 1):
        b = stream[(t - 1) * batch:t * batch]
        out.append(schedule_entry(t, [b[k * per:(k + 1) * per] for k in range(micro)]))
    return out


# The opening checks by name and number (sections 18 and 21.5).
OPENING_CHECKS = {name: i + 1 for i, name in enumerate([
    "manifest", "run_id", "step", "log_size", "post_leaf", "post_leaf_proof", "pre_state_committed", "pre_leaf",
    "pre_leaf_proof", "schedule_entry", "schedule_proof", "sample_count", "sample_index", "sample_payload",
    "sample_proof", "pre_state_digest", "post_state_digest", "spec", "program", "replay", "replayed_state",
    "replayed_loss", "replayed_bucket", "nonfinite", "learning_rate", "committed_norm", "gradient_ignored", "subnormal",
    "replayed_update", "task_program", "state_stats", "run_flags"])}
WITNESS_KINDS = {"replayed": 1, "unavailable": 2, "invalid_opening": 3}
WITNESS_MODES = {"bitwise": 1, "norm_bucket": 2}


def witness_commitment(statement: dict, salt: bytes, identity: bytes) -> bytes:
    """docs/PROTOCOL.md section 19: the commitment to a statement (its JSON form)."""
    def s(text: str) -> bytes:
        b = text.encode()
        return struct.pack("<I", len(b)) + b
    env = statement["environment"]
    kind = statement["kind"]
    body = bytes.fromhex(statement["run_id"]) + struct.pack("<QQB", statement["step"], statement["challenge_id"],
                                                           WITNESS_MODES[statement["mode"]])
    body += s(env["framework_version"]) + struct.pack("<I", env["intra_op_threads"]) + s(env["hardware_class"])
    body += struct.pack("<B", WITNESS_KINDS[kind])
    if kind == "replayed":
        body += bytes.fromhex(statement["replayed_state"]) + struct.pack("<q", statement["bucket"])
        body += bytes.fromhex(statement["gradient_digest"])
    elif kind == "invalid_opening":
        check = OPENING_CHECKS[statement["check"]]
        assert check not in (21, 23), "a replayed value states these"
        body += struct.pack("<I", check)
    body += struct.pack("<I", len(salt)) + salt + struct.pack("<I", len(identity)) + identity
    return tagged("pot/v2/witness", body)


VERDICTS = {"pass": 1, "fail": 2, "inconclusive": 3}
CAUSES = {"agreement": 1, "no_opening": 2, "blame": 3, "no_committee": 4, "participation": 5, "split": 6,
          "task_program": 7}


def outcome_record(challenge_id: int, challenge: dict, result: dict) -> bytes:
    """docs/PROTOCOL.md section 20.1: the outcome record of a finalized ledger
    challenge, from its challenge_info (run, step, mode, committee) and the
    finalize_challenge result (verdict, cause, cluster, the members' lists)."""
    def ids(hexes) -> bytes:
        members = sorted(bytes.fromhex(h) for h in hexes)
        return struct.pack("<I", len(members)) + b"".join(struct.pack("<I", len(m)) + m for m in members)
    tag = b"pot/v2/outcome"
    out = bytes([len(tag)]) + tag + struct.pack("<QI", challenge_id, challenge["attempt"])
    out += bytes.fromhex(challenge["run_id"])
    out += struct.pack("<QBBB", challenge["step"], WITNESS_MODES[challenge["mode"]], VERDICTS[result["verdict"]],
                       CAUSES[result["cause"]])
    committee_stake = sum(m["stake"] for m in challenge["committee"])
    out += struct.pack("<QQQ", result["cluster_size"], result["cluster_stake"], committee_stake)
    for key in ("minority", "silent", "misconfigured", "unreplayed"):
        out += ids(result[key])
    return out


def verdict(mode: str, quorum: int, reveals, committed_state=None, committed_bucket=None):
    """docs/PROTOCOL.md section 19: (outcome, size of the largest cluster)."""
    from collections import Counter
    key = (lambda r: r["replayed_state"]) if mode == "bitwise" else (lambda r: r["bucket"])
    counts = Counter(key(r) for r in reveals).most_common()
    if not counts:
        return "inconclusive", 0
    value, size = counts[0]
    if len(counts) > 1 and counts[1][1] == size or size < quorum:
        return "inconclusive", size
    if mode == "bitwise":
        return ("pass" if value == committed_state else "fail"), size
    sentinels = (-(1 << 63), (1 << 63) - 1)
    if value in sentinels or committed_bucket in sentinels:
        return ("pass" if value == committed_bucket else "fail"), size
    return ("pass" if abs(value - committed_bucket) <= 1 else "fail"), size


# --- Section 22.1: the step bisection of a refereed dispute ---------------

def bisection_points(lo: int, hi: int, arity: int) -> list:
    """The steps claimed in a round over (lo, hi]."""
    assert lo < hi and 2 <= arity <= 256
    length = hi - lo
    if length < arity:
        return list(range(lo + 1, hi))
    return [lo + j * length // arity for j in range(1, arity)]


def bisection_rounds(lo: int, hi: int, arity: int) -> int:
    """The most rounds: R(1) = 0, R(L) = 1 + R(ceil(L / k)) for L >= k, 1 below."""
    rounds, length = 0, hi - lo
    while length > 1:
        length = 1 if length < arity else -(-length // arity)
        rounds += 1
    return rounds


DISPUTE_ENDS = {"step_found": 1, "miner_default": 2, "challenger_default": 3, "both_default": 4, "ruled": 5,
                "referee_ruled": 6, "referee_default": 7}
DISPUTE_PHASES = {"steps": 1, "traces": 2, "operators": 3, "openings": 4, "referee": 5}
DISPUTE_RULES = {None: 0, "opening": 1, "source": 2, "operator": 3, "post_state": 4, "step": 5}
DEFAULT_LOSERS = {"miner_default": 1, "challenger_default": 2, "both_default": 3}


def dispute_record(dispute_id: int, run_id: bytes, miner: bytes, challenger: bytes, lo: int, hi: int, end: str,
                   rounds: int, step: int = 0, agreed: bytes = bytes(32), miner_digest: bytes = bytes(32),
                   challenger_digest: bytes = bytes(32), phase: str = "steps", losers=None,
                   miner_trace=(0, bytes(32)), challenger_trace=(0, bytes(32)), op_rounds: int = 0, node: int = 0,
                   rule=None) -> bytes:
    """docs/PROTOCOL.md section 20.2: the outcome-log leaf of an ended ledger
    dispute. losers: 1 the miner, 2 the challenger, 3 both (by default the
    parties a default end names)."""
    if losers is None:
        losers = DEFAULT_LOSERS.get(end, 0)
    tag = b"pot/v3/dispute-outcome"
    out = bytes([len(tag)]) + tag + struct.pack("<Q", dispute_id) + run_id
    out += struct.pack("<I", len(miner)) + miner + struct.pack("<I", len(challenger)) + challenger
    out += struct.pack("<QQBBBIQ", lo, hi, DISPUTE_ENDS[end], DISPUTE_PHASES[phase], losers, rounds, step)
    out += agreed + miner_digest + challenger_digest
    for size, root in (miner_trace, challenger_trace):
        out += struct.pack("<Q", size) + root
    return out + struct.pack("<IQB", op_rounds, node, DISPUTE_RULES[rule])


def step_leaf_fields(leaf: bytes):
    """(run_id, step, state digest) of a step leaf (section 10)."""
    n = leaf[0]
    assert leaf[1:1 + n] == b"pot/v3/step"
    body = leaf[1 + n:]
    return body[:32], struct.unpack("<Q", body[32:40])[0], body[40:72]


def bisection_round(lo: int, hi: int, agreed: bytes, a_hi: bytes, b_hi: bytes, points: list, a: list, b: list):
    """One round: the new (lo, hi, agreed, a_hi, b_hi)."""
    j = next((i for i in range(len(points)) if a[i] != b[i]), len(points))
    if j > 0:
        lo, agreed = points[j - 1], a[j - 1]
    if j < len(points):
        hi, a_hi, b_hi = points[j], a[j], b[j]
    return lo, hi, agreed, a_hi, b_hi



# --- Section 22.2: operator trace nodes -----------------------------------

OP_VALUE_KINDS = {"none": 0, "tensor": 1, "int": 2, "double": 3, "bool": 4, "string": 5, "list": 6,
                  "device": 7, "generator": 8, "opaque": 9, "digest": 10}
OP_SOURCES = {"none": 0, "node": 1, "state": 2, "batch": 3, "uninit": 4}


def op_str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def op_value(v: dict) -> bytes:
    """One value: a kind byte and its payload (section 22.2)."""
    kind = "double" if "bits" in v else next(iter(v))
    x = v[kind]
    out = bytes([OP_VALUE_KINDS[kind]])
    if kind in ("none", "generator"):
        return out
    if kind == "tensor":
        out += bytes([DTYPES[x["dtype"]][0]]) + struct.pack("<I", len(x["shape"]))
        out += b"".join(struct.pack("<Q", d) for d in x["shape"]) + b"".join(struct.pack("<q", d) for d in x["strides"])
        src = x["source"]
        out += bytes.fromhex(x["chunk_root"]) + bytes([OP_SOURCES[src["kind"]]])
        if src["kind"] == "node":
            out += struct.pack("<QI", src["node"], src["slot"])
        elif src["kind"] == "state":
            out += op_str(src["name"])
        elif src["kind"] == "batch":
            out += struct.pack("<I", src["microbatch"]) + op_str(src["name"])
        return out
    if kind == "int":
        return out + struct.pack("<q", x)
    if kind == "double":
        return out + bytes.fromhex(v["bits"])[::-1]
    if kind == "bool":
        return out + bytes([1 if x else 0])
    if kind in ("string", "device", "opaque"):
        return out + op_str(x)
    if kind == "list":
        return out + struct.pack("<I", len(x)) + b"".join(op_value(e) for e in x)
    if kind == "digest":
        return out + bytes.fromhex(x)
    raise ValueError(kind)


def op_node_leaf_data(node: dict) -> bytes:
    """u8(14) || "pot/v1/op-node" || name || overload || args || results."""
    tag = b"pot/v1/op-node"
    return (bytes([len(tag)]) + tag + op_str(node["name"]) + op_str(node["overload"]) +
            struct.pack("<I", len(node["inputs"])) + b"".join(op_value(v) for v in node["inputs"]) +
            struct.pack("<I", len(node["outputs"])) + b"".join(op_value(v) for v in node["outputs"]))


def tensor_digest_from_root(name: str, dtype: str, shape, root: bytes) -> bytes:
    """Section 4's tensor digest from the chunk root (the byte length follows
    from dtype and shape)."""
    code, size = DTYPES[dtype]
    nbytes = size
    for d in shape:
        nbytes *= d
    body = struct.pack("<I", len(name.encode())) + name.encode() + bytes([code]) + struct.pack("<I", len(shape))
    body += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<QI", nbytes, 65536) + root
    return tagged("pot/v1/tensor", body)


def post_state_digest(node: dict) -> bytes:
    """The state digest of the tensors a post-state node lists."""
    args = node["inputs"]
    tensors = {args[i]["string"]: tensor_digest_from_root(args[i]["string"], t["dtype"], t["shape"],
                                                          bytes.fromhex(t["chunk_root"]))
               for i in range(0, len(args), 2) for t in [args[i + 1]["tensor"]]}
    return state_digest(tensors)


# --- Section 22.3: openings, checked as a ledger checks them ----------------

def inclusion_path(m: int, hashes) -> list:
    """RFC 6962 PATH(m, D[n]) from the leaf hashes, deepest hash first."""
    n = len(hashes)
    if n <= 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return inclusion_path(m, hashes[:k]) + [mth_of_hashes(hashes[k:])]
    return inclusion_path(m - k, hashes[k:]) + [mth_of_hashes(hashes[:k])]


def consistency_proof(m: int, hashes) -> list:
    """RFC 6962 PROOF(m, D[n]) for 0 < m < n (SUBPROOF with b = true)."""
    def sub(m, d, b):
        n = len(d)
        if m == n:
            return [] if b else [mth_of_hashes(d)]
        k = 1
        while k * 2 < n:
            k *= 2
        if m <= k:
            return sub(m, d[:k], b) + [mth_of_hashes(d[k:])]
        return sub(m - k, d[k:], False) + [mth_of_hashes(d[:k])]
    assert 0 < m < len(hashes)
    return sub(m, list(hashes), True)


def verify_consistency(m: int, n: int, old_root: bytes, new_root: bytes, proof) -> bool:
    """RFC 9162 section 2.1.4.2, for 0 < m <= n."""
    if m == n:
        return not proof and old_root == new_root
    if not proof:
        return False
    if m & (m - 1) == 0:  # a power of two: the old root is the first hash
        proof = [old_root] + list(proof)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


def tensor_proof(names_digests: dict, name: str) -> bytes:
    """Section 5.1's proof of one tensor of a state (name -> tensor digest)."""
    names = sorted(names_digests, key=lambda s: s.encode())
    hashes = [leaf_hash(names_digests[x]) for x in names]
    i = names.index(name)
    return struct.pack("<QQ", i, len(names)) + mth_of_hashes(hashes) + b"".join(inclusion_path(i, hashes))


def op_opening(node, inclusion, consistency, producers=(), state_proofs=(), tensors=()) -> bytes:
    """The op-opening of section 22.3. node: leaf data or None (my trace
    ends); producers: (j, leaf data, proof); state_proofs: (name, proof)."""
    def blob(b):
        return struct.pack("<Q", len(b)) + b

    def hashes(hs):
        return struct.pack("<I", len(hs)) + b"".join(hs)
    tag = b"pot/v1/op-opening"
    out = bytes([len(tag)]) + tag + (b"\x01" + blob(node) if node is not None else b"\x00")
    out += hashes(inclusion) + hashes(consistency)
    out += struct.pack("<I", len(producers)) + b"".join(struct.pack("<Q", j) + blob(d) + hashes(p)
                                                         for j, d, p in sorted(producers))
    out += struct.pack("<I", len(state_proofs)) + b"".join(blob(nm.encode()) + blob(p)
                                                           for nm, p in sorted(state_proofs))
    return out + struct.pack("<I", len(tensors)) + b"".join(blob(t) for t in tensors)


class _Reader:
    def __init__(self, b: bytes):
        self.b, self.i = b, 0

    def take(self, n: int) -> bytes:
        if self.i + n > len(self.b):
            raise ValueError("truncated")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def u(self, fmt: str) -> int:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def blob(self) -> bytes:
        return self.take(self.u("Q"))

    def hashes(self) -> list:
        return [self.take(32) for _ in range(self.u("I"))]

    def string(self) -> str:
        return self.take(self.u("I")).decode()


def _op_value_decode(r: _Reader) -> dict:
    kind = {c: k for k, c in OP_VALUE_KINDS.items()}[r.u("B")]
    if kind in ("none", "generator"):
        return {kind: None}
    if kind == "tensor":
        dtype = {c: name for name, (c, _) in DTYPES.items()}[r.u("B")]
        ndim = r.u("I")
        shape = [r.u("Q") for _ in range(ndim)]
        strides = [r.u("q") for _ in range(ndim)]
        root = r.take(32).hex()
        src = {"kind": {c: k for k, c in OP_SOURCES.items()}[r.u("B")]}
        if src["kind"] == "node":
            src["node"], src["slot"] = r.u("Q"), r.u("I")
        elif src["kind"] == "state":
            src["name"] = r.string()
        elif src["kind"] == "batch":
            src["microbatch"], src["name"] = r.u("I"), r.string()
        return {"tensor": {"dtype": dtype, "shape": shape, "strides": strides, "chunk_root": root, "source": src}}
    if kind == "int":
        return {"int": r.u("q")}
    if kind == "double":
        return {"double": None, "bits": r.take(8)[::-1].hex()}
    if kind == "bool":
        return {"bool": r.u("B") == 1}
    if kind in ("string", "device", "opaque"):
        return {kind: r.string()}
    if kind == "list":
        return {"list": [_op_value_decode(r) for _ in range(r.u("I"))]}
    return {"digest": r.take(32).hex()}


def op_node_decode(data: bytes) -> dict:
    """The inverse of op_node_leaf_data (the values as op_value takes them)."""
    r = _Reader(data)
    if r.take(r.u("B")) != b"pot/v1/op-node":
        raise ValueError("not an op node")
    node = {"name": r.string(), "overload": r.string()}
    node["inputs"] = [_op_value_decode(r) for _ in range(r.u("I"))]
    node["outputs"] = [_op_value_decode(r) for _ in range(r.u("I"))]
    if r.i != len(data):
        raise ValueError("bytes after the node")
    return node


def op_opening_decode(b: bytes) -> dict:
    r = _Reader(b)
    if r.take(r.u("B")) != b"pot/v1/op-opening":
        raise ValueError("not an op opening")
    o = {"node": r.blob() if r.u("B") else None, "inclusion": r.hashes(), "consistency": r.hashes()}
    o["producers"] = {}
    for _ in range(r.u("I")):
        j = r.u("Q")
        o["producers"][j] = (r.blob(), r.hashes())
    o["state"] = {}
    for _ in range(r.u("I")):
        name = r.blob().decode()
        o["state"][name] = r.blob()
    o["tensors"] = [r.blob() for _ in range(r.u("I"))]
    if r.i != len(b):
        raise ValueError("bytes after the tensors")
    return o


def _tensors(values):
    """The tensor values of a value list, depth-first."""
    for v in values:
        if "tensor" in v:
            yield v["tensor"]
        elif "list" in v:
            yield from _tensors(v["list"])


def check_op_opening(i: int, agreed_root: bytes, claim: bytes, pre_state: bytes, opening: bytes) -> dict:
    """What the ledger checks of one party's opening of node i (docs/ledger.md
    2.16): rule 1 (the node against the party's claimed root of i + 1 nodes
    and the agreed root of i) and rule 2 for node, state and uninit sources
    (batch sources deferred). Returns {"failure": rule or None, "node":
    decoded node or None, "deferred": bool}."""
    try:
        o = op_opening_decode(opening)
    except (ValueError, KeyError, UnicodeDecodeError):
        return {"failure": "opening", "node": None, "deferred": False}
    if o["node"] is None:
        return {"failure": None if claim == agreed_root else "opening", "node": None, "deferred": False}
    if not verify_inclusion(i, i + 1, leaf_hash(o["node"]), o["inclusion"], claim):
        return {"failure": "opening", "node": None, "deferred": False}
    if i == 0:
        if agreed_root != sha256(b"") or o["consistency"]:
            return {"failure": "opening", "node": None, "deferred": False}
    elif not verify_consistency(i, i + 1, agreed_root, claim, o["consistency"]):
        return {"failure": "opening", "node": None, "deferred": False}
    try:
        node = op_node_decode(o["node"])
    except (ValueError, KeyError, UnicodeDecodeError):
        return {"failure": "opening", "node": None, "deferred": False}
    deferred = False
    for t in _tensors(node["inputs"]):
        src, same = t["source"], ("dtype", "shape", "chunk_root")
        if src["kind"] == "node":
            p = o["producers"].get(src["node"])
            if src["node"] >= i or p is None or not verify_inclusion(src["node"], i, leaf_hash(p[0]), p[1],
                                                                     agreed_root):
                return {"failure": "source", "node": node, "deferred": False}
            results = list(_tensors(op_node_decode(p[0])["outputs"]))
            if src["slot"] >= len(results) or any(results[src["slot"]][k] != t[k] for k in same):
                return {"failure": "source", "node": node, "deferred": False}
        elif src["kind"] == "state":
            proof = o["state"].get(src["name"])
            digest = tensor_digest_from_root(src["name"], t["dtype"], t["shape"], bytes.fromhex(t["chunk_root"]))
            if proof is None or not verify_tensor_proof(pre_state, digest, proof):
                return {"failure": "source", "node": node, "deferred": False}
        elif src["kind"] == "uninit":
            if t["chunk_root"] != "00" * 32:
                return {"failure": "source", "node": node, "deferred": False}
        elif src["kind"] == "batch":
            deferred = True
    return {"failure": None, "node": node, "deferred": deferred}


# ---- 15.1 token-stream datasets ---------------------------------------------

STREAM_CHUNK = 4096
_DTYPE_CODES = {"U16": 5, "U32": 7, "I32": 6, "I64": 8}


def shard_root(data: bytes) -> bytes:
    return mth([data[i:i + STREAM_CHUNK] for i in range(0, len(data), STREAM_CHUNK)])


def stream_descriptor(j: dict) -> bytes:
    out = bytes([1, _DTYPE_CODES[j["token_dtype"]], _DTYPE_CODES[j["output_dtype"]]])
    out += struct.pack("<II", j["window"], len(j["views"]))
    for v in j["views"]:
        name = v["name"].encode()
        out += struct.pack("<I", len(name)) + name + struct.pack("<II", v["start"], v["length"])
    out += struct.pack("<I", len(j["shards"]))
    for s in j["shards"]:
        out += struct.pack("<Q", s["tokens"]) + bytes.fromhex(s["root"])
    return out


def stream_root(j: dict) -> bytes:
    return tagged("pot/v2/stream", stream_descriptor(j))


def stream_size(j: dict) -> int:
    return sum(max(0, s["tokens"] - j["window"] + 1) for s in j["shards"])


def stream_locate(j: dict, i: int):
    for s, sh in enumerate(j["shards"]):
        n = max(0, sh["tokens"] - j["window"] + 1)
        if i < n:
            return s, i
        i -= n
    raise IndexError("window past the dataset")


def check_window_proof(j: dict, i: int, proof: bytes) -> bytes:
    """The window's token bytes when the proof holds, else ValueError."""
    b = 2 if j["token_dtype"] == "U16" else 4
    s, o = stream_locate(j, i)
    total = j["shards"][s]["tokens"] * b
    a = o * b // STREAM_CHUNK
    c = -(-(o + j["window"]) * b // STREAM_CHUNK)
    m = -(-total // STREAM_CHUNK)
    n_bytes = min(c * STREAM_CHUNK, total) - a * STREAM_CHUNK
    version, index = proof[0], struct.unpack_from("<Q", proof, 1)[0]
    n = struct.unpack_from("<I", proof, 9)[0]
    if version != 1 or index != i or n != n_bytes:
        raise ValueError("proof header")
    chunks = proof[13:13 + n]
    k = struct.unpack_from("<I", proof, 13 + n)[0]
    hashes = [proof[17 + n + 32 * x:17 + n + 32 * (x + 1)] for x in range(k)]
    left, right = decompose(0, a), decompose(c, m)
    if k != len(left) + len(right) or len(proof) != 17 + n + 32 * k:
        raise ValueError("proof length")
    # Every subtree of the tree of m chunks, left to right: the given ones
    # and the chunks' own; folded as a compact range from 0.
    subtrees = [(start, level, hashes[x]) for x, (start, level) in enumerate(left)]
    subtrees += [(a + x, 0, leaf_hash(chunks[x * STREAM_CHUNK:(x + 1) * STREAM_CHUNK]))
                 for x in range(c - a)]
    subtrees += [(start, level, hashes[len(left) + x]) for x, (start, level) in enumerate(right)]
    stack = []
    for start, level, h in subtrees:
        stack.append((start, level, h))
        while len(stack) >= 2 and stack[-1][1] == stack[-2][1] and stack[-2][0] % (2 << stack[-2][1]) == 0:
            s2, l2, h2 = stack.pop()
            s1, l1, h1 = stack.pop()
            stack.append((s1, l1 + 1, node_hash(h1, h2)))
    if right_fold([h for _, _, h in stack]).hex() != j["shards"][s]["root"]:
        raise ValueError("proof mismatch")
    at = o * b - a * STREAM_CHUNK
    return chunks[at:at + j["window"] * b]


def sample_digest(tensor_digests: dict) -> bytes:
    """Section 15: like a state digest, under the tag pot/v1/sample."""
    names = sorted(tensor_digests, key=lambda s: s.encode())
    return tagged("pot/v1/sample", struct.pack("<Q", len(names)) + mth([tensor_digests[n] for n in names]))


def window_sample_digest(j: dict, window: bytes) -> bytes:
    """The digest of the sample a window gives (15.1): each view's tokens as
    signed integers of output_dtype, shape [length]."""
    b = 2 if j["token_dtype"] == "U16" else 4
    tokens = struct.unpack("<%d%s" % (j["window"], "H" if b == 2 else "I"), window)
    out = j["output_dtype"]
    digests = {}
    for v in j["views"]:
        part = tokens[v["start"]:v["start"] + v["length"]]
        if out == "I32" and any(t > 0x7FFFFFFF for t in part):
            raise ValueError("a token does not fit I32")
        data = struct.pack("<%d%s" % (len(part), "q" if out == "I64" else "i"), *part)
        digests[v["name"]] = tensor_digest(v["name"], out, [v["length"]], data)
    return sample_digest(digests)
