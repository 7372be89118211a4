package reviewttl

import (
	"context"
	"net/http"
	"testing"
	"time"

	"nodeless-eks/internal/pulumicloud"
	"nodeless-eks/testkit/fakecloud"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var stack = Stack{Organization: "my-org", Project: "nodeless-eks", Name: "pr-42"}

func ttls(schedules []fakecloud.Schedule) []string {
	var out []string
	for _, s := range schedules {
		if s.Definition["request"].(map[string]any)["operation"] == "destroy" && s.Definition["request"].(map[string]any)["operationContext"] != nil {
			out = append(out, s.ScheduleOnce)
		}
	}
	return out
}

func client(api *fakecloud.API, token string) *pulumicloud.Client {
	return &pulumicloud.Client{API: api.URL, Token: token}
}

func TestKeep(t *testing.T) {
	first := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	later := first.Add(3 * time.Hour)

	t.Run("the first update creates the schedule, later ones move it", func(t *testing.T) {
		api := fakecloud.New("tok", "my-org/nodeless-eks/pr-42", fakecloud.Drift("drift-1"))
		defer api.Close()
		res, err := Keep(context.Background(), client(api, "tok"), stack, first)
		require.NoError(t, err)
		assert.True(t, res.Created)
		assert.Equal(t, []string{"2026-12-01T10:00:00Z"}, ttls(api.Schedules()))

		res, err = Keep(context.Background(), client(api, "tok"), stack, later)
		require.NoError(t, err)
		assert.False(t, res.Created)
		assert.Equal(t, "ttl-new-1", res.Updated)
		assert.False(t, res.Resumed)
		assert.Equal(t, []string{"2026-12-01T13:00:00Z"}, ttls(api.Schedules()), "moved, not added")
		assert.Len(t, api.Schedules(), 2, "the drift schedule stays")
		assert.Empty(t, api.BadHeaders, "every call sends the documented Accept and Content-Type")
	})
	t.Run("schedules that piled up are cut back to one", func(t *testing.T) {
		api := fakecloud.New("tok", "my-org/nodeless-eks/pr-42",
			fakecloud.TTL("ttl-a", "2026-11-30 08:00:00.000"), fakecloud.RawDestroy("manual", "2026-12-24 00:00:00.000"), fakecloud.TTL("ttl-b", "2026-11-30 12:00:00.000"))
		defer api.Close()
		res, err := Keep(context.Background(), client(api, "tok"), stack, later)
		require.NoError(t, err)
		assert.Equal(t, "ttl-a", res.Updated)
		assert.Equal(t, []string{"ttl-b"}, res.Deleted)
		assert.Equal(t, []string{"2026-12-01T13:00:00Z"}, ttls(api.Schedules()))
		assert.Len(t, api.Schedules(), 2, "a destroy scheduled by hand is not a TTL and stays")
	})
	t.Run("a paused schedule is moved and resumed, or the stack would never expire", func(t *testing.T) {
		paused := fakecloud.TTL("ttl-p", "2026-11-30 08:00:00.000")
		paused.Paused = true
		api := fakecloud.New("tok", "my-org/nodeless-eks/pr-42", paused)
		defer api.Close()
		res, err := Keep(context.Background(), client(api, "tok"), stack, later)
		require.NoError(t, err)
		assert.Equal(t, "ttl-p", res.Updated)
		assert.True(t, res.Resumed)
		require.Len(t, api.Schedules(), 1)
		assert.False(t, api.Schedules()[0].Paused, "the schedule runs again")
		assert.Equal(t, "2026-12-01T13:00:00Z", api.Schedules()[0].ScheduleOnce)
		assert.Contains(t, api.Requests, "POST /api/stacks/my-org/nodeless-eks/pr-42/deployments/schedules/ttl-p/resume")
	})
	t.Run("errors name the call and Pulumi Cloud's answer", func(t *testing.T) {
		api := fakecloud.New("tok", "my-org/nodeless-eks/pr-42")
		defer api.Close()
		_, err := Keep(context.Background(), client(api, "expired"), stack, first)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "listing the schedules of stack pr-42")
		assert.Contains(t, err.Error(), "Pulumi Cloud answered 401: Unauthorized")
		assert.False(t, NotInEdition(err), "a bad token is not a missing feature")
		assert.Equal(t, []string{"GET /api/stacks/my-org/nodeless-eks/pr-42/deployments/schedules"}, api.Requests,
			"the failed list is the only call: nothing is created or deleted after it")
	})
	for _, tt := range []struct {
		name      string
		code      int
		inEdition bool
	}{
		{"402: the edition has no TTL schedules", http.StatusPaymentRequired, false},
		{"403: the token may not", http.StatusForbidden, true},
		{"404: the stack is not there", http.StatusNotFound, true},
		{"503: Pulumi Cloud fails", http.StatusServiceUnavailable, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := fakecloud.New("tok", "my-org/nodeless-eks/pr-42")
			defer api.Close()
			api.Fail("POST /api/stacks/my-org/nodeless-eks/pr-42/deployments/ttl/schedules", tt.code)
			_, err := Keep(context.Background(), client(api, "tok"), stack, first)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "creating the TTL schedule of stack pr-42")
			assert.Equal(t, tt.code, pulumicloud.StatusOf(err))
			assert.Equal(t, !tt.inEdition, NotInEdition(err), "only 402 says the edition lacks the feature")
		})
	}
}
