// Command pulumi-resource-kubernetes is pulumi-kubernetes' provider plugin,
// v4.25.0: upstream's cmd/pulumi-resource-kubernetes/main.go, whose
// embedded schema and Terraform mapping `go generate` writes there from
// the module's schema.json and terraform-mapping.json; install.sh writes
// them here the same way (the version set, compacted).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
