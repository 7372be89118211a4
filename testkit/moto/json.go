package moto

import (
	"encoding/json"
	"testing"
)

func jsonUnmarshal(raw []byte, out any) error {
	if len(raw) == 0 {
		return errNoOutput
	}
	return json.Unmarshal(raw, out)
}

// Field decodes what the CLI printed into out, failing the test when it
// cannot.
func Field(t *testing.T, raw []byte, out any) {
	t.Helper()
	if err := jsonUnmarshal(raw, out); err != nil {
		t.Fatalf("reading %s: %v", raw, err)
	}
}
