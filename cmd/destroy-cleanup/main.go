// Command destroy-cleanup is the delete step of the program's
// destroy-cleanup resource: `pulumi destroy` runs it (with `go run`)
// before it deletes the controllers and add-ons it needs. It uses only the
// standard library (internal/cleanup, internal/kubeapi), so that building
// it takes seconds where the program's own build ran. Its settings come
// from the environment (cleanup.Env*). `destroy-cleanup audit-leftovers
// --cluster <name> --region <region>` runs the leftover audit without a
// stack (cleanup.AuditCommand).
package main

import (
	"context"
	"fmt"
	"os"

	"nodeless-eks/internal/cleanup"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == cleanup.AuditCommandName {
		if err := cleanup.AuditCommand(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, cleanup.AuditCommandName+":", err)
			os.Exit(1)
		}
		return
	}
	if err := cleanup.Main(context.Background(), os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "destroy-cleanup:", err)
		os.Exit(1)
	}
}
