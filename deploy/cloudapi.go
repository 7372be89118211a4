package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// cloudAPI calls Pulumi Cloud's REST API with one token. Every call sends
// the headers the REST API documents for every request
// (https://www.pulumi.com/docs/reference/cloud-rest-api/).
type cloudAPI struct{ URL, Token string }

// loadCloudAPI is the API and token the Pulumi CLI would use: PULUMI_API
// and PULUMI_ACCESS_TOKEN, else the backend `pulumi login` made current
// and its token, read as the CLI reads them (workspace.GetStoredCredentials,
// which decrypts a credentials file the OS keychain protects). A
// credentials file it cannot read is an error naming it, not a missing
// token.
func loadCloudAPI() (*cloudAPI, error) {
	api := &cloudAPI{URL: strings.TrimSuffix(os.Getenv("PULUMI_API"), "/"), Token: os.Getenv("PULUMI_ACCESS_TOKEN")}
	if api.URL == "" || api.Token == "" {
		creds, err := workspace.GetStoredCredentials()
		if err != nil {
			return nil, fmt.Errorf("reading the Pulumi CLI's credentials (run `pulumi login` again, or set PULUMI_ACCESS_TOKEN and PULUMI_API): %w", err)
		}
		if api.URL == "" && (strings.HasPrefix(creds.Current, "https://") || strings.HasPrefix(creds.Current, "http://")) {
			api.URL = strings.TrimSuffix(creds.Current, "/")
		}
		api.URL = cmp.Or(api.URL, "https://api.pulumi.com") // a self-managed backend's login has no API
		if api.Token == "" {
			api.Token = creds.Accounts[api.URL].AccessToken
		}
	}
	if api.Token == "" {
		return nil, fmt.Errorf("no Pulumi Cloud token for %s: deploy/ reads and writes the organization with an admin's, "+
			"PULUMI_ACCESS_TOKEN or `pulumi login`", api.URL)
	}
	return api, nil
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// apiError is an answer other than success: its status and message.
type apiError struct {
	Method, URL string
	Code        int
	Message     string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: Pulumi Cloud answered %d: %s", e.Method, e.URL, e.Code, e.Message)
}

// statusOf is the status of an *apiError in err's chain, 0 without one.
func statusOf(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// call sends one request (in as its JSON body when not nil) and decodes
// the answer into out when out is not nil.
func (a *cloudAPI) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.pulumi+8")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+a.Token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return err
	case resp.StatusCode/100 != 2:
		var e struct{ Message string }
		_ = json.Unmarshal(raw, &e)
		return &apiError{Method: method, URL: req.URL.String(), Code: resp.StatusCode, Message: cmp.Or(e.Message, http.StatusText(resp.StatusCode))}
	case out != nil && len(bytes.TrimSpace(raw)) > 0:
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("reading the answer to %s %s: %w", method, req.URL, err)
		}
	}
	return nil
}
