// Package iamtest reads the IAM policy documents a program registers the
// way its tests assert on them: every one-or-many field as a list.
package iamtest

import (
	"fmt"
	"strings"
	"testing"

	"nodeless-eks/internal/iampolicy"

	"github.com/stretchr/testify/require"
)

// Statement is an IAM statement with Action and Resource as
// lists and each condition operator's keys as a map.
type Statement struct {
	Sid       string
	Effect    string
	Principal any
	Action    []string
	Resource  []string
	Condition map[string]map[string]any
}

// Parse reads a policy document, failing the test if it is not one.
func Parse(t testing.TB, doc string) []Statement {
	t.Helper()
	d, err := iampolicy.Parse(doc)
	require.NoError(t, err, "policy: %s", doc)
	out := make([]Statement, 0, len(d.Statement))
	for _, s := range d.Statement {
		st := Statement{Sid: s.Sid, Effect: s.Effect, Principal: s.Principal,
			Action: iampolicy.Strings(s.Action), Resource: iampolicy.Strings(s.Resource)}
		for op, keys := range s.Condition {
			m, ok := keys.(map[string]any)
			require.Truef(t, ok, "statement %s: condition %s is %T, not an object", s.Sid, op, keys)
			if st.Condition == nil {
				st.Condition = map[string]map[string]any{}
			}
			st.Condition[op] = m
		}
		out = append(out, st)
	}
	return out
}

// PrincipalOf is the statement's principal of kind ("Service", "Federated",
// "AWS"), "" if it names none.
func (s Statement) PrincipalOf(kind string) any {
	m, ok := s.Principal.(map[string]any)
	if !ok {
		return ""
	}
	return m[kind]
}

// IsReadOnly reports whether an IAM action only reads, by its verb.
func IsReadOnly(action string) bool {
	_, verb, ok := strings.Cut(action, ":")
	if !ok {
		panic(fmt.Sprintf("iamtest: %q is not service:Action", action))
	}
	for _, prefix := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(verb, prefix) {
			return true
		}
	}
	return false
}
