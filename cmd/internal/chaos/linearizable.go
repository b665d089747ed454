package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenure-dev/tenure/internal/history"
)

// Linearizability model: a fenced register.
type regState struct {
	token uint64
	value string
}

type regInput struct {
	write bool
	token uint64
	value string
}

type regOutput struct {
	outcome string // write: accepted, rejected, unknown; read: ""
	token   uint64
	value   string
}

var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		if !in.write {
			if out.token == st.token && out.value == st.value {
				return []interface{}{st}
			}
			return nil
		}
		next := regState{token: in.token, value: in.value}
		fresh := in.token >= st.token && in.token > 0
		switch out.outcome {
		case history.ResultAccepted:
			if fresh {
				return []interface{}{next}
			}
			return nil
		case history.ResultUnknown:
			if fresh {
				return []interface{}{st, next}
			}
			return []interface{}{st}
		default:
			if !fresh {
				return []interface{}{st}
			}
			return nil
		}
	},
	Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		if in.write {
			return fmt.Sprintf("write(%d, %s) → %s", in.token, in.value, out.outcome)
		}
		return fmt.Sprintf("read() → (%d, %s)", out.token, out.value)
	},
}

// checkLinearizable checks the register history with porcupine: writes
// whose outcome their writer never learned are modelled as unknown (they
// may or may not have taken effect). It returns the check and porcupine's
// answer. A history porcupine cannot decide within
// Options.CheckTimeout counts as a violation: no verdict is not a pass.
func checkLinearizable(h *History) (history.Check, string) {
	c := history.Check{Name: "linearizability", Safety: true}
	ops := registerOps(h)
	res := porcupine.CheckOperationsTimeout(registerModel.ToModel(), ops, h.Options.CheckTimeout)
	switch res {
	case porcupine.Illegal:
		c.Add("the register history of %d operations is not linearizable", len(ops))
	case porcupine.Unknown:
		c.Add("porcupine found no verdict within %s on %d operations: the history is unchecked (raise the check timeout, or shorten the run)", h.Options.CheckTimeout, len(ops))
	default:
		c.Note = fmt.Sprintf("%d operations", len(ops))
	}
	return c, string(res)
}

// registerOps turns the writes and reads of h into porcupine operations.
func registerOps(h *History) []porcupine.Operation {
	w := history.IndexWrites(h.Events)
	var ops []porcupine.Operation
	end := h.Finish + int64(time.Hour)
	for v, ws := range w.Starts {
		res, ok := w.Results[v]
		if ok && res.Result == history.ResultRefused {
			continue
		}
		op := porcupine.Operation{ClientId: ws.Node, Input: regInput{write: true, token: ws.Token, value: v}, Call: ws.At}
		switch {
		case !ok || res.Result == history.ResultUnknown:
			op.Output, op.Return = regOutput{outcome: history.ResultUnknown}, end
		case res.Result == history.ResultAccepted:
			op.Output, op.Return = regOutput{outcome: history.ResultAccepted}, res.At
		default:
			op.Output, op.Return = regOutput{outcome: history.ResultRejected}, res.At
		}
		ops = append(ops, op)
	}
	for _, r := range h.Reads {
		if r.OK {
			ops = append(ops, porcupine.Operation{ClientId: h.Options.Nodes, Input: regInput{}, Output: regOutput{token: r.Token, value: r.Value}, Call: r.Call, Return: r.Return})
		}
	}
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return ops
}
