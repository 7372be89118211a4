package recovery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/poll"
)

// Outcome is what the recovery does with a pending operation.
type Outcome string

// Outcomes.
const (
	// Import: the object exists; the state takes it with its ID.
	Import Outcome = "import"
	// Clear: no object exists, so the next `pulumi up` creates it anew.
	Clear Outcome = "clear"
	// Undecided: it may exist and the recovery cannot tell; a person decides.
	Undecided Outcome = "undecided"
	// Retry: an update, delete, read or import, which the next run performs
	// again.
	Retry Outcome = "retry"
)

// Verdict is the decision on one pending operation.
type Verdict struct {
	Op      Operation
	Outcome Outcome
	// ID is the import ID, with Import.
	ID string
	// Why says how it was decided; Next what a person runs (Undecided) or
	// what the next run does (Retry).
	Why, Next string
}

// Found is what a finder learned of a pending create's object.
type Found struct {
	// Exists, with the ID its provider imports it by; else it provably
	// does not exist.
	Exists bool
	ID     string
	// Created is when the object was made; zero when its API does not
	// say (it is then never adopted).
	Created time.Time
	// Note adds what a person should know (an add-on still CREATING).
	Note string
}

// Target is a pending operation as a finder sees it: the operation, how
// its provider reaches AWS, and the state it is part of.
type Target struct {
	Op     Operation
	Access AWSAccess
	State  *Deployment
}

// Input is a string input of the pending operation.
func (t Target) Input(path ...string) string { return Str(t.Op.Resource.Inputs, path...) }

// undecidedError is a finder's statement that it cannot tell.
type undecidedError struct{ msg string }

func (e *undecidedError) Error() string { return e.msg }

func cannotTell(format string, args ...any) error {
	return &undecidedError{fmt.Sprintf(format, args...)}
}

// Decision is a person's answer for a pending create the recovery could
// not decide: import with ID, or clear.
type Decision struct {
	Import bool
	ID     string
}

