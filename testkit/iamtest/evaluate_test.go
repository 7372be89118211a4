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
		{"a role with the boundary", Request{"iam:CreateRole", "arn:aws:iam::111122223333:role/app-x", ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, Allowed},
		{"a role without the boundary", Request{"iam:CreateRole", "arn:aws:iam::111122223333:role/app-x", nil}, ImplicitDeny},
		{"a role with another boundary", Request{"iam:CreateRole", "arn:aws:iam::111122223333:role/app-x", ctx("iam:PermissionsBoundary", "arn:aws:iam::aws:policy/AdministratorAccess")}, ImplicitDeny},
		{"a role outside the name pattern", Request{"iam:CreateRole", "arn:aws:iam::111122223333:role/admin", ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, ImplicitDeny},
		{"wildcards in actions, any case", Request{"EC2:DescribeInstances", "*", nil}, Allowed},
		{"a resource tag that matches", Request{"kms:ScheduleKeyDeletion", "arn:aws:kms:eu-west-1:111122223333:key/1", ctx("aws:ResourceTag/app", "app-prod")}, Allowed},
		{"a resource tag that does not", Request{"kms:ScheduleKeyDeletion", "arn:aws:kms:eu-west-1:111122223333:key/1", ctx("aws:ResourceTag/app", "other")}, ImplicitDeny},
		{"an untagged resource fails a positive operator", Request{"kms:ScheduleKeyDeletion", "arn:aws:kms:eu-west-1:111122223333:key/1", nil}, ImplicitDeny},
		{"an absent key passes a negated operator", Request{"sqs:DeleteQueue", "arn:aws:sqs:eu-west-1:111122223333:q", nil}, Allowed},
		{"a present key fails it", Request{"sqs:DeleteQueue", "arn:aws:sqs:eu-west-1:111122223333:q", ctx("aws:ResourceTag/keep", "true")}, ImplicitDeny},
		{"Null false requires the key", Request{"logs:CreateLogGroup", "*", nil}, ImplicitDeny},
		{"Null false with the key", Request{"logs:CreateLogGroup", "*", ctx("aws:RequestTag/app", "x")}, BoundaryDeny},
		{"an explicit deny wins", Request{"iam:DeleteRolePermissionsBoundary", "arn:aws:iam::111122223333:role/app-x", nil}, ExplicitDeny},
		{"NotAction allows the rest", Request{"s3:GetObject", "arn:aws:s3:::bucket/key", nil}, BoundaryDeny},
		{"NotAction excludes what it names", Request{"iam:CreateUser", "arn:aws:s3:::bucket/key", nil}, ImplicitDeny},
		{"'*' in a resource spans slashes", Request{"iam:AttachRolePolicy", "arn:aws:iam::111122223333:role/app-a/b", ctx("iam:PermissionsBoundary", "arn:aws:iam::111122223333:policy/app-boundary")}, Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Evaluate(identity, &boundary, tt.req))
		})
	}
	t.Run("without a boundary, the identity policy alone decides", func(t *testing.T) {
		assert.Equal(t, Allowed, Evaluate(identity, nil, Request{"s3:GetObject", "arn:aws:s3:::bucket/key", nil}))
	})
	t.Run("ForAllValues with an absent key passes", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:UntagResource", Resource: "*",
			Condition: map[string]any{"ForAllValues:StringNotEquals": map[string]any{"aws:TagKeys": "app"}}})
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{"kms:UntagResource", "k", map[string][]string{"aws:TagKeys": {"team", "env"}}}))
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{"kms:UntagResource", "k", map[string][]string{"aws:TagKeys": {"team", "app"}}}))
	})
	t.Run("ForAnyValue with an absent key fails, even negated", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:TagResource", Resource: "*",
			Condition: map[string]any{"ForAnyValue:StringNotEquals": map[string]any{"aws:TagKeys": "app"}}})
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{"kms:TagResource", "k", nil}))
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{"kms:TagResource", "k", map[string][]string{"aws:TagKeys": {"team"}}}))
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
	t.Run("numeric conditions", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "kms:ScheduleKeyDeletion", Resource: "*",
			Condition: map[string]any{"NumericGreaterThanEquals": map[string]any{"kms:ScheduleKeyDeletionPendingWindowInDays": "30"}}})
		days := func(d string) map[string][]string {
			return map[string][]string{"kms:ScheduleKeyDeletionPendingWindowInDays": {d}}
		}
		assert.Equal(t, Allowed, Evaluate(doc, nil, Request{"kms:ScheduleKeyDeletion", "k", days("30")}))
		assert.Equal(t, ImplicitDeny, Evaluate(doc, nil, Request{"kms:ScheduleKeyDeletion", "k", days("7")}))
	})
	t.Run("an operator it cannot read fails loudly instead of deciding", func(t *testing.T) {
		doc := iampolicy.New(iampolicy.Statement{Effect: "Deny", Action: "*", Resource: "*",
			Condition: map[string]any{"IpAddress": map[string]any{"aws:SourceIp": "203.0.113.0/24"}}})
		assert.PanicsWithValue(t, `iampolicy: condition operator "IpAddress" is not supported`, func() {
			Evaluate(doc, nil, Request{"s3:GetObject", "x", map[string][]string{"aws:SourceIp": {"203.0.113.7"}}})
		})
	})
	t.Run("documents round-trip through JSON", func(t *testing.T) {
		doc, err := identity.JSON()
		require.NoError(t, err)
		back, err := iampolicy.Parse(doc)
		require.NoError(t, err)
		assert.Equal(t, Allowed, Evaluate(back, nil, Request{"ec2:DescribeVpcs", "*", nil}))
		assert.Equal(t, []string{"iam:CreateRole", "iam:AttachRolePolicy"}, iampolicy.Strings(back.Statement[0].Action))
	})
}
