package stackfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const project = `name: demo
runtime: go
config:
  region:
    type: string
    description: Required.
  size:
    type: integer
    default: 2
  name:
    type: string
    default: ""
  tags:
    type: object
    default: {}
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name, stack string
		want        map[string]string
		wantErr     []string
	}{
		{name: "a stack that sets only the required key gets every default",
			stack: "config:\n  demo:region: eu-west-1\n",
			want:  map[string]string{"demo:region": "eu-west-1", "demo:size": "2", "demo:name": "", "demo:tags": "{}"}},
		{name: "values the stack sets win over defaults",
			stack: "config:\n  demo:region: eu-west-1\n  demo:size: 3\n  demo:tags:\n    team: a\n  aws:profile: x\n",
			want:  map[string]string{"demo:region": "eu-west-1", "demo:size": "3", "demo:name": "", "demo:tags": `{"team":"a"}`, "aws:profile": "x"}},
		{name: "a required key left unset is refused, as the CLI refuses it",
			stack:   "config:\n  demo:size: 3\n",
			wantErr: []string{"Stack 'test' is missing configuration value(s) 'region'"}},
		{name: "a key Pulumi.yaml does not declare is refused",
			stack:   "config:\n  demo:region: eu-west-1\n  demo:sise: 3\n",
			wantErr: []string{"Stack 'test' uses configuration value 'demo:sise' which is not defined by the project configuration"}},
		{name: "a value of another type is refused",
			stack:   "config:\n  demo:region: eu-west-1\n  demo:size: two\n",
			wantErr: []string{"Stack 'test' with configuration key 'size' must be of type 'integer'"}},
		{name: "every problem is reported at once",
			stack:   "config:\n  demo:size: two\n  demo:sise: 3\n",
			wantErr: []string{"missing configuration value(s) 'region'", "'demo:sise' which is not defined", "'size' must be of type 'integer'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := Load(write(t, dir, "Pulumi.yaml", project), write(t, dir, "Pulumi.test.yaml", tt.stack))
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tt.wantErr {
					assert.Contains(t, err.Error(), want)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
