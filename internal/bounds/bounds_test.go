package bounds

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRecoveryOutlastsItsWaits: a recovery that ran out of time while EKS
// was still creating would report it undecided instead of importing it.
func TestRecoveryOutlastsItsWaits(t *testing.T) {
	longest := max(RecoveryCluster, FargateProfile)
	assert.GreaterOrEqual(t, Recovery-RecoverySettle-longest, 5*time.Minute, "the settle, the longest wait, and 5 minutes for the reads")
}
