package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"nodeless-eks/internal/awscli"
	"slices"
	"sort"
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
func pick(t Target, what string, candidates []string, created map[string]time.Time) (Found, error) {
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
		return Found{Exists: true, ID: left[0], Created: created[left[0]]}, nil
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

// findTagged lists EC2 objects by filters and every tag the create sent,
// with the describe call of cmd (its filter flag last), and picks the one
// the state does not hold: the ID field idKey of each entry of the
// output's list listKey.
// findTagged picks the one object of the create's tags that the state
// does not hold; createdKey names its creation time in the answer ("" for
// a kind that has none).
func findTagged(ctx context.Context, l Lookups, t Target, what, listKey, idKey, createdKey string, cmd []string, filters ...ec2Filter) (Found, error) {
	tags, err := tagFilters(t)
	if err != nil {
		return absent, err
	}
	var out map[string][]map[string]any
	if _, err := awsJSON(ctx, l, t, &out, nil, append(cmd, filterArg(append(filters, tags...)))...); err != nil {
		return absent, err
	}
	var ids []string
	created := map[string]time.Time{}
	for _, o := range out[listKey] {
		if id, ok := o[idKey].(string); ok {
			ids = append(ids, id)
			raw, _ := json.Marshal(o[createdKey])
			var at awscli.Time
			if createdKey != "" && json.Unmarshal(raw, &at) == nil {
				created[id] = at.Time
			}
		}
	}
	return pick(t, what, ids, created)
}

func findNatGateway(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "subnetId")
	if err != nil {
		return absent, err
	}
	// DescribeNatGateways takes --filter, singular (the EC2 API reference);
	// a failed or deleted gateway is no object to import.
	return findTagged(ctx, l, t, "NAT gateways", "NatGateways", "NatGatewayId", "CreateTime", []string{"ec2", "describe-nat-gateways", "--filter"},
		ec2Filter{"subnet-id", []string{in[0]}}, ec2Filter{"state", []string{"pending", "available"}})
}

func findCommand(_ context.Context, _ Lookups, t Target) (Found, error) {
	if t.Input("create") != "" {
		return absent, cannotTell("its create command may have run; run it again by hand if it is safe to, or decide")
	}
	return absent, nil
}
