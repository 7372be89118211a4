package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"nodeless-eks/internal/names"
)

// awsJSON runs an AWS CLI call and decodes its output into out; found is
// false when AWS answered one of notFound.
func awsJSON(ctx context.Context, l Lookups, t Target, out any, notFound []string, args ...string) (found bool, err error) {
	if t.Access.Region == "" {
		return false, cannotTell("its provider names no AWS region in the state")
	}
	raw, err := l.AWS(ctx, t.Access, args...)
	if err != nil {
		if len(notFound) > 0 && IsAWSCode(err, notFound...) {
			return false, nil
		}
		return false, err
	}
	// The CLI prints nothing for an answer without fields (SQS's
	// get-queue-attributes of a queue without the attribute asked for).
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return false, fmt.Errorf("reading aws %s: %w", strings.Join(args[:2], " "), err)
		}
	}
	return true, nil
}

// need are the named string inputs, or an error naming the first missing.
func need(t Target, keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		if out[i] = t.Input(k); out[i] == "" {
			return nil, cannotTell("its recorded inputs have no %s (unknown when the create began, or secret)", k)
		}
	}
	return out, nil
}

func exists(id string) (Found, error) { return Found{Exists: true, ID: id}, nil }

var absent = Found{}

// partition is the AWS partition of a region.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

func findRole(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	// A role is global: checkAccess proved the credentials' account.
	ok, err := awsJSON(ctx, l, t, nil, []string{"NoSuchEntity"}, "iam", "get-role", "--role-name", in[0])
	if err != nil || !ok {
		return absent, err
	}
	return exists(in[0])
}

func findPolicy(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	// The ARN names the account checkAccess proved (the same credentials).
	acct, err := l.Account(ctx, t.Access)
	if err != nil {
		return absent, err
	}
	path := t.Input("path")
	if path == "" {
		path = "/"
	}
	arn := fmt.Sprintf("arn:%s:iam::%s:policy%s%s", partition(t.Access.Region), acct, path, in[0])
	ok, err := awsJSON(ctx, l, t, nil, []string{"NoSuchEntity"}, "iam", "get-policy", "--policy-arn", arn)
	if err != nil || !ok {
		return absent, err
	}
	return exists(arn)
}

func findRolePolicyAttachment(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "role", "policyArn")
	if err != nil {
		return absent, err
	}
	var out struct{ AttachedPolicies []struct{ PolicyArn string } }
	ok, err := awsJSON(ctx, l, t, &out, []string{"NoSuchEntity"}, "iam", "list-attached-role-policies", "--role-name", in[0])
	if err != nil || !ok {
		return absent, err
	}
	for _, p := range out.AttachedPolicies {
		if p.PolicyArn == in[1] {
			return exists(in[0] + "/" + in[1])
		}
	}
	return absent, nil
}

func findOIDCProvider(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "url")
	if err != nil {
		return absent, err
	}
	acct, err := l.Account(ctx, t.Access)
	if err != nil {
		return absent, err
	}
	host := strings.TrimPrefix(in[0], "https://")
	arn := fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", partition(t.Access.Region), acct, host)
	var out struct {
		Tags []struct{ Key, Value string }
	}
	ok, err := awsJSON(ctx, l, t, &out, []string{"NoSuchEntity"}, "iam", "get-open-id-connect-provider", "--open-id-connect-provider-arn", arn)
	if err != nil || !ok {
		return absent, err
	}
	// An account has one provider per URL, and a cluster's IRSA provider's
	// URL is its own; Pulumi Cloud's is shared by whatever made it first:
	// it is adopted only with the owner tag the create sent (deploy/ tags
	// it with its own stack).
	if host == "api.pulumi.com/oidc" {
		tags, _ := decoded(t.Op.Resource.Inputs["tags"]).(map[string]any)
		owner, _ := tags[ownerTagKey].(string)
		if owner == "" || !slices.ContainsFunc(out.Tags, func(tag struct{ Key, Value string }) bool { return tag.Key == ownerTagKey && tag.Value == owner }) {
			return absent, cannotTell("the account's %s exists, and it does not carry the tag %s=%q the create sent: another's, or one "+
				"made before deploy/ tagged it; if it is this stack's, -import it, else reuse it with accounts.<name>.oidcProviderArn", arn, ownerTagKey, owner)
		}
	}
	return exists(arn)
}

