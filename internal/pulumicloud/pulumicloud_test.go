package pulumicloud

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromEnvironment(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PULUMI_HOME", home)
	t.Setenv("PULUMI_API", "")
	t.Setenv("PULUMI_ACCESS_TOKEN", "")
	write := func(creds string) {
		require.NoError(t, os.WriteFile(filepath.Join(home, "credentials.json"), []byte(creds), 0o600))
	}

	c, source := FromEnvironment()
	assert.Equal(t, DefaultAPI, c.API)
	assert.Empty(t, c.Token, "no token anywhere")
	assert.Empty(t, source)

	write(`{"current":"https://api.pulumi.acme.internal","accessTokens":{"https://api.pulumi.com":"pul-cloud","https://api.pulumi.acme.internal":"pul-self-hosted"}}`)
	c, source = FromEnvironment()
	assert.Equal(t, "https://api.pulumi.acme.internal", c.API, "the backend `pulumi login` made current")
	assert.Equal(t, "pul-self-hosted", c.Token)
	assert.Equal(t, filepath.Join(home, "credentials.json"), source)

	write(`{"current":"s3://state-bucket","accessTokens":{"https://api.pulumi.com":"pul-cloud"}}`)
	c, _ = FromEnvironment()
	assert.Equal(t, DefaultAPI, c.API, "a self-managed backend has no API; Pulumi Cloud's is the default")
	assert.Equal(t, "pul-cloud", c.Token)

	t.Setenv("PULUMI_API", "http://127.0.0.1:9/")
	t.Setenv("PULUMI_ACCESS_TOKEN", "pul-env")
	c, source = FromEnvironment()
	assert.Equal(t, "http://127.0.0.1:9", c.API)
	assert.Equal(t, "pul-env", c.Token)
	assert.Equal(t, "PULUMI_ACCESS_TOKEN", source)
}
