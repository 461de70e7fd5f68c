//! Loss-curve checks (docs/losscheck.md): flags committed losses that no
//! honest training run would produce.

use crate::error::Result;
use crate::ffi::{self, call, non_null};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// A parameter of the loss-curve checks (`pot_losscheck_param`), with its
/// range and default.
///
/// ```
/// let p = pot::LossCheckParams::new()?;
/// assert_eq!(p.get(pot::LossCheckParam::Window)?, 20.0);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossCheckParam {
    /// Steps per window, 1..=10000 (20).
    Window,
    /// Relative decrease tolerance, [0, 1) (0.02).
    DecreaseTolerance,
    /// Sigmas of the decrease test, >= 0 (3).
    DecreaseSigmas,
    /// Largest plausible drop, (0, 1] (0.9).
    MaxDrop,
    /// Steps of an unchanged loss that count as frozen, >= 2 (10).
    FrozenMinSteps,
    /// Largest change that counts as unchanged, >= 0 (0).
    FrozenEpsilon,
    /// Sigmas of the regression test, >= 0 (6).
    RegressionSigmas,
    /// Smallest increase that counts as a regression, >= 0 (1).
    RegressionMinIncrease,
    /// Most flags reported, >= 1 (1000).
    MaxFlags,
}

impl LossCheckParam {
    fn to_sys(self) -> sys::pot_losscheck_param {
        use sys::pot_losscheck_param as P;
        match self {
            LossCheckParam::Window => P::POT_LOSSCHECK_WINDOW,
            LossCheckParam::DecreaseTolerance => P::POT_LOSSCHECK_DECREASE_TOLERANCE,
            LossCheckParam::DecreaseSigmas => P::POT_LOSSCHECK_DECREASE_SIGMAS,
            LossCheckParam::MaxDrop => P::POT_LOSSCHECK_MAX_DROP,
            LossCheckParam::FrozenMinSteps => P::POT_LOSSCHECK_FROZEN_MIN_STEPS,
            LossCheckParam::FrozenEpsilon => P::POT_LOSSCHECK_FROZEN_EPSILON,
            LossCheckParam::RegressionSigmas => P::POT_LOSSCHECK_REGRESSION_SIGMAS,
            LossCheckParam::RegressionMinIncrease => P::POT_LOSSCHECK_REGRESSION_MIN_INCREASE,
            LossCheckParam::MaxFlags => P::POT_LOSSCHECK_MAX_FLAGS,
        }
    }
}

/// Parameters of the loss-curve checks (`pot_losscheck_params`), starting
/// at the documented defaults.
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// use pot::{LossCheckParam, LossCheckParams};
///
/// let mut p = LossCheckParams::new()?;
/// p.set(LossCheckParam::Window, 5.0)?;
/// assert_eq!(p.get(LossCheckParam::Window)?, 5.0);
/// let err = p.set(LossCheckParam::Window, 0.0).unwrap_err();
/// assert_eq!(err.kind(), pot::ErrorKind::InvalidArgument);
/// assert_eq!(p.get(LossCheckParam::Window)?, 5.0); // unchanged
/// # Ok::<(), pot::Error>(())
/// ```
pub struct LossCheckParams {
    raw: NonNull<sys::pot_losscheck_params>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for LossCheckParams {}

impl LossCheckParams {
    /// Parameters with the documented defaults.
    ///
    /// ```
    /// let p = pot::LossCheckParams::new()?;
    /// assert_eq!(p.get(pot::LossCheckParam::MaxFlags)?, 1000.0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new() -> Result<LossCheckParams> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_losscheck_params_new(&mut raw, err) })?;
        Ok(LossCheckParams { raw: non_null(raw)? })
    }

    /// Sets one parameter; integer parameters need an integral value.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the
    /// parameter for a value out of range; the parameters are then unchanged.
    ///
    /// ```
    /// let mut p = pot::LossCheckParams::new()?;
    /// assert!(p.set(pot::LossCheckParam::Window, 2.5).is_err());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set(&mut self, param: LossCheckParam, value: f64) -> Result<()> {
        call(|err| unsafe { sys::pot_losscheck_params_set(self.raw.as_ptr(), param.to_sys(), value, err) })
    }

    /// The value of one parameter.
    ///
    /// ```
    /// let p = pot::LossCheckParams::new()?;
    /// assert_eq!(p.get(pot::LossCheckParam::MaxDrop)?, 0.9);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn get(&self, param: LossCheckParam) -> Result<f64> {
        let mut out = 0f64;
        call(|err| unsafe { sys::pot_losscheck_params_get(&mut out, self.raw.as_ptr(), param.to_sys(), err) })?;
        Ok(out)
    }
}

impl Drop for LossCheckParams {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_losscheck_params_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for LossCheckParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LossCheckParams").finish_non_exhaustive()
    }
}

/// The kind of a [`LossFlag`] (`pot_loss_flag_kind`). Displays as its
/// stable lower-case name (`pot_loss_flag_name`).
///
/// ```
/// assert_eq!(pot::LossFlagKind::NonFinite.to_string(), "non_finite");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossFlagKind {
    /// A window in which the loss does not decrease.
    NoDecrease,
    /// A drop faster than any plausible training.
    ImplausibleRate,
    /// The loss stays unchanged for too long.
    Frozen,
    /// The loss jumps up far outside its noise.
    Regression,
    /// NaN or infinite losses.
    NonFinite,
    /// A kind this crate does not know (appended by a later libpot).
    Other(u32),
}

