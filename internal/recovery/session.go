package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"nodeless-eks/internal/pulumicloud"
)

// Session recovers one stack through the Pulumi CLI.
type Session struct {
	// Run runs commands (pulumi, aws, ps).
	Run Runner
	// Dir is the Pulumi project's directory; Stack the stack, as `pulumi
	// --stack` takes it.
	Dir, Stack string
	// Out gets the report.
	Out io.Writer
	// DryRun decides and reports, and changes nothing.
	DryRun bool
	// Lookups answer the finders; nil builds CLILookups from the state.
	Lookups Lookups
	// Cloud is Pulumi Cloud's API (nil when no token was found).
	Cloud   *pulumicloud.Client
	Options Options
	// Hostname is this machine's name (os.Hostname when nil).
	Hostname func() (string, error)
	// Readlink reads a symbolic link (os.Readlink when nil): the PID
	// namespace this process runs in.
	Readlink func(string) (string, error)
	// Command names a process's program (when nil: /proc on Linux, ps
	// elsewhere).
	Command func(pid int) (string, error)
	// BackupDir keeps the state as it was before each edit; "" is the
	// user's cache directory (os.UserCacheDir, nodeless-eks/recover-pending).
	BackupDir string

	backupFile string // this run's backup
}

// ErrUndecided is returned when a pending create may exist and the
// recovery cannot tell: a person decides, and nothing was changed.
var ErrUndecided = errors.New("the recovery changed nothing: a pending operation needs a person (see the lines above)")

// Result is what a recovery did.
type Result struct {
	// Pending is the number of pending operations found.
	Pending  int
	Verdicts []Verdict
	// Imported and Cleared are the URNs the state now holds and no longer
	// waits for; Gone the imported ones the refresh found deleted.
	Imported, Cleared, Gone []string
}

func (s *Session) pulumi(ctx context.Context, args ...string) ([]byte, error) {
	full := append(args, "--cwd", s.Dir, "--stack", s.Stack, "--non-interactive")
	out, stderr, err := s.Run(ctx, nil, "pulumi", full...)
	if err != nil {
		return nil, fmt.Errorf("pulumi %s: %w: %s", strings.Join(full, " "), err, strings.TrimSpace(stderr))
	}
	return out, nil
}

func (s *Session) printf(format string, args ...any) { fmt.Fprintf(s.Out, format, args...) }

