package names

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStackLabel(t *testing.T) {
	tests := []struct{ name, project, stack, want string }{
		{"project and stack", "nodeless-eks", "prod", "nodeless-eks.prod"},
		{"an organization-qualified stack name loses its slashes", "nodeless-eks", "acme/prod", "nodeless-eks.acme-prod"},
		{"a long name is cut and hashed", "nodeless-eks", strings.Repeat("review-", 12), ""},
	}
	labelValue := `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StackLabel(tt.project, tt.stack)
			if tt.want != "" {
				assert.Equal(t, tt.want, got)
			}
			assert.LessOrEqual(t, len(got), 63, "a label value holds 63 characters")
			assert.Regexp(t, labelValue, got, "a valid label value")
		})
	}
	assert.NotEqual(t, StackLabel("p", strings.Repeat("x", 70)+"a"), StackLabel("p", strings.Repeat("x", 70)+"b"),
		"two long stack names keep different labels")
}
