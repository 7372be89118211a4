// Package verify holds the checks the acceptance test runs against a real
// cluster and account: where the Karpenter and CoreDNS pods run, whether
// the NodePools are ready, a scale-out and scale-in through Karpenter, and
// the sweep for anything Karpenter left behind after destroy. Every check
// takes interfaces, so it is tested offline against fakes.
package verify
