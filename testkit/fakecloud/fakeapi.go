// Package fakecloud is a local stand-in for the part of Pulumi Cloud's
// schedules API that reviewttl uses, as documented
// (https://www.pulumi.com/docs/reference/cloud-rest-api/schedules/) and as
// the Pulumi CLI and the pulumiservice provider read it: list a stack's
// schedules ({"schedules": [...]}), create and update a TTL schedule, and
// delete a schedule. Tests of reviewttl and of the review stacks' pre-run
// command run against it.
package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Schedule is a stored schedule, in the API's shape.
type Schedule struct {
	ID           string         `json:"id"`
	ScheduleOnce string         `json:"scheduleOnce,omitempty"`
	ScheduleCron string         `json:"scheduleCron,omitempty"`
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

// RawDestroy is a one-time destroy someone scheduled by hand.
func RawDestroy(id, when string) Schedule {
	return Schedule{ID: id, ScheduleOnce: when, Kind: "deployment", Definition: map[string]any{"request": map[string]any{"operation": "destroy"}}}
}

// API is the fake service.
type API struct {
	*httptest.Server
	// Token is the one token it accepts; Stack the one stack it knows,
	// "org/project/stack".
	Token, Stack string

	mu        sync.Mutex
	schedules []Schedule
	next      int
	// Requests are "METHOD path" in order; BadHeaders the requests that
	// lacked the documented headers.
	Requests, BadHeaders []string
}

// New starts a fake with the given schedules on stack.
func New(token, stack string, schedules ...Schedule) *API {
	a := &API{Token: token, Stack: stack, schedules: schedules}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

// Schedules are the stack's schedules now.
func (a *API) Schedules() []Schedule {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Schedule(nil), a.schedules...)
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Requests = append(a.Requests, r.Method+" "+r.URL.Path)
	if r.Header.Get("Accept") != "application/vnd.pulumi+8" || r.Header.Get("Content-Type") != "application/json" {
		a.BadHeaders = append(a.BadHeaders, r.Method+" "+r.URL.Path)
	}
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
	}
	if r.Header.Get("Authorization") != "token "+a.Token {
		fail(http.StatusUnauthorized, "Unauthorized: No credentials provided or are invalid.")
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
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Timestamp == "" {
			fail(http.StatusBadRequest, "invalid request body")
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && rest == "/schedules":
		_ = json.NewEncoder(w).Encode(map[string]any{"schedules": a.schedules})
	case r.Method == http.MethodPost && rest == "/ttl/schedules":
		a.next++
		s := TTL(fmt.Sprintf("ttl-new-%d", a.next), body.Timestamp)
		a.schedules = append(a.schedules, s)
		_ = json.NewEncoder(w).Encode(s)
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "/ttl/schedules/"):
		id := strings.TrimPrefix(rest, "/ttl/schedules/")
		for i, s := range a.schedules {
			if s.ID == id {
				a.schedules[i].ScheduleOnce = body.Timestamp
				_ = json.NewEncoder(w).Encode(a.schedules[i])
				return
			}
		}
		fail(http.StatusNotFound, "schedule not found")
	case r.Method == http.MethodDelete && strings.HasPrefix(rest, "/schedules/"):
		id := strings.TrimPrefix(rest, "/schedules/")
		for i, s := range a.schedules {
			if s.ID == id {
				a.schedules = append(a.schedules[:i], a.schedules[i+1:]...)
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		fail(http.StatusNotFound, "schedule not found")
	default:
		fail(http.StatusNotFound, "no such endpoint")
	}
}
