package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// TestLogCallError: a runtime call cut short because its context ended (a cancelled sync,
// the daemon stopping) is logged at V(4), not as an error; any other failure is an error.
func TestLogCallError(t *testing.T) {
	tests := []struct {
		name      string
		cancel    bool
		wantError bool
	}{
		{name: "context ended", cancel: true},
		{name: "runtime failure", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4), ktesting.BufferLogs(true)))
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			if tt.cancel {
				cancel()
			}
			logCallError(ctx, errors.New("stop container: boom"), "Kill container failed", "containerName", "app")
			out := buf.String()
			if !strings.Contains(out, "Kill container failed") || !strings.Contains(out, "containerName=\"app\"") {
				t.Fatalf("log = %q, want the message and its values", out)
			}
			if got := strings.HasPrefix(out, "E"); got != tt.wantError {
				t.Errorf("logged as error = %t, want %t: %q", got, tt.wantError, out)
			}
		})
	}
}
