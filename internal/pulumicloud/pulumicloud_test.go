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

func TestLoadReportsABadCredentialsFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PULUMI_HOME", home)
	t.Setenv("PULUMI_API", "")
	t.Setenv("PULUMI_ACCESS_TOKEN", "")
	path := filepath.Join(home, "credentials.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"current": "https://api.pulumi.com", "accessTokens": {`), 0o600))

	_, _, err := Load()
	require.Error(t, err, "a file that does not parse is not a missing token")
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "pulumi login")
	c, source := FromEnvironment()
	assert.Empty(t, c.Token, "FromEnvironment goes on without the file")
	assert.Empty(t, source)

	t.Setenv("PULUMI_ACCESS_TOKEN", "pul-env")
	_, _, err = Load()
	require.Error(t, err, "without PULUMI_API the file still names the API")

	t.Setenv("PULUMI_API", "https://api.pulumi.com")
	c, source, err = Load()
	require.NoError(t, err, "the environment names both: the file is not read")
	assert.Equal(t, "pul-env", c.Token)
	assert.Equal(t, "PULUMI_ACCESS_TOKEN", source)

	require.NoError(t, os.Remove(path))
	t.Setenv("PULUMI_ACCESS_TOKEN", "")
	c, source, err = Load()
	require.NoError(t, err, "no file is no error")
	assert.Empty(t, c.Token)
	assert.Empty(t, source)
}
