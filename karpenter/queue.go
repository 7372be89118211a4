package karpenter

import (
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/sqs"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// InterruptionEvent is one kind of event that Karpenter handles from its
// queue: it cordons and drains the node ahead of the interruption.
type InterruptionEvent struct {
	// Key names the EventBridge rule and target (child name suffix). It is
	// short because the rule's physical name, "<clusterName>-karpenter-<key>"
	// and 8 characters, must fit EventBridge's 64.
	Key string
	// FormerKey is the key a rule had before it was shortened; an alias on
	// it keeps existing rules, and their physical names, in place.
	FormerKey string
	// Source and DetailType match Karpenter's parser for the event
	// (pkg/controllers/interruption/messages/<kind>/parser.go).
	Source, DetailType string
}

// InterruptionEvents are the events Karpenter 1.14 and 1.15 parse (their
// pkg/controllers/interruption/messages are equal), in the order of the
// 1.14 getting-started template.
var InterruptionEvents = []InterruptionEvent{
	{Key: "health", FormerKey: "health-scheduled-change", Source: "aws.health", DetailType: "AWS Health Event"},
	{Key: "spot", FormerKey: "spot-interruption", Source: "aws.ec2", DetailType: "EC2 Spot Instance Interruption Warning"},
	{Key: "rebalance", Source: "aws.ec2", DetailType: "EC2 Instance Rebalance Recommendation"},
	{Key: "state-change", FormerKey: "instance-state-change", Source: "aws.ec2", DetailType: "EC2 Instance State-change Notification"},
	{Key: "reservation", FormerKey: "capacity-reservation-interruption", Source: "aws.ec2", DetailType: "EC2 Capacity Reservation Instance Interruption Warning"},
}

// EventPattern is the EventBridge pattern that routes e to the queue.
func EventPattern(e InterruptionEvent) (string, error) {
	b, err := json.Marshal(map[string][]string{"source": {e.Source}, "detail-type": {e.DetailType}})
	if err != nil {
		return "", fmt.Errorf("encoding event pattern %s: %w", e.Key, err)
	}
	return string(b), nil
}

// newInterruptionQueue creates the SQS queue that EventBridge fills with
// interruption events. It needs nothing from the cluster.
func newInterruptionQueue(ctx *pulumi.Context, name string, args *Args, parent pulumi.ResourceOption) (*sqs.Queue, []pulumi.Resource, error) {
	tags := pulumi.ToStringMap(args.Tags)
	queue, err := sqs.NewQueue(ctx, name+"-interruption-queue", &sqs.QueueArgs{
		// Interruption notices are useless after a few minutes.
		MessageRetentionSeconds: pulumi.Int(300),
		SqsManagedSseEnabled:    pulumi.Bool(true),
		Tags:                    tags,
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("creating interruption queue: %w", err)
	}
	policy := queue.Arn.ApplyT(QueuePolicy).(pulumi.StringOutput)
	queuePolicy, err := sqs.NewQueuePolicy(ctx, name+"-interruption-queue", &sqs.QueuePolicyArgs{
		QueueUrl: queue.Url,
		Policy:   policy,
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("creating interruption queue policy: %w", err)
	}
	created := []pulumi.Resource{queue, queuePolicy}
	for _, e := range InterruptionEvents {
		pattern, err := EventPattern(e)
		if err != nil {
			return nil, nil, err
		}
		opts := []pulumi.ResourceOption{parent}
		if e.FormerKey != "" {
			opts = append(opts, pulumi.Aliases([]pulumi.Alias{{Name: pulumi.String(name + "-" + e.FormerKey)}}))
		}
		rule, err := cloudwatch.NewEventRule(ctx, name+"-"+e.Key, &cloudwatch.EventRuleArgs{
			Description:  pulumi.Sprintf("%s to Karpenter of EKS cluster %s", e.DetailType, args.ClusterName),
			EventPattern: pulumi.String(pattern),
			Tags:         tags,
		}, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("creating event rule %s: %w", e.Key, err)
		}
		target, err := cloudwatch.NewEventTarget(ctx, name+"-"+e.Key, &cloudwatch.EventTargetArgs{
			Rule:     rule.Name,
			Arn:      queue.Arn,
			TargetId: pulumi.String("KarpenterInterruptionQueueTarget"),
		}, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("creating event target %s: %w", e.Key, err)
		}
		created = append(created, rule, target)
	}
	return queue, created, nil
}
