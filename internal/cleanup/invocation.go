package cleanup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	// Undecided names a flag the parser cannot read (a shorthand it does
	// not know, in a group where it might take the rest as its value):
	// the command is then no whole destroy.
	Undecided string
}

// whole reports a `pulumi destroy` of the whole stack.
func (i invocation) whole() bool { return i.Command == "destroy" && !i.Partial && i.Undecided == "" }

// pulumiSubcommands are the subcommands that run the engine, with
// destroy's aliases down and dn (pulumi/pulumi
// pkg/cmd/pulumi/operations/destroy.go); each is the name it stands for.
var pulumiSubcommands = map[string]string{"destroy": "destroy", "down": "destroy", "dn": "destroy", "up": "up", "update": "up",
	"refresh": "refresh", "import": "import", "preview": "preview", "watch": "watch"}

// partialFlags are destroy's long flags that pick some resources only:
// --target and --exclude (destroy.go), as "--target urn" or
// "--target=urn", and --exclude-protected, which destroy.go turns into an
// --exclude of every protected URN (a cluster protected by hand stays).
var partialFlags = []string{"--target", "--exclude", "--exclude-protected"}

// Shorthands of `pulumi destroy` and the CLI's global flags (pulumi/pulumi
// pkg/cmd/pulumi/operations/destroy.go, pkg/cmd/pulumi/pulumi.go): those
// that pick resources, those that take a value (in a group such as
// "-sdev" the rest of the group is the value), and the booleans, which
// pflag lets a group go on after ("-yt urn" is -y and -t urn). -r takes
// a value only after '=' (NoOptDefVal "true").
const (
	partialShorthands = "tx"
	valueShorthands   = "scmpCv"
	boolShorthands    = "djfyeQr"
)

// isPulumi reports whether a command line is the Pulumi CLI's.
func isPulumi(args []string) bool {
	if len(args) == 0 {
		return false
	}
	// Any case: Windows finds Pulumi.exe as pulumi.exe.
	base := filepath.Base(args[0])
	return strings.EqualFold(base, "pulumi") || strings.EqualFold(base, "pulumi.exe")
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
			if a == f || strings.HasPrefix(a, f+"=") {
				inv.Partial = true
			}
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			partial, unknown := shorthandGroup(a[1:])
			inv.Partial = inv.Partial || partial
			if unknown != "" && inv.Undecided == "" {
				inv.Undecided = "-" + unknown + " in " + a
			}
		}
	}
	return inv
}

// shorthandGroup reads a group of shorthands as pflag does: partial is
// true when it holds -t or -x; unknown is a shorthand it does not know,
// after which it cannot tell a flag from a value.
func shorthandGroup(group string) (partial bool, unknown string) {
	for i := 0; i < len(group); i++ {
		c := group[i]
		switch {
		case strings.IndexByte(partialShorthands, c) >= 0:
			return true, ""
		case strings.IndexByte(valueShorthands, c) >= 0:
			return false, "" // the rest of the group is its value
		case c == 'r' && i+1 < len(group) && group[i+1] == '=':
			return false, ""
		case strings.IndexByte(boolShorthands, c) >= 0:
			continue
		case c == '=':
			return false, ""
		default:
			return false, string(c)
		}
	}
	return false, ""
}

// processInfo is a process's parent and command line.
type processInfo func(pid int) (ppid int, args []string, err error)

