package app

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// Set with -ldflags "-X github.com/minikubelet/minikubelet/cmd/minikubelet/app.version=v0.2.0
// -X github.com/minikubelet/minikubelet/cmd/minikubelet/app.gitCommit=$(git rev-parse HEAD)".
var (
	version   = "v0.1.0-dev"
	gitCommit = ""
)

// emulated lists what --emulated-version takes, with the version each reports.
func emulated() string {
	var parts []string
	for _, r := range release.All() {
		parts = append(parts, fmt.Sprintf("%s (%s)", r, r.KubeletVersion()))
	}
	return strings.Join(parts, ", ")
}

func newVersionCommand(o options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, git commit, Go version and the kubelet version it follows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), release.Newest())
		},
	}
}

// printVersion is `minikubelet version`, and the daemon's --version (the kubelet's flag),
// which names the release --emulated-version gives with it.
func printVersion(w io.Writer, r release.Release) error {
	compat := r.KubeletVersion()
	if r != release.Newest() {
		compat += " (--emulated-version " + r.String() + ")"
	}
	_, err := fmt.Fprintf(w,
		"minikubelet %s\n  git commit:            %s\n  go version:            %s\n  platform:              %s/%s\n  kubelet compatibility: %s\n  --emulated-version:    %s\n",
		version, commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, compat, emulated())
	return err
}

// commit returns the -ldflags commit, else the one go build recorded from the work tree.
func commit() string {
	if gitCommit != "" {
		return gitCommit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "unknown"
	}
	if modified == "true" {
		return rev + " (modified)"
	}
	return rev
}
