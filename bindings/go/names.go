package pot

/*
#include <pot.h>
*/
import "C"

// StatusCount returns the number of statuses the loaded libpot has, StatusOK
// included (pot_status_count): each of 0 .. StatusCount()-1 has a name. A
// libpot newer than this binding may have more; their errors carry the code
// and the library's name all the same.
func StatusCount() uint32 { return uint32(C.pot_status_count()) }

// StatePart names a tensor name or prefix of a training state
// (pot_state_part, PROTOCOL.md 21.1).
type StatePart uint32

// The state parts of pot.h.
const (
	StateParamPrefix  StatePart = C.POT_STATE_PARAM_PREFIX  // "param/<parameter>"
	StateBufferPrefix StatePart = C.POT_STATE_BUFFER_PREFIX // "buffer/<buffer>"
	StateOptimPrefix  StatePart = C.POT_STATE_OPTIM_PREFIX  // "optim/<parameter>/<key>"
	StateLR           StatePart = C.POT_STATE_LR            // group 0's rate; group g's is Name() + "/<g>"
	StateRNG          StatePart = C.POT_STATE_RNG           // the CPU generator's state
	StateGradPrefix   StatePart = C.POT_STATE_GRAD_PREFIX   // a witness's gradient state, "grad/<parameter>"
)

// Name returns the part's name or prefix as libpot spells it
// (pot_state_part_name), "" for a value that is not a state part.
func (p StatePart) Name() string {
	if abiErr != nil || uint64(p) > 0x7FFFFFFF {
		return ""
	}
	s := C.pot_state_part_name(C.pot_state_part(p))
	if s == nil {
		return ""
	}
	return C.GoString(s)
}
