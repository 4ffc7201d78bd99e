package app

import (
	"errors"
	"strings"
	"testing"
)

func TestSimulateExitCodes(t *testing.T) {
	passing := writeFile(t, `name: pass
duration: 20s
manifests:
  web.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c, image: nginx}]}
steps:
- at: 10s
  expect:
    pod: {name: web-node, phase: Running}
`)
	failing := writeFile(t, `name: fail
duration: 20s
steps:
- at: 10s
  expect:
    pod: {name: web-node, phase: Running}
`)
	invalid := writeFile(t, "name: bad\nduration: 20s\nsteps:\n- at: 10s\n  shutdwon: true\n")
	badArgs := writeFile(t, "name: bad\nduration: 20s\nargs: [\"--relist-period=soon\"]\n")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"all passed", []string{"simulate", "-f", passing}, 0, []string{"PASS step 0 at T+00:00:10.000: pod web-node phase=Running", "1 passed, 0 failed"}, ""},
		{"json", []string{"simulate", "-f", passing, "-o", "json"}, 0, []string{`"passed": 1`, `"line": "PASS step 0`}, ""},
		{"a failure", []string{"simulate", "-f", failing}, 1, []string{"FAIL step 0", "0 passed, 1 failed"}, "1 of 1 expectations failed"},
		{"invalid file", []string{"simulate", "-f", invalid}, 2, nil, `step 0: unknown key "shutdwon"`},
		{"invalid args", []string{"simulate", "-f", badArgs}, 2, nil, "relist-period"},
		{"missing file", []string{"simulate", "-f", invalid + ".nope"}, 2, nil, "read scenario"},
		{"no -f", []string{"simulate"}, 2, nil, "flag -f/--file is required"},
		{"bad -o", []string{"simulate", "-f", passing, "-o", "yaml"}, 2, nil, `flag -o/--output: "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, out, _, _ := testCommand(t, tt.args...)
			err := cmd.Execute()
			code := 0
			if err != nil {
				code = 1
				var exit *ExitError
				if errors.As(err, &exit) {
					code = exit.Code
				}
			}
			if code != tt.wantCode {
				t.Fatalf("exit code %d (err %v), want %d; output:\n%s", code, err, tt.wantCode, out)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v does not contain %q", err, tt.wantErr)
			}
		})
	}
}
