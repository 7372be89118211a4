// Package iampolicy is an IAM policy document: its JSON shape, and an
// evaluator for the part of IAM's policy language this repository's
// policies use (Allow and Deny, Action and NotAction, Resource and
// NotResource with wildcards, and the condition operators below), so that
// tests can ask what a policy lets a principal do. It follows AWS's
// evaluation logic for a single identity policy plus an optional
// permissions boundary: an explicit Deny wins; otherwise the identity
// policy must allow, and the boundary, when there is one, must allow too
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).
package iampolicy

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
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

// Request is one API call as IAM sees it: the action, the resource ARN and
// the request context's condition keys (a key's values; a key the request
// does not carry is absent).
type Request struct {
	Action, Resource string
	Context          map[string][]string
}

// Decision is the outcome of an evaluation.
type Decision string

// Decisions.
const (
	Allowed      Decision = "allowed"
	ExplicitDeny Decision = "explicitly denied"
	ImplicitDeny Decision = "not allowed"
	BoundaryDeny Decision = "not allowed by the permissions boundary"
)

// Evaluate decides a request against an identity policy and, when boundary
// is not nil, a permissions boundary.
func Evaluate(identity Document, boundary *Document, r Request) Decision {
	docs := []Document{identity}
	if boundary != nil {
		docs = append(docs, *boundary)
	}
	for _, d := range docs {
		for _, s := range d.Statement {
			if s.Effect == "Deny" && s.matches(r) {
				return ExplicitDeny
			}
		}
	}
	if !identity.allows(r) {
		return ImplicitDeny
	}
	if boundary != nil && !boundary.allows(r) {
		return BoundaryDeny
	}
	return Allowed
}

func (d Document) allows(r Request) bool {
	return slices.ContainsFunc(d.Statement, func(s Statement) bool { return s.Effect == "Allow" && s.matches(r) })
}

func (s Statement) matches(r Request) bool {
	switch {
	case s.Action != nil && !anyMatch(Strings(s.Action), r.Action, true):
		return false
	case s.NotAction != nil && anyMatch(Strings(s.NotAction), r.Action, true):
		return false
	case s.Resource != nil && !anyMatch(Strings(s.Resource), r.Resource, false):
		return false
	case s.NotResource != nil && anyMatch(Strings(s.NotResource), r.Resource, false):
		return false
	}
	for op, keys := range s.Condition {
		m, ok := keys.(map[string]any)
		if !ok {
			return false
		}
		for key, want := range m {
			if !condition(op, key, Strings(want), r.Context) {
				return false
			}
		}
	}
	return true
}

// anyMatch matches value against IAM wildcard patterns ('*' and '?').
// Actions match regardless of case; resources do not.
func anyMatch(patterns []string, value string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			p, value = strings.ToLower(p), strings.ToLower(value)
		}
		if wildcard(p, value) {
			return true
		}
	}
	return false
}

// wildcard is IAM's matching: '*' any run of characters ('/' included),
// '?' one character.
func wildcard(pattern, value string) bool {
	escaped := strings.NewReplacer("/", "\x00").Replace
	ok, err := path.Match(escaped(pattern), escaped(value))
	return err == nil && ok
}

// condition evaluates one operator on one key. A key the request does not
// carry fails a positive operator and passes a negated one, as IAM does;
// ...IfExists passes when the key is absent; Null tests for absence.
func condition(op, key string, want []string, ctx map[string][]string) bool {
	got, present := lookup(ctx, key)
	if op == "Null" {
		return (want[0] == "true") == !present
	}
	set := ""
	if i := strings.Index(op, ":"); i > 0 {
		set, op = op[:i], op[i+1:]
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")
	negated := strings.Contains(op, "Not")
	if !present {
		return ifExists || negated || set == "ForAllValues"
	}
	match := func(v string) bool {
		var hit bool
		switch strings.Replace(op, "Not", "", 1) {
		case "StringEquals", "ArnEquals":
			hit = slices.Contains(want, v)
		case "StringEqualsIgnoreCase":
			hit = slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, v) })
		case "StringLike", "ArnLike":
			hit = slices.ContainsFunc(want, func(w string) bool { return wildcard(w, v) })
		case "Bool":
			hit = slices.Contains(want, strings.ToLower(v))
		default:
			return false // an operator this evaluator does not know never matches
		}
		return hit != negated
	}
	switch set {
	case "ForAllValues":
		return !slices.ContainsFunc(got, func(v string) bool { return !match(v) })
	default: // single-valued keys, and ForAnyValue
		return slices.ContainsFunc(got, match)
	}
}

// lookup finds a condition key; keys are case-insensitive.
func lookup(ctx map[string][]string, key string) ([]string, bool) {
	for k, v := range ctx {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}