// ownerTagKey is deploy/'s OwnerTagKey: the deploy/ stack that made a
// fixed-name singleton.
const ownerTagKey = "nodeless-eks/deploy-stack"

// queueGone are SQS's answers for a queue that does not exist: the query
// protocol's code and the JSON protocol's, which newer CLIs speak.
var queueGone = []string{"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}

func findQueue(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	var out struct{ QueueUrl string }
	ok, err := awsJSON(ctx, l, t, &out, queueGone, "sqs", "get-queue-url", "--queue-name", in[0])
	if err != nil || !ok {
		return absent, err
	}
	return exists(out.QueueUrl)
}

func findQueuePolicy(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "queueUrl")
	if err != nil {
		return absent, err
	}
	var out struct{ Attributes map[string]string }
	ok, err := awsJSON(ctx, l, t, &out, queueGone, "sqs", "get-queue-attributes", "--queue-url", in[0], "--attribute-names", "Policy")
	if err != nil || !ok || out.Attributes["Policy"] == "" {
		return absent, err
	}
	return exists(in[0])
}

// busArgs are the --event-bus-name arguments, none for the default bus.
func busArgs(t Target) (bus string, args []string) {
	bus = t.Input("eventBusName")
	if bus == "" || bus == "default" {
		return "", nil
	}
	return bus, []string{"--event-bus-name", bus}
}

func findEventRule(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	bus, extra := busArgs(t)
	ok, err := awsJSON(ctx, l, t, nil, []string{"ResourceNotFoundException"}, append([]string{"events", "describe-rule", "--name", in[0]}, extra...)...)
	if err != nil || !ok {
		return absent, err
	}
	if bus != "" {
		return exists(bus + "/" + in[0])
	}
	return exists(in[0])
}

func findEventTarget(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "rule", "targetId")
	if err != nil {
		return absent, err
	}
	bus, extra := busArgs(t)
	var out struct{ Targets []struct{ Id string } }
	ok, err := awsJSON(ctx, l, t, &out, []string{"ResourceNotFoundException"},
		append([]string{"events", "list-targets-by-rule", "--rule", in[0]}, extra...)...)
	if err != nil || !ok {
		return absent, err
	}
	for _, target := range out.Targets {
		if target.Id == in[1] {
			if bus != "" {
				return exists(bus + "/" + in[0] + "/" + in[1])
			}
			return exists(in[0] + "/" + in[1])
		}
	}
	return absent, nil
}

func findLogGroup(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	var out struct {
		LogGroups []struct{ LogGroupName string }
	}
	if _, err := awsJSON(ctx, l, t, &out, nil, "logs", "describe-log-groups", "--log-group-name-prefix", in[0]); err != nil {
		return absent, err
	}
	for _, g := range out.LogGroups {
		if g.LogGroupName == in[0] {
			return exists(in[0])
		}
	}
	return absent, nil
}

// heldIDs are the IDs of the state's resources of the pending create's
// type: objects found by tags that the stack already holds are not the
// one its create made.
func heldIDs(t Target) map[string]bool {
	held := map[string]bool{}
	for _, r := range t.State.ofType(t.Op.Resource.Type) {
		held[r.ID] = true
	}
	return held
}

// pick is the one candidate the state does not hold: none is absent, more
// than one is for a person.
func pick(t Target, what string, candidates []string) (Found, error) {
	held := heldIDs(t)
	var left []string
	for _, c := range candidates {
		if !held[c] && !slices.Contains(left, c) {
			left = append(left, c)
		}
	}
	switch len(left) {
	case 0:
		return absent, nil
	case 1:
		return exists(left[0])
	}
	sort.Strings(left)
	return absent, cannotTell("%d %s match what its create sent (%s): the recovery does not pick one", len(left), what, strings.Join(left, ", "))
}

