package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// checkBackend resolves or reports what an interrupted run leaves on the
// backend besides pending operations, before the recovery changes
// anything:
//
//   - a self-managed backend keeps the run's lock, a file per process
//     under .pulumi/locks/ that `pulumi cancel` deletes
//     (pkg/backend/diy/lock.go). A lock of a process on this machine that
//     is gone is removed; any other lock stops the recovery.
//   - Pulumi Cloud keeps the update marked in progress until someone runs
//     `pulumi cancel`, and refuses other updates meanwhile ("[409]
//     Conflict: Another update is currently in progress"). An update in
//     progress stops the recovery, which cannot tell a live run from a
//     dead one.
//   - other self-managed backends (s3://, gs://, azblob://): the recovery
//     does not read their locks; `pulumi stack import`, its first write,
//     takes the stack's lock (pkg/backend/diy), so a live run stops it
//     there, before it changes the cluster.
func (s *Session) checkBackend(ctx context.Context) error {
	backend, err := s.backendURL(ctx)
	if err != nil {
		return err
	}
	u, err := url.Parse(backend)
	if err != nil {
		return fmt.Errorf("reading the backend URL %q: %w", backend, err)
	}
	switch u.Scheme {
	case "file":
		return s.checkLocks(ctx, fileBackendRoot(u))
	case "https", "http":
		return s.checkActiveUpdate(ctx)
	}
	s.printf("recover-pending: the recovery cannot read the locks of a %s:// backend; if `pulumi up` says the stack is locked "+
		"and no run of it is alive, `pulumi cancel --stack %s` removes the lock\n", u.Scheme, s.Stack)
	return nil
}

// fileBackendRoot is the directory of a file:// backend (file://~ is the
// home directory, as the Pulumi CLI reads it).
func fileBackendRoot(u *url.URL) string {
	p := u.Host + u.Path
	if strings.HasPrefix(p, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			p = home + strings.TrimPrefix(p, "~")
		}
	}
	return filepath.FromSlash(p)
}

// lock is a self-managed backend's lock file (lockContent in
// pkg/backend/diy/lock.go).
type lock struct {
	Pid       int       `json:"pid"`
	Username  string    `json:"username"`
	Hostname  string    `json:"hostname"`
	Timestamp time.Time `json:"timestamp"`
}

// checkLocks removes the locks of dead processes on this machine and stops
// at any other. The stack's locks are under .pulumi/locks/<qualified
// stack name>: organization/<project>/<stack> in the project-scoped
// layout, <stack> in the legacy one.
func (s *Session) checkLocks(ctx context.Context, root string) error {
	project, err := projectName(s.Dir)
	if err != nil {
		return err
	}
	stack := s.Stack[strings.LastIndex(s.Stack, "/")+1:]
	dirs := []string{filepath.Join(root, ".pulumi", "locks", "organization", project, stack), filepath.Join(root, ".pulumi", "locks", stack)}
	hostname := os.Hostname
	if s.Hostname != nil {
		hostname = s.Hostname
	}
	here, err := hostname()
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the stack's locks: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			file := filepath.Join(dir, e.Name())
			raw, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			var l lock
			if err := json.Unmarshal(raw, &l); err != nil {
				return fmt.Errorf("reading lock %s: %w", file, err)
			}
			held := fmt.Sprintf("%s@%s (pid %d) since %s", l.Username, l.Hostname, l.Pid, l.Timestamp.Format(time.RFC3339))
			if l.Hostname != here {
				return fmt.Errorf("stack %s is locked by %s, on another machine, which the recovery cannot check: "+
					"if that run is gone, `pulumi cancel --stack %s --yes` removes the lock, then run the recovery again", s.Stack, held, s.Stack)
			}
			// A hostname is no machine: containers share one when told to,
			// and each has its own processes. A PID absent here proves the
			// process gone only where every process of the host is seen.
			if whole, why := s.seesEveryProcess(); !whole {
				return fmt.Errorf("stack %s is locked by %s, on a host of this name, but %s, so a process of another container of "+
					"that name would look gone: if that run is gone, `pulumi cancel --stack %s --yes` removes the lock, then run the "+
					"recovery again", s.Stack, held, why, s.Stack)
			}
			alive, err := s.pulumiAlive(ctx, l.Pid)
			if err != nil {
				return err
			}
			if alive {
				return fmt.Errorf("stack %s is locked by %s, a pulumi process that is still running: let it end, then run the recovery again", s.Stack, held)
			}
			if s.DryRun {
				s.printf("recover-pending: would remove the lock of %s: no such process runs\n", held)
				continue
			}
			if err := os.Remove(file); err != nil {
				return fmt.Errorf("removing the stale lock %s: %w", file, err)
			}
			s.printf("recover-pending: removed the lock of %s: no such process runs (what `pulumi cancel` does)\n", held)
		}
	}
	return nil
}

