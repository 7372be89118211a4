package iamtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/internal/iampolicy"
)

// The evaluator tests hold policies to, for the part of IAM's policy
// language this repository's policies use (Allow and Deny, Action and
// NotAction, Resource and NotResource with wildcards, and the condition
// operators below). It follows AWS's evaluation logic for a single identity
// policy plus an optional permissions boundary: an explicit Deny wins;
// otherwise the identity policy must allow, and the boundary, when there is
// one, must allow too
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).

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
func Evaluate(identity iampolicy.Document, boundary *iampolicy.Document, r Request) Decision {
	docs := []iampolicy.Document{identity}
	if boundary != nil {
		docs = append(docs, *boundary)
	}
	for _, d := range docs {
		for _, s := range d.Statement {
			if s.Effect == "Deny" && matches(s, r) {
				return ExplicitDeny
			}
		}
	}
	if !allows(identity, r) {
		return ImplicitDeny
	}
	if boundary != nil && !allows(*boundary, r) {
		return BoundaryDeny
	}
	return Allowed
}

func allows(d iampolicy.Document, r Request) bool {
	return slices.ContainsFunc(d.Statement, func(s iampolicy.Statement) bool { return s.Effect == "Allow" && matches(s, r) })
}

func matches(s iampolicy.Statement, r Request) bool {
	switch {
	case s.Action != nil && !anyMatch(iampolicy.Strings(s.Action), r.Action, true):
		return false
	case s.NotAction != nil && anyMatch(iampolicy.Strings(s.NotAction), r.Action, true):
		return false
	case s.Resource != nil && !slices.ContainsFunc(iampolicy.Strings(s.Resource), func(p string) bool { return arnMatch(p, r.Resource) }):
		return false
	case s.NotResource != nil && slices.ContainsFunc(iampolicy.Strings(s.NotResource), func(p string) bool { return arnMatch(p, r.Resource) }):
		return false
	}
	for op, keys := range s.Condition {
		m, ok := keys.(map[string]any)
		if !ok {
			return false
		}
		for key, want := range m {
			if !condition(op, key, iampolicy.Strings(want), r.Context) {
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

// arnMatch is IAM's matching of a resource ARN (the Resource element, and
// the ArnLike operators): a '*' works within the segment between colons,
// never matching a ':' unless it is the last character of its segment,
// which "can expand to match beyond the colon boundaries"; a '*' matches
// '/' (IAM user guide, reference_policies_elements_resource.html, "Using
// wildcards in resource ARNs"). The guide does not say whether '?' may
// match a ':', so it may: the evaluator matches no less than IAM. A lone
// "*" matches every resource.
func arnMatch(pattern, value string) bool {
	if pattern == "*" {
		return true
	}
	// memo[i][j] caches whether pattern[i:] matches value[j:]: 0 unknown,
	// 1 yes, 2 no.
	memo := make([][]byte, len(pattern)+1)
	for i := range memo {
		memo[i] = make([]byte, len(value)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(pattern) {
			return j == len(value)
		}
		if memo[i][j] != 0 {
			return memo[i][j] == 1
		}
		var ok bool
		switch c := pattern[i]; c {
		case '*':
			// Zero characters, or one more and the same '*' again.
			spans := i+1 == len(pattern) || pattern[i+1] == ':'
			ok = match(i+1, j) || (j < len(value) && (spans || value[j] != ':') && match(i, j+1))
		case '?':
			ok = j < len(value) && match(i+1, j+1)
		default:
			ok = j < len(value) && value[j] == c && match(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return match(0, 0)
}

// wildcard is IAM's string matching (StringLike, and actions): '*' any run
// of characters ('/' and ':' included), '?' one character, everything else
// itself ('[' and '\\' too, unlike path.Match).
func wildcard(pattern, value string) bool {
	// p and v index pattern and value; star and mark remember the last '*'
	// and where in value it began matching, to backtrack to.
	p, v, star, mark := 0, 0, -1, 0
	for v < len(value) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == value[v]):
			p++
			v++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, v
			p++
		case star >= 0:
			p = star + 1
			mark++
			v = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// condition evaluates one operator on one key. A key the request does not
// carry fails a positive operator and passes a negated one, as IAM does;
// ...IfExists passes when the key is absent; Null tests for absence.
func condition(op, key string, want []string, ctx map[string][]string) bool {
	got, present := lookup(ctx, key)
	if op == "Null" {
		return len(want) == 1 && (want[0] == "true") == !present
	}
	set := ""
	if i := strings.Index(op, ":"); i > 0 {
		set, op = op[:i], op[i+1:]
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")
	negated := strings.Contains(op, "Not")
	if !present {
		switch set {
		case "ForAllValues":
			return true
		case "ForAnyValue": // false for any operator, negated or not
			return ifExists
		}
		return ifExists || negated
	}
	match := func(v string) bool {
		var hit bool
		switch strings.Replace(op, "Not", "", 1) {
		case "StringEquals", "ArnEquals":
			hit = slices.Contains(want, v)
		case "StringEqualsIgnoreCase":
			hit = slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, v) })
		case "StringLike":
			hit = slices.ContainsFunc(want, func(w string) bool { return wildcard(w, v) })
		case "ArnLike":
			hit = slices.ContainsFunc(want, func(w string) bool { return arnMatch(w, v) })
		case "Bool":
			hit = slices.Contains(want, strings.ToLower(v))
		case "NumericEquals", "NumericLessThan", "NumericLessThanEquals", "NumericGreaterThan", "NumericGreaterThanEquals":
			hit = slices.ContainsFunc(want, func(w string) bool { return numeric(strings.Replace(op, "Not", "", 1), v, w) })
		default:
			// A statement this evaluator cannot read would silently allow
			// or deny what IAM does not: fail the test that relies on it.
			panic(fmt.Sprintf("iampolicy: condition operator %q is not supported", op))
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

// numeric compares a request value with a policy value as IAM's Numeric
// operators do; a value that is not a number matches nothing.
func numeric(op, got, want string) bool {
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	switch op {
	case "NumericEquals":
		return g == w
	case "NumericLessThan":
		return g < w
	case "NumericLessThanEquals":
		return g <= w
	case "NumericGreaterThan":
		return g > w
	}
	return g >= w
}