// ec2Filter is one filter of an EC2 describe call.
type ec2Filter struct {
	Name   string   `json:"Name"`
	Values []string `json:"Values"`
}

// tagFilters are EC2 filters on every tag the create sent (EC2 tags these
// objects in the create call itself, TagSpecifications).
func tagFilters(t Target) ([]ec2Filter, error) {
	tags, _ := decoded(t.Op.Resource.Inputs["tags"]).(map[string]any)
	if len(tags) == 0 {
		return nil, cannotTell("its recorded inputs have no tags to find it by")
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var filters []ec2Filter
	for _, k := range keys {
		v, ok := tags[k].(string)
		if !ok {
			return nil, cannotTell("its tag %s is not known in the recorded inputs", k)
		}
		filters = append(filters, ec2Filter{Name: "tag:" + k, Values: []string{v}})
	}
	return filters, nil
}

// filterArg is filters as the CLI's JSON form, which takes any character
// in a value (the shorthand splits values at commas).
func filterArg(filters []ec2Filter) string {
	raw, _ := json.Marshal(filters)
	return string(raw)
}

func findKey(ctx context.Context, l Lookups, t Target) (Found, error) {
	tags, _ := decoded(t.Op.Resource.Inputs["tags"]).(map[string]any)
	cluster, _ := tags[names.ClusterTagKey].(string)
	if cluster == "" {
		return absent, cannotTell("its recorded inputs have no %s tag to find it by", names.ClusterTagKey)
	}
	var keys struct{ Keys []struct{ KeyId string } }
	if _, err := awsJSON(ctx, l, t, &keys, nil, "kms", "list-keys"); err != nil {
		return absent, err
	}
	// AWS managed keys (aliases alias/aws/*) are never the program's.
	var aliases struct {
		Aliases []struct{ AliasName, TargetKeyId string }
	}
	if _, err := awsJSON(ctx, l, t, &aliases, nil, "kms", "list-aliases"); err != nil {
		return absent, err
	}
	awsManaged := map[string]bool{}
	for _, a := range aliases.Aliases {
		if strings.HasPrefix(a.AliasName, "alias/aws/") && a.TargetKeyId != "" {
			awsManaged[a.TargetKeyId] = true
		}
	}
	held := heldIDs(t)
	var candidates, unreadable []string
	for _, k := range keys.Keys {
		if awsManaged[k.KeyId] || held[k.KeyId] {
			continue
		}
		var out struct {
			Tags []struct{ TagKey, TagValue string }
		}
		if _, err := awsJSON(ctx, l, t, &out, nil, "kms", "list-resource-tags", "--key-id", k.KeyId); err != nil {
			if IsAWSCode(err, "AccessDeniedException") {
				unreadable = append(unreadable, k.KeyId)
				continue
			}
			return absent, err
		}
		// Every tag the create sent, not the cluster's alone: another
		// stack's key of the same cluster name differs in the stack's own.
		has := map[string]string{}
		for _, tag := range out.Tags {
			has[tag.TagKey] = tag.TagValue
		}
		if !allTagged(tags, has) {
			continue
		}
		var desc struct{ KeyMetadata struct{ KeyState string } }
		if _, err := awsJSON(ctx, l, t, &desc, nil, "kms", "describe-key", "--key-id", k.KeyId); err != nil {
			return absent, err
		}
		// A cut-off CreateKey leaves an Enabled key; one Disabled, or
		// pending deletion, is someone's earlier key of that cluster name
		// (a destroyed stack schedules its key's deletion), not this run's.
		if desc.KeyMetadata.KeyState == "Enabled" {
			candidates = append(candidates, k.KeyId)
		}
	}
	if len(candidates) == 0 && len(unreadable) > 0 {
		return absent, cannotTell("no readable key is tagged %s=%s, and these keys' tags cannot be read with these credentials: %s",
			names.ClusterTagKey, cluster, strings.Join(unreadable, ", "))
	}
	return pick(t, "KMS keys", candidates)
}

// allTagged reports whether has carries every string tag of want.
func allTagged(want map[string]any, has map[string]string) bool {
	for k, v := range want {
		if s, ok := v.(string); !ok || has[k] != s {
			return false
		}
	}
	return true
}

func findSecurityGroup(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name", "vpcId")
	if err != nil {
		return absent, err
	}
	var out struct{ SecurityGroups []struct{ GroupId string } }
	if _, err := awsJSON(ctx, l, t, &out, nil, "ec2", "describe-security-groups",
		"--filters", filterArg([]ec2Filter{{"group-name", []string{in[0]}}, {"vpc-id", []string{in[1]}}})); err != nil {
		return absent, err
	}
	switch len(out.SecurityGroups) {
	case 0:
		return absent, nil
	case 1:
	default:
		return absent, cannotTell("EC2 lists %d security groups named %s in %s", len(out.SecurityGroups), in[0], in[1])
	}
	group := out.SecurityGroups[0].GroupId
	f := Found{Exists: true, ID: group}
	// EC2 gives a new group an allow-all egress rule, which the provider
	// revokes right after CreateSecurityGroup (terraform-provider-aws
	// internal/service/ec2/vpc_security_group.go, resourceSecurityGroupCreate);
	// a create cut off between the two leaves it, and the program's own
	// egress rule would then be refused as a duplicate.
	var rules struct {
		SecurityGroupRules []struct {
			SecurityGroupRuleId, IpProtocol, CidrIpv4, CidrIpv6 string
			IsEgress                                            bool
		}
	}
	if _, err := awsJSON(ctx, l, t, &rules, nil, "ec2", "describe-security-group-rules",
		"--filters", filterArg([]ec2Filter{{"group-id", []string{group}}})); err != nil {
		return absent, err
	}
	var defaults []string
	for _, r := range rules.SecurityGroupRules {
		if r.IsEgress && r.IpProtocol == "-1" && (r.CidrIpv4 == "0.0.0.0/0" || r.CidrIpv6 == "::/0") {
			defaults = append(defaults, r.SecurityGroupRuleId)
		}
	}
	if len(defaults) > 0 && t.Op.Resource.Inputs["egress"] == nil {
		f.Note = "the create was cut off before the provider revoked EC2's default allow-all egress"
		access := t.Access
		f.Fix = &Fix{
			Does: fmt.Sprintf("revoke the default egress rule(s) %s of %s, as the provider's create does", strings.Join(defaults, ", "), group),
			Apply: func(ctx context.Context) error {
				_, err := l.AWS(ctx, access, append([]string{"ec2", "revoke-security-group-egress", "--group-id", group, "--security-group-rule-ids"}, defaults...)...)
				return err
			},
		}
	}
	return f, nil
}

func findSecurityGroupRule(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "securityGroupId", "type", "protocol")
	if err != nil {
		return absent, err
	}
	group, direction, protocol := in[0], in[1], strings.ToLower(in[2])
	from, to := numberInput(t, "fromPort"), numberInput(t, "toPort")
	var sources []string
	self := t.Op.Resource.Inputs["self"] == true
	if self {
		sources = append(sources, "self")
	}
	if sg := t.Input("sourceSecurityGroupId"); sg != "" {
		sources = append(sources, sg)
	}
	sources = append(sources, stringList(t.Op.Resource.Inputs["cidrBlocks"])...)
	if len(sources) == 0 || len(stringList(t.Op.Resource.Inputs["ipv6CidrBlocks"])) > 0 || len(stringList(t.Op.Resource.Inputs["prefixListIds"])) > 0 {
		return absent, cannotTell("the recovery finds rules whose sources are CIDRs, a security group or self; this one has others")
	}
	var out struct {
		SecurityGroupRules []struct {
			IsEgress            bool
			IpProtocol          string
			FromPort, ToPort    int
			CidrIpv4            string
			ReferencedGroupInfo struct{ GroupId string }
		}
	}
	if _, err := awsJSON(ctx, l, t, &out, nil, "ec2", "describe-security-group-rules", "--filters", filterArg([]ec2Filter{{"group-id", []string{group}}})); err != nil {
		return absent, err
	}
	all := protocol == "-1" || protocol == "all"
	present := 0
	for _, src := range sources {
		for _, r := range out.SecurityGroupRules {
			if r.IsEgress != (direction == "egress") {
				continue
			}
			if all != (r.IpProtocol == "-1") || (!all && (!strings.EqualFold(r.IpProtocol, protocol) || r.FromPort != from || r.ToPort != to)) {
				continue
			}
			ref := r.ReferencedGroupInfo.GroupId
			if (src == "self" && ref == group) || (strings.HasPrefix(src, "sg-") && ref == src) || (src != "self" && !strings.HasPrefix(src, "sg-") && r.CidrIpv4 == src) {
				present++
				break
			}
		}
	}
	switch present {
	case 0:
		return absent, nil
	case len(sources):
		return exists(strings.Join(append([]string{group, direction, protocol, fmt.Sprint(from), fmt.Sprint(to)}, sources...), "_"))
	}
	return absent, cannotTell("%d of its %d sources are authorized, which one call cannot leave", present, len(sources))
}