// Recover finds the stack's pending operations and resolves them. It
// changes nothing before every pending create is decided, but for a lock
// of a dead process; then it writes the state (through the backend, which
// refuses while another run holds the stack), refreshes what it imported,
// and last fixes what the decisions need in the cluster.
func (s *Session) Recover(ctx context.Context) (Result, error) {
	var res Result
	raw, err := s.pulumi(ctx, "stack", "export")
	if err != nil {
		return res, err
	}
	// The fast path: a run with nothing to recover reads no JSON and asks
	// nothing else.
	if !MayNeedRecovery(raw) {
		s.printf("recover-pending: stack %s has no pending operations\n", s.Stack)
		return res, nil
	}
	d, err := ParseExport(raw)
	if err != nil {
		return res, err
	}
	res.Pending = len(d.PendingOperations)
	unread := d.unread()
	if res.Pending == 0 && len(unread) == 0 {
		s.printf("recover-pending: stack %s has no pending operations\n", s.Stack)
		return res, nil
	}
	if res.Pending > 0 {
		s.printf("recover-pending: stack %s has %d pending operation(s), left by a run that was interrupted\n", s.Stack, res.Pending)
	}
	if len(unread) > 0 {
		s.printf("recover-pending: %d resource(s) an earlier recovery imported were not read by a refresh; reading them now\n", len(unread))
	}
	if err := s.checkBackend(ctx); err != nil {
		return res, err
	}
	l := s.Lookups
	if l == nil {
		l = s.lookupsFor(d)
	}
	verdicts, err := Plan(ctx, d, l, s.Options)
	if err != nil {
		return res, err
	}
	res.Verdicts = verdicts
	Report(s.Out, s.Stack, verdicts)
	if !Decided(verdicts) {
		return res, ErrUndecided
	}
	imports, clears := map[string]Imported{}, map[string]bool{}
	s.backupFile = ""
	var fixes []Verdict
	for _, v := range verdicts {
		if v.Fix != nil {
			fixes = append(fixes, v)
		}
		switch {
		case !leavesAnObject(v.Op.Type):
		case v.Outcome == Import:
			imports[v.Op.Resource.URN] = Imported{ID: v.ID, Outputs: v.Outputs}
			res.Imported = append(res.Imported, v.Op.Resource.URN)
		case v.Outcome == Clear:
			clears[v.Op.Resource.URN] = true
			res.Cleared = append(res.Cleared, v.Op.Resource.URN)
		}
	}
	if s.DryRun {
		s.printf("recover-pending: dry run: nothing changed\n")
		return res, nil
	}
	if len(imports) == 0 && len(clears) == 0 && len(fixes) == 0 && len(unread) == 0 {
		s.printf("recover-pending: no pending create; the next run performs the rest again\n")
		return res, nil
	}
	if len(imports) > 0 || len(clears) > 0 || len(fixes) > 0 {
		// The state is written first, also for fixes alone: the backend
		// refuses the write while another run holds the stack (a
		// self-managed backend's lock, Pulumi Cloud's 409), before the
		// recovery touches the cluster.
		if err := s.editState(ctx, raw, imports, clears); err != nil {
			return res, err
		}
	}
	if toRead := slices.Concat(res.Imported, unread); len(toRead) > 0 {
		gone, err := s.refresh(ctx, toRead)
		res.Gone = gone
		if err != nil {
			return res, err
		}
	}
	for _, v := range fixes {
		if err := v.Fix.Apply(ctx); err != nil {
			return res, fmt.Errorf("the state is recovered, but %s (%s) failed, and the next `pulumi up` needs it: %w; "+
				"do it by hand (docs/recovery.md)", Name(v.Op.Resource.URN), v.Fix.Does, err)
		}
		s.printf("recover-pending: done: %s\n", v.Fix.Does)
	}
	s.printf("recover-pending: imported %d, cleared %d; the next `pulumi up` goes on from here\n", len(imports), len(clears))
	return res, nil
}

// editState writes the decided creates into the state with `pulumi stack
// import`, after checking that no other run changed the pending
// operations since they were read.
func (s *Session) editState(ctx context.Context, raw []byte, imports map[string]Imported, clears map[string]bool) error {
	again, err := s.pulumi(ctx, "stack", "export")
	if err != nil {
		return err
	}
	if !samePending(raw, again) {
		return errors.New("the stack's pending operations changed while the recovery read them: another run is writing its state; run the recovery again when it ends")
	}
	edited, err := Edit(again, imports, clears)
	if err != nil {
		return err
	}
	backup, err := s.backup(again)
	if err != nil {
		return err
	}
	s.backupFile = backup
	s.printf("recover-pending: the state before this edit is kept in %s: the cut-off creates' URNs, types and inputs, for a "+
		"`pulumi import` by hand (`pulumi stack import` of it restores the resources, not the pending operations, which it drops)\n", backup)
	dir, err := os.MkdirTemp("", "recover-pending-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "state.json")
	if err := os.WriteFile(file, edited, 0o600); err != nil {
		return err
	}
	if _, err := s.pulumi(ctx, "stack", "import", "--file", file); err != nil {
		return fmt.Errorf("writing the recovered state: %w", err)
	}
	return nil
}

// backup writes the state as it was before an edit where it outlives the
// recovery, readable by its user only (it holds the stack's ciphertext).
func (s *Session) backup(raw []byte) (string, error) {
	dir := s.BackupDir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a directory for the state's backup: %w", err)
		}
		dir = filepath.Join(cache, "nodeless-eks", "recover-pending")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the state's backup directory: %w", err)
	}
	name := strings.NewReplacer("/", "_", ":", "_").Replace(s.Stack) + "-" + time.Now().UTC().Format("20060102T150405Z") + ".json"
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		return "", fmt.Errorf("keeping the state before the edit: %w", err)
	}
	return file, nil
}

