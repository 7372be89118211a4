// Package fakecloud is a local stand-in for the parts of Pulumi Cloud's
// REST API that this repository calls, as documented
// (https://www.pulumi.com/docs/reference/cloud-rest-api/) and as the
// Pulumi CLI and the pulumiservice provider read it:
//
//   - the schedules API that the recovery reads: list a stack's schedules
//     ({"schedules": [...]}, each with "paused"), create and update a TTL
//     schedule, resume a schedule, delete one;
//   - any GET a test puts an answer for (Put): the stacks, deployment
//     settings, environments, teams and updates the recovery of pending
//     operations reads. A GET of a path nothing was put for answers 404, as
//     the API does for what does not exist;
//   - an Organization (Serve, org.go): what deploy/ reads of it and the
//     deployment settings it writes.
//
// Any call can be made to fail with a status (Fail), as the real API
// answers 401, 402, 403 or 404.
package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Schedule is a stored schedule, in the API's shape
// (apitype.ScheduledAction in pulumi/pulumi sdk/go/common/apitype/schedules.go).
type Schedule struct {
	ID           string         `json:"id"`
	ScheduleOnce string         `json:"scheduleOnce,omitempty"`
	ScheduleCron string         `json:"scheduleCron,omitempty"`
	Paused       bool           `json:"paused"`
	Kind         string         `json:"kind"`
	Definition   map[string]any `json:"definition"`
}

// TTL is a TTL schedule as the API lists it: a one-time destroy with
// operation options.
func TTL(id, when string) Schedule {
	return Schedule{ID: id, ScheduleOnce: when, Kind: "deployment", Definition: map[string]any{"request": map[string]any{
		"operation": "destroy", "operationContext": map[string]any{"options": map[string]any{"deleteAfterDestroy": true}}}}}
}

// Drift is a drift-detection schedule.
func Drift(id string) Schedule {
	return Schedule{ID: id, ScheduleCron: "0 4 * * *", Kind: "deployment", Definition: map[string]any{"request": map[string]any{
		"operation": "detect-drift", "operationContext": map[string]any{"options": map[string]any{"remediateIfDriftDetected": false}}}}}
}

// Update is a schedule of `pulumi up`, as deploy/'s own.
func Update(id string) Schedule {
	return Schedule{ID: id, ScheduleCron: "0 * * * *", Kind: "deployment", Definition: map[string]any{"request": map[string]any{"operation": "update"}}}
}

// RawDestroy is a one-time destroy someone scheduled by hand.
func RawDestroy(id, when string) Schedule {
	return Schedule{ID: id, ScheduleOnce: when, Kind: "deployment", Definition: map[string]any{"request": map[string]any{"operation": "destroy"}}}
}

// OrgMetadata is what GET /api/orgs/{org}/metadata answers, for Put
// (GetOrganizationMetadata in the REST API's OpenAPI document):
// defaultStackPermission is 0 (none), 101 (read), 102 (write), 103
// (admin) or 104 (creator); defaultEnvironmentPermission is none, read,
// open, write or admin. The document requires both, and neither
// defaultDeploymentRoleId nor product.
type OrgMetadata struct {
	DefaultStackPermission       int    `json:"defaultStackPermission"`
	DefaultEnvironmentPermission string `json:"defaultEnvironmentPermission"`
	DefaultDeploymentRoleID      string `json:"defaultDeploymentRoleId,omitempty"`
	// DefaultRoleID is the role new members get; "" is Member.
	DefaultRoleID string `json:"defaultRoleId,omitempty"`
	Product       string `json:"product,omitempty"`
	// Features are OrganizationFeatures, by name ("driftDetectionEnabled":
	// true); nil leaves them out of the answer.
	Features map[string]bool `json:"features,omitempty"`
}

// API is the fake service.
type API struct {
	*httptest.Server
	// Token is the one token it accepts; Stack the one stack it knows,
	// "org/project/stack".
	Token, Stack string
	mu           sync.Mutex
	// fail makes every request whose "METHOD path" ends with a key answer
	// its status.
	fail      map[string]int
	objects   map[string]any
	schedules []Schedule
	next      int
	orgs      []*Organization
	// Requests are "METHOD path" in order; BadHeaders the requests that
	// lacked the documented headers.
	Requests, BadHeaders []string
}

