package bootwatch

import (
	"time"

	"nodeless-eks/internal/kubeapi"
)

// ServerNowForTest is Options.serverNow.
func ServerNowForTest(o Options, api any) time.Time { return o.serverNow(api) }

// ClaimOnItsWayForTest runs claim on one NodeClaim at the API server's
// clock, and says whether it is still on its way.
func ClaimOnItsWayForTest(o Options, nc kubeapi.Object, api any) bool {
	return claim(discard{}, newSaid(), o, nc, map[string]time.Time{}, o.serverNow(api))
}

// discard is a Sink that keeps nothing.
type discard struct{}

func (discard) Info(Subject, string) {}
func (discard) Warn(Subject, string) {}
