package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"nodeless-eks/internal/awscli"
	"slices"
	"strconv"
	"strings"
	"time"
)

// awsJSON runs an AWS CLI call and decodes its output into out; found is
// false when AWS answered one of notFound.
func awsJSON(ctx context.Context, l Lookups, t Target, out any, notFound []string, args ...string) (found bool, err error) {
	if t.Access.Region == "" {
		return false, cannotTell("its provider names no AWS region in the state")
	}
	raw, err := l.AWS(ctx, t.Access, args...)
	if err != nil {
		if len(notFound) > 0 && awscli.IsCode(err, notFound...) {
			return false, nil
		}
		return false, err
	}
	if out != nil {
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

var absent = Found{}

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
	// CreatedTimestamp: epoch seconds (SQS API reference, GetQueueAttributes).
	var attrs struct{ Attributes map[string]string }
	ok, err = awsJSON(ctx, l, t, &attrs, queueGone, "sqs", "get-queue-attributes", "--queue-url", out.QueueUrl, "--attribute-names", "CreatedTimestamp")
	if err != nil || !ok {
		return absent, err
	}
	// Whole seconds from SQS; moto 5.2.1 adds a fraction, which is read too.
	secs, _ := strconv.ParseFloat(attrs.Attributes["CreatedTimestamp"], 64)
	return Found{Exists: true, ID: out.QueueUrl, Created: epoch(int64(secs))}, nil
}

// epoch is a time of Unix seconds; zero for none.
func epoch(secs int64) time.Time {
	if secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0)
}

// findNatGateway lists the gateways of the create's subnet and of every
// tag it sent (EC2 tags them in the create call, TagSpecifications), not
// failed or deleted, less those the state holds: one is the create's,
// more than one is for a person. DescribeNatGateways takes --filter,
// singular (the EC2 API reference), in the CLI's JSON form, which takes
// any character in a value.
func findNatGateway(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "subnetId")
	if err != nil {
		return absent, err
	}
	tags, _ := decoded(t.Op.Resource.Inputs["tags"]).(map[string]any)
	if len(tags) == 0 {
		return absent, cannotTell("its recorded inputs have no tags to find it by")
	}
	filters := []any{map[string]any{"Name": "subnet-id", "Values": []string{in[0]}}, map[string]any{"Name": "state", "Values": []string{"pending", "available"}}}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v, ok := tags[k].(string)
		if !ok {
			return absent, cannotTell("its tag %s is not known in the recorded inputs", k)
		}
		filters = append(filters, map[string]any{"Name": "tag:" + k, "Values": []string{v}})
	}
	filter, _ := json.Marshal(filters)
	var out struct {
		NatGateways []struct {
			NatGatewayId string
			CreateTime   awscli.Time
		}
	}
	if _, err := awsJSON(ctx, l, t, &out, nil, "ec2", "describe-nat-gateways", "--filter", string(filter)); err != nil {
		return absent, err
	}
	held := map[string]bool{}
	for _, r := range t.State.ofType(t.Op.Resource.Type) {
		held[r.ID] = true
	}
	var left []string
	found := absent
	for _, g := range out.NatGateways {
		if !held[g.NatGatewayId] {
			left = append(left, g.NatGatewayId)
			found = Found{Exists: true, ID: g.NatGatewayId, Created: g.CreateTime.Time}
		}
	}
	if len(left) > 1 {
		return absent, cannotTell("%d NAT gateways match what its create sent (%s): the recovery does not pick one", len(left), strings.Join(left, ", "))
	}
	return found, nil
}

func findCommand(_ context.Context, _ Lookups, t Target) (Found, error) {
	// A secret create is an object (the export's secret envelope): any value but none or "" may have run.
	if create, ok := t.Op.Resource.Inputs["create"]; ok && create != nil && create != "" {
		return absent, cannotTell("its create command may have run; run it again by hand if it is safe to, or decide")
	}
	return absent, nil
}