impl LossFlagKind {
    fn from_raw(raw: u32) -> LossFlagKind {
        match raw {
            0 => LossFlagKind::NoDecrease,
            1 => LossFlagKind::ImplausibleRate,
            2 => LossFlagKind::Frozen,
            3 => LossFlagKind::Regression,
            4 => LossFlagKind::NonFinite,
            r => LossFlagKind::Other(r),
        }
    }

    fn raw(self) -> u32 {
        match self {
            LossFlagKind::NoDecrease => 0,
            LossFlagKind::ImplausibleRate => 1,
            LossFlagKind::Frozen => 2,
            LossFlagKind::Regression => 3,
            LossFlagKind::NonFinite => 4,
            LossFlagKind::Other(r) => r,
        }
    }

    /// The stable name (`"no_decrease"`, `"implausible_rate"`, `"frozen"`,
    /// `"regression"`, `"non_finite"`; `"unknown"` otherwise).
    ///
    /// ```
    /// assert_eq!(pot::LossFlagKind::Frozen.name(), "frozen");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: takes any value, returns static storage.
        unsafe { ffi::static_str(sys::pot_loss_flag_name(sys::pot_loss_flag_kind(self.raw()))) }
    }
}

impl fmt::Display for LossFlagKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One flag of [`run`]: its kind, the steps it covers (inclusive, from 1)
/// and what was seen.
///
/// ```
/// let flags = pot::losscheck::run(&[1.0, f64::NAN, 0.9], None)?;
/// let f: &pot::LossFlag = &flags[0];
/// assert_eq!((f.kind, f.first_step, f.last_step), (pot::LossFlagKind::NonFinite, 2, 2));
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossFlag {
    /// What kind of anomaly.
    pub kind: LossFlagKind,
    /// First step covered (from 1).
    pub first_step: u64,
    /// Last step covered (inclusive).
    pub last_step: u64,
    /// What was seen.
    pub message: String,
}

impl fmt::Display for LossFlag {
    /// `<kind> steps <first>-<last>: <message>`, as `pot losscheck` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} steps {}-{}: {}", self.kind, self.first_step, self.last_step, self.message)
    }
}

/// Runs the checks over `losses[i]` = loss of step `i + 1` (`params` `None`:
/// the defaults). NaN and infinite losses are flagged, never skipped.
///
/// ```
/// // A smoothly decreasing curve raises no flag; a frozen one does.
/// let good: Vec<f64> = (0..100).map(|i| 2.0 * (-0.01 * i as f64).exp() + 0.001 * ((i * 7919) % 13) as f64).collect();
/// assert!(pot::losscheck::run(&good, None)?.is_empty());
/// let frozen = vec![1.0; 50];
/// assert!(pot::losscheck::run(&frozen, None)?.iter().any(|f| f.kind == pot::LossFlagKind::Frozen));
/// # Ok::<(), pot::Error>(())
/// ```
pub fn run(losses: &[f64], params: Option<&LossCheckParams>) -> Result<Vec<LossFlag>> {
    let mut report: *mut sys::pot_losscheck_report = ptr::null_mut();
    let p = params.map_or(ptr::null(), |p| p.raw.as_ptr() as *const _);
    call(|err| unsafe { sys::pot_losscheck_run(&mut report, losses.as_ptr(), losses.len(), p, err) })?;
    let report = Report(non_null(report)?);
    // SAFETY: live report.
    let count = unsafe { sys::pot_losscheck_report_count(report.0.as_ptr()) };
    let mut flags = Vec::with_capacity(count);
    for index in 0..count {
        let mut kind = sys::pot_loss_flag_kind(0);
        let (mut first, mut last) = (0u64, 0u64);
        let mut message = ptr::null();
        call(|err| unsafe {
            sys::pot_losscheck_report_flag(
                &mut kind,
                &mut first,
                &mut last,
                &mut message,
                report.0.as_ptr(),
                index,
                err,
            )
        })?;
        // SAFETY: valid until the report is freed, after this copy.
        let message = unsafe { ffi::borrowed_str(message) }?.to_owned();
        flags.push(LossFlag { kind: LossFlagKind::from_raw(kind.0), first_step: first, last_step: last, message });
    }
    Ok(flags)
}

/// An owned `pot_losscheck_report`, freed on drop.
struct Report(NonNull<sys::pot_losscheck_report>);

impl Drop for Report {
    fn drop(&mut self) {
        // SAFETY: we own the report.
        unsafe { sys::pot_losscheck_report_free(self.0.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_match_the_header() {
        use sys::pot_loss_flag_kind as K;
        assert_eq!(LossFlagKind::NoDecrease.raw(), K::POT_LOSS_NO_DECREASE.0);
        assert_eq!(LossFlagKind::NonFinite.raw(), K::POT_LOSS_NON_FINITE.0);
        assert_eq!(LossFlagKind::from_raw(K::POT_LOSS_REGRESSION.0), LossFlagKind::Regression);
        assert_eq!(LossFlagKind::Other(99).name(), "unknown");
        for raw in 0..5 {
            assert_eq!(LossFlagKind::from_raw(raw).raw(), raw);
        }
    }
}
