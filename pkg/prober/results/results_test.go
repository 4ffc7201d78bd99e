package results

import "testing"

func TestSetQueuesChangesOnly(t *testing.T) {
	notified := 0
	m := NewManager(func() { notified++ })
	steps := []struct {
		id     string
		result Result
		queued bool
	}{
		{"c1", Failure, true},  // first result
		{"c1", Failure, false}, // same: nothing to tell
		{"c1", Success, true},  // changed
		{"c2", Success, true},  // another container
	}
	for i, st := range steps {
		before := m.Len()
		m.Set(st.id, st.result, "uid")
		if queued := m.Len() > before; queued != st.queued {
			t.Fatalf("step %d: queued = %t, want %t", i, queued, st.queued)
		}
		if r, ok := m.Get(st.id); !ok || r != st.result {
			t.Fatalf("step %d: Get = %v %t", i, r, ok)
		}
	}
	if notified != 3 {
		t.Errorf("notified %d times, want 3", notified)
	}
	var got []string
	for u, ok := m.Pop(); ok; u, ok = m.Pop() {
		got = append(got, u.ContainerID+"="+u.Result.String())
	}
	if want := "[c1=Failure c1=Success c2=Success]"; fmtList(got) != want {
		t.Errorf("updates %s, want %s", fmtList(got), want)
	}
	m.Remove("c1")
	if _, ok := m.Get("c1"); ok {
		t.Error("removed container still has a result")
	}
	m.Set("c1", Success, "uid")
	if m.Len() != 1 {
		t.Error("a result for a container set again after Remove is not a change")
	}
}

func TestResultString(t *testing.T) {
	for r, want := range map[Result]string{Success: "Success", Failure: "Failure", Unknown: "UNKNOWN"} {
		if r.String() != want {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), want)
		}
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