// refresh reads the imported objects into the state, as an import does,
// and checks that it did. An import the refresh finds gone is a failure:
// its ID named no object (a typo in -import, an ID the inventory builds
// wrong), the state no longer records the cut-off create, and the object,
// if it exists, is now tracked by nothing; the backup of the state before
// the edit puts the pending create back.
func (s *Session) refresh(ctx context.Context, urns []string) (gone []string, err error) {
	args := []string{"refresh", "--yes", "--skip-preview"}
	for _, u := range urns {
		args = append(args, "--target", u)
	}
	if _, err := s.pulumi(ctx, args...); err != nil {
		return nil, fmt.Errorf("the state holds the imported resources, with their IDs, but the refresh that reads them failed; "+
			"run the recovery again (it reads them first) before the next `pulumi up`: %w", err)
	}
	raw, err := s.pulumi(ctx, "stack", "export")
	if err != nil {
		return nil, err
	}
	d, err := ParseExport(raw)
	if err != nil {
		return nil, err
	}
	left := d.unread()
	for _, u := range urns {
		switch {
		case d.byURN(u) == nil:
			gone = append(gone, u)
		case slices.Contains(left, u):
			return gone, fmt.Errorf("the refresh did not read %s; run the recovery again before the next `pulumi up`", u)
		}
	}
	if len(gone) > 0 {
		record := "its type and inputs were in the pending operation"
		if s.backupFile != "" {
			record = "its type and inputs are in " + s.backupFile + ", the state before the edit"
		}
		return gone, fmt.Errorf("the refresh found no object with the ID imported for %s, and dropped it from the state: the ID is "+
			"wrong (the inventory's lookup could not check it), or the object was deleted meanwhile. The pending create is gone "+
			"with it (`pulumi stack import` drops pending operations), so the next `pulumi up` creates the resource anew: if the "+
			"object exists, adopt it first with `pulumi import <type> <name> <ID>` or delete it (%s; docs/recovery.md)",
			strings.Join(gone, ", "), record)
	}
	return gone, nil
}

// samePending reports whether two exports hold the same pending
// operations.
func samePending(a, b []byte) bool {
	key := func(raw []byte) string {
		d, err := ParseExport(raw)
		if err != nil {
			return "unreadable"
		}
		var ops []string
		for _, op := range d.PendingOperations {
			ops = append(ops, op.Type+" "+op.Resource.URN)
		}
		sort.Strings(ops)
		return strings.Join(ops, "\n")
	}
	return key(a) == key(b)
}

// lookupsFor answers through the CLIs, reaching the cluster the state
// holds.
func (s *Session) lookupsFor(d *Deployment) Lookups {
	l := &CLILookups{Run: s.Run, CloudClient: s.Cloud}
	for _, r := range d.ofType("aws:eks/cluster:Cluster") {
		if r.Delete {
			continue
		}
		l.ClusterName = Str(r.Outputs, "name")
		if l.ClusterName == "" {
			l.ClusterName = Str(r.Inputs, "name")
		}
		l.Cluster = accessOf(d, r.Provider)
		if m := accountInARN.FindStringSubmatch(Str(r.Outputs, "arn")); m != nil {
			l.ClusterAccount = m[1]
		}
	}
	return l
}

// whoami is what `pulumi whoami --json` prints of the backend.
func (s *Session) backendURL(ctx context.Context) (string, error) {
	out, stderr, err := s.Run(ctx, nil, "pulumi", "whoami", "--json", "--cwd", s.Dir, "--non-interactive")
	if err != nil {
		return "", fmt.Errorf("pulumi whoami: %w: %s", err, strings.TrimSpace(stderr))
	}
	var who struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &who); err != nil || who.URL == "" {
		return "", errors.New("pulumi whoami --json printed no backend URL")
	}
	return who.URL, nil
}