// numberInput is a numeric input (JSON numbers decode as float64).
func numberInput(t Target, key string) int {
	switch v := t.Op.Resource.Inputs[key].(type) {
	case float64:
		return int(v)
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	return 0
}

// findTagged lists EC2 objects by filters and every tag the create sent,
// with the describe call of cmd (its filter flag last), and picks the one
// the state does not hold: the ID field idKey of each entry of the
// output's list listKey.
func findTagged(ctx context.Context, l Lookups, t Target, what, listKey, idKey string, cmd []string, filters ...ec2Filter) (Found, error) {
	tags, err := tagFilters(t)
	if err != nil {
		return absent, err
	}
	var out map[string][]map[string]any
	if _, err := awsJSON(ctx, l, t, &out, nil, append(cmd, filterArg(append(filters, tags...)))...); err != nil {
		return absent, err
	}
	var ids []string
	for _, o := range out[listKey] {
		if id, ok := o[idKey].(string); ok {
			ids = append(ids, id)
		}
	}
	return pick(t, what, ids)
}

func findVpc(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "cidrBlock")
	if err != nil {
		return absent, err
	}
	return findTagged(ctx, l, t, "VPCs", "Vpcs", "VpcId", []string{"ec2", "describe-vpcs", "--filters"}, ec2Filter{"cidr-block", []string{in[0]}})
}

