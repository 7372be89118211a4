package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
//   - Pulumi Cloud keeps the update marked running until its lease runs
//     out or someone runs `pulumi cancel`, and refuses other updates
//     meanwhile ("[409] Conflict: Another update is currently in
//     progress"). An update still running stops the recovery, which cannot
//     tell a live run from a dead one; `pulumi stack import` meets the
//     same refusal, so a check that cannot be made is only reported.
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

// pulumiAlive reports whether pid is a running pulumi process (`ps -p`,
// on Linux and macOS alike); a pid now used by another program is not.
func (s *Session) pulumiAlive(ctx context.Context, pid int) (bool, error) {
	out, _, err := s.Run(ctx, nil, "ps", "-p", strconv.Itoa(pid), "-o", "comm=")
	command := strings.TrimSpace(string(out))
	if err != nil && command == "" {
		return false, nil // ps exits 1 when no such process exists
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

// checkActiveUpdate stops when Pulumi Cloud says the stack's latest update
// is still running (GET /api/stacks/{org}/{project}/{stack} gives its
// activeUpdate, GET .../update/{id} its status: the endpoints `pulumi
// cancel` reads, pkg/backend/httpstate).
func (s *Session) checkActiveUpdate(ctx context.Context) error {
	parts := strings.Split(s.Stack, "/")
	if len(parts) != 3 || s.Cloud == nil {
		s.printf("recover-pending: not checked whether an update of %s is still marked running (that needs --stack <org>/<project>/<stack> "+
			"and a Pulumi Cloud token); if `pulumi stack import` answers 409, `pulumi cancel` ends the update left running\n", s.Stack)
		return nil
	}
	base := "/api/stacks/" + esc(parts...)
	var stack struct {
		ActiveUpdate string `json:"activeUpdate"`
	}
	if err := s.Cloud.Call(ctx, http.MethodGet, base, nil, &stack); err != nil {
		s.printf("recover-pending: could not read whether an update is still running (%v)\n", err)
		return nil
	}
	if stack.ActiveUpdate == "" {
		return nil
	}
	var update struct {
		Status string `json:"status"`
	}
	if err := s.Cloud.Call(ctx, http.MethodGet, base+"/update/"+url.PathEscape(stack.ActiveUpdate), nil, &update); err != nil {
		s.printf("recover-pending: could not read the status of update %s (%v)\n", stack.ActiveUpdate, err)
		return nil
	}
	switch update.Status {
	case "not started", "requested", "running":
		return fmt.Errorf("Pulumi Cloud says update %s of %s is still %s: if its run is gone (a runner that died, a closed laptop), "+
			"`pulumi cancel --stack %s --yes` ends it; then run the recovery again", stack.ActiveUpdate, s.Stack, update.Status, s.Stack)
	}
	return nil
}
