package versions

import "testing"

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.47.0", "1.47.0", 0}, {"1.46.9", "1.47.0", -1}, {"1.100.0", "1.47.0", 1},
		{"3.0", "3.0.0", 0}, {"2.14.1", "3.0.0", -1},
	} {
		if got, err := Compare(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
	if _, err := Compare("1.x.0", "1.0.0"); err == nil {
		t.Error("a component that is not a number must be an error")
	}
}
