package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"math"
	"runtime"
	"strconv"
	"unsafe"
)

// LossCheckParam names one parameter of the loss-curve checks
// (pot_losscheck_param, docs/losscheck.md section 5).
type LossCheckParam uint32

// The parameters of pot.h, with their ranges and defaults.
const (
	LossWindow                LossCheckParam = C.POT_LOSSCHECK_WINDOW                  // steps per window, 1..10000 (20)
	LossDecreaseTolerance     LossCheckParam = C.POT_LOSSCHECK_DECREASE_TOLERANCE      // relative, [0, 1) (0.02)
	LossDecreaseSigmas        LossCheckParam = C.POT_LOSSCHECK_DECREASE_SIGMAS         // >= 0 (3)
	LossMaxDrop               LossCheckParam = C.POT_LOSSCHECK_MAX_DROP                // (0, 1] (0.9)
	LossFrozenMinSteps        LossCheckParam = C.POT_LOSSCHECK_FROZEN_MIN_STEPS        // >= 2 (10)
	LossFrozenEpsilon         LossCheckParam = C.POT_LOSSCHECK_FROZEN_EPSILON          // >= 0 (0)
	LossRegressionSigmas      LossCheckParam = C.POT_LOSSCHECK_REGRESSION_SIGMAS       // >= 0 (6)
	LossRegressionMinIncrease LossCheckParam = C.POT_LOSSCHECK_REGRESSION_MIN_INCREASE // >= 0 (1)
	LossMaxFlags              LossCheckParam = C.POT_LOSSCHECK_MAX_FLAGS               // >= 1 (1000)
)

// LossFlagKind is the rule a loss flag comes from (pot_loss_flag_kind).
type LossFlagKind uint32

// The rules of docs/losscheck.md section 4.
const (
	LossNoDecrease      LossFlagKind = C.POT_LOSS_NO_DECREASE      // the loss at the end is not clearly below the loss at the start
	LossImplausibleRate LossFlagKind = C.POT_LOSS_IMPLAUSIBLE_RATE // the loss fell, and stayed, too far too fast
	LossFrozen          LossFlagKind = C.POT_LOSS_FROZEN           // the loss repeats over many consecutive steps
	LossRegression      LossFlagKind = C.POT_LOSS_REGRESSION       // the loss jumped far above its recent level
	LossNonFinite       LossFlagKind = C.POT_LOSS_NON_FINITE       // the loss is NaN or infinite
)

// String returns the stable lower-case name of the kind
// (pot_loss_flag_name: "no_decrease", "frozen", ...), or "unknown".
func (k LossFlagKind) String() string {
	if uint64(k) > math.MaxInt32 {
		return "unknown"
	}
	return C.GoString(C.pot_loss_flag_name(C.pot_loss_flag_kind(k)))
}

// LossFlag is one finding of the loss-curve checks.
type LossFlag struct {
	Kind      LossFlagKind
	FirstStep uint64 // first step flagged, from 1
	LastStep  uint64 // last step flagged, inclusive
	Message   string // one English sentence; not a stable format
}

// String formats the flag as the pot CLI does: "<kind> steps <a>-<b>: <message>".
func (f LossFlag) String() string {
	return f.Kind.String() + " steps " + strconv.FormatUint(f.FirstStep, 10) + "-" +
		strconv.FormatUint(f.LastStep, 10) + ": " + f.Message
}

// LossCheckParams holds the parameters of the loss-curve checks
// (pot_losscheck_params), set one by one. It is safe for concurrent use
// (calls are serialised).
type LossCheckParams struct {
	h handle[*C.pot_losscheck_params]
}

// NewLossCheckParams returns parameters with the documented defaults.
func NewLossCheckParams() (*LossCheckParams, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_losscheck_params
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_losscheck_params_new(&p, cerr)
	}); err != nil {
		return nil, err
	}
	lp := &LossCheckParams{}
	lp.h.set(p, "LossCheckParams")
	runtime.SetFinalizer(lp, (*LossCheckParams).Close)
	return lp, nil
}

// Close frees the parameters. It is safe to call more than once.
func (lp *LossCheckParams) Close() error {
	runtime.SetFinalizer(lp, nil)
	return lp.h.close(func(p *C.pot_losscheck_params) error { C.pot_losscheck_params_free(p); return nil })
}

// Set sets one parameter; integer parameters need an integral value.
// StatusInvalidArgument (naming the parameter) for a value out of range;
// the parameters are then unchanged.
func (lp *LossCheckParams) Set(param LossCheckParam, value float64) error {
	return lp.h.write(func(p *C.pot_losscheck_params, cerr **C.pot_error) C.pot_status {
		return C.pot_losscheck_params_set(p, C.pot_losscheck_param(param), C.double(value), cerr)
	})
}

// Get returns the value of one parameter.
func (lp *LossCheckParams) Get(param LossCheckParam) (float64, error) {
	var out C.double
	if err := lp.h.write(func(p *C.pot_losscheck_params, cerr **C.pot_error) C.pot_status {
		return C.pot_losscheck_params_get(&out, p, C.pot_losscheck_param(param), cerr)
	}); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// Run runs the loss-curve checks with these parameters; see CheckLosses.
func (lp *LossCheckParams) Run(losses []float64) ([]LossFlag, error) {
	return CheckLosses(losses, lp)
}

// CheckLosses runs the loss-curve checks (docs/losscheck.md) over
// losses[i] = loss of step i+1, with params (nil: the defaults). NaN and
// infinite losses are flagged, never skipped. The flags are sorted by
// first step, then kind; an empty sequence gives none.
func CheckLosses(losses []float64, params *LossCheckParams) ([]LossFlag, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var data *C.double
	if len(losses) > 0 {
		data = (*C.double)(unsafe.Pointer(&losses[0]))
	}
	var report *C.pot_losscheck_report
	run := func(cp *C.pot_losscheck_params, cerr **C.pot_error) C.pot_status {
		return C.pot_losscheck_run(&report, data, C.size_t(len(losses)), cp, cerr)
	}
	var err error
	if params != nil {
		err = params.h.write(run)
	} else {
		err = status(func(cerr **C.pot_error) C.pot_status { return run(nil, cerr) })
	}
	if err != nil {
		return nil, err
	}
	defer C.pot_losscheck_report_free(report)
	n := int(C.pot_losscheck_report_count(report))
	flags := make([]LossFlag, 0, n)
	for i := 0; i < n; i++ {
		var kind C.pot_loss_flag_kind
		var first, last C.uint64_t
		var msg *C.char
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_losscheck_report_flag(&kind, &first, &last, &msg, report, C.size_t(i), cerr)
		}); err != nil {
			return nil, err
		}
		flags = append(flags, LossFlag{Kind: LossFlagKind(kind), FirstStep: uint64(first), LastStep: uint64(last),
			Message: C.GoString(msg)})
	}
	return flags, nil
}
