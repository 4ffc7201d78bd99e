// Command minikubelet runs the miniature kubelet simulator; see `minikubelet --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/cmd/minikubelet/app"
	"github.com/minikubelet/minikubelet/pkg/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, restore the default handling so a second one kills the
	// process at once, as the kubelet does.
	go func() {
		<-ctx.Done()
		stop()
	}()
	defer klog.Flush()

	if err := app.NewCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		var exit *app.ExitError
		if errors.As(err, &exit) {
			return exit.Code
		}
		// A client command's code (exec: the command's exit code), else 1.
		return cli.ExitCode(err)
	}
	return 0
}