// initPIDNamespace is the inode of Linux's initial PID namespace
// (PROC_PID_INIT_INO, include/linux/proc_ns.h): /proc/self/ns/pid links
// to pid:[4026531836] in a process that sees every process of the host.
const initPIDNamespace = "pid:[4026531836]"

// seesEveryProcess reports whether this process sees all of its host's
// processes, and why not: on Linux, in the initial PID namespace; a
// container's own namespace sees only its own. Elsewhere (macOS) there are
// no PID namespaces.
func (s *Session) seesEveryProcess() (bool, string) {
	readlink := os.Readlink
	if s.Readlink != nil {
		readlink = s.Readlink
	}
	ns, err := readlink("/proc/self/ns/pid")
	switch {
	case errors.Is(err, fs.ErrNotExist) && !onLinux():
		return true, ""
	case err != nil:
		return false, fmt.Sprintf("this process cannot tell whether it sees every process of its host (/proc/self/ns/pid: %v)", err)
	case ns != initPIDNamespace:
		return false, fmt.Sprintf("this process runs in a PID namespace of its own (%s, a container), which sees only its own processes", ns)
	}
	// A lock's PID is the writer's, in the writer's PID namespace: a
	// pulumi in a container that shares the host's name (host networking)
	// writes a PID that means another process here, or none. So the PID
	// counts only where no process of the host runs in another namespace.
	pids, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	for _, p := range pids {
		other, err := readlink(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // the process ended meanwhile
		case err != nil:
			// Another user's process (not root: EACCES) may be a container's.
			return false, fmt.Sprintf("this process cannot read %s (%v), so it cannot tell whether a container runs beside it", p, err)
		}
		if other != initPIDNamespace {
			return false, fmt.Sprintf("a process of this host runs in a PID namespace of its own (%s: %s, a container), and a lock "+
				"it wrote names a PID of that namespace, not of this one", p, other)
		}
	}
	return true, ""
}

// pulumiAlive reports whether pid is a running pulumi process: the system
// says whether pid runs (processExists), then `ps -p` (on Linux and macOS
// alike) whether it is pulumi, as a PID may now be another program's.
// Anything that cannot tell is an error: a lock is removed only when its
// process is known to be gone.
func (s *Session) pulumiAlive(ctx context.Context, pid int) (bool, error) {
	exists, err := processExists(pid)
	if err != nil {
		return false, fmt.Errorf("cannot tell whether process %d, which holds the stack's lock, still runs: %w; "+
			"if it is gone, `pulumi cancel --stack %s --yes` removes the lock", pid, err, s.Stack)
	}
	if !exists {
		return false, nil
	}
	command, err := s.commandOf(ctx, pid)
	if err != nil || command == "" {
		return false, fmt.Errorf("cannot tell whether process %d, which holds the stack's lock, is pulumi (%v); "+
			"if no pulumi run of the stack is alive, `pulumi cancel --stack %s --yes` removes the lock", pid, err, s.Stack)
	}
	return strings.Contains(filepath.Base(command), "pulumi"), nil
}

