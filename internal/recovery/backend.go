package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// checkBackend reports what an interrupted run leaves on the backend
// besides pending operations, before the recovery changes anything, and
// whether it proved that no run of the stack is alive:
//
//   - a self-managed backend keeps the run's lock, a file per process
//     under .pulumi/locks/ that `pulumi cancel` deletes
//     (pkg/backend/diy/lock.go). Any lock stops the recovery, naming its
//     holder and `pulumi cancel`.
//   - Pulumi Cloud keeps the update marked in progress until someone runs
//     `pulumi cancel`, and refuses other updates meanwhile ("[409]
//     Conflict: Another update is currently in progress"). An update in
//     progress stops the recovery, which cannot tell a live run from a
//     dead one.
//   - other self-managed backends (s3://, gs://, azblob://): the recovery
//     does not read their locks; `pulumi stack import`, its first write,
//     takes the stack's lock (pkg/backend/diy), so a live run stops it
//     there, before it changes the cluster.
func (s *Session) checkBackend(ctx context.Context) (noRunAlive bool, err error) {
	backend, err := s.backendURL(ctx)
	if err != nil {
		return false, err
	}
	u, err := url.Parse(backend)
	if err != nil {
		return false, fmt.Errorf("reading the backend URL %q: %w", backend, err)
	}
	switch u.Scheme {
	case "file":
		return true, s.checkLocks(fileBackendRoot(u))
	case "https", "http":
		return true, s.checkActiveUpdate(ctx)
	}
	s.printf("recover-pending: the recovery cannot read the locks of a %s:// backend; if `pulumi up` says the stack is locked "+
		"and no run of it is alive, `pulumi cancel --stack %s` removes the lock\n", u.Scheme, s.Stack)
	return false, nil
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

// checkLocks stops at any lock of the stack, naming its holder and the
// command that removes it. The recovery never removes a lock itself: a
// host name and a PID prove nothing across containers that share a name,
// two machines of one name on a network backend, or a macOS PID reused, and
// `pulumi cancel` is one command for the person who knows the run is gone.
// The stack's locks are under .pulumi/locks/<qualified stack name>:
// organization/<project>/<stack> in the project-scoped layout, <stack> in
// the legacy one.
func (s *Session) checkLocks(root string) error {
	project, err := projectName(s.Dir)
	if err != nil {
		return err
	}
	stack := s.Stack[strings.LastIndex(s.Stack, "/")+1:]
	for _, dir := range []string{filepath.Join(root, ".pulumi", "locks", "organization", project, stack), filepath.Join(root, ".pulumi", "locks", stack)} {
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
			var l lock
			raw, err := os.ReadFile(file)
			if err == nil {
				err = json.Unmarshal(raw, &l)
			}
			if err != nil {
				return fmt.Errorf("stack %s is locked (%s cannot be read: %v); if no run of it is alive, `pulumi cancel --stack %s --yes` "+
					"removes the lock, then run the recovery again", s.Stack, file, err, s.Stack)
			}
			return fmt.Errorf("stack %s is locked by %s@%s (pid %d) since %s: let that run end; if it is gone (killed, a closed laptop, "+
				"a runner that died), `pulumi cancel --stack %s --yes` removes the lock, then run the recovery again. The recovery "+
				"never removes a lock: nothing it can read proves the run is gone", s.Stack, l.Username, l.Hostname, l.Pid,
				l.Timestamp.Format(time.RFC3339), s.Stack)
		}
	}
	return nil
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
