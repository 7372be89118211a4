package iamtest

import (
	"testing"

	"nodeless-eks/internal/iampolicy"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvaluate(t *testing.T) {
	identity := iampolicy.New(
		iampolicy.Statement{Effect: "Allow", Action: []string{"iam:CreateRole", "iam:AttachRolePolicy"}, Resource: "arn:aws:iam::111122223333:role/app-*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:PermissionsBoundary": "arn:aws:iam::111122223333:policy/app-boundary"}}},
		iampolicy.Statement{Effect: "Allow", Action: "ec2:Describe*", Resource: "*"},
		iampolicy.Statement{Effect: "Allow", Action: "kms:ScheduleKeyDeletion", Resource: "*",
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/app": []string{"app-*"}}}},
		iampolicy.Statement{Effect: "Allow", Action: "sqs:DeleteQueue", Resource: "*",
			Condition: map[string]any{"StringNotEquals": map[string]any{"aws:ResourceTag/keep": "true"}}},
		iampolicy.Statement{Effect: "Allow", Action: "logs:*", Resource: "*", Condition: map[string]any{"Null": map[string]any{"aws:RequestTag/app": "false"}}},
		iampolicy.Statement{Effect: "Deny", Action: "iam:DeleteRolePermissionsBoundary", Resource: "*"},
		iampolicy.Statement{Effect: "Allow", NotAction: []string{"iam:*", "organizations:*"}, Resource: "arn:aws:s3:::bucket/*"},
	)
	boundary := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: []string{"ec2:*", "iam:*", "kms:*", "sqs:*"}, Resource: "*"})
	ctx := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = append(m[kv[i]], kv[i+1])
		}
		return m
	}
	tests := []struct {
		name string
		req  Request
		want Decision
	}{
		{"a role with the boundary", Request{Action: "iam:CreateRole", Resource: "arn:aws:iam::111122223333:role/app-x", Context: ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, Allowed},
		{"a role without the boundary", Request{Action: "iam:CreateRole", Resource: "arn:aws:iam::111122223333:role/app-x", Context: nil}, ImplicitDeny},
		{"a role with another boundary", Request{Action: "iam:CreateRole", Resource: "arn:aws:iam::111122223333:role/app-x", Context: ctx("iam:PermissionsBoundary", "arn:aws:iam::aws:policy/AdministratorAccess")}, ImplicitDeny},
		{"a role outside the name pattern", Request{Action: "iam:CreateRole", Resource: "arn:aws:iam::111122223333:role/admin", Context: ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, ImplicitDeny},
		{"wildcards in actions, any case", Request{Action: "EC2:DescribeInstances", Resource: "*", Context: nil}, Allowed},
		{"a resource tag that matches", Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:111122223333:key/1", Context: ctx("aws:ResourceTag/app", "app-prod")}, Allowed},
		{"a resource tag that does not", Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:111122223333:key/1", Context: ctx("aws:ResourceTag/app", "other")}, ImplicitDeny},
		{"an untagged resource fails a positive operator", Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:111122223333:key/1", Context: nil}, ImplicitDeny},
		{"an absent key passes a negated operator", Request{Action: "sqs:DeleteQueue", Resource: "arn:aws:sqs:eu-west-1:111122223333:q", Context: nil}, Allowed},
		{"a present key fails it", Request{Action: "sqs:DeleteQueue", Resource: "arn:aws:sqs:eu-west-1:111122223333:q", Context: ctx("aws:ResourceTag/keep", "true")}, ImplicitDeny},
		{"Null false requires the key", Request{Action: "logs:CreateLogGroup", Resource: "*", Context: nil}, ImplicitDeny},
		{"Null false with the key", Request{Action: "logs:CreateLogGroup", Resource: "*", Context: ctx("aws:RequestTag/app", "x")}, BoundaryDeny},
		{"an explicit deny wins", Request{Action: "iam:DeleteRolePermissionsBoundary", Resource: "arn:aws:iam::111122223333:role/app-x", Context: nil}, ExplicitDeny},
		{"NotAction allows the rest", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::bucket/key", Context: nil}, BoundaryDeny},
		{"NotAction excludes what it names", Request{Action: "iam:CreateUser", Resource: "arn:aws:s3:::bucket/key", Context: nil}, ImplicitDeny},
		{"'*' in a resource spans slashes", Request{Action: "iam:AttachRolePolicy", Resource: "arn:aws:iam::111122223333:role/app-a/b", Context: ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Evaluate(identity, &boundary, tt.req))
		})
	}
	t.Run("without a boundary, the identity policy alone decides", func(t *testing.T) {
		assert.Equal(t, Allowed, Evaluate(identity, nil, Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::bucket/key", Context: nil}))
	})
	t.Run("ForAllValues with an absent key passes", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:UntagResource", Resource: "*",
			Condition: map[string]any{"ForAllValues:StringNotEquals": map[string]any{"aws:TagKeys": "app"}}})
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{Action: "kms:UntagResource", Resource: "k", Context: map[string][]string{"aws:TagKeys": {"team", "env"}}}))
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{Action: "kms:UntagResource", Resource: "k", Context: map[string][]string{"aws:TagKeys": {"team", "app"}}}))
	})
	t.Run("ForAnyValue with an absent key fails, even negated", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:TagResource", Resource: "*",
			Condition: map[string]any{"ForAnyValue:StringNotEquals": map[string]any{"aws:TagKeys": "app"}}})
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{Action: "kms:TagResource", Resource: "k", Context: nil}))
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{Action: "kms:TagResource", Resource: "k", Context: map[string][]string{"aws:TagKeys": {"team"}}}))
	})
	t.Run("wildcards: '*' spans '/' and ':', '[' and '\\' are themselves", func(t *testing.T) {
		assert.True(t, wildcard("arn:aws:iam::*:role/*app-*", "arn:aws:iam::111122223333:role/path/app-x"))
		assert.False(t, wildcard("arn:aws:iam::*:role/app-*", "arn:aws:iam::111122223333:role/path/app-x"))
		assert.True(t, wildcard("a?c", "abc"))
		assert.False(t, wildcard("a?c", "ac"))
		assert.True(t, wildcard("role/[x]", "role/[x]"))
		assert.False(t, wildcard("role/[x]", "role/x"))
		assert.True(t, wildcard(`a\*`, `a\bc`))
		assert.True(t, wildcard("*", ""))
		assert.False(t, wildcard("a*b*c", "a-b-d"))
	})
	t.Run("resources: a '*' stays in its ARN segment unless it ends the segment", func(t *testing.T) {
		for _, tt := range []struct {
			pattern, arn string
			want         bool
		}{
			{"*", "arn:aws:s3:::anything:at/all", true},
			{"arn:aws:s3:::bucket/*", "arn:aws:s3:::bucket/a/b:c", true}, // the last '*' of the last segment
			{"arn:aws:iam::*:role/app-*", "arn:aws:iam::111122223333:role/app-x", true},
			{"arn:aws:sqs:*:111122223333:q", "arn:aws:sqs:eu-west-1:111122223333:q", true},
			// Inside a segment, not its last character: it may not reach
			// past a ':' into the next segment.
			{"arn:aws:logs:eu-west-1:111122223333:log-group:/aws/eks/a*/cluster", "arn:aws:logs:eu-west-1:111122223333:log-group:/aws/eks/a:b/cluster", false},
			{"arn:aws:logs:eu-west-1:111122223333:log-group:/aws/eks/a*/cluster", "arn:aws:logs:eu-west-1:111122223333:log-group:/aws/eks/ab/cluster", true},
			{"arn:aws:eks:eu-west-1:*:cluster/c?", "arn:aws:eks:eu-west-1:111122223333:cluster/cx", true},
			{"arn:aws:iam::1*3:role/x", "arn:aws:iam::1:2:3:role/x", false},
			{"arn:aws:iam::111122223333:role/*", "arn:aws:iam::444455556666:role/x", false},
		} {
			assert.Equalf(t, tt.want, arnMatch(tt.pattern, tt.arn), "%s ~ %s", tt.pattern, tt.arn)
		}
		// The string operators know no segments.
		assert.True(t, wildcard("arn:aws:logs:*/a*/c", "arn:aws:logs:x:y/a:b/c"))
	})
	t.Run("numeric conditions", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:ScheduleKeyDeletion", Resource: "*",
			Condition: map[string]any{"NumericGreaterThanEquals": map[string]any{"kms:ScheduleKeyDeletionPendingWindowInDays": "30"}}})
		days := func(d string) map[string][]string {
			return map[string][]string{"kms:ScheduleKeyDeletionPendingWindowInDays": {d}}
		}
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{Action: "kms:ScheduleKeyDeletion", Resource: "k", Context: days("30")}))
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{Action: "kms:ScheduleKeyDeletion", Resource: "k", Context: days("7")}))
	})
	t.Run("an operator it cannot read fails loudly instead of deciding", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Deny", Action: "*", Resource: "*",
			Condition: map[string]any{"IpAddress": map[string]any{"aws:SourceIp": "203.0.113.0/24"}}})
		assert.PanicsWithValue(t, `iampolicy: condition operator "IpAddress" is not supported`, func() {
			Evaluate(doc, nil, Request{Action: "s3:GetObject", Resource: "x", Context: map[string][]string{"aws:SourceIp": {"203.0.113.7"}}})
		})
	})
	t.Run("documents round-trip through JSON", func(t *testing.T) {
		doc, err := identity.JSON()
		require.NoError(t, err)
		back, err := iampolicy.Parse(doc)
		require.NoError(t, err)
		assert.Equal(t, Allowed, Evaluate(back, nil, Request{Action: "ec2:DescribeVpcs", Resource: "*", Context: nil}))
		assert.Equal(t, []string{"iam:CreateRole", "iam:AttachRolePolicy"}, iampolicy.Strings(back.Statement[0].Action))
	})
}