// commandOf names a process's program: Session.Command when set; on
// Linux /proc/<pid>/comm (proc(5)), which needs no ps (debian-slim images
// have none, BusyBox's has no -p); elsewhere `ps -p <pid> -o comm=`.
func (s *Session) commandOf(ctx context.Context, pid int) (string, error) {
	if s.Command != nil {
		return s.Command(pid)
	}
	if onLinux() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(raw)), err
	}
	out, stderr, err := s.Run(ctx, nil, "ps", "-p", strconv.Itoa(pid), "-o", "comm=")
	if err != nil {
		return "", fmt.Errorf("`ps -p %d`: %v: %s", pid, err, strings.TrimSpace(stderr))
	}
	return strings.TrimSpace(string(out)), nil
}

// projectName reads the name of the project in dir's Pulumi.yaml.
func projectName(dir string) (string, error) {
	for _, f := range []string{"Pulumi.yaml", "Pulumi.yml"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if name, ok := strings.CutPrefix(line, "name:"); ok {
				return strings.Trim(strings.TrimSpace(name), `"'`), nil
			}
		}
	}
	return "", fmt.Errorf("no Pulumi.yaml with a name in %s", dir)
}

// checkActiveUpdate stops when Pulumi Cloud says an operation on the
// stack is in progress: GET /api/stacks/{org}/{project}/{stack} holds a
// currentOperation while one runs (apitype.Stack, "CurrentOperation
// provides information about a stack operation in-progress"). It reads the
// one stack, by its fully qualified name (`pulumi stack --show-name
// --fully-qualify-stack-names`), with the run's own token: a push-triggered
// deployment's token may see only its own stack, and a list by name could
// match another organization's.
func (s *Session) checkActiveUpdate(ctx context.Context) error {
	if s.Cloud == nil || s.Cloud.Token == "" {
		return fmt.Errorf("no Pulumi Cloud token (PULUMI_ACCESS_TOKEN, or the one `pulumi login` stored) to ask whether an update of %s "+
			"is running; the recovery changed nothing", s.Stack)
	}
	qualified := s.Stack
	if strings.Count(qualified, "/") != 2 {
		out, stderr, err := s.Run(ctx, nil, "pulumi", "stack", "--show-name", "--fully-qualify-stack-names", "--stack", s.Stack,
			"--cwd", s.Dir, "--non-interactive")
		if err != nil {
			return fmt.Errorf("cannot name stack %s fully to ask Pulumi Cloud whether an update of it is running (`pulumi stack "+
				"--show-name`: %v: %s); the recovery changed nothing", s.Stack, err, strings.TrimSpace(stderr))
		}
		qualified = strings.TrimSpace(string(out))
	}
	parts := strings.Split(qualified, "/")
	if len(parts) != 3 || slices.Contains(parts, "") {
		return fmt.Errorf("stack %q is not <organization>/<project>/<stack>; the recovery changed nothing", qualified)
	}
	var st struct {
		OrgName          string `json:"orgName"`
		CurrentOperation *struct {
			Kind   string `json:"kind"`
			Author string `json:"author"`
		} `json:"currentOperation"`
	}
	path := "/api/stacks/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + "/" + url.PathEscape(parts[2])
	if err := s.Cloud.Call(ctx, http.MethodGet, path, nil, &st); err != nil {
		return fmt.Errorf("cannot tell whether another update of %s is running (GET %s: %v); the recovery changed nothing", qualified, path, err)
	}
	if st.OrgName == "" {
		return fmt.Errorf("Pulumi Cloud's answer to GET %s names no stack, so whether an update of %s is running is not known; the "+
			"recovery changed nothing", path, qualified)
	}
	if op := st.CurrentOperation; op != nil {
		return fmt.Errorf("Pulumi Cloud says an operation on %s is in progress (%s by %s): if its run is gone (a runner that died, a "+
			"closed laptop), `pulumi cancel --stack %s --yes` ends it; then run the recovery again", qualified, op.Kind, op.Author, qualified)
	}
	return nil
}
