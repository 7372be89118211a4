//go:build unix

package recovery

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProcessExists(t *testing.T) {
	alive, err := processExists(os.Getpid())
	require.NoError(t, err)
	assert.True(t, alive, "this test's own process")

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	alive, err = processExists(cmd.Process.Pid)
	require.NoError(t, err)
	assert.False(t, alive, "a process that exited and was reaped")

	_, err = processExists(0)
	assert.Error(t, err, "0 is no process (kill(0, 0) would signal the group)")
}
