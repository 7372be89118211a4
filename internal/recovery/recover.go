package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

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
	// Fix is a change outside the state the verdict needs (a Helm release
	// record left pending); nil when none.
	Fix *Fix
}

// Fix is a change the recovery makes in the cluster before it changes the
// state.
type Fix struct {
	// Does says what it does, for the report.
	Does  string
	Apply func(ctx context.Context) error
}

// Found is what a finder learned of a pending create's object.
type Found struct {
	// Exists, with the ID its provider imports it by; else it provably
	// does not exist (once Fix, when there is one, is applied).
	Exists bool
	ID     string
	// Created is when the object was made; zero when its API does not
	// say (it is then never adopted).
	Created time.Time
	// Note adds what a person should know (an add-on still CREATING).
	Note string
	Fix  *Fix
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
	if wait := d.Manifest.Time.Add(o.Settle).Sub(now()); wait > 0 && hasCreates(d) {
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

func hasCreates(d *Deployment) bool {
	for _, op := range d.PendingOperations {
		if leavesAnObject(op.Type) {
			return true
		}
	}
	return false
}

// operationNoun names the operations that are not creates.
var operationNoun = map[string]string{Updating: "update", Deleting: "delete", Reading: "read", Importing: "import"}

func decide(ctx context.Context, d *Deployment, l Lookups, op Operation, since time.Time) Verdict {
	v := Verdict{Op: op}
	urn, typ := op.Resource.URN, op.Resource.Type
	t := Target{Op: op, Access: accessOf(d, op.Resource.Provider), State: d}
	if !leavesAnObject(op.Type) {
		v.Outcome = Retry
		noun, ok := operationNoun[op.Type]
		if !ok {
			noun = op.Type
		}
		v.Why = "an interrupted " + noun
		v.Next = "the next `pulumi up` performs it again (`pulumi stack import` and `pulumi refresh` drop the pending operation)"
		if typ == helmRelease && op.Type == Updating {
			fix, note, err := releaseUpdateFix(ctx, l, t)
			switch {
			case err != nil:
				// Still a retry: the state holds the release, so nothing is
				// made twice, and -import and -clear answer creates only. A
				// stop here would stop every Deployments run at its pre-run
				// with nothing a person could answer; the next upgrade
				// instead fails with Helm's own message, if at all.
				v.Why += "; the recovery could not ready the release for it: " + err.Error()
				v.Next = releaseUpdateAdvice(t)
			case fix != nil:
				v.Fix = fix
				v.Why += "; " + note
			}
		}
		return v
	}
	kind, ok := Inventory[typ]
	switch {
	case !ok:
		v.Outcome = Undecided
		v.Why = "the recovery's inventory does not know this type, so it cannot tell whether the create went through"
		v.Next = importOrClear(urn)
		return v
	case d.byURN(urn) != nil:
		return besideTheState(ctx, d, l, t, kind, v)
	case !op.Resource.Custom || (kind.Find == nil && kind.Look == ""):
		v.Outcome, v.Why = Clear, "a create cut off leaves nothing: "+kind.Leaves
		return v
	case kind.Find == nil:
		v.Outcome = Undecided
		v.Why = "the recovery leaves this type to a person: an object of these inputs may be this run's or an earlier stack's"
		v.Next = lookThenDecide(t, kind, since)
		return v
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
		v.Next = importOrClear(urn)
	case found.Exists && (since.IsZero() || !found.Created.After(since)):
		v.Outcome = Undecided
		v.Why = fmt.Sprintf("%s exists, but %s, so it may be an earlier stack's leftover", found.ID, age(found.Created, since))
		v.Next = importOrClear(urn)
	case found.Exists:
		v.Outcome, v.ID, v.Why = Import, found.ID, "it exists, made "+found.Created.UTC().Format(time.RFC3339)+", after the interrupted update began"
	default:
		v.Outcome, v.Why = Clear, "it does not exist"
	}
	if v.Outcome != Undecided {
		if found.Note != "" {
			v.Why += "; " + found.Note
		}
		v.Fix = found.Fix
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
	if !v.Op.Resource.Custom || kind.Find == nil {
		if !v.Op.Resource.Custom {
			v.Outcome, v.Why = Clear, "a create cut off leaves nothing: "+kind.Leaves
			return v
		}
		v.Outcome = Undecided
		v.Why = "the state holds a resource of this URN already (from a later create, or the one a replacement was to replace), " +
			"and the recovery cannot look for what the cut-off create left"
		v.Next = "find the object its inputs name; if it exists and is not " + held.ID + ", delete it or adopt it under another name " +
			"(`pulumi import`); then `" + clearIt + "`"
		return v
	}
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

// lookThenDecide is what a person runs for a type the recovery leaves to
// them: the command that finds the object, and the import ID the recorded
// inputs make.
func lookThenDecide(t Target, kind Kind, since time.Time) string {
	urn := t.Op.Resource.URN
	id := "<ID: " + kind.ID + ">"
	if kind.IDFrom != "" {
		id = render(kind.IDFrom, t)
		if ns := t.Input("metadata", "namespace"); ns != "" && kind.Look == kubeKind.Look {
			id = ns + "/" + id
		}
	}
	after := "made by the interrupted run"
	if !since.IsZero() {
		after += " (after " + since.UTC().Format(time.RFC3339) + ")"
	}
	return fmt.Sprintf("look: `%s`; if it shows an object %s, `go run ./cmd/recover-pending -stack <stack> -import '%s=%s'`; "+
		"if it shows none, `go run ./cmd/recover-pending -stack <stack> -clear '%s'`; one of an earlier stack: delete it or "+
		"adopt it under another name, then -clear", render(kind.Look, t), after, urn, id, urn)
}

var placeholder = regexp.MustCompile(`\{([^}]+)\}`)

// render fills a template of Kind.Look or Kind.IDFrom from the pending
// create: {region} is its provider's region, {kubeResource} the
// Kubernetes resource of its type (kubectl's <plural>.<group>, its kind
// lowercased being a name kubectl also takes), {tags:KEY} a tag it was
// given, and {a.b} an input by its path. What the inputs lack shows as
// <a.b>.
func render(tpl string, t Target) string {
	return placeholder.ReplaceAllStringFunc(tpl, func(m string) string {
		key := m[1 : len(m)-1]
		var v string
		switch {
		case key == "region":
			v = t.Access.Region
		case key == "kubeResource":
			// kubernetes:<group>/<version>:<Kind>
			parts := strings.Split(t.Op.Resource.Type, ":")
			group, _, _ := strings.Cut(parts[1], "/")
			v = strings.ToLower(parts[2]) + "." + group
			if ns := t.Input("metadata", "namespace"); ns != "" {
				v += " -n " + ns
			}
		case strings.HasPrefix(key, "tags:"):
			v = t.Input("tags", strings.TrimPrefix(key, "tags:"))
		default:
			v = t.Input(strings.Split(key, ".")...)
		}
		if v == "" {
			return "<" + key + ">"
		}
		return v
	})
}

// importOrClear is what a person runs once they know. Not Pulumi's own
// `pulumi refresh --import-pending-creates`, which drops the object from
// the state (docs/recovery.md), nor `--clear-pending-creates`, which
// clears every pending create at once.
func importOrClear(urn string) string {
	return fmt.Sprintf("find the object; if it exists, `go run ./cmd/recover-pending -stack <stack> -import '%s=<ID>'` "+
		"(docs/recovery.md gives each type's ID); if it does not, `go run ./cmd/recover-pending -stack <stack> -clear '%s'`", urn, urn)
}

// thenClear ends a finder's advice on what must go before its pending
// create is cleared: importOrClear's -clear, which Report prints below.
const thenClear = "clear its pending create with the -clear command below"

// releaseUpdateAdvice is what a person does if the next upgrade of a
// release whose upgrade was cut off is refused: Helm refuses to upgrade a
// release whose newest revision is pending (pkg/action/upgrade.go,
// errPending), and `helm rollback` does not refuse it
// (pkg/action/rollback.go, helm.sh/helm/v3 v3.20.2).
func releaseUpdateAdvice(t Target) string {
	name, namespace := t.Input("name"), namespaceOf(t)
	return fmt.Sprintf("the next `pulumi up` upgrades it again; if Helm refuses (\"another operation (install/upgrade/rollback) is in progress\"), "+
		"`helm history %s -n %s` shows the pending revision, and `helm rollback %s <last deployed revision> -n %s` ends it "+
		"(or run this recovery where it reaches the cluster: it deletes that revision's record)", name, namespace, name, namespace)
}

// checkAccess proves, before a finder asks AWS, that the recovery's
// credentials reach the account the resource's provider reaches: a "not
// found" from another account would clear an object that exists. The
// account is the provider's allowedAccountIds, else the one the ARNs of
// the state's resources of that provider name; none is no proof.
func checkAccess(ctx context.Context, l Lookups, t Target, kind Kind) error {
	if !kind.asksAWS() {
		return nil
	}
	if len(t.Access.Unsupported) > 0 {
		return cannotTell("its provider sets %s, credentials the recovery does not use", strings.Join(t.Access.Unsupported, ", "))
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

// asksAWS reports a finder that reads AWS itself; one that reads a
// cluster's objects goes through Lookups.Kube, which checks the cluster's
// account.
func (k Kind) asksAWS() bool { return len(k.Actions) > 0 && !k.viaCluster }

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
// AWS, from its inputs in the state: its region, assumed role and allowed
// accounts. A provider's inputs may hold lists and objects JSON-encoded
// in strings (provider inputs are strings on the wire).
func accessOf(d *Deployment, ref string) AWSAccess {
	var a AWSAccess
	p := d.providerOf(ref)
	if p == nil {
		return a
	}
	a.Region = Str(p.Inputs, "region")
	a.Accounts = stringList(p.Inputs["allowedAccountIds"])
	a.Profile = Str(p.Inputs, "profile")
	for _, key := range []string{"accessKey", "secretKey", "token", "sharedCredentialsFiles", "sharedConfigFiles", "assumeRoleWithWebIdentity"} {
		if v, ok := p.Inputs[key]; ok && v != nil && v != "" {
			a.Unsupported = append(a.Unsupported, key)
		}
	}
	for _, key := range []string{"assumeRole", "assumeRoles"} {
		switch v := decoded(p.Inputs[key]).(type) {
		case map[string]any:
			a.RoleArn = Str(v, "roleArn")
		case []any:
			if len(v) > 0 {
				if m, ok := v[0].(map[string]any); ok {
					a.RoleArn = Str(m, "roleArn")
				}
			}
		}
		if a.RoleArn != "" {
			break
		}
	}
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
		if v.Fix != nil {
			line += "\n          first: " + v.Fix.Does
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
