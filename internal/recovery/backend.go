package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
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
	out, stderr, err := s.Run(ctx, nil, "ps", "-p", strconv.Itoa(pid), "-o", "comm=")
	command := strings.TrimSpace(string(out))
	if err != nil || command == "" {
		return false, fmt.Errorf("cannot tell whether process %d, which holds the stack's lock, is pulumi (`ps -p %d`: %v: %s); "+
			"if no pulumi run of the stack is alive, `pulumi cancel --stack %s --yes` removes the lock", pid, pid, err, strings.TrimSpace(stderr), s.Stack)
	}
	return strings.Contains(filepath.Base(command), "pulumi"), nil
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

// checkActiveUpdate stops when Pulumi Cloud says an update of the stack is
// in progress: `pulumi stack ls --json` gives updateInProgress for a
// backend that reports progress (pkg/cmd/pulumi/stack/stack_list.go), and
// the project's stacks are listed by name, qualified or not.
func (s *Session) checkActiveUpdate(ctx context.Context) error {
	out, stderr, err := s.Run(ctx, nil, "pulumi", "stack", "ls", "--json", "--cwd", s.Dir, "--non-interactive")
	if err != nil {
		return fmt.Errorf("cannot tell whether another update of %s is running (`pulumi stack ls --json`: %v: %s); the recovery changed nothing",
			s.Stack, err, strings.TrimSpace(stderr))
	}
	var stacks []struct {
		Name             string `json:"name"`
		UpdateInProgress *bool  `json:"updateInProgress"`
	}
	if err := json.Unmarshal(out, &stacks); err != nil {
		return fmt.Errorf("reading `pulumi stack ls --json`: %w", err)
	}
	short := s.Stack[strings.LastIndex(s.Stack, "/")+1:]
	for _, st := range stacks {
		if st.Name != s.Stack && st.Name != short && !strings.HasSuffix(st.Name, "/"+short) {
			continue
		}
		if st.UpdateInProgress != nil && *st.UpdateInProgress {
			return fmt.Errorf("Pulumi Cloud says an update of %s is in progress: if its run is gone (a runner that died, a closed laptop), "+
				"`pulumi cancel --stack %s --yes` ends it; then run the recovery again", s.Stack, s.Stack)
		}
		return nil
	}
	return fmt.Errorf("`pulumi stack ls --json` does not list %s, so the recovery cannot tell whether an update of it is running; it changed nothing", s.Stack)
}
