// Command slowfile is the plugin of a small test provider for the real
// Pulumi CLI tier (provider/recovery_cli_test.go): its File's create
// writes the file first, then waits for hold seconds, so that a test can
// kill `pulumi up` in the middle of a create whose object already exists.
// Read reports the file by its path (the import ID); delete removes it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// File is a file on the local disk.
type File struct{}

// FileArgs are the file's path and how long its create waits.
type FileArgs struct {
	Path string `pulumi:"path"`
	Hold int    `pulumi:"hold,optional"`
}

// FileState is what the state keeps.
type FileState struct {
	FileArgs
}

// Create writes the file, then holds.
func (File) Create(ctx context.Context, req infer.CreateRequest[FileArgs]) (infer.CreateResponse[FileState], error) {
	if req.DryRun {
		return infer.CreateResponse[FileState]{Output: FileState{req.Inputs}}, nil
	}
	if err := os.WriteFile(req.Inputs.Path, []byte(req.Name+"\n"), 0o600); err != nil {
		return infer.CreateResponse[FileState]{}, err
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(req.Inputs.Hold) * time.Second):
	}
	return infer.CreateResponse[FileState]{ID: req.Inputs.Path, Output: FileState{req.Inputs}}, nil
}

// Read finds the file by its path; none is a resource that is gone.
func (File) Read(_ context.Context, req infer.ReadRequest[FileArgs, FileState]) (infer.ReadResponse[FileArgs, FileState], error) {
	if _, err := os.Stat(req.ID); os.IsNotExist(err) {
		return infer.ReadResponse[FileArgs, FileState]{}, nil
	}
	in := req.Inputs
	in.Path = req.ID
	return infer.ReadResponse[FileArgs, FileState]{ID: req.ID, Inputs: in, State: FileState{in}}, nil
}

// Delete removes the file.
func (File) Delete(_ context.Context, req infer.DeleteRequest[FileState]) (infer.DeleteResponse, error) {
	if err := os.Remove(req.ID); err != nil && !os.IsNotExist(err) {
		return infer.DeleteResponse{}, err
	}
	return infer.DeleteResponse{}, nil
}

func main() {
	prov, err := infer.NewProviderBuilder().WithResources(infer.Resource(File{})).Build()
	if err == nil {
		err = prov.Run(context.Background(), "slowfile", "0.0.1")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
