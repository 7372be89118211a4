// Package iampolicy is an IAM policy document: its JSON shape, its size as
// IAM counts it, and its split into managed policies. The evaluator tests
// hold policies to is testkit/iamtest's.
package iampolicy

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement. Action, Resource and their Not forms are a
// string or a list of strings; Principal appears only in trust policies.
type Statement struct {
	Sid         string         `json:"Sid,omitempty"`
	Effect      string         `json:"Effect"`
	Principal   any            `json:"Principal,omitempty"`
	Action      any            `json:"Action,omitempty"`
	NotAction   any            `json:"NotAction,omitempty"`
	Resource    any            `json:"Resource,omitempty"`
	NotResource any            `json:"NotResource,omitempty"`
	Condition   map[string]any `json:"Condition,omitempty"`
}

// New is a document of the 2012-10-17 language.
func New(statements ...Statement) Document {
	return Document{Version: "2012-10-17", Statement: statements}
}

// JSON renders the document.
func (d Document) JSON() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encoding IAM policy: %w", err)
	}
	return string(b), nil
}

// MaxManagedPolicySize is IAM's limit for a managed policy document,
// whitespace excluded.
const MaxManagedPolicySize = 6144

// Size is the length IAM counts against its limits: the document's JSON
// without whitespace.
func (d Document) Size() int {
	b, err := json.Marshal(d)
	if err != nil {
		return 0
	}
	return len(b)
}

// Split packs the statements of d, in order, into as few documents as
// keep each within max characters. A statement too long for a document of
// its own is an error.
func Split(d Document, max int) ([]Document, error) {
	var out []Document
	current := New()
	for _, st := range d.Statement {
		next := New(append(slices.Clone(current.Statement), st)...)
		if next.Size() <= max {
			current = next
			continue
		}
		if len(current.Statement) == 0 || New(st).Size() > max {
			return nil, fmt.Errorf("IAM policy statement %q alone is %d characters, over %d", st.Sid, New(st).Size(), max)
		}
		out = append(out, current)
		current = New(st)
	}
	if len(current.Statement) > 0 {
		out = append(out, current)
	}
	return out, nil
}

// Parse reads a policy document.
func Parse(doc string) (Document, error) {
	var d Document
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return Document{}, fmt.Errorf("parsing IAM policy: %w", err)
	}
	return d, nil
}

// Strings is a field that holds a string or a list of strings, as a list.
func Strings(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}