// New starts a fake with the given schedules on stack.
func New(token, stack string, schedules ...Schedule) *API {
	a := &API{Token: token, Stack: stack, schedules: schedules, fail: map[string]int{}, objects: map[string]any{}}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

// Put makes GET path answer body as JSON; nil makes it answer 404 again.
func (a *API) Put(path string, body any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if body == nil {
		delete(a.objects, path)
		return
	}
	a.objects[path] = body
}

// Fail makes every request whose "METHOD path" ends with suffix answer
// code, with a message like the real API's; 0 lifts it.
func (a *API) Fail(suffix string, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if code == 0 {
		delete(a.fail, suffix)
		return
	}
	a.fail[suffix] = code
}

// Schedules are the stack's schedules now.
func (a *API) Schedules() []Schedule {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Schedule(nil), a.schedules...)
}

// failures are the messages of the statuses tests inject, as the API
// words them (402 as its OpenAPI document words a missing subscription).
var failures = map[int]string{
	http.StatusUnauthorized:       "Unauthorized: No credentials provided or are invalid.",
	http.StatusPaymentRequired:    "Scheduled deployments require a higher subscription",
	http.StatusForbidden:          "Forbidden",
	http.StatusNotFound:           "Not Found",
	http.StatusServiceUnavailable: "Service Unavailable",
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	call := r.Method + " " + r.URL.Path
	a.Requests = append(a.Requests, call)
	if r.Header.Get("Accept") != "application/vnd.pulumi+8" || r.Header.Get("Content-Type") != "application/json" {
		a.BadHeaders = append(a.BadHeaders, call)
	}
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
	}
	if r.Header.Get("Authorization") != "token "+a.Token {
		fail(http.StatusUnauthorized, failures[http.StatusUnauthorized])
		return
	}
	for suffix, code := range a.fail {
		if strings.HasSuffix(call, suffix) {
			fail(code, failures[code])
			return
		}
	}
	if body, ok := a.objects[r.URL.Path]; ok && r.Method == http.MethodGet {
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	if a.serveOrg(w, r) {
		return
	}
	base := "/api/stacks/" + a.Stack + "/deployments"
	rest, ok := strings.CutPrefix(r.URL.Path, base)
	if !ok {
		fail(http.StatusNotFound, "Stack not found")
		return
	}
	var body struct {
		Timestamp          string `json:"timestamp"`
		DeleteAfterDestroy bool   `json:"deleteAfterDestroy"`
	}
	withBody := r.Method == http.MethodPost && !strings.HasSuffix(rest, "/resume")
	if withBody {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Timestamp == "" {
			fail(http.StatusBadRequest, "Timestamp needs to be set")
			return
		}
	}
	find := func(id string) int {
		for i, s := range a.schedules {
			if s.ID == id {
				return i
			}
		}
		return -1
	}
	switch {
	case r.Method == http.MethodGet && rest == "/schedules":
		_ = json.NewEncoder(w).Encode(map[string]any{"schedules": a.schedules})
	case r.Method == http.MethodPost && rest == "/ttl/schedules":
		a.next++
		s := TTL(fmt.Sprintf("ttl-new-%d", a.next), body.Timestamp)
		a.schedules = append(a.schedules, s)
		_ = json.NewEncoder(w).Encode(s)
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "/schedules/") && strings.HasSuffix(rest, "/resume"):
		i := find(strings.TrimSuffix(strings.TrimPrefix(rest, "/schedules/"), "/resume"))
		if i < 0 {
			fail(http.StatusNotFound, "schedule not found")
			return
		}
		a.schedules[i].Paused = false
		_ = json.NewEncoder(w).Encode(a.schedules[i])
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "/ttl/schedules/"):
		// Neither the reference nor the OpenAPI document says that an
		// update resumes a paused schedule; the fake keeps it paused, the
		// worse of the two.
		i := find(strings.TrimPrefix(rest, "/ttl/schedules/"))
		if i < 0 {
			fail(http.StatusNotFound, "schedule not found")
			return
		}
		a.schedules[i].ScheduleOnce = body.Timestamp
		_ = json.NewEncoder(w).Encode(a.schedules[i])
	case r.Method == http.MethodDelete && strings.HasPrefix(rest, "/schedules/"):
		i := find(strings.TrimPrefix(rest, "/schedules/"))
		if i < 0 {
			fail(http.StatusNotFound, "schedule not found")
			return
		}
		a.schedules = append(a.schedules[:i], a.schedules[i+1:]...)
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "no such endpoint")
	}
}
