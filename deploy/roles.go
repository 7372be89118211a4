package main

// The Pulumi Cloud identities deploy/ declares. Every deployment of the
// fleet runs as a team's service principal: the stack's settings select
// the team (operationContext.servicePrincipal.teamName, "to run as the
// team's service principal with the team's roles", pulumi-cloud-sdk/go
// v1.20261118.1124 DeploymentServicePrincipalRequest), whatever triggered
// the run ("Run as the stack's service principal or team if one is
// selected", Pulumi's permission modes page). The team has no members and
// holds one role; permissions are the REST API's descriptor tree ("__type"
// at every level).

// RunScopes are what a deployment of one stack needs of it, and no more:
// read and write its state and secrets (stack:write, stack:encrypt,
// stack:decrypt), export and import it (the recovery of an interrupted
// run, cmd/recover-pending), cancel its own update. Not
// stack_deployment_settings:write, stack_schedule:*, stack_webhook:*,
// stack_access:update or stack_tags:update: no run can change how the
// stack deploys, when, or who may.
var RunScopes = []string{"stack:read", "stack:write", "stack:encrypt", "stack:decrypt", "stack:export", "stack:import",
	"stack:cancel_update", "stack_deployment:read", "stack_deployment_settings:read"}

// ReviewScopes are RunScopes and stack:delete: a review stack's TTL run
// destroys it and then deletes it (deleteAfterDestroy).
var ReviewScopes = append(append([]string(nil), RunScopes...), "stack:delete")

// OperatorScopes are what the production and operators teams hold on
// their stacks: start, follow and cancel deployments and read the stacks.
// A deployment they start runs as the stack's role, not as them, and
// none of them writes settings, schedules or webhooks.
var OperatorScopes = []string{"stack:read", "stack_deployment:read", "stack_deployment:create", "stack:cancel_update",
	"stack_deployment_settings:read", "stack_schedule:read", "stack_webhook:read"}

// ReviewWatchScopes are what the operators hold on review stacks: they
// follow them, and start none. Review stacks deploy on push and end by
// their time to live; a deployment request may name its runner pool
// (CreateDeploymentRequest's agentPoolID, pulumi-cloud-sdk/go apitype), so
// starting one is no operator's.
var ReviewWatchScopes = []string{"stack:read", "stack_deployment:read", "stack_deployment_settings:read", "stack_schedule:read",
	"stack_webhook:read"}

// allow grants scopes on whatever the descriptor around it admits; a
// bare allow would grant them on every stack of the organization.
func allow(scopes []string) map[string]any {
	return map[string]any{"__type": "PermissionDescriptorAllow", "permissions": scopes}
}

// isStack is true of the one stack with that Pulumi Cloud ID (the opaque
// ID GET /api/stacks/{org}/{project}/{stack} answers, AppStack.id).
func isStack(id string) map[string]any {
	return map[string]any{"__type": "PermissionExpressionEqual",
		"left":  map[string]any{"__type": "PermissionExpressionStack"},
		"right": map[string]any{"__type": "PermissionLiteralExpressionStack", "identity": id}}
}

// onStacks grants scopes on exactly the stacks with these IDs.
func onStacks(ids []string, scopes []string) map[string]any {
	entries := []any{}
	for _, id := range ids {
		entries = append(entries, map[string]any{"__type": "PermissionDescriptorCondition", "condition": isStack(id), "subNode": allow(scopes)})
	}
	return map[string]any{"__type": "PermissionDescriptorGroup", "entries": entries}
}

// onReviewStacks grants scopes on every stack of project that is none of
// named (their IDs): the review stacks, whose IDs nobody knows
// beforehand. A stack's project is its pulumi:project tag, which the CLI
// sets from Pulumi.yaml on every update (Pulumi's stack tags page). That
// the project holds no other stack is a precondition (organization.go).
func onReviewStacks(project string, named []string, scopes []string) map[string]any {
	condition := map[string]any{"__type": "PermissionExpressionEqual",
		"left":  map[string]any{"__type": "PermissionExpressionTag", "context": map[string]any{"__type": "PermissionExpressionStack"}, "key": "pulumi:project"},
		"right": map[string]any{"__type": "PermissionLiteralExpressionString", "value": project}}
	for _, id := range named {
		condition = map[string]any{"__type": "PermissionExpressionAnd", "left": condition,
			"right": map[string]any{"__type": "PermissionExpressionNot", "node": isStack(id)}}
	}
	return map[string]any{"__type": "PermissionDescriptorCondition", "condition": condition, "subNode": allow(scopes)}
}

// IdentityName names a run identity, the team and its role alike: key is
// a stack, or reviewRoleKey. Fixed, so that a person reading the
// organization's teams and roles knows whose they are.
func IdentityName(c *Config, key string) string { return deployRoleName + c.Project + "-" + key }

// OperatorsRoleName names the role of the production team, or of the
// operators team, on their stacks.
func OperatorsRoleName(c *Config, production bool) string {
	if production {
		return operatorsPrefix + c.Project + "-production"
	}
	return operatorsPrefix + c.Project
}

// operatorsPrefix starts the operators' roles, which no stack's name can
// make collide with a run identity's.
const operatorsPrefix = "operate-"
