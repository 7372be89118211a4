// Package recovery resolves what an interrupted `pulumi up` leaves in a
// stack's state: pending operations (Pulumi's "Interrupted updates"
// troubleshooting page). A pending create whose object exists is imported
// with the ID its provider expects; one whose object provably does not
// exist is cleared; one that cannot be decided stops the recovery with a
// report that names the resource and the command a person runs.
// Interrupted updates, deletes and reads are reported and left to the next
// run, which performs them again. What the recovery knows of each resource
// type (does a cut-off create leave an object, how to find it, its import
// ID, where that format comes from) is the Inventory (inventory.go).
//
// The package uses the standard library and the CLIs the program already
// needs (pulumi, aws), so that `go run ./cmd/recover-pending` builds in
// seconds at the start of a Deployments run.
package recovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Operation types of a pending operation (OperationType in pulumi/pulumi
// pkg/resource/operation.go).
const (
	Creating  = "creating"
	Updating  = "updating"
	Deleting  = "deleting"
	Reading   = "reading"
	Importing = "importing"
)

// leavesAnObject reports an operation that, cut off, may have made an
// object the state does not hold: a create, or an import (`pulumi import`,
// or a refresh with --import-pending-creates, which marks the operation
// importing: nothing in pulumi/pulumi reads it back, so the next run does
// not perform it again).
func leavesAnObject(opType string) bool { return opType == Creating || opType == Importing }

// Resource is a resource of the state as `pulumi stack export` writes it
// (apitype.ResourceV3): what the recovery reads of it.
type Resource struct {
	URN      string         `json:"urn"`
	Type     string         `json:"type"`
	Custom   bool           `json:"custom"`
	Delete   bool           `json:"delete"`
	ID       string         `json:"id"`
	Inputs   map[string]any `json:"inputs"`
	Outputs  map[string]any `json:"outputs"`
	Parent   string         `json:"parent"`
	Provider string         `json:"provider"`
	// InitErrors hold Unread while an imported resource waits for the
	// refresh that reads it.
	InitErrors []string `json:"initErrors"`
}

// Operation is a pending operation (apitype.OperationV2): the resource as
// the engine began the operation, with the inputs it sent to the provider,
// autonames included (the provider's Check adds them before Create).
type Operation struct {
	Resource Resource `json:"resource"`
	Type     string   `json:"type"`
}

// Deployment is what the recovery reads of a stack's state.
type Deployment struct {
	Manifest struct {
		// Time is when the state was last written.
		Time time.Time `json:"time"`
	} `json:"manifest"`
	Resources         []Resource  `json:"resources"`
	PendingOperations []Operation `json:"pending_operations"`
}

// ParseExport reads the output of `pulumi stack export` (an
// apitype.UntypedDeployment of version 3 or 4, whose deployment both
// unmarshal as DeploymentV3).
func ParseExport(raw []byte) (*Deployment, error) {
	var untyped struct {
		Version    int             `json:"version"`
		Deployment json.RawMessage `json:"deployment"`
	}
	if err := json.Unmarshal(raw, &untyped); err != nil {
		return nil, fmt.Errorf("reading the stack's export: %w", err)
	}
	if untyped.Version < 3 || untyped.Version > 4 {
		return nil, fmt.Errorf("the stack's export is of version %d; the recovery reads versions 3 and 4 (Pulumi CLI 3.x)", untyped.Version)
	}
	var d Deployment
	if len(untyped.Deployment) == 0 || string(untyped.Deployment) == "null" {
		return &d, nil
	}
	if err := json.Unmarshal(untyped.Deployment, &d); err != nil {
		return nil, fmt.Errorf("reading the stack's deployment: %w", err)
	}
	return &d, nil
}

// Unread marks, in its initErrors, a resource the recovery imported and no
// refresh has read yet: its state has an ID and no outputs, which a
// `pulumi up` would take for an object whose every property changed. A
// refresh replaces a resource's initErrors with what its read reports
// (pulumi/pulumi pkg/resource/deploy/step.go RefreshStep), none for a
// healthy object, so the mark lasts exactly until the read.
const Unread = "nodeless-eks recovery: imported, not yet read by a refresh; run `go run ./cmd/recover-pending -stack <stack>` before `pulumi up`"

// unreadKey is the part of Unread that the fast tests look for.
const unreadKey = "nodeless-eks recovery: imported"

// MayNeedRecovery is the fast test: false only when the export holds no
// pending operation (`pending_operations`, omitempty in
// apitype.DeploymentV3, is nowhere in it) and no import left unread. It
// reads no JSON.
func MayNeedRecovery(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"pending_operations"`)) || bytes.Contains(raw, []byte(unreadKey))
}

// unread are the URNs of the resources the recovery imported that no
// refresh has read.
func (d *Deployment) unread() []string {
	var out []string
	for _, r := range d.Resources {
		for _, e := range r.InitErrors {
			if strings.HasPrefix(e, unreadKey) {
				out = append(out, r.URN)
				break
			}
		}
	}
	return out
}

// Str is a string input or output at path: "" when absent, not a string,
// or a secret this export does not show.
func Str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		next, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = next[p]
	}
	s, _ := cur.(string)
	return s
}

// Name is the last part of a URN: the resource's logical name.
func Name(urn string) string {
	return urn[strings.LastIndex(urn, "::")+2:]
}

// project is the project the state's URNs name
// (urn:pulumi:<stack>::<project>::...).
func (d *Deployment) project() string {
	all := slices.Clone(d.Resources)
	for _, op := range d.PendingOperations {
		all = append(all, op.Resource)
	}
	for _, r := range all {
		if parts := strings.Split(r.URN, "::"); len(parts) > 2 {
			return parts[1]
		}
	}
	return ""
}

// byURN is the state's live resource with urn, nil when there is none.
func (d *Deployment) byURN(urn string) *Resource {
	for i := range d.Resources {
		if d.Resources[i].URN == urn && !d.Resources[i].Delete {
			return &d.Resources[i]
		}
	}
	return nil
}

// ofType are the state's resources of a type.
func (d *Deployment) ofType(typ string) []Resource {
	var out []Resource
	for _, r := range d.Resources {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Edit applies verdicts to an export and returns the export that `pulumi
// stack import` is given: each imported create joins the resources, at
// the end (its parent, provider and dependencies all finished before its
// create began, so they come before it, as the import's integrity check
// requires: VerifyIntegrity in pulumi/pulumi pkg/resource/deploy/snapshot.go),
// with its ID (imports: URN to ID), marked Unread, and no outputs, so that the
// `pulumi refresh` that follows reads it as an import does; each cleared
// create goes. Every other field of the export is kept as it was. `pulumi
// stack import` drops the pending operations that are left
// (pkg/cmd/pulumi/stack/io.go), which a refresh would drop too: only
// creates need a decision, and every one must have one (Recover edits
// only once all are decided), as the import would clear one left pending.
func Edit(raw []byte, imports map[string]string, clears map[string]bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var export map[string]any
	if err := dec.Decode(&export); err != nil {
		return nil, fmt.Errorf("reading the stack's export: %w", err)
	}
	deployment, ok := export["deployment"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the stack's export has no deployment")
	}
	resources, _ := deployment["resources"].([]any)
	ops, _ := deployment["pending_operations"].([]any)
	var kept []any
	done := map[string]bool{}
	for _, raw := range ops {
		op, _ := raw.(map[string]any)
		res, _ := op["resource"].(map[string]any)
		urn, _ := res["urn"].(string)
		if t, _ := op["type"].(string); !leavesAnObject(t) {
			kept = append(kept, raw)
			continue
		}
		if id, ok := imports[urn]; ok {
			imported := make(map[string]any, len(res))
			for k, v := range res {
				imported[k] = v
			}
			imported["id"] = id
			imported["custom"] = true
			imported["initErrors"] = []any{Unread}
			delete(imported, "outputs")
			resources = append(resources, imported)
			done[urn] = true
			continue
		}
		if !clears[urn] {
			return nil, fmt.Errorf("%s is a pending create with no decision", urn)
		}
		done[urn] = true
	}
	for urn := range imports {
		if !done[urn] {
			return nil, fmt.Errorf("%s has no pending create to import", urn)
		}
	}
	for urn := range clears {
		if !done[urn] {
			return nil, fmt.Errorf("%s has no pending create to clear", urn)
		}
	}
	deployment["resources"] = resources
	if len(kept) == 0 {
		delete(deployment, "pending_operations")
	} else {
		deployment["pending_operations"] = kept
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(export); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
