package behavior

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	key := AnnotationKey("main")
	tests := []struct {
		name        string
		annotations map[string]string
		want        Behavior
		wantErr     []string // substrings of the error
	}{
		{name: "no annotation", annotations: map[string]string{"other": "x"}, want: Behavior{}},
		{name: "other container's annotation", annotations: map[string]string{AnnotationKey("side"): "runFor=1s"}, want: Behavior{}},
		{name: "runFor", annotations: map[string]string{key: "runFor=30s"}, want: Behavior{RunFor: 30 * time.Second, HasRunFor: true}},
		{name: "runFor zero", annotations: map[string]string{key: "runFor=0s"}, want: Behavior{HasRunFor: true}},
		{name: "exitCode", annotations: map[string]string{key: "exitCode=1"}, want: Behavior{ExitCode: 1, HasExitCode: true}},
		{name: "exitCode zero is explicit", annotations: map[string]string{key: "exitCode=0"}, want: Behavior{HasExitCode: true}},
		{name: "startDelay", annotations: map[string]string{key: "startDelay=2s"}, want: Behavior{StartDelay: 2 * time.Second}},
		{name: "pullDelay", annotations: map[string]string{key: "pullDelay=5s"}, want: Behavior{PullDelay: 5 * time.Second}},
		{name: "pullError", annotations: map[string]string{key: "pullError=ErrImagePull"}, want: Behavior{PullError: "ErrImagePull"}},
		{name: "oomAfter", annotations: map[string]string{key: "oomAfter=1m"}, want: Behavior{OOMAfter: time.Minute, HasOOMAfter: true}},
		{name: "stopDelay", annotations: map[string]string{key: "stopDelay=3s"}, want: Behavior{StopDelay: 3 * time.Second}},
		{name: "memoryUsage binary", annotations: map[string]string{key: "memoryUsage=256Mi"}, want: Behavior{MemoryUsage: 256 << 20}},
		{name: "memoryUsage decimal", annotations: map[string]string{key: "memoryUsage=1G"}, want: Behavior{MemoryUsage: 1e9}},
		{name: "probe keys", annotations: map[string]string{key: "readinessFailFor=30s,livenessFailAfter=1m,startupFailFor=20s,probeDelay=2s"},
			want: Behavior{ReadinessFailFor: 30 * time.Second, LivenessFailAfter: time.Minute, HasLivenessFailAfter: true, StartupFailFor: 20 * time.Second, ProbeDelay: 2 * time.Second}},
		{name: "livenessFailAfter zero fails from the start", annotations: map[string]string{key: "livenessFailAfter=0s"}, want: Behavior{HasLivenessFailAfter: true}},
		{
			name:        "combined with spaces and empty items",
			annotations: map[string]string{key: " runFor=10s , exitCode=3,,stopDelay=1m30s, "},
			want:        Behavior{RunFor: 10 * time.Second, HasRunFor: true, ExitCode: 3, HasExitCode: true, StopDelay: 90 * time.Second},
		},
		{name: "empty value", annotations: map[string]string{key: ""}, want: Behavior{}},
		{name: "unknown key", annotations: map[string]string{key: "runfor=1s"}, wantErr: []string{`annotation "minikubelet.io/behavior.main"`, `key "runfor"`, "unknown key", "runFor, exitCode"}},
		{name: "bad duration", annotations: map[string]string{key: "runFor=abc"}, wantErr: []string{`annotation "minikubelet.io/behavior.main"`, `key "runFor"`, `bad value "abc"`, "duration"}},
		{name: "negative duration", annotations: map[string]string{key: "startDelay=-1s"}, wantErr: []string{`key "startDelay"`, `bad value "-1s"`, "negative"}},
		{name: "exitCode too big", annotations: map[string]string{key: "exitCode=256"}, wantErr: []string{`key "exitCode"`, `bad value "256"`, "0 to 255"}},
		{name: "exitCode not a number", annotations: map[string]string{key: "exitCode=one"}, wantErr: []string{`key "exitCode"`, `bad value "one"`}},
		{name: "pullError with space", annotations: map[string]string{key: "pullError=Err Image"}, wantErr: []string{`key "pullError"`}},
		{name: "pullError empty", annotations: map[string]string{key: "pullError="}, wantErr: []string{`key "pullError"`}},
		{name: "cpuUsage", annotations: map[string]string{key: "cpuUsage=250m"}, want: Behavior{CPUMilli: 250}},
		{name: "cpuUsage in cores", annotations: map[string]string{key: "cpuUsage=1.5"}, want: Behavior{CPUMilli: 1500}},
		{name: "memoryGrowth", annotations: map[string]string{key: "memoryUsage=64Mi,memoryGrowth=100Mi/1m"}, want: Behavior{MemoryUsage: 64 << 20, MemoryGrowth: 100 << 20, MemoryGrowthPer: time.Minute}},
		{name: "cpuUsage zero", annotations: map[string]string{key: "cpuUsage=0"}, wantErr: []string{`key "cpuUsage"`, `bad value "0"`, "positive CPU quantity"}},
		{name: "disk", annotations: map[string]string{key: "diskUsage=1Gi,diskGrowth=100Mi/1m"}, want: Behavior{DiskUsage: 1 << 30, DiskGrowth: 100 << 20, DiskGrowthPer: time.Minute}},
		{name: "negative diskUsage", annotations: map[string]string{key: "diskUsage=-1Gi"}, wantErr: []string{`key "diskUsage"`, "non-negative"}},
		{name: "diskGrowth without a period", annotations: map[string]string{key: "diskGrowth=100Mi"}, wantErr: []string{`key "diskGrowth"`, "100Mi/1m"}},
		{name: "memoryGrowth without a period", annotations: map[string]string{key: "memoryGrowth=100Mi"}, wantErr: []string{`key "memoryGrowth"`, "100Mi/1m"}},
		{name: "memoryGrowth per zero", annotations: map[string]string{key: "memoryGrowth=1Mi/0s"}, wantErr: []string{`key "memoryGrowth"`}},
		{name: "bad quantity", annotations: map[string]string{key: "memoryUsage=lots"}, wantErr: []string{`key "memoryUsage"`, `bad value "lots"`}},
		{name: "negative quantity", annotations: map[string]string{key: "memoryUsage=-1Mi"}, wantErr: []string{`key "memoryUsage"`}},
		// Amounts the runtime's int64 arithmetic would wrap round (found by FuzzBehavior).
		{name: "memoryUsage over int64", annotations: map[string]string{key: "memoryUsage=9223372036854775808"}, wantErr: []string{`key "memoryUsage"`, `bad value "9223372036854775808"`, "up to 1Ei"}},
		{name: "diskUsage 1e400", annotations: map[string]string{key: "diskUsage=1e400"}, wantErr: []string{`key "diskUsage"`, "up to 1Ei"}},
		{name: "cpuUsage over int64 millicores", annotations: map[string]string{key: "cpuUsage=1e400"}, wantErr: []string{`key "cpuUsage"`, "up to 1P"}},
		{name: "memoryGrowth over int64", annotations: map[string]string{key: "memoryGrowth=8Ei/1s"}, wantErr: []string{`key "memoryGrowth"`, "up to 1Ei"}},
		{name: "memoryUsage at the bound", annotations: map[string]string{key: "memoryUsage=1Ei"}, want: Behavior{MemoryUsage: 1 << 60}},
		{name: "missing equals", annotations: map[string]string{key: "runFor"}, wantErr: []string{`bad value "runFor"`, "key=value"}},
		{name: "duplicate key", annotations: map[string]string{key: "runFor=1s,runFor=2s"}, wantErr: []string{`key "runFor"`, "more than once"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.annotations, "main")
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Parse() = %+v, want an error", got)
				}
				var be *Error
				if !errors.As(err, &be) {
					t.Errorf("error %T is not a *behavior.Error", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error: %v", err)
			}
			if got != tc.want {
				t.Errorf("Parse() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, v := range []string{
		"",
		"runFor=30s,exitCode=1",
		"runFor=0s",
		"exitCode=0",
		"startDelay=2s,pullDelay=5s,pullError=ErrImagePull,oomAfter=1m0s,stopDelay=3s,memoryUsage=256Mi",
		"cpuUsage=250m,memoryGrowth=100Mi/1m0s",
		"cpuUsage=2,memoryUsage=1Gi,memoryGrowth=512Ki/10s",
		"diskUsage=1Gi,diskGrowth=100Mi/1m0s",
	} {
		t.Run(v, func(t *testing.T) {
			b, err := ParseValue(v)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseValue(b.String())
			if err != nil {
				t.Fatalf("ParseValue(%q) error: %v", b.String(), err)
			}
			if again != b {
				t.Errorf("round trip of %q via %q = %+v, want %+v", v, b.String(), again, b)
			}
			if b.IsZero() != (v == "") {
				t.Errorf("IsZero() = %v for %q", b.IsZero(), v)
			}
		})
	}
}

func TestParseAll(t *testing.T) {
	got, err := ParseAll(map[string]string{
		AnnotationKey("a"): "runFor=1s",
		AnnotationKey("b"): "bogus=1",
		AnnotationKey("c"): "exitCode=x",
		"unrelated":        "runFor=zz",
	})
	if err == nil {
		t.Fatal("ParseAll() error = nil, want the two bad annotations")
	}
	msg := err.Error()
	for _, s := range []string{AnnotationKey("b"), AnnotationKey("c")} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not name %s", msg, s)
		}
	}
	if strings.Index(msg, AnnotationKey("b")) > strings.Index(msg, AnnotationKey("c")) {
		t.Errorf("errors not in key order: %q", msg)
	}
	want := map[string]Behavior{"a": {RunFor: time.Second, HasRunFor: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseAll() good annotations = %+v, want %+v", got, want)
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name       string
		ann        map[string]string
		containers []string
		wantErr    string
	}{
		{name: "ok", ann: map[string]string{AnnotationKey("main"): "runFor=1s"}, containers: []string{"init", "main"}},
		{name: "no annotations", containers: []string{"main"}},
		{name: "typo in container name", ann: map[string]string{AnnotationKey("mian"): "runFor=1s"}, containers: []string{"main"}, wantErr: `no container named "mian" in the pod (containers: main)`},
		{name: "bad value", ann: map[string]string{AnnotationKey("main"): "runFor=x"}, containers: []string{"main"}, wantErr: `key "runFor"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidatePod(tc.ann, tc.containers)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePod() error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidatePod() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestProbePasses(t *testing.T) {
	b := Behavior{ReadinessFailFor: 30 * time.Second, LivenessFailAfter: time.Minute, HasLivenessFailAfter: true, StartupFailFor: 20 * time.Second}
	tests := []struct {
		kind  string
		since time.Duration
		want  bool
	}{
		{"Readiness", 29 * time.Second, false}, {"Readiness", 30 * time.Second, true},
		{"Liveness", 59 * time.Second, true}, {"Liveness", time.Minute, false},
		{"Startup", 19 * time.Second, false}, {"Startup", 20 * time.Second, true},
	}
	for _, tt := range tests {
		if got := b.ProbePasses(tt.kind, tt.since); got != tt.want {
			t.Errorf("%s at %v: passes = %t, want %t", tt.kind, tt.since, got, tt.want)
		}
	}
	var none Behavior
	for _, kind := range []string{"Readiness", "Liveness", "Startup"} {
		if !none.ProbePasses(kind, 0) || !none.ProbePasses(kind, time.Hour) {
			t.Errorf("an unscripted container fails its %s probe", kind)
		}
	}
}

// TestMemoryModel: a leak grows linearly from memoryUsage; the time to reach a limit is the
// first instant at which the use is at or above it.
func TestMemoryModel(t *testing.T) {
	b := Behavior{MemoryUsage: 64 << 20, MemoryGrowth: 100 << 20, MemoryGrowthPer: time.Minute}
	for _, tt := range []struct {
		after time.Duration
		want  int64
	}{{0, 64 << 20}, {30 * time.Second, 114 << 20}, {time.Minute, 164 << 20}, {-time.Second, 64 << 20}} {
		if got := b.MemoryAt(tt.after); got != tt.want {
			t.Errorf("MemoryAt(%v) = %d, want %d", tt.after, got, tt.want)
		}
	}
	d, ok := b.TimeToReach(256 << 20)
	if !ok || b.MemoryAt(d) < 256<<20 || b.MemoryAt(d-time.Millisecond) >= 256<<20 {
		t.Errorf("TimeToReach(256Mi) = %v %v: use then %d, a millisecond before %d", d, ok, b.MemoryAt(d), b.MemoryAt(d-time.Millisecond))
	}
	if _, ok := (Behavior{MemoryUsage: 1 << 20}).TimeToReach(2 << 20); ok {
		t.Error("no growth under the limit reaches it")
	}
	if d, ok := (Behavior{MemoryUsage: 3 << 20}).TimeToReach(2 << 20); !ok || d != 0 {
		t.Errorf("usage above the limit: TimeToReach = %v %v, want 0 true", d, ok)
	}
	// Exact to the byte at the top of the range, where float64 is not (found by FuzzBehavior):
	// 1Ei growing 10 bytes a minute gains its first byte after 6s.
	huge := Behavior{MemoryUsage: 1 << 60, MemoryGrowth: 10, MemoryGrowthPer: time.Minute}
	if d, ok := huge.TimeToReach(1<<60 + 1); !ok || d != 6*time.Second || huge.MemoryAt(d) != 1<<60+1 || huge.MemoryAt(d-1) != 1<<60 {
		t.Errorf("1Ei + 10/1m: TimeToReach(1Ei+1) = %v %v, use then %d, 1ns before %d", d, ok, huge.MemoryAt(d), huge.MemoryAt(d-1))
	}
	// A limit the leak would reach only after the longest duration: that duration.
	slow := Behavior{MemoryGrowth: 1, MemoryGrowthPer: time.Hour}
	if d, ok := slow.TimeToReach(1 << 60); !ok || d != math.MaxInt64 || slow.MemoryAt(d) != math.MaxInt64/int64(time.Hour) {
		t.Errorf("1 byte an hour to 1Ei: TimeToReach = %v %v, use then %d", d, ok, slow.MemoryAt(d))
	}
	// Growth that would pass the int64 range saturates.
	if got := (Behavior{MemoryUsage: 1 << 60, MemoryGrowth: 1 << 60, MemoryGrowthPer: time.Nanosecond}).MemoryAt(time.Hour); got != math.MaxInt64 {
		t.Errorf("1Ei/1ns after 1h = %d, want MaxInt64", got)
	}
}

func TestLogKeys(t *testing.T) {
	b, err := ParseValue("logEvery=5s,logLine=GET /healthz 200 req={n}")
	if err != nil {
		t.Fatal(err)
	}
	if b.LogEvery != 5*time.Second || b.LogText(12) != "GET /healthz 200 req=12" {
		t.Errorf("parsed %+v, line 12 %q", b, b.LogText(12))
	}
	if got := (Behavior{LogEvery: time.Second}).LogText(3); got != "log line 3" {
		t.Errorf("default line = %q", got)
	}
	again, err := ParseValue(b.String())
	if err != nil || again != b {
		t.Errorf("round trip via %q = %+v, %v", b.String(), again, err)
	}
	for _, bad := range []string{"logEvery=0s", "logEvery=soon", "logLine="} {
		if _, err := ParseValue(bad); err == nil {
			t.Errorf("ParseValue(%q) accepted", bad)
		}
	}
}

// TestLogBytes: the closed form equals the lines' sizes summed one by one.
func TestLogBytes(t *testing.T) {
	for _, tpl := range []string{"", "tick {n}", "{n}/{n} done", "no number"} {
		b := Behavior{LogLine: tpl}
		var sum int64
		for k := int64(0); k <= 1200; k++ {
			if got := b.LogBytes(k); got != sum {
				t.Fatalf("template %q: LogBytes(%d) = %d, want %d", tpl, k, got, sum)
			}
			sum += int64(len(b.LogText(k+1))) + 1
		}
	}
}