// procInfo reads a process's parent and command line from Linux's /proc:
// the parent is the field after the command name in /proc/<pid>/stat
// (whose name, in parentheses, may hold spaces and parentheses itself, so
// the fields start after its last ')'), the command line
// /proc/<pid>/cmdline, NUL-separated (proc(5)). It needs no ps, which
// slim images (pulumi/pulumi-go is debian-slim without procps) and BusyBox
// (whose ps has no -p) lack.
func procInfo(pid int) (int, []string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, nil, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return 0, nil, fmt.Errorf("/proc/%d/stat: no parent", pid)
	}
	ppid, err := strconv.Atoi(fields[1]) // state, then ppid
	if err != nil {
		return 0, nil, fmt.Errorf("/proc/%d/stat: parent %q: %w", pid, fields[1], err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, nil, err
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if len(raw) == 0 {
		args = nil // a kernel thread, or a process that is exiting
	}
	return ppid, args, nil
}

// psInfo asks ps, where there is no /proc (macOS), for a process's parent
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

// winInfo asks Windows, which has neither /proc nor ps, for a process's
// parent and command line: Win32_Process through PowerShell's
// Get-CimInstance, as JSON (ConvertTo-Json). Untested on Windows here;
// its parsing is tested.
func winInfo(pid int) (int, []string, error) {
	out, err := exec.Command("powershell", "-NoProfile", "-NonInteractive", "-Command",
		fmt.Sprintf("Get-CimInstance Win32_Process -Filter 'ProcessId=%d' | Select-Object ParentProcessId,CommandLine | ConvertTo-Json -Compress", pid)).Output()
	if err != nil {
		return 0, nil, err
	}
	return parseWin32Process(out)
}

// parseWin32Process reads ConvertTo-Json's object of a Win32_Process.
func parseWin32Process(out []byte) (int, []string, error) {
	var p struct {
		ParentProcessId int
		CommandLine     *string
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &p); err != nil {
		return 0, nil, fmt.Errorf("Win32_Process answered %q: %w", out, err)
	}
	if p.CommandLine == nil {
		return 0, nil, errors.New("Win32_Process gave no command line (another user's process?)")
	}
	return p.ParentProcessId, windowsArgs(*p.CommandLine), nil
}

// windowsArgs splits a Windows command line as Go's own os package does
// (commandLineToArgv, exec_windows.go, after CommandLineToArgvW and the
// CRT's rules): the program name up to the closing quote or the first
// blank; then blanks separate arguments outside quotes, 2n backslashes
// before a quote are n and the quote toggles quoting, 2n+1 are n and a
// literal quote, "" inside quotes is a literal quote (which also ends
// the quoting: the rule "prior to 2008"), and other backslashes are
// literal.
func windowsArgs(line string) []string {
	var args []string
	line = strings.TrimLeft(line, " \t")
	if strings.HasPrefix(line, `"`) {
		name, rest, _ := strings.Cut(line[1:], `"`)
		args, line = append(args, name), rest
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		args, line = append(args, line[:i]), line[i:]
	}
	var cur strings.Builder
	inArg, quoted, slashes := false, false, 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\':
			slashes++
			continue
		case c == '"':
			cur.WriteString(strings.Repeat(`\`, slashes/2))
			if slashes%2 == 1 {
				cur.WriteByte('"')
			} else {
				if quoted && i+1 < len(line) && line[i+1] == '"' {
					cur.WriteByte('"')
					i++
				}
				quoted = !quoted
			}
			inArg, slashes = true, 0
			continue
		}
		cur.WriteString(strings.Repeat(`\`, slashes))
		slashes = 0
		if (c == ' ' || c == '\t') && !quoted {
			if inArg {
				args, inArg = append(args, cur.String()), false
				cur.Reset()
			}
			continue
		}
		cur.WriteByte(c)
		inArg = true
	}
	cur.WriteString(strings.Repeat(`\`, slashes))
	if inArg || slashes > 0 {
		args = append(args, cur.String())
	}
	return args
}

// systemInfo is procInfo where /proc serves this process, winInfo on
// Windows, psInfo elsewhere.
func systemInfo() processInfo {
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return procInfo
	}
	if runtime.GOOS == "windows" {
		return winInfo
	}
	return psInfo
}

// errNoPulumi says no ancestor is the Pulumi CLI.
var errNoPulumi = errors.New("no pulumi process among the cleanup's ancestors")

// findInvocation walks up from pid to the first Pulumi CLI ancestor (a
// dozen generations at most: go run, the shell, the provider, the CLI),
// PID 1 included (the CLI is PID 1 in a container whose entrypoint it is,
// as in the pulumi/pulumi image and a Kubernetes Job), and stops there
// whatever its arguments. It fails when no ancestor is the CLI, or one
// cannot be read: then nobody can tell which command deletes the cleanup.
func findInvocation(pid int, info processInfo) (invocation, error) {
	for range 12 {
		if pid <= 0 {
			return invocation{}, errNoPulumi
		}
		ppid, args, err := info(pid)
		if err != nil {
			return invocation{}, fmt.Errorf("reading process %d, an ancestor of the cleanup: %w", pid, err)
		}
		if isPulumi(args) {
			return parseInvocation(args), nil
		}
		pid = ppid
	}
	return invocation{}, errNoPulumi
}
