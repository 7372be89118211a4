package awscli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Runner runs a command with extra environment and returns its standard
// output; the error comes with its standard error.
type Runner func(ctx context.Context, env []string, name string, args ...string) (stdout []byte, stderr string, err error)

// WaitDelay is how long Exec waits, once the command exited or ctx ended,
// for output pipes that a child of the command still holds.
var WaitDelay = 5 * time.Second

// Exec runs a command for real, in the environment of this process with
// env laid over it ("NAME=" removes NAME: Environ).
func Exec(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = WaitDelay // a child holding the output open is cut off (os/exec, Cmd.WaitDelay)
	cmd.Env = Environ(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

// Error is a failure of the AWS CLI: its arguments, exit status and, when
// AWS answered, the error code the CLI printed ("An error occurred
// (NoSuchEntity) when calling the GetRole operation: ...").
type Error struct {
	Args   []string
	Code   string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("aws %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

var errorCode = regexp.MustCompile(`An error occurred \(([A-Za-z0-9_.]+)\)`)

// NewError is the failure of `aws <args>`, with the code AWS answered.
func NewError(args []string, stderr string, err error) *Error {
	e := &Error{Args: args, Stderr: stderr, Err: err}
	if m := errorCode.FindStringSubmatch(stderr); m != nil {
		e.Code = m[1]
	}
	return e
}

// IsCode reports an AWS error with one of codes: AWS's own answer that the
// object is not there, when the codes are the operation's "not found".
func IsCode(err error, codes ...string) bool {
	var e *Error
	return errors.As(err, &e) && slices.Contains(codes, e.Code)
}
