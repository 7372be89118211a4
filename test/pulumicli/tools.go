//go:build tools

// Package pulumicli pins the Pulumi CLI that the real Pulumi CLI tier runs:
// github.com/pulumi/pulumi/pkg/v3 at the version of Pulumi's Go SDK every
// module of this repository uses. install.sh builds its cmd/pulumi.
package pulumicli

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