// Options are a person's decisions and the bounds of what the recovery
// waits for.
type Options struct {
	// Decisions, by URN, take the place of the inventory's.
	Decisions map[string]Decision
	// Settle is how long after the state's last write the recovery starts
	// to look (bounds.RecoverySettle says why).
	Settle time.Duration
	// Since is when the interrupted update began at the earliest
	// (Session.since); zero when nothing says. An object made before it,
	// or with no creation time, is never adopted.
	Since time.Time
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Sleep waits (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Plan decides every pending operation of d. It changes nothing.
func Plan(ctx context.Context, d *Deployment, l Lookups, o Options) ([]Verdict, error) {
	if len(d.PendingOperations) == 0 {
		return nil, nil
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	creates := slices.ContainsFunc(d.PendingOperations, func(op Operation) bool { return leavesAnObject(op.Type) })
	if wait := d.Manifest.Time.Add(o.Settle).Sub(now()); wait > 0 && creates {
		sleep := poll.Sleep
		if o.Sleep != nil {
			sleep = o.Sleep
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	var out []Verdict
	for _, op := range d.PendingOperations {
		if dec, ok := o.Decisions[op.Resource.URN]; ok && leavesAnObject(op.Type) {
			if dec.Import && d.byURN(op.Resource.URN) != nil {
				return nil, fmt.Errorf("-import %s: the state already holds a resource of that URN, and `pulumi stack import` refuses a "+
					"second one; the object the cut-off create left is another: delete it, or adopt it under another name with "+
					"`pulumi import`, then -clear the URN (docs/recovery.md)", op.Resource.URN)
			}
			v := Verdict{Op: op, Outcome: Clear, Why: "cleared as decided by hand (-clear)"}
			if dec.Import {
				// The edit cannot be undone once made (`pulumi stack import`
				// drops every pending operation), so an ID is checked
				// first where the inventory can look: a lookup that proves
				// no object, or finds another, refuses the person's ID.
				switch found := decide(ctx, d, l, op, o.Since); {
				case found.Outcome == Clear:
					return nil, fmt.Errorf("-import %s=%s: the recovery's lookup finds no such object (%s); check the ID (a typo, "+
						"another account or region), or -clear the URN if nothing was made", op.Resource.URN, dec.ID, found.Why)
				case found.Outcome == Import && found.ID != dec.ID:
					return nil, fmt.Errorf("-import %s=%s: the object the cut-off create left is %s, not %s; -import that ID, "+
						"or leave the URN to the recovery", op.Resource.URN, dec.ID, found.ID, dec.ID)
				}
				v.Outcome, v.ID, v.Why = Import, dec.ID, "imported as decided by hand (-import)"
			}
			out = append(out, v)
			continue
		}
		out = append(out, decide(ctx, d, l, op, o.Since))
	}
	for urn := range o.Decisions {
		if !slices.ContainsFunc(d.PendingOperations, func(op Operation) bool { return leavesAnObject(op.Type) && op.Resource.URN == urn }) {
			return nil, fmt.Errorf("%s has no pending create to decide", urn)
		}
	}
	return out, nil
}

// helmRelease is the type of a Helm release.
const helmRelease = "kubernetes:helm.sh/v3:Release"

// operationNoun names the operations that are not creates.
var operationNoun = map[string]string{Updating: "update", Deleting: "delete", Reading: "read"}

func decide(ctx context.Context, d *Deployment, l Lookups, op Operation, since time.Time) Verdict {
	v := Verdict{Op: op}
	urn, typ := op.Resource.URN, op.Resource.Type
	t := Target{Op: op, Access: accessOf(d, op.Resource.Provider), State: d}
	kind, known := Inventory[typ]
	switch {
	case !leavesAnObject(op.Type):
		// A pending Helm upgrade too: Helm refuses the next one while its
		// newest revision is pending, naming `helm rollback`
		// (helm.sh/helm/v3 v3.20.2 pkg/action/upgrade.go, errPending).
		v.Outcome = Retry
		v.Why = "an interrupted " + cmp.Or(operationNoun[op.Type], op.Type)
		v.Next = "the next `pulumi up` performs it again (`pulumi stack import` and `pulumi refresh` drop the pending operation)"
		return v
	case !op.Resource.Custom || strings.HasPrefix(typ, "pulumi:providers:") || (known && kind.Find == nil):
		v.Outcome, v.Why = Clear, "a create cut off leaves nothing: "+cmp.Or(kind.Leaves, "a component or a provider, which makes nothing outside Pulumi's state")
		return v
	case !known:
		v.Outcome = Undecided
		v.Why = "the recovery decides this type by no lookup: whether the create went through, and whether what it finds is this run's, is a person's to tell"
		v.Next = undecided(t, since)
		return v
	case d.byURN(urn) != nil:
		return besideTheState(ctx, d, l, t, kind, v)
	}
	found, err := lookUp(ctx, l, t, kind)
	switch {
	case err != nil:
		v.Outcome = Undecided
		var u *undecidedError
		if errors.As(err, &u) {
			v.Why = u.msg
		} else {
			v.Why = fmt.Sprintf("cannot tell whether it exists: %v", err)
		}
		v.Next = "find the object; " + importOrClear(urn)
	case found.Exists && (since.IsZero() || !found.Created.After(since)):
		v.Outcome = Undecided
		v.Why = fmt.Sprintf("%s exists, but %s, so it may be an earlier stack's leftover", found.ID, age(found.Created, since))
		v.Next = "find the object; " + importOrClear(urn)
	case found.Exists:
		v.Outcome, v.ID, v.Why = Import, found.ID, "it exists, made "+found.Created.UTC().Format(time.RFC3339)+", after the interrupted update began"
	default:
		v.Outcome, v.Why = Clear, "it does not exist"
	}
	if v.Outcome != Undecided && found.Note != "" {
		v.Why += "; " + found.Note
	}
	return v
}

// lookUp finds the object a pending create may have left, once the
// credentials are proved to reach the resource's own account.
func lookUp(ctx context.Context, l Lookups, t Target, kind Kind) (Found, error) {
	if err := checkAccess(ctx, l, t, kind); err != nil {
		return Found{}, err
	}
	return kind.Find(ctx, l, t)
}

// besideTheState decides a pending create whose URN the state also holds:
// a later `pulumi up` created the resource again (the usual case: pending
// creates stay until a refresh clears them, and the next up creates anew),
// or a replacement was cut off. `pulumi stack import` refuses a second
// resource of one URN, so -import is never the answer, and -clear alone
// would drop the only record of what the cut-off create left. The object
// its inputs name is looked up: none, or the one the state holds, leaves
// nothing to keep; another is named, for a person to delete or adopt
// under another name before the pending create is cleared.
func besideTheState(ctx context.Context, d *Deployment, l Lookups, t Target, kind Kind, v Verdict) Verdict {
	urn := v.Op.Resource.URN
	held := d.byURN(urn)
	clearIt := fmt.Sprintf("go run ./cmd/recover-pending -stack <stack> -clear '%s'", urn)
	found, err := lookUp(ctx, l, t, kind)
	switch {
	case err != nil:
		v.Outcome = Undecided
		v.Why = fmt.Sprintf("the state holds a resource of this URN already (%s), and whether the cut-off create left another cannot be told: %v", held.ID, err)
		v.Next = "find the object its inputs name; if it exists and is not " + held.ID + ", delete it or adopt it under another name " +
			"(`pulumi import`); then `" + clearIt + "`"
	case !found.Exists || found.ID == held.ID:
		v.Outcome, v.Why = Clear, "the state holds this URN's resource ("+held.ID+"), and the cut-off create left no other"
	default:
		v.Outcome = Undecided
		v.Why = fmt.Sprintf("the cut-off create left %s, beside %s, which the state holds under this URN (a later create, or the "+
			"resource a replacement was to replace); `pulumi stack import` cannot take a second resource of one URN", found.ID, held.ID)
		v.Next = "delete " + found.ID + " if nothing uses it, or adopt it under another name (`pulumi import " + v.Op.Resource.Type +
			" <name> " + found.ID + "`); then `" + clearIt + "` (clearing it first drops the only record of it)"
	}
	return v
}

// age says why an object's creation time proves nothing: none known, no
// start of the interrupted update known, or made before it.
func age(created, since time.Time) string {
	switch {
	case created.IsZero():
		return "AWS gives it no creation time"
	case since.IsZero():
		return "the stack's history says nothing of when the interrupted update began"
	}
	return fmt.Sprintf("it was made %s, before the interrupted update began (%s at the earliest)",
		created.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
}

// undecided is what a person runs for a pending create of a type the
// recovery does not decide: what the create sent (name, namespace, tags),
// then the -import or -clear line. A Helm release left pending-install
// also needs its record deleted before a -clear, or the next install
// refuses the name (helm.sh/helm/v3 v3.20.2 pkg/action/install.go).
func undecided(t Target, since time.Time) string {
	var sent []string
	for _, key := range [][]string{{"name"}, {"metadata", "name"}, {"namespace"}, {"metadata", "namespace"}} {
		if v := t.Input(key...); v != "" {
			sent = append(sent, strings.Join(key, ".")+" "+v)
		}
	}
	if tags, ok := decoded(t.Op.Resource.Inputs["tags"]).(map[string]any); ok && len(tags) > 0 {
		b, _ := json.Marshal(tags)
		sent = append(sent, "tags "+string(b))
	}
	after := "by the interrupted run"
	if !since.IsZero() {
		after += " (after " + since.UTC().Format(time.RFC3339) + ")"
	}
	next := fmt.Sprintf("find the object the create sent (%s): %s", cmp.Or(strings.Join(sent, ", "), "see its inputs: `pulumi stack export`"),
		importOrClear(t.Op.Resource.URN, "made "+after))
	if t.Op.Resource.Type == helmRelease {
		// Its records' labels: helm.sh/helm/v3 v3.20.2 pkg/storage/driver/secrets.go.
		next += fmt.Sprintf("; a release left pending-install: `kubectl delete secret -n %s -l owner=helm,name=%s,status=pending-install` first (Helm's default secrets driver)",
			cmp.Or(t.Input("namespace"), "default"), cmp.Or(t.Input("name"), "<release>"))
	}
	return next
}

// importOrClear is what a person runs once they know whether the object
// exists (and was, as made says). Not Pulumi's own `pulumi refresh
// --import-pending-creates`, which drops the object from the state
// (docs/recovery.md), nor `--clear-pending-creates`, which clears every
// pending create at once.
func importOrClear(urn string, made ...string) string {
	return fmt.Sprintf("if it exists%s, `go run ./cmd/recover-pending -stack <stack> -import '%s=<ID>'` (the ID its provider imports "+
		"by: its docs' Import section); if it does not, `go run ./cmd/recover-pending -stack <stack> -clear '%s'`",
		strings.Join(append([]string{""}, made...), " and was "), urn, urn)
}

// thenClear ends a finder's advice on what must go before its pending
// create is cleared: importOrClear's -clear, which Report prints below.
const thenClear = "clear its pending create with the -clear command below"

// checkAccess proves, before a finder asks AWS, that the recovery's
// credentials reach the account the resource's provider reaches: a "not
// found" from another account would clear an object that exists. The
// account is the provider's allowedAccountIds, else the one the ARNs of
// the state's resources of that provider name; none is no proof.
func checkAccess(ctx context.Context, l Lookups, t Target, kind Kind) error {
	if len(kind.Actions) == 0 { // a finder that reads no AWS
		return nil
	}
	if t.Access.Unreproducible != nil {
		return cannotTell("%v", t.Access.Unreproducible)
	}
	want := t.Access
	if len(want.Accounts) == 0 {
		want.Accounts = accountsOf(t.State, t.Op.Resource.Provider)
	}
	if len(want.Accounts) == 0 {
		return cannotTell("nothing in the state names the AWS account of its provider (no allowedAccountIds, no ARN of its resources), " +
			"so the recovery cannot prove its credentials look in the right one")
	}
	_, err := l.Account(ctx, want)
	return err
}

var accountInARN = regexp.MustCompile(`^arn:[a-z-]+:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):`)

// accountsOf are the accounts the ARNs of the state's resources of a
// provider name (each resource's own "arn" output).
func accountsOf(d *Deployment, provider string) []string {
	var out []string
	for _, r := range d.Resources {
		if r.Provider != provider {
			continue
		}
		if m := accountInARN.FindStringSubmatch(Str(r.Outputs, "arn")); m != nil && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// accessOf is how the provider a reference ("<urn>::<id>") names reaches
// AWS, from its inputs in the state: its region, credentials and allowed
// accounts. A provider's inputs may hold lists and objects JSON-encoded
// in strings (provider inputs are strings on the wire), as config does.
func accessOf(d *Deployment, ref string) AWSAccess {
	var a AWSAccess
	p := d.providerOf(ref)
	if p == nil {
		return a
	}
	a.Region = Str(p.Inputs, "region")
	a.Accounts = stringList(p.Inputs["allowedAccountIds"])
	a.Creds, a.Unreproducible = awscli.AccessOf(p.Inputs, "the provider's ")
	return a
}

// providerOf is the provider resource a reference ("<urn>::<id>") names,
// nil when the state holds none.
func (d *Deployment) providerOf(ref string) *Resource {
	i := strings.LastIndex(ref, "::")
	if i < 0 {
		return nil
	}
	return d.byURN(ref[:i])
}

// decoded is v, or what the JSON in it holds when v is a string of a JSON
// list or object.
func decoded(v any) any {
	s, ok := v.(string)
	if !ok || (!strings.HasPrefix(s, "[") && !strings.HasPrefix(s, "{")) {
		return v
	}
	var out any
	if json.Unmarshal([]byte(s), &out) != nil {
		return v
	}
	return out
}

// stringList reads a list input, JSON-encoded or not.
func stringList(v any) []string {
	list, _ := decoded(v).([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Decided reports whether every pending create is imported or cleared.
func Decided(verdicts []Verdict) bool {
	for _, v := range verdicts {
		if v.Outcome == Undecided {
			return false
		}
	}
	return true
}

// Report writes the verdicts as the lines a person reads; stack goes into
// the commands it gives.
func Report(w io.Writer, stack string, verdicts []Verdict) {
	for _, v := range verdicts {
		line := fmt.Sprintf("%-9s %s (%s, %s): %s", v.Outcome, Name(v.Op.Resource.URN), v.Op.Resource.Type, v.Op.Type, v.Why)
		if v.Outcome == Import {
			line += "; import ID " + v.ID
		}
		if v.Next != "" {
			line += "\n          next: " + strings.ReplaceAll(v.Next, "<stack>", stack)
		}
		if v.Outcome == Undecided {
			line += "\n          URN: " + v.Op.Resource.URN
		}
		fmt.Fprintln(w, line)
	}
}
