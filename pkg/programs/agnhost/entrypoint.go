package agnhost

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newEntrypointTester is `agnhost entrypoint-tester`: it prints its whole argv, as Go
// prints os.Args ("[/agnhost-2 entrypoint-tester override arguments]"), so that the
// entrypoint specs can see which of the image's and the pod's command and args ran.
func newEntrypointTester(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "entrypoint-tester",
		Short: "Prints the args it's passed and exits",
		Long:  "Prints the args it's passed and exits.",
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintf(r.p.Stdout(), "%v\n", r.p.Args())
			r.p.Exit(0)
		},
	}
}
