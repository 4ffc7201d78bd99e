package agnhost

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// newPause is `agnhost pause`: it prints "Paused" and waits for a signal. Upstream
// handles SIGINT (exit 1) and SIGTERM (exit 2) by exiting at once from its handler, so
// nothing more is printed; SIGKILL kills it (137).
func newPause(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "pause",
		Short: "Pauses the execution",
		Long:  `Pauses the execution. Useful for keeping the containers running, so other commands can be executed.`,
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			fmt.Fprintln(p.Stdout(), "Paused")
			p.Trap(shell.SIGINT, true)
			p.Trap(shell.SIGTERM, true)
			for {
				if p.Sleep(idleWake) {
					continue
				}
				for _, sig := range p.Pending() {
					switch sig {
					case shell.SIGINT:
						p.Exit(1)
					case shell.SIGTERM:
						p.Exit(2)
					}
				}
			}
		},
	}
}
