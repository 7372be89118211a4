// Package pulumicloud calls Pulumi Cloud's REST API with the standard
// library alone: deploy/ and the recovery of pending operations use it, so
// that `go run` on a runner compiles it in seconds. Every call sends the
// headers the REST API documents for every request
// (https://www.pulumi.com/docs/reference/cloud-rest-api/): Accept
// application/vnd.pulumi+8, Content-Type application/json and
// Authorization "token <token>".
package pulumicloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultAPI is Pulumi Cloud's API; PULUMI_API, the variable the Pulumi CLI
// reads for its API URL (sdk/go/common/env), overrides it.
const DefaultAPI = "https://api.pulumi.com"

// Client calls the API with one token.
type Client struct {
	API, Token string
}

// httpClient bounds every call; one for all clients, so that they share
// connections.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// Error is an answer other than success: its status and Pulumi Cloud's
// message.
type Error struct {
	Method, URL string
	Code        int
	Message     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: Pulumi Cloud answered %d: %s", e.Method, e.URL, e.Code, e.Message)
}

// StatusOf is the status of an *Error in err's chain, 0 when there is none
// (the request never got an answer).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// Call sends one request (in as its JSON body when not nil) and decodes
// the answer into out when out is not nil. An empty or null answer leaves
// out as it was: a caller that needs a field must check that it came.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := strings.TrimSuffix(c.API, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.pulumi+8")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+c.Token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var apiErr struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(raw, &apiErr)
		if apiErr.Message == "" {
			apiErr.Message = http.StatusText(resp.StatusCode)
		}
		return &Error{Method: method, URL: u, Code: resp.StatusCode, Message: apiErr.Message}
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("reading the answer to %s %s: %w", method, u, err)
		}
	}
	return nil
}

// Load is a client with the API and token the Pulumi CLI would use: the
// API of PULUMI_API, else of the backend `pulumi login` made current (an
// http(s) URL: Pulumi Cloud or a self-hosted one), else DefaultAPI; the
// token of PULUMI_ACCESS_TOKEN, else the one `pulumi login` stored for that
// API in ~/.pulumi/credentials.json (PULUMI_HOME moves the directory; the
// file has "current" and, by backend URL, "accessTokens": pulumi/pulumi
// sdk/go/common/workspace/creds.go). Token is "" when neither has one;
// source says where it came from. The file is read only when the
// environment leaves the API or the token to it; one that cannot be read
// or parsed is an error naming it, as the CLI's GetStoredCredentials makes
// it, not a missing token.
func Load() (c *Client, source string, err error) {
	c, source, err = load()
	if err != nil {
		return nil, "", err
	}
	return c, source, nil
}

// FromEnvironment is Load for callers that go on without a token: a
// credentials file it cannot read counts as none. Load says why.
func FromEnvironment() (c *Client, source string) {
	c, source, _ = load()
	return c, source
}

// load is Load's client even when the credentials file fails: the
// environment's API and token, or DefaultAPI and none.
func load() (*Client, string, error) {
	api := strings.TrimSuffix(os.Getenv("PULUMI_API"), "/")
	token := os.Getenv("PULUMI_ACCESS_TOKEN")
	var creds credentials
	var path string
	var err error
	if api == "" || token == "" {
		creds, path, err = readCredentials()
	}
	if api == "" && (strings.HasPrefix(creds.Current, "https://") || strings.HasPrefix(creds.Current, "http://")) {
		api = strings.TrimSuffix(creds.Current, "/")
	}
	if api == "" {
		api = DefaultAPI
	}
	switch {
	case token != "":
		return &Client{API: api, Token: token}, "PULUMI_ACCESS_TOKEN", err
	case creds.AccessTokens[api] != "":
		return &Client{API: api, Token: creds.AccessTokens[api]}, path, err
	}
	return &Client{API: api}, "", err
}

// credentials is what load reads of the Pulumi CLI's credentials file.
type credentials struct {
	Current      string            `json:"current"`
	AccessTokens map[string]string `json:"accessTokens"`
}

// readCredentials reads the Pulumi CLI's credentials file, and says where
// it is; a file that is not there holds none, and is no error.
func readCredentials() (credentials, string, error) {
	home := os.Getenv("PULUMI_HOME")
	if home == "" {
		dir, err := os.UserHomeDir()
		if err != nil {
			return credentials{}, "", nil
		}
		home = filepath.Join(dir, ".pulumi")
	}
	path := filepath.Join(home, "credentials.json")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return credentials{}, path, nil
	}
	if err != nil {
		return credentials{}, path, fmt.Errorf("reading the Pulumi CLI's credentials: %w", err)
	}
	var creds credentials
	if err := json.Unmarshal(raw, &creds); err != nil {
		return credentials{}, path, fmt.Errorf("reading the Pulumi CLI's credentials in %s (run `pulumi login` again to rewrite it, "+
			"or set PULUMI_ACCESS_TOKEN and PULUMI_API): %w", path, err)
	}
	return creds, path, nil
}
