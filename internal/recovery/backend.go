package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// checkLock stops, before the plan, at a lock of the stack on a file://
// backend: a file per run under .pulumi/locks/ (organization/<project>/
// <stack>, or <stack> in the legacy layout) holding who took it and when
// (lockContent, pulumi pkg/backend/diy/lock.go), the interrupted run's
// start, which it gives as -since. The recovery never removes a lock.
// Other backends refuse its state write while a run holds the stack
// (`pulumi stack import`: diy ImportDeployment takes the lock; Pulumi
// Cloud's import is an update of its own, refused while one runs).
func (s *Session) checkLock(ctx context.Context, d *Deployment) error {
	backend, err := s.backendURL(ctx)
	if u, perr := url.Parse(backend); err != nil || perr != nil || u.Scheme != "file" {
		return err
	} else if backend = u.Host + u.Path; strings.HasPrefix(backend, "~") {
		home, _ := os.UserHomeDir()
		backend = home + backend[1:] // file://~ is the home directory, as the CLI reads it
	}
	stack, project := s.Stack[strings.LastIndex(s.Stack, "/")+1:], d.project()
	for _, dir := range []string{filepath.Join(backend, ".pulumi", "locks", "organization", project, stack), filepath.Join(backend, ".pulumi", "locks", stack)} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, file := range files {
			var l struct {
				Pid                int
				Username, Hostname string
				Timestamp          time.Time
			}
			raw, _ := os.ReadFile(file)
			_ = json.Unmarshal(raw, &l)
			return fmt.Errorf("stack %s is locked by %s@%s (pid %d) since %s (%s): let that run end; if it is gone, `pulumi cancel --stack %s "+
				"--yes` removes the lock, then run the recovery again with -since %s, when that run began. The recovery never removes "+
				"a lock: nothing it can read proves the run is gone", s.Stack, l.Username, l.Hostname, l.Pid, l.Timestamp.Format(time.RFC3339),
				file, s.Stack, l.Timestamp.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
