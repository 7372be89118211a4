// Package moto runs the AWS CLI against moto's server (moto 5.2.1, the
// machine image's Python 3.11: `python3 -m moto.server`), an AWS emulator
// nobody here wrote, so that the code that shells out to `aws` is shown
// against answers it did not shape.
//
// The CLI is reached through a wrapper named aws, first on PATH, that adds
// --endpoint-url to every call: the image's CLI (v1) ignores
// AWS_ENDPOINT_URL for some services. moto keeps one backend per account:
// calls with the default test credentials are account 123456789012, and a
// session of `sts assume-role` into another account's role works in that
// account (moto's multi-account support).
package moto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvRequired, set to "required" (as .ci/run sets it), fails the tests
// that need moto when it is missing, instead of skipping them.
const EnvRequired = "NODELESS_EKS_MOTO"

// Account is the account of the default credentials; Other one reached
// only through a role.
const (
	Account = "123456789012"
	Other   = "111122223333"
	Region  = "eu-west-1"
)

// Server is a running moto server and the AWS CLI wrapper that reaches it.
type Server struct {
	URL string
	// Bin holds the wrapper, named aws.
	Bin string
	aws string // the real CLI
}

var (
	once    sync.Once
	shared  *Server
	errOnce error
)

// Start returns the package's moto server, started on first use and
// stopped when the process ends; it skips the test when moto or the AWS
// CLI is missing (fails it under EnvRequired=required). Each call resets
// the server's state, so a test sees only what it made, and points this
// test's environment at it: PATH starts with the wrapper, the credentials
// are moto's, the region Region, no profile or config file is read.
func Start(t *testing.T) *Server {
	t.Helper()
	once.Do(func() { shared, errOnce = start() })
	if errOnce != nil {
		if os.Getenv(EnvRequired) == "required" {
			t.Fatalf("%s=required: %v", EnvRequired, errOnce)
		}
		t.Skip(errOnce.Error())
	}
	s := shared
	resp, err := http.Post(s.URL+"/moto-api/reset", "application/json", nil)
	if err != nil {
		t.Fatalf("resetting moto: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resetting moto: %s answered %s; the test would see another test's objects", s.URL, resp.Status)
	}
	t.Setenv("PATH", s.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_DEFAULT_REGION", Region)
	t.Setenv("AWS_REGION", Region)
	// The CLI reads an empty AWS_PROFILE as a profile named "": unset.
	unset(t, "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "credentials"))
	return s
}

// unset removes variables for the test, and puts them back after it.
func unset(t *testing.T, names ...string) {
	for _, name := range names {
		t.Setenv(name, "") // records the value for the test's cleanup
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

func start() (*Server, error) {
	real, err := exec.LookPath("aws")
	if err != nil {
		return nil, fmt.Errorf("no AWS CLI on PATH: %w", err)
	}
	if out, err := exec.Command("python3", "-c", "import moto.server").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("no moto server for python3 (pip install 'moto[server]==5.2.1'): %v: %s", err, bytes.TrimSpace(out))
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "moto-")
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "moto.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting moto: %w", err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	// moto answers within a second or two; 30 s bounds a slow machine.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			raw, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("moto did not answer on %s within 30s: %v; its log: %s", url, err, raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	wrapper := "#!/bin/sh\nexec '" + strings.ReplaceAll(real, "'", `'\''`) + "' --endpoint-url " + url + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "aws"), []byte(wrapper), 0o755); err != nil {
		return nil, err
	}
	return &Server{URL: url, Bin: bin, aws: real}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// AWS runs the AWS CLI against the server, with env added (a session of
// another account), and returns what it printed; it fails the test when
// the call fails.
func (s *Server) AWS(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	out, err := s.Try(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Try runs the AWS CLI against the server and returns its output, or an
// error with what it printed on stderr.
func (s *Server) Try(env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.Bin, "aws"), append(args, "--output", "json")...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("aws %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// In is the environment of a session in account's role named role
// (created by moto on assume, as any role ARN is accepted).
func (s *Server) In(t *testing.T, account, role string) []string {
	t.Helper()
	out := s.AWS(t, nil, "sts", "assume-role", "--role-arn", "arn:aws:iam::"+account+":role/"+role, "--role-session-name", "moto-test")
	var session struct {
		Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
	}
	if err := jsonUnmarshal(out, &session); err != nil || session.Credentials.AccessKeyId == "" {
		t.Fatalf("assume-role printed no credentials: %v: %s", err, out)
	}
	return []string{"AWS_ACCESS_KEY_ID=" + session.Credentials.AccessKeyId, "AWS_SECRET_ACCESS_KEY=" + session.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN=" + session.Credentials.SessionToken}
}

var errNoOutput = errors.New("no output")
