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
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
)

// Session recovers one stack through the Pulumi CLI.
type Session struct {
	// Run runs commands (pulumi, aws).
	Run awscli.Runner
	// Dir is the Pulumi project's directory; Stack the stack, as `pulumi
	// --stack` takes it.
	Dir, Stack string
	// Out gets the report.
	Out io.Writer
	// DryRun decides and reports, and changes nothing.
	DryRun bool
	// Lookups answer the finders; nil is CLILookups through Run.
	Lookups Lookups
	Options Options
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
// changes nothing before every pending create is decided; then it writes
// the state through the backend, which refuses while another run holds
// the stack, and refreshes what it imported.
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
	if err := s.checkLock(ctx, d); err != nil {
		return res, err
	}
	l := s.Lookups
	if l == nil {
		l = &CLILookups{Run: s.Run}
	}
	o := s.Options
	given := o.Since // a person's word (-since), for a history that says nothing
	from := "`pulumi stack history`"
	if o.Since, err = s.since(ctx); err != nil && given.IsZero() {
		s.printf("recover-pending: %v; nothing found is adopted (-since <when the interrupted run started> says it)\n", err)
	} else {
		if given.After(o.Since) {
			o.Since, from = given, "-since"
		}
		s.printf("recover-pending: the interrupted update began at %s at the earliest (%s): only what was made after it is "+
			"adopted\n", o.Since.UTC().Format(time.RFC3339), from)
	}
	verdicts, err := Plan(ctx, d, l, o)
	if err != nil {
		return res, err
	}
	res.Verdicts = verdicts
	Report(s.Out, s.Stack, verdicts)
	if !Decided(verdicts) {
		return res, ErrUndecided
	}
	imports, clears := map[string]string{}, map[string]bool{}
	for _, v := range verdicts {
		switch {
		case !leavesAnObject(v.Op.Type):
		case v.Outcome == Import:
			imports[v.Op.Resource.URN] = v.ID
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
	if len(imports) == 0 && len(clears) == 0 && len(unread) == 0 {
		s.printf("recover-pending: no pending create; the next run performs the rest again\n")
		return res, nil
	}
	if len(imports) > 0 || len(clears) > 0 {
		if err := s.editState(ctx, raw, verdicts, imports, clears); err != nil {
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
	s.printf("recover-pending: imported %d, cleared %d; the next `pulumi up` goes on from here\n", len(imports), len(clears))
	return res, nil
}

// since is when the interrupted update began at the earliest, from
// `pulumi stack history --json` (pkg/cmd/pulumi/stack/stack_history.go,
// updateInfoJSON): the start of the newest update when it did not succeed
// (Pulumi Cloud records an update in progress, and a failed one may be
// the interrupted run), else the end of the newest, which finished before
// the interrupted one began (a self-managed backend records an update only
// when it ends: pkg/backend/diy/backend.go, addToHistory). Times are the
// backend's clock, to the second.
func (s *Session) since(ctx context.Context) (time.Time, error) {
	out, err := s.pulumi(ctx, "stack", "history", "--json")
	if err != nil {
		return time.Time{}, err
	}
	var updates []struct {
		StartTime time.Time  `json:"startTime"`
		EndTime   *time.Time `json:"endTime"`
		Result    string     `json:"result"`
	}
	if err := json.Unmarshal(out, &updates); err != nil {
		return time.Time{}, fmt.Errorf("reading `pulumi stack history --json`: %w", err)
	}
	var newest time.Time
	var bound time.Time
	for _, u := range updates {
		if !u.StartTime.After(newest) {
			continue
		}
		newest, bound = u.StartTime, u.StartTime
		if u.Result == "succeeded" && u.EndTime != nil {
			bound = *u.EndTime
		}
	}
	if bound.IsZero() {
		return bound, errors.New("the stack's history holds no update, so nothing says when the interrupted one began")
	}
	return bound, nil
}

// unmoved refuses when the stack's state is no longer raw, byte for byte:
// another run wrote it since the recovery read it. It narrows, and does not
// close, the window before `pulumi stack import`, whose own lock is the
// guard.
func (s *Session) unmoved(ctx context.Context, raw []byte) error {
	again, err := s.pulumi(ctx, "stack", "export")
	if err != nil {
		return err
	}
	if !bytes.Equal(raw, again) {
		return errors.New("the stack's state changed since the recovery read it (another run wrote it meanwhile): nothing was " +
			"imported or cleared; run the recovery again once that run has ended")
	}
	return nil
}

// editState writes the decided creates into the state with `pulumi stack
// import`, after checking that no other run changed the pending
// operations since they were read.
func (s *Session) editState(ctx context.Context, raw []byte, verdicts []Verdict, imports map[string]string, clears map[string]bool) error {
	if err := s.unmoved(ctx, raw); err != nil {
		return err
	}
	// The essentials of the state before the edit, in the log itself (a
	// Deployments runner's files die with it): what each cut-off create
	// was, and what the recovery decided, enough to redo it by hand.
	for _, v := range verdicts {
		if leavesAnObject(v.Op.Type) {
			s.printf("recover-pending: before the edit: %s %s, of type %s under provider %s: %s %s\n", v.Op.Type, v.Op.Resource.URN,
				v.Op.Resource.Type, v.Op.Resource.Provider, v.Outcome, v.ID)
		}
	}
	edited, err := Edit(raw, imports, clears)
	if err != nil {
		return err
	}
	s.printf("recover-pending: Pulumi Cloud keeps the state before this edit as a version of its own (`pulumi stack export " +
		"--version <n>`); a self-managed backend keeps only the checkpoint before its latest write (<stack>.json.bak, " +
		"pkg/backend/diy/state.go backupTarget), which the refresh below replaces: the lines above are the record\n")
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
		return fmt.Errorf("writing the recovered state (`pulumi stack import`): %w. Nothing was changed; if a run holds the stack, "+
			"let it end, or, if it is gone, `pulumi cancel --stack %s --yes`, then run the recovery again", err, s.Stack)
	}
	return nil
}

// refresh reads the imported objects into the state, as an import does,
// and checks that it did. An import the refresh finds gone is a failure:
// its ID named no object (a typo in -import, an ID the inventory builds
// wrong), the state no longer records the cut-off create, and the object,
// if it exists, is now tracked by nothing: the error names it, for a
// person to adopt or delete.
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
		record := "its type and URN are in the recovery's \"before the edit\" line above"
		return gone, fmt.Errorf("the refresh found no object with the ID imported for %s, and dropped it from the state: the ID is "+
			"wrong (the inventory's lookup could not check it), or the object was deleted meanwhile. The pending create is gone "+
			"with it (`pulumi stack import` drops pending operations), so the next `pulumi up` creates the resource anew: if the "+
			"object exists, adopt it first with `pulumi import <type> <name> <ID>` or delete it (%s; docs/recovery.md)",
			strings.Join(gone, ", "), record)
	}
	return gone, nil
}

// backendURL is the backend `pulumi whoami --json` names.
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
