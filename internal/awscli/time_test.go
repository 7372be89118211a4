package awscli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeReadsWhatEitherCLIPrints(t *testing.T) {
	want := time.Date(2026, 12, 3, 15, 25, 1, 286e6, time.UTC)
	for name, raw := range map[string]string{
		"v1: epoch seconds, as the wire carries them": `{"createdAt": 1796311501.286}`,
		"v2: ISO 8601 with an offset":                 `{"createdAt": "2026-12-03T15:25:01.286000+00:00"}`,
		"another offset":                              `{"createdAt": "2026-12-03T16:25:01.286+01:00"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var out struct {
				CreatedAt Time `json:"createdAt"`
			}
			require.NoError(t, json.Unmarshal([]byte(raw), &out))
			assert.True(t, want.Equal(out.CreatedAt.Time), "%s, want %s", out.CreatedAt.Time, want)
		})
	}
	var out struct{ CreatedAt Time }
	require.NoError(t, json.Unmarshal([]byte(`{"CreatedAt": null}`), &out))
	assert.True(t, out.CreatedAt.IsZero())
	assert.Error(t, json.Unmarshal([]byte(`{"CreatedAt": "yesterday"}`), &out))
	assert.Error(t, json.Unmarshal([]byte(`{"CreatedAt": true}`), &out))
}

func TestEnvironRemovesWhatIsSetEmpty(t *testing.T) {
	got := Environ([]string{"PATH=/bin", "AWS_PROFILE=admin", "AWS_ACCESS_KEY_ID=AKIA-OLD", "HOME=/root"},
		"AWS_ACCESS_KEY_ID=ASIA-NEW", "AWS_PROFILE=", "AWS_SESSION_TOKEN=t")
	assert.Equal(t, []string{"PATH=/bin", "HOME=/root", "AWS_ACCESS_KEY_ID=ASIA-NEW", "AWS_SESSION_TOKEN=t"}, got)
	// A kubeconfig's profile, then a session that drops it: the last wins.
	got = Environ([]string{"PATH=/bin"}, "AWS_PROFILE=sandbox", "AWS_ACCESS_KEY_ID=ASIA", "AWS_PROFILE=")
	assert.Equal(t, []string{"PATH=/bin", "AWS_ACCESS_KEY_ID=ASIA"}, got)
}
