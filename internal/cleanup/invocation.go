package cleanup

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The cleanup runs as the delete step of a command resource: pulumi-command
// starts it with /bin/sh under its own provider process, which the Pulumi
// CLI started (pulumi-command v1.1.0 provider/pkg/provider/local: no
// variable tells the command which operation, or whether the destroy is
// targeted). A whole `pulumi destroy` is what it is for; anything else
// that deletes it, a targeted destroy that reaches it through
// --target-dependents or an update that no longer registers it, runs it
// against a cluster that stays, and it would delete the workloads' load
// balancers and volumes. The only place that says which is the Pulumi
// command line among the process's ancestors.

// invocation is the Pulumi command that runs the cleanup.
type invocation struct {
	// Args is its command line; Command its subcommand ("destroy", "up").
	Args    []string
	Command string
	// Partial is true for a destroy of some resources only (--target,
	// --exclude).
	Partial bool
}

// whole reports a `pulumi destroy` of the whole stack.
func (i invocation) whole() bool { return i.Command == "destroy" && !i.Partial }

// pulumiSubcommands are the subcommands that run the engine, with
// destroy's aliases down and dn (pulumi/pulumi
// pkg/cmd/pulumi/operations/destroy.go); each is the name it stands for.
var pulumiSubcommands = map[string]string{"destroy": "destroy", "down": "destroy", "dn": "destroy", "up": "up", "update": "up",
	"refresh": "refresh", "import": "import", "preview": "preview", "watch": "watch"}

// partialFlags are destroy's flags that pick some resources only:
// --target/-t and --exclude/-x (destroy.go), in any of pflag's forms
// ("--target urn", "--target=urn", "-t urn", "-turn", "-t=urn").
var partialFlags = []string{"--target", "-t", "--exclude", "-x"}

// isPulumi reports whether a command line is the Pulumi CLI's.
func isPulumi(args []string) bool {
	if len(args) == 0 {
		return false
	}
	base := filepath.Base(args[0])
	return base == "pulumi" || base == "pulumi.exe"
}

// parseInvocation reads a Pulumi command line. A Pulumi CLI whose
// subcommand it does not know is returned with Command "" (never a whole
// destroy), so that the cleanup refuses rather than guess.
func parseInvocation(args []string) invocation {
	inv := invocation{Args: args}
	for _, a := range args[1:] {
		if cmd, ok := pulumiSubcommands[a]; ok && inv.Command == "" {
			inv.Command = cmd
			continue
		}
		for _, f := range partialFlags {
			long := strings.HasPrefix(f, "--")
			if a == f || strings.HasPrefix(a, f+"=") || (!long && strings.HasPrefix(a, f) && len(a) > len(f)) {
				inv.Partial = true
			}
		}
	}
	return inv
}

// processInfo is a process's parent and command line.
type processInfo func(pid int) (ppid int, args []string, err error)

// psInfo asks ps, which Linux and macOS both have, for a process's parent
// and arguments (POSIX ps -o ppid= -o args=; -ww so that BSD's ps does not
// cut a long command line, and procps ignores it).
func psInfo(pid int) (int, []string, error) {
	out, err := exec.Command("ps", "-ww", "-o", "ppid=", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0, nil, err
	}
	fields := strings.Fields(string(bytes.TrimSpace(out)))
	if len(fields) < 2 {
		return 0, nil, strconv.ErrSyntax
	}
	ppid, err := strconv.Atoi(fields[0])
	return ppid, fields[1:], err
}

// findInvocation walks up from pid to the first Pulumi CLI ancestor (a
// dozen generations at most: go run, the shell, the provider, the CLI),
// and stops there whatever its arguments; ok is false when there is none,
// or ps cannot tell.
func findInvocation(pid int, info processInfo) (invocation, bool) {
	for range 12 {
		if pid <= 1 {
			return invocation{}, false
		}
		ppid, args, err := info(pid)
		if err != nil {
			return invocation{}, false
		}
		if isPulumi(args) {
			return parseInvocation(args), true
		}
		pid = ppid
	}
	return invocation{}, false
}
