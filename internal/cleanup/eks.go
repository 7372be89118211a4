package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"nodeless-eks/internal/kubeapi"
)

// eksCluster is the cluster a kubeconfig authenticates to through `aws eks
// get-token` (pulumi-eks writes the exec plugin as `aws --region <region>
// eks get-token --cluster-name <name>`, with AWS_PROFILE in its env when
// the provider has a profile): what to ask EKS about.
type eksCluster struct {
	Name, Region, Profile string
	Env                   []string
}

// eksClusterOf reads the cluster from a kubeconfig's exec plugin; ok is
// false when the plugin is not the AWS CLI's get-token.
func eksClusterOf(kubeconfigJSON string) (eksCluster, bool) {
	command, args, env, ok := kubeapi.ExecPlugin(kubeconfigJSON)
	if !ok || command != "aws" || !strings.Contains(" "+strings.Join(args, " ")+" ", " eks get-token ") {
		return eksCluster{}, false
	}
	c := eksCluster{Env: env}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--cluster-name":
			c.Name = args[i+1]
		case "--region":
			c.Region = args[i+1]
		case "--profile":
			c.Profile = args[i+1]
		}
	}
	return c, c.Name != ""
}

// exists asks EKS, through the AWS CLI the kubeconfig already needs,
// whether the cluster still exists: `aws eks describe-cluster` answers its
// status, or fails with ResourceNotFoundException for a cluster that is
// gone (EKS API reference, DescribeCluster errors). Any other failure is
// no answer.
func (c eksCluster) exists(ctx context.Context) (bool, string, error) {
	args := []string{"eks", "describe-cluster", "--name", c.Name, "--output", "json"}
	if c.Region != "" {
		args = append(args, "--region", c.Region)
	}
	if c.Profile != "" {
		args = append(args, "--profile", c.Profile)
	}
	cmd := exec.CommandContext(ctx, "aws", args...)
	cmd.Env = append(os.Environ(), c.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "ResourceNotFoundException") {
			return false, "", nil
		}
		return false, "", fmt.Errorf("aws %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Cluster struct {
			Status string `json:"status"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Cluster.Status == "" {
		return false, "", fmt.Errorf("aws %s printed no cluster status", strings.Join(args, " "))
	}
	return true, out.Cluster.Status, nil
}
