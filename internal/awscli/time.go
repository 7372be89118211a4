// Package awscli reads what the AWS CLI prints.
package awscli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Time is a timestamp as the AWS CLI prints it with --output json. Which
// form depends on the CLI, not on the service: v2 prints ISO 8601
// ("2026-12-01T09:00:00.123000+00:00", its default cli_timestamp_format
// iso8601), v1 what the wire carries, which for the REST-JSON services
// (EKS) is epoch seconds, a JSON number (1796313901.286). Both are read;
// the zero Time is an absent or null field.
type Time struct{ time.Time }

// UnmarshalJSON reads either form.
func (t *Time) UnmarshalJSON(raw []byte) error {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		*t = Time{}
		return nil
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if s == "" {
			*t = Time{}
			return nil
		}
		parsed, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return fmt.Errorf("a timestamp the AWS CLI printed, %q: %w", s, err)
		}
		t.Time = parsed
		return nil
	}
	secs, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(secs, 0) || math.IsNaN(secs) {
		return fmt.Errorf("a timestamp the AWS CLI printed, %s: neither ISO 8601 nor epoch seconds", raw)
	}
	whole, frac := math.Modf(secs)
	t.Time = time.Unix(int64(whole), int64(math.Round(frac*1e3))*int64(time.Millisecond)).UTC()
	return nil
}
