// Package fakecloud is a fake of Pulumi Cloud's REST API, as documented
// (https://www.pulumi.com/docs/reference/cloud-rest-api/): an Organization
// (Serve, org.go), what deploy/ reads of it and the deployment settings it
// writes. Any call can be made to fail with a status (Fail), as the real API
// answers 401, 402, 403 or 404.
package fakecloud

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// API is the fake service.
type API struct {
	*httptest.Server
	// Token is the one token it accepts.
	Token string
	mu    sync.Mutex
	// fail makes every request whose "METHOD path" ends with a key answer
	// its status.
	fail map[string]int
	orgs []*Organization
	// Requests are "METHOD path" in order; BadHeaders the requests that
	// lacked the documented headers.
	Requests, BadHeaders []string
}

// New starts a fake that accepts token.
func New(token string) *API {
	a := &API{Token: token, fail: map[string]int{}}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
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
	if !a.serveOrg(w, r) {
		fail(http.StatusNotFound, "no such endpoint")
	}
}