func findCidrAssociation(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "vpcId", "cidrBlock")
	if err != nil {
		return absent, err
	}
	var out struct {
		Vpcs []struct {
			CidrBlockAssociationSet []struct {
				AssociationId, CidrBlock string
				CidrBlockState           struct{ State string }
			}
		}
	}
	ok, err := awsJSON(ctx, l, t, &out, []string{"InvalidVpcID.NotFound"}, "ec2", "describe-vpcs", "--vpc-ids", in[0])
	if err != nil || !ok {
		return absent, err
	}
	for _, v := range out.Vpcs {
		for _, a := range v.CidrBlockAssociationSet {
			if a.CidrBlock == in[1] && (a.CidrBlockState.State == "associated" || a.CidrBlockState.State == "associating") {
				return exists(a.AssociationId)
			}
		}
	}
	return absent, nil
}

func findInternetGateway(ctx context.Context, l Lookups, t Target) (Found, error) {
	filters, err := tagFilters(t)
	if err != nil {
		return absent, err
	}
	vpc := t.Input("vpcId")
	var out struct {
		InternetGateways []struct {
			InternetGatewayId string
			Attachments       []struct{ VpcId string }
		}
	}
	if _, err := awsJSON(ctx, l, t, &out, nil, "ec2", "describe-internet-gateways", "--filters", filterArg(filters)); err != nil {
		return absent, err
	}
	// The create attaches the gateway to the stack's VPC in the same call
	// (the provider's Create); an attached one is this create's. One
	// unattached is this create's cut off between the two calls, or an
	// earlier stack's of the same tags left by a destroy that failed after
	// detaching: nothing tells which.
	var ids, loose []string
	for _, g := range out.InternetGateways {
		switch {
		case len(g.Attachments) == 0:
			loose = append(loose, g.InternetGatewayId)
		case g.Attachments[0].VpcId == vpc:
			ids = append(ids, g.InternetGatewayId)
		}
	}
	if len(ids) == 0 && len(loose) > 0 {
		return absent, cannotTell("internet gateway(s) %s carry its tags and are attached to no VPC: this create's, cut off before it "+
			"attached, or an earlier stack's leftover; -import the one that is this stack's, or delete them and -clear", strings.Join(loose, ", "))
	}
	return pick(t, "internet gateways", ids)
}

