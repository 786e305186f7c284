package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// versionCommand is txinbox version (and txinbox --version).
type versionCommand struct{ json bool }

func (c *versionCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "version", Summary: "print the version and build information",
		Description: `Prints the module version (a release tag when built by go install with one,
else "(devel)"), the commit the binary was built from, its time and whether
the tree had changes, and the Go version and platform. txinbox --version
prints the same.`,
		Examples:  []clikit.Example{{Command: "txinbox version"}, {Command: "txinbox version --json"}},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "printed"}, {Code: clikit.ExitUsage, What: "bad flags"}}}
}

func (c *versionCommand) Define(fs *clikit.FlagSet, _ *clikit.Env) {
	fs.BoolVar(&c.json, "json", false, "print one JSON object")
}

// buildInfo is what txinbox version prints.
type buildInfo struct {
	Version  string `json:"version"`
	Module   string `json:"module"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo reads the binary's build information.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(unknown)", Module: "github.com/txinbox/txinbox", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Version, b.Module = cmp.Or(bi.Main.Version, b.Version), cmp.Or(bi.Main.Path, b.Module)
	b.Go = cmp.Or(bi.GoVersion, b.Go)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func (c *versionCommand) Run(_ context.Context, in *clikit.Invocation) int {
	b := readBuildInfo()
	if c.json {
		json.NewEncoder(in.Env.Stdout).Encode(b) //nolint:errcheck // stdout
		return clikit.ExitOK
	}
	fmt.Fprintf(in.Env.Stdout, "txinbox %s\n", b.Version)
	w := tabwriter.NewWriter(in.Env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "module\t%s\n", b.Module)
	if b.Revision != "" {
		modified := ""
		if b.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(w, "commit\t%s%s\n", b.Revision, modified)
	}
	if b.Time != "" {
		fmt.Fprintf(w, "commit time\t%s\n", b.Time)
	}
	fmt.Fprintf(w, "go\t%s %s\n", b.Go, b.Platform)
	w.Flush()
	return clikit.ExitOK
}
