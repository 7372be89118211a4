// Package reviewttl keeps one time-to-live schedule on a review stack and
// moves it on every update, through Pulumi Cloud's schedules API
// (https://www.pulumi.com/docs/reference/cloud-rest-api/schedules/): list
// the stack's schedules, update its TTL schedule, create one when there is
// none, and delete any extra. A review stack then expires a fixed time
// after its last update, not after its first, and never holds more than
// one TTL schedule. It uses only the standard library, so that `go run`
// builds it in seconds on a runner.
package reviewttl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultAPI is Pulumi Cloud's API; PULUMI_API, the variable the Pulumi CLI
// reads for its API URL (sdk/go/common/env), overrides it.
const DefaultAPI = "https://api.pulumi.com"

// Stack names the stack whose TTL is kept.
type Stack struct {
	Organization, Project, Name string
}

// Client calls the schedules API with a stack-scoped token.
type Client struct {
	API, Token string
	HTTP       *http.Client
}

// schedule is what the API lists of a schedule (apitype.ScheduledAction in
// pulumi/pulumi sdk/go/common/apitype/schedules.go).
type schedule struct {
	ID           string `json:"id"`
	ScheduleOnce string `json:"scheduleOnce"`
	Definition   struct {
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
	// the one moved; Deleted the extra ones removed.
	Created bool
	Updated string
	Deleted []string
}

// Keep gives the stack one TTL schedule, expiring at expires, which
// destroys the stack and then deletes it.
func (c *Client) Keep(ctx context.Context, s Stack, expires time.Time) (Result, error) {
	res := Result{Expires: expires.UTC().Truncate(time.Second)}
	base := fmt.Sprintf("%s/api/stacks/%s/%s/%s/deployments", c.API, url.PathEscape(s.Organization), url.PathEscape(s.Project), url.PathEscape(s.Name))
	var list struct {
		Schedules []schedule `json:"schedules"`
	}
	if err := c.call(ctx, http.MethodGet, base+"/schedules", nil, &list); err != nil {
		return res, fmt.Errorf("listing the schedules of stack %s: %w", s.Name, err)
	}
	body := map[string]any{"timestamp": res.Expires.Format(time.RFC3339), "deleteAfterDestroy": true}
	for _, sch := range list.Schedules {
		switch {
		case !sch.isTTL():
		case res.Updated == "":
			if err := c.call(ctx, http.MethodPost, base+"/ttl/schedules/"+url.PathEscape(sch.ID), body, nil); err != nil {
				return res, fmt.Errorf("moving the TTL schedule %s of stack %s: %w", sch.ID, s.Name, err)
			}
			res.Updated = sch.ID
		default:
			if err := c.call(ctx, http.MethodDelete, base+"/schedules/"+url.PathEscape(sch.ID), nil, nil); err != nil {
				return res, fmt.Errorf("deleting the extra TTL schedule %s of stack %s: %w", sch.ID, s.Name, err)
			}
			res.Deleted = append(res.Deleted, sch.ID)
		}
	}
	if res.Updated == "" {
		if err := c.call(ctx, http.MethodPost, base+"/ttl/schedules", body, nil); err != nil {
			return res, fmt.Errorf("creating the TTL schedule of stack %s: %w", s.Name, err)
		}
		res.Created = true
	}
	return res, nil
}

// call sends one request with the headers the API documents for every
// call, and decodes the answer into out when it is not nil.
func (c *Client) call(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.pulumi+8")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var apiErr struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(raw, &apiErr)
		if apiErr.Message == "" {
			apiErr.Message = http.StatusText(resp.StatusCode)
		}
		return fmt.Errorf("%s %s: Pulumi Cloud answered %d: %s", method, u, resp.StatusCode, apiErr.Message)
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("reading the answer to %s %s: %w", method, u, err)
		}
	}
	return nil
}
