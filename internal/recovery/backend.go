package recovery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
// Elsewhere its state write, `pulumi stack import`, takes the lock (diy
// ImportDeployment) or is an update of its own (Pulumi Cloud: httpstate
// StackImportUpdate), which the service is expected, unproven, to refuse
// while another runs ("[409] Conflict", as to a second `pulumi up`).
func (s *Session) checkLock(ctx context.Context, d *Deployment) error {
	backend, err := s.backendURL(ctx)
	u, perr := url.Parse(backend)
	if err = cmp.Or(err, perr); err != nil {
		return fmt.Errorf("reading the backend URL %q, to look for the stack's lock: %w", backend, err)
	} else if u.Scheme != "file" {
		return nil
	} else if backend = u.Host + u.Path; strings.HasPrefix(backend, "~") {
		home, _ := os.UserHomeDir()
		backend = home + backend[1:] // file://~ is the home directory, as the CLI reads it
	}
	stack, project := s.Stack[strings.LastIndex(s.Stack, "/")+1:], d.project()
	for _, dir := range []string{filepath.Join(backend, ".pulumi", "locks", "organization", project, stack), filepath.Join(backend, ".pulumi", "locks", stack)} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s, where the stack's lock would be: %w; the recovery cannot tell whether a run holds the stack", dir, err)
		}
		for _, e := range entries {
			if filepath.Ext(e.Name()) != ".json" {
				continue
			}
			file := filepath.Join(dir, e.Name())
			var l struct {
				Pid                int
				Username, Hostname string
				Timestamp          time.Time
			}
			taken, since := "at a time it does not say", "when that run began"
			if raw, err := os.ReadFile(file); err != nil {
				taken = "at a time unknown (" + err.Error() + ")"
			} else if json.Unmarshal(raw, &l) == nil && !l.Timestamp.IsZero() {
				taken, since = "since "+l.Timestamp.Format(time.RFC3339), l.Timestamp.UTC().Format(time.RFC3339)+", when that run began"
			}
			return fmt.Errorf("stack %s is locked by %s@%s (pid %d) %s (%s): let that run end; if it is gone, `pulumi cancel --stack %s "+
				"--yes` removes the lock, then run the recovery again with -since %s. The recovery never removes a lock: nothing it "+
				"can read proves the run is gone", s.Stack, l.Username, l.Hostname, l.Pid, taken, file, s.Stack, since)
		}
	}
	return nil
}
