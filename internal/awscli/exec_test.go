package awscli

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestExecIsBoundedByWaitDelay: a command that exits while a child of it
// still holds its output open (a credential helper's background process)
// returns within the wait delay, with what it printed, instead of waiting
// for that child.
func TestExecIsBoundedByWaitDelay(t *testing.T) {
	defer func(d time.Duration) { WaitDelay = d }(WaitDelay)
	WaitDelay = 200 * time.Millisecond
	start := time.Now()
	out, _, err := Exec(context.Background(), nil, "sh", "-c", "sleep 30 & echo token")
	assert.Less(t, time.Since(start), 10*time.Second, "not the child's 30 s")
	assert.ErrorIs(t, err, exec.ErrWaitDelay)
	assert.Equal(t, "token\n", string(out))
}
