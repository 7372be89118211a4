// Command kube-controller-manager is Kubernetes' controller manager,
// v1.36.3, built from the same module as the API server for the tiers that
// need its garbage collector (pulumi-kubernetes deletes with Foreground
// propagation, whose finalizer only the collector removes) and its
// namespace controller: the main of
// k8s.io/kubernetes/cmd/kube-controller-manager/controller-manager.go at
// that version, with its imports.
package main

import (
	"os"
	_ "time/tzdata" // for CronJob Time Zone support

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugin
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	command := app.NewControllerManagerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
