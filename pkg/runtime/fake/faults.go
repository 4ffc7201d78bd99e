package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// ErrFaultNotFound is wrapped by RemoveFault for an unknown id.
var ErrFaultNotFound = errors.New("runtime fault not found")

// DefaultFaultMessage is the message of an error or streamError fault that gives none.
const DefaultFaultMessage = "injected fault"

// InjectedError is the error a call fails with because of an error fault, or the reason a
// stream broke or was refused because of a streamError fault.
type InjectedError struct {
	FaultID string
	Method  string
	Type    fault.Type
	Message string
}

func (e *InjectedError) Error() string {
	return fmt.Sprintf("%s: %s (injected %s fault %s)", e.Method, e.Message, e.Type, e.FaultID)
}

type faultState struct {
	spec      fault.Spec
	remaining int // error: fires left when spec.Count > 0; streamError: breaks/refusals left
	fired     int
	removed   bool
	retired   bool       // removed because its count was spent
	hung      []*task.Op // the calls a hang fault holds; completed on removal
}

// AddFault validates a fault and starts injecting it; an empty ID gets "fault-N". A
// streamError fault breaks the current event stream at once (that counts as one firing).
// The returned spec carries the ID to remove it with.
func (r *Runtime) AddFault(spec fault.Spec) (fault.Spec, error) {
	if err := spec.Validate(); err != nil {
		return fault.Spec{}, fmt.Errorf("add runtime fault: %w", err)
	}
	r.mu.Lock()
	if spec.ID == "" {
		for spec.ID == "" || r.findFaultLocked(spec.ID) != nil {
			r.faultSeq++
			spec.ID = fmt.Sprintf("fault-%d", r.faultSeq)
		}
	} else if r.findFaultLocked(spec.ID) != nil {
		r.mu.Unlock()
		return fault.Spec{}, fmt.Errorf("add runtime fault: field \"id\": %q is already in use", spec.ID)
	}
	f := &faultState{spec: spec, remaining: spec.Count}
	if spec.Type == fault.StreamError && f.remaining == 0 {
		f.remaining = 1
	}
	r.faults = append(r.faults, f)
	r.nFaults.Store(int32(len(r.faults)))
	broke := false
	if spec.Type == fault.StreamError && r.sub != nil {
		r.breakStreamLocked(r.sub, &InjectedError{FaultID: spec.ID, Method: methodGetContainerEvents, Type: spec.Type, Message: "stream broken: " + faultMessage(spec)})
		broke = true
		r.useLocked(f)
	}
	r.release()
	r.logger.Info("Added runtime fault", "id", spec.ID, "method", spec.Method, "type", spec.Type)
	if broke {
		r.fire(f, methodGetContainerEvents)
	}
	return spec, nil
}

// Faults returns the active faults in the order they were added.
func (r *Runtime) Faults() []fault.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]fault.Spec, len(r.faults))
	for i, f := range r.faults {
		out[i] = f.spec
	}
	return out
}

// RemoveFault stops a fault and releases the calls it hangs; an unknown id wraps
// ErrFaultNotFound.
func (r *Runtime) RemoveFault(id string) error {
	r.mu.Lock()
	f := r.findFaultLocked(id)
	if f == nil {
		r.mu.Unlock()
		return fmt.Errorf("remove runtime fault %q: %w", id, ErrFaultNotFound)
	}
	r.removeFaultLocked(f)
	r.release()
	r.logger.Info("Removed runtime fault", "id", id, "method", f.spec.Method, "type", f.spec.Type)
	return nil
}

// ClearFaults removes every fault.
func (r *Runtime) ClearFaults() {
	r.mu.Lock()
	faults := slices.Clone(r.faults)
	for _, f := range faults {
		r.removeFaultLocked(f)
	}
	r.release()
	if len(faults) > 0 {
		r.logger.Info("Cleared runtime faults", "count", len(faults))
	}
}

func (r *Runtime) findFaultLocked(id string) *faultState {
	for _, f := range r.faults {
		if f.spec.ID == id {
			return f
		}
	}
	return nil
}

func (r *Runtime) removeFaultLocked(f *faultState) {
	if f.removed {
		return
	}
	f.removed = true
	for _, op := range f.hung {
		r.completeLocked(op, nil)
	}
	f.hung = nil
	r.faults = slices.DeleteFunc(r.faults, func(x *faultState) bool { return x == f })
	r.nFaults.Store(int32(len(r.faults)))
}

// useLocked spends one firing of a counted fault and retires it when none is left.
func (r *Runtime) useLocked(f *faultState) {
	if f.remaining <= 0 {
		return
	}
	f.remaining--
	if f.remaining == 0 {
		f.retired = true
		r.removeFaultLocked(f)
	}
}

