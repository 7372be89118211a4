// Package reviewttl keeps one time-to-live schedule on a review stack and
// moves it on every update, through Pulumi Cloud's schedules API
// (https://www.pulumi.com/docs/reference/cloud-rest-api/schedules/): list
// the stack's schedules, update its TTL schedule (and resume it when
// someone paused it), create one when there is none, and delete any extra.
// A review stack then expires a fixed time after its last update, not
// after its first, and never holds more than one TTL schedule. It uses
// only the standard library, so that `go run` builds it in seconds on a
// runner.
package reviewttl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"nodeless-eks/internal/pulumicloud"
)

// Stack names the stack whose TTL is kept.
type Stack struct {
	Organization, Project, Name string
}

// NotInEdition reports Pulumi Cloud's answer to an organization whose
// edition has no TTL schedules: 402 Payment Required, the status its API
// gives a feature the subscription lacks (the REST API's OpenAPI document,
// provider/pkg/cloud/spec.json of pulumi/pulumi-pulumiservice: "402 ...
// requires ... subscription" on deployment settings and drift
// remediation). TTL stacks need the Pro edition or above (pulumi/docs
// data/pulumi_pricing.yaml, ttl-stacks: available_from pro).
func NotInEdition(err error) bool {
	return pulumicloud.StatusOf(err) == http.StatusPaymentRequired
}

// schedule is what the API lists of a schedule (apitype.ScheduledAction in
// pulumi/pulumi sdk/go/common/apitype/schedules.go).
type schedule struct {
	ID           string `json:"id"`
	ScheduleOnce string `json:"scheduleOnce"`
	// Paused is true when someone paused it: it would then never run.
	Paused     bool `json:"paused"`
	Definition struct {
		Request struct {
			Operation        string          `json:"operation"`
			OperationContext json.RawMessage `json:"operationContext"`
		} `json:"request"`
	} `json:"definition"`
}

// isTTL tells a TTL schedule from the stack's other schedules, as the
// Pulumi CLI's `pulumi stack schedule` does (pkg/cmd/pulumi/stack): a
// one-time destroy that carries operation options (deleteAfterDestroy);
// a raw one-time destroy has none, a drift schedule detects drift.
func (s schedule) isTTL() bool {
	ctx := bytes.TrimSpace(s.Definition.Request.OperationContext)
	return s.ScheduleOnce != "" && s.Definition.Request.Operation == "destroy" && len(ctx) > 0 && string(ctx) != "null"
}

// Result says what Keep did.
type Result struct {
	// Expires is the new time to live.
	Expires time.Time
	// Created is true when the stack had no TTL schedule; Updated names
	// the one moved, Resumed is true when it was paused; Deleted names the
	// extra ones removed.
	Created bool
	Updated string
	Resumed bool
	Deleted []string
}

// Keep gives the stack one TTL schedule, expiring at expires, which
// destroys the stack and then deletes it; c calls the schedules API, with
// the run's stack-scoped token.
func Keep(ctx context.Context, c *pulumicloud.Client, s Stack, expires time.Time) (Result, error) {
	res := Result{Expires: expires.UTC().Truncate(time.Second)}
	base := fmt.Sprintf("/api/stacks/%s/%s/%s/deployments", url.PathEscape(s.Organization), url.PathEscape(s.Project), url.PathEscape(s.Name))
	var list struct {
		Schedules []schedule `json:"schedules"`
	}
	if err := c.Call(ctx, http.MethodGet, base+"/schedules", nil, &list); err != nil {
		return res, fmt.Errorf("listing the schedules of stack %s: %w", s.Name, err)
	}
	body := map[string]any{"timestamp": res.Expires.Format(time.RFC3339), "deleteAfterDestroy": true}
	for _, sch := range list.Schedules {
		switch {
		case !sch.isTTL():
		case res.Updated == "":
			if err := c.Call(ctx, http.MethodPost, base+"/ttl/schedules/"+url.PathEscape(sch.ID), body, nil); err != nil {
				return res, fmt.Errorf("moving the TTL schedule %s of stack %s: %w", sch.ID, s.Name, err)
			}
			res.Updated = sch.ID
			// A paused schedule never runs, however far it is moved, and
			// the API does not say that an update resumes it: resume it
			// (POST .../schedules/{id}/resume, the schedules API reference).
			if sch.Paused {
				if err := c.Call(ctx, http.MethodPost, base+"/schedules/"+url.PathEscape(sch.ID)+"/resume", nil, nil); err != nil {
					return res, fmt.Errorf("resuming the paused TTL schedule %s of stack %s: %w", sch.ID, s.Name, err)
				}
				res.Resumed = true
			}
		default:
			if err := c.Call(ctx, http.MethodDelete, base+"/schedules/"+url.PathEscape(sch.ID), nil, nil); err != nil {
				return res, fmt.Errorf("deleting the extra TTL schedule %s of stack %s: %w", sch.ID, s.Name, err)
			}
			res.Deleted = append(res.Deleted, sch.ID)
		}
	}
	if res.Updated == "" {
		if err := c.Call(ctx, http.MethodPost, base+"/ttl/schedules", body, nil); err != nil {
			return res, fmt.Errorf("creating the TTL schedule of stack %s: %w", s.Name, err)
		}
		res.Created = true
	}
	return res, nil
}
