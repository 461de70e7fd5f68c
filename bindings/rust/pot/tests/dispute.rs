//! The step bisection (docs/PROTOCOL.md 22.1): a forged step at every
//! position of a 50-step run is found, within the round bound, and the
//! referee's recomputed step sides with the honest party; refusals.

use pot::{Digest, ErrorKind, StepBisection};

/// S_t = H(t, S_{t-1}); a run forged at step f holds another S_f and goes
/// on from it.
fn trajectory(n: u64, forged_at: u64) -> Vec<Digest> {
    let mut s = vec![pot::sha256(b"S_0").unwrap()];
    for t in 1..=n {
        let next = if t == forged_at {
            pot::sha256(format!("forged {t}").as_bytes())
        } else {
            pot::sha256(format!("{t} {}", s[(t - 1) as usize]).as_bytes())
        };
        s.push(next.unwrap());
    }
    s
}

#[test]
fn finds_the_forged_step_at_every_position() {
    const N: u64 = 50;
    let honest = trajectory(N, 0);
    for arity in [2u32, 5] {
        let bound = pot::dispute::rounds(0, N, arity).unwrap();
        for f in 1..=N {
            let forged = trajectory(N, f);
            let forger_is_a = f % 2 == 1;
            let (a, b) = if forger_is_a { (&forged, &honest) } else { (&honest, &forged) };
            let mut bis = StepBisection::new(0, N, arity, &honest[0], &a[N as usize], &b[N as usize]).unwrap();
            while !bis.state().unwrap().done {
                let p = bis.points().unwrap();
                let ca: Vec<Digest> = p.iter().map(|&x| a[x as usize]).collect();
                let cb: Vec<Digest> = p.iter().map(|&x| b[x as usize]).collect();
                bis.play_round(&ca, &cb).unwrap();
            }
            let s = bis.state().unwrap();
            assert_eq!((s.lo, s.hi), (f - 1, f), "arity {arity}");
            assert!(s.rounds_played <= bound);
            assert_eq!(s.agreed, honest[(f - 1) as usize]);
            let truth = pot::sha256(format!("{f} {}", s.agreed).as_bytes()).unwrap();
            let (liar, honest_claim) = if forger_is_a { (s.a_hi, s.b_hi) } else { (s.b_hi, s.a_hi) };
            assert_eq!(honest_claim, truth);
            assert_ne!(liar, truth);
        }
    }
}

#[test]
fn refusals() {
    assert_eq!(pot::dispute::points(5, 5, 2).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(pot::dispute::rounds(0, 5, 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(pot::dispute::points(0, 7, 8).unwrap(), vec![1, 2, 3, 4, 5, 6]);
    let (s0, x, y) = (pot::sha256(b"S_0").unwrap(), pot::sha256(b"x").unwrap(), pot::sha256(b"y").unwrap());
    assert_eq!(StepBisection::new(0, 10, 2, &s0, &x, &x).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let mut b = StepBisection::new(0, 10, 4, &s0, &x, &y).unwrap();
    let before = b.state().unwrap();
    assert_eq!(b.play_round(&[x, x], &[x, x]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(b.play_round(&[x, x, x], &[x]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(b.state().unwrap(), before);
    while !b.state().unwrap().done {
        let n = b.points().unwrap().len();
        b.play_round(&vec![x; n], &vec![x; n]).unwrap();
    }
    assert_eq!(b.points().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(b.play_round(&[], &[]).unwrap_err().kind(), ErrorKind::State);
}
