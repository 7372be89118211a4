package versions

import (
	"fmt"
	"strconv"
	"strings"
)

// Compare orders two dotted versions of whole numbers ("1.47.0", "1.36"),
// component by component: -1, 0 or 1. A missing component counts as 0; one
// that is not a number is an error.
func Compare(a, b string) (int, error) {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		x, err := component(pa, i)
		if err != nil {
			return 0, fmt.Errorf("version %q: %w", a, err)
		}
		y, err := component(pb, i)
		if err != nil {
			return 0, fmt.Errorf("version %q: %w", b, err)
		}
		if x != y {
			if x < y {
				return -1, nil
			}
			return 1, nil
		}
	}
	return 0, nil
}

func component(parts []string, i int) (int, error) {
	if i >= len(parts) {
		return 0, nil
	}
	return strconv.Atoi(parts[i])
}