// fire records a firing: metric, log (the first firing of a fault at level 0, later ones at
// V(2)), and the OnFault hook. Called without the lock.
func (r *Runtime) fire(f *faultState, method string) {
	r.mu.Lock()
	f.fired++
	n, retired := f.fired, f.retired
	r.mu.Unlock()
	r.faultsFired.WithLabelValues(method, string(f.spec.Type)).Inc()
	kv := []any{"id", f.spec.ID, "method", method, "type", f.spec.Type, "firing", n}
	if f.spec.Type == fault.Error || f.spec.Type == fault.StreamError {
		kv = append(kv, "message", faultMessage(f.spec))
	}
	if n == 1 {
		r.logger.Info("Injected runtime fault", kv...)
	} else {
		r.logger.V(2).Info("Injected runtime fault", kv...)
	}
	if retired {
		r.logger.Info("Retired runtime fault after its count", "id", f.spec.ID, "count", max(f.spec.Count, 1))
	}
	if r.onFault != nil {
		r.onFault(f.spec, method)
	}
}

func faultMessage(s fault.Spec) string {
	if s.Message != "" {
		return s.Message
	}
	return DefaultFaultMessage
}

// inject applies the latency, hang and error faults matching method, in the order they were
// added. touched counts what the call lists or touches (perContainer latency); it is only
// called when needed. A nil return lets the call proceed.
func (r *Runtime) inject(ctx context.Context, method string, touched func() int) error {
	if r.nFaults.Load() == 0 {
		return nil
	}
	r.mu.Lock()
	var matched []*faultState
	for _, f := range r.faults {
		switch f.spec.Type {
		case fault.Latency, fault.Hang, fault.Error:
			if f.spec.Matches(method) {
				matched = append(matched, f)
			}
		}
	}
	r.mu.Unlock()
	for _, f := range matched {
		switch f.spec.Type {
		case fault.Latency:
			d := f.spec.Delay.Duration
			if f.spec.PerContainer.Duration > 0 {
				d += f.spec.PerContainer.Duration * time.Duration(touched())
			}
			r.fire(f, method)
			if err := r.delay(ctx, d); err != nil {
				return err
			}
		case fault.Hang:
			op := r.hangOp(f)
			if op == nil {
				continue // removed meanwhile
			}
			r.fire(f, method)
			if err := r.await(ctx, op); err != nil {
				return err
			}
		case fault.Error:
			r.mu.Lock()
			hit := !f.removed && (f.spec.Rate == 0 || r.rng.Float64() < f.spec.Rate)
			if hit {
				r.useLocked(f)
			}
			r.release()
			if hit {
				r.fire(f, method)
				return &InjectedError{FaultID: f.spec.ID, Method: method, Type: f.spec.Type, Message: faultMessage(f.spec)}
			}
		}
	}
	return ctx.Err()
}

// hangOp returns the pending operation a call hung by f waits for: it completes when the
// fault is removed or its "for" elapses (the caller's deadline ends the wait sooner). Nil when
// the fault is already gone.
func (r *Runtime) hangOp(f *faultState) *task.Op {
	r.mu.Lock()
	defer r.release()
	if f.removed {
		return nil
	}
	op := task.NewOp()
	if len(f.hung) >= 64 {
		f.hung = slices.DeleteFunc(f.hung, (*task.Op).Done)
	}
	f.hung = append(f.hung, op)
	if d := f.spec.For.Duration; d > 0 {
		r.scheduleOpLocked(after(r.now(), d), op, nil)
	}
	return op
}

// streamRefusalLocked spends a streamError fault on a new subscriber, if one is active.
func (r *Runtime) streamRefusalLocked() (*faultState, error) {
	for _, f := range r.faults {
		if f.spec.Type == fault.StreamError && f.spec.Matches(methodGetContainerEvents) {
			r.useLocked(f)
			return f, &InjectedError{FaultID: f.spec.ID, Method: methodGetContainerEvents, Type: f.spec.Type, Message: "connection refused: " + faultMessage(f.spec)}
		}
	}
	return nil, nil
}

// Status reports RuntimeReady and NetworkReady, true unless a notReady fault holds one down,
// and the runtime's handlers and features (Config.Handlers and Features).
// A RuntimeReady fault reports reason RuntimeNotReady; a NetworkReady one reports
// NetworkPluginNotReady with containerd's "cni plugin not initialized" message, unless the
// fault gives a message.
func (r *Runtime) Status(ctx context.Context) (*cri.RuntimeStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.inject(ctx, methodStatus, one); err != nil {
		return nil, err
	}
	features := r.features
	st := &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{
		{Type: cri.RuntimeReady, Status: true},
		{Type: cri.NetworkReady, Status: true},
	}, Handlers: slices.Clone(r.handlers), Features: &features}
	if r.nFaults.Load() == 0 {
		return st, nil
	}
	var fired []*faultState
	r.mu.Lock()
	for _, f := range r.faults {
		if f.spec.Type != fault.NotReady || !f.spec.Matches(methodStatus) {
			continue
		}
		c := st.Condition(f.spec.Condition)
		if c == nil || !c.Status {
			continue
		}
		c.Status = false
		switch f.spec.Condition {
		case cri.RuntimeReady:
			c.Reason, c.Message = "RuntimeNotReady", "container runtime is not ready (injected fault "+f.spec.ID+")"
		case cri.NetworkReady:
			c.Reason, c.Message = "NetworkPluginNotReady", "Network plugin returns error: cni plugin not initialized"
		}
		if f.spec.Message != "" {
			c.Message = f.spec.Message
		}
		fired = append(fired, f)
	}
	r.mu.Unlock()
	for _, f := range fired {
		r.fire(f, methodStatus)
	}
	return st, nil
}