func findRouteTable(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "vpcId")
	if err != nil {
		return absent, err
	}
	return findTagged(ctx, l, t, "route tables", "RouteTables", "RouteTableId", []string{"ec2", "describe-route-tables", "--filters"},
		ec2Filter{"vpc-id", []string{in[0]}})
}

func findRouteTableAssociation(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "subnetId", "routeTableId")
	if err != nil {
		return absent, err
	}
	var out struct {
		RouteTables []struct{ Associations []struct{ SubnetId string } }
	}
	ok, err := awsJSON(ctx, l, t, &out, []string{"InvalidRouteTableID.NotFound"}, "ec2", "describe-route-tables", "--route-table-ids", in[1])
	if err != nil || !ok {
		return absent, err
	}
	for _, r := range out.RouteTables {
		for _, a := range r.Associations {
			if a.SubnetId == in[0] {
				return exists(in[0] + "/" + in[1])
			}
		}
	}
	return absent, nil
}

func findSubnet(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "vpcId", "cidrBlock")
	if err != nil {
		return absent, err
	}
	var out struct{ Subnets []struct{ SubnetId string } }
	if _, err := awsJSON(ctx, l, t, &out, nil, "ec2", "describe-subnets",
		"--filters", filterArg([]ec2Filter{{"vpc-id", []string{in[0]}}, {"cidr-block", []string{in[1]}}})); err != nil {
		return absent, err
	}
	if len(out.Subnets) == 0 {
		return absent, nil
	}
	return exists(out.Subnets[0].SubnetId)
}

// findEip finds Elastic IPs of the create's tags, and adopts none: an
// address has no creation time and, new, no association, so this create's
// and an earlier stack's leftover of the same tags look alike.
func findEip(ctx context.Context, l Lookups, t Target) (Found, error) {
	found, err := findTagged(ctx, l, t, "Elastic IPs", "Addresses", "AllocationId", []string{"ec2", "describe-addresses", "--filters"},
		ec2Filter{"domain", []string{"vpc"}})
	if err != nil || found.ID == "" {
		return found, err
	}
	return absent, cannotTell("Elastic IP %s carries its tags, and nothing tells this create's from an earlier stack's leftover (an "+
		"address has no creation time): -import it if no other stack's state holds it (an address costs while it is kept), else "+
		"release it or leave it, and -clear", found.ID)
}

func findNatGateway(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "subnetId")
	if err != nil {
		return absent, err
	}
	// DescribeNatGateways takes --filter, singular (the EC2 API reference);
	// a failed or deleted gateway is no object to import.
	return findTagged(ctx, l, t, "NAT gateways", "NatGateways", "NatGatewayId", []string{"ec2", "describe-nat-gateways", "--filter"},
		ec2Filter{"subnet-id", []string{in[0]}}, ec2Filter{"state", []string{"pending", "available"}})
}

func findCommand(_ context.Context, _ Lookups, t Target) (Found, error) {
	if t.Input("create") != "" {
		return absent, cannotTell("its create command may have run; run it again by hand if it is safe to, or decide")
	}
	return absent, nil
}
