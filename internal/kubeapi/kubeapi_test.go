package kubeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAPIServer serves two pages of nodepools, deletes, and /version, and
// records the bearer tokens it is given.
type fakeAPIServer struct {
	mu      sync.Mutex
	tokens  []string
	deleted []string
	// expire answers 410 Gone to the next so many continued lists of
	// nodeclaims, as a server that compacted the revision does.
	expire        int
	claimRequests []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.tokens = append(f.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	f.mu.Unlock()
	switch {
	case r.URL.Path == "/version":
		fmt.Fprint(w, `{"gitVersion":"v1.36.0-eks"}`)
	case r.URL.Path == "/apis/karpenter.sh/v1/nodepools" && r.URL.Query().Get("continue") == "":
		fmt.Fprint(w, `{"metadata":{"continue":"page2"},"items":[{"metadata":{"name":"general","labels":{"nodeless-eks/stack":"p.s"}}}]}`)
	case r.URL.Path == "/apis/karpenter.sh/v1/nodepools":
		fmt.Fprint(w, `{"metadata":{},"items":[{"metadata":{"name":"batch","deletionTimestamp":"2026-12-01T00:00:00Z"}}]}`)
	case r.URL.Path == "/apis/karpenter.sh/v1/nodeclaims":
		f.mu.Lock()
		f.claimRequests = append(f.claimRequests, r.URL.RawQuery)
		expire := f.expire > 0 && r.URL.Query().Get("continue") != ""
		if expire {
			f.expire--
		}
		f.mu.Unlock()
		switch {
		case expire:
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","reason":"Expired","message":"The provided continue parameter is too old to display a consistent list result."}`)
		case r.URL.Query().Get("continue") == "":
			fmt.Fprint(w, `{"metadata":{"continue":"page2"},"items":[{"metadata":{"name":"a"}}]}`)
		default:
			fmt.Fprint(w, `{"metadata":{},"items":[{"metadata":{"name":"b"}}]}`)
		}
	case r.URL.Path == "/apis/karpenter.k8s.aws/v1/ec2nodeclasses":
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","message":"the server could not find the requested resource"}`)
	case r.Method == http.MethodDelete && (r.URL.Path == "/api/v1/namespaces/shop/services/public" || r.URL.Path == "/api/v1/namespaces/shop/pods/stuck"):
		f.mu.Lock()
		f.deleted = append(f.deleted, r.URL.Path+"?"+r.URL.RawQuery)
		f.mu.Unlock()
		fmt.Fprint(w, `{}`)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"not found"}`)
	case r.URL.Path == "/api/v1/services":
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"message":"etcdserver: leader changed"}`)
	default:
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"forbidden"}`)
	}
}

// kubeconfigFor is what pulumi-eks writes: the server, its CA, and an exec
// plugin; the plugin here prints an ExecCredential as aws eks get-token does.
func kubeconfigFor(t *testing.T, srv *httptest.Server, token string) string {
	t.Helper()
	return kubeconfigWith(t, srv, `echo "$CRED"`, token, "2099-01-01T00:00:00Z")
}

// kubeconfigWith runs script as the exec plugin, with CRED set to an
// ExecCredential of token expiring at expires.
func kubeconfigWith(t *testing.T, srv *httptest.Server, script, token, expires string) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cred := fmt.Sprintf(`{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"%s","expirationTimestamp":"%s"}}`, token, expires)
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config",
		"clusters": []any{map[string]any{"name": "c", "cluster": map[string]any{
			"server": srv.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(ca)}}},
		"users": []any{map[string]any{"name": "u", "user": map[string]any{"exec": map[string]any{
			"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
			"args": []string{"-c", script},
			"env":  []any{map[string]any{"name": "CRED", "value": cred}},
		}}}},
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	return string(b)
}

func TestClient(t *testing.T) {
	fake := &fakeAPIServer{}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	c, err := New(kubeconfigFor(t, srv, "k8s-aws-v1.token"))
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("it trusts the cluster's CA and authenticates with the exec plugin's token", func(t *testing.T) {
		require.NoError(t, c.Ping(ctx))
		assert.Equal(t, "k8s-aws-v1.token", fake.tokens[0])
	})
	t.Run("a list follows continue tokens", func(t *testing.T) {
		pools, err := c.List(ctx, Resource{GroupVersion: "karpenter.sh/v1", Plural: "nodepools"})
		require.NoError(t, err)
		require.Len(t, pools, 2)
		assert.Equal(t, "p.s", pools[0].Label("nodeless-eks/stack"))
		assert.False(t, pools[0].Deleting())
		assert.True(t, pools[1].Deleting())
	})
	t.Run("a kind that is not served is NotFound", func(t *testing.T) {
		_, err := c.List(ctx, Resource{GroupVersion: "karpenter.k8s.aws/v1", Plural: "ec2nodeclasses"})
		require.Error(t, err)
		assert.True(t, IsNotFound(err))
		assert.Contains(t, err.Error(), "the server could not find the requested resource")
	})
	t.Run("a 503 is transient, a 403 is not", func(t *testing.T) {
		_, err := c.List(ctx, Resource{GroupVersion: "v1", Plural: "services", Namespaced: true})
		assert.True(t, IsTransient(err), "%v", err)
		_, err = c.List(ctx, Resource{GroupVersion: "v1", Plural: "pods", Namespaced: true})
		assert.False(t, IsTransient(err), "%v", err)
		assert.Contains(t, err.Error(), "API server answered 403: forbidden")
	})
	t.Run("deletes go to the object's path; one already gone is fine", func(t *testing.T) {
		services := Resource{GroupVersion: "v1", Plural: "services", Namespaced: true}
		require.NoError(t, c.Delete(ctx, services, "shop", "public"))
		require.NoError(t, c.Delete(ctx, services, "shop", "gone"))
		require.NoError(t, c.DeleteNow(ctx, Pods, "shop", "stuck"))
		assert.Equal(t, []string{"/api/v1/namespaces/shop/services/public?propagationPolicy=Background",
			"/api/v1/namespaces/shop/pods/stuck?gracePeriodSeconds=0&propagationPolicy=Background"}, fake.deleted)
	})
	t.Run("a list whose continue token expired starts over", func(t *testing.T) {
		fake.mu.Lock()
		fake.expire, fake.claimRequests = 1, nil
		fake.mu.Unlock()
		claims, err := c.List(ctx, NodeClaims)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, []string{claims[0].Name(), claims[1].Name()}, "the first page is read again, not kept twice")
		assert.Equal(t, []string{"limit=500", "continue=page2&limit=500", "limit=500", "continue=page2&limit=500"}, fake.claimRequests)
	})
	t.Run("a list that keeps expiring fails, saying so", func(t *testing.T) {
		fake.mu.Lock()
		fake.expire = 99
		fake.mu.Unlock()
		_, err := c.List(ctx, NodeClaims)
		require.Error(t, err)
		assert.True(t, IsExpired(err))
		assert.Contains(t, err.Error(), "API server answered 410: The provided continue parameter is too old")
	})
}

func TestTokenCache(t *testing.T) {
	srv := httptest.NewTLSServer(&fakeAPIServer{})
	defer srv.Close()
	runs := filepath.Join(t.TempDir(), "runs")
	// The plugin counts its runs and numbers its tokens, as a fresh
	// presigned URL differs each time.
	script := `echo run >> ` + runs + `; n=$(wc -l < ` + runs + `); echo "$CRED" | sed "s/TOKEN/token-$n/"`
	count := func() int {
		raw, _ := os.ReadFile(runs)
		return strings.Count(string(raw), "run")
	}
	t.Run("a token is reused until a minute before it expires", func(t *testing.T) {
		c, err := New(kubeconfigWith(t, srv, script, "TOKEN", time.Now().Add(10*time.Minute).UTC().Format(time.RFC3339)))
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, c.Ping(context.Background()))
		}
		assert.Equal(t, 1, count(), "the plugin ran once for three requests")
	})
	t.Run("one that expires within the minute is renewed", func(t *testing.T) {
		require.NoError(t, os.Remove(runs))
		c, err := New(kubeconfigWith(t, srv, script, "TOKEN", time.Now().Add(30*time.Second).UTC().Format(time.RFC3339)))
		require.NoError(t, err)
		for range 2 {
			require.NoError(t, c.Ping(context.Background()))
		}
		assert.Equal(t, 2, count(), "each request needed a new token")
	})
}

func TestClientFailures(t *testing.T) {
	t.Run("a server that is not there is unreachable and transient", func(t *testing.T) {
		srv := httptest.NewTLSServer(&fakeAPIServer{})
		cfg := kubeconfigFor(t, srv, "t")
		srv.Close()
		c, err := New(cfg)
		require.NoError(t, err)
		err = c.Ping(context.Background())
		require.Error(t, err)
		assert.True(t, IsUnreachable(err), "%v", err)
		assert.True(t, IsTransient(err), "%v", err)
		assert.False(t, IsGone(err))
	})
	t.Run("a server it cannot trust is an error, not an absent cluster", func(t *testing.T) {
		srv := httptest.NewTLSServer(&fakeAPIServer{})
		defer srv.Close()
		// A CA that did not sign srv's certificate (every httptest server
		// shares one certificate, so make another).
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "someone else's CA"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}
		other, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		cfg := strings.Replace(kubeconfigFor(t, srv, "t"),
			base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})),
			base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other})), 1)
		c, err := New(cfg)
		require.NoError(t, err)
		err = c.Ping(context.Background())
		require.ErrorContains(t, err, "certificate signed by unknown authority")
		assert.False(t, IsUnreachable(err), "%v", err)
		assert.False(t, IsTransient(err), "%v", err)
	})
	t.Run("plain HTTP where HTTPS was expected is an error, not an absent cluster", func(t *testing.T) {
		srv := httptest.NewServer(&fakeAPIServer{})
		defer srv.Close()
		tlsSrv := httptest.NewTLSServer(&fakeAPIServer{})
		defer tlsSrv.Close()
		cfg := strings.Replace(kubeconfigFor(t, tlsSrv, "t"), tlsSrv.URL, strings.Replace(srv.URL, "http://", "https://", 1), 1)
		c, err := New(cfg)
		require.NoError(t, err)
		err = c.Ping(context.Background())
		require.Error(t, err)
		assert.False(t, IsUnreachable(err), "%v", err)
		assert.False(t, IsTransient(err), "%v", err)
	})
	t.Run("a name that no longer resolves means the cluster is gone", func(t *testing.T) {
		err := fmt.Errorf("listing: %w", &net.DNSError{Err: "no such host", Name: "x.eks.amazonaws.com", IsNotFound: true})
		assert.True(t, IsGone(err))
	})
	t.Run("a failing credential plugin is reported with its output", func(t *testing.T) {
		srv := httptest.NewTLSServer(&fakeAPIServer{})
		defer srv.Close()
		cfg := strings.Replace(kubeconfigFor(t, srv, "t"), `echo \"$CRED\"`, `echo 'Unable to locate credentials' >&2; exit 255`, 1)
		c, err := New(cfg)
		require.NoError(t, err)
		err = c.Ping(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Unable to locate credentials")
		assert.False(t, IsTransient(err))
	})
	t.Run("a kubeconfig without a server or a user is refused", func(t *testing.T) {
		_, err := New(`{"clusters":[],"users":[]}`)
		assert.EqualError(t, err, "the kubeconfig names no cluster server")
		_, err = New(`{"clusters":[{"cluster":{"server":"https://x"}}],"users":[{"user":{}}]}`)
		assert.ErrorContains(t, err, "no user with a token or an exec credential plugin")
		_, err = New(`not json`)
		assert.ErrorContains(t, err, "reading the kubeconfig (JSON)")
	})
	t.Run("context deadlines and broken connections are transient; a TLS alert is not", func(t *testing.T) {
		assert.True(t, IsTransient(fmt.Errorf("x: %w", context.DeadlineExceeded)))
		assert.True(t, IsTransient(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}))
		assert.False(t, IsTransient(&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}))
		assert.False(t, IsTransient(errors.New("bad request")))
	})
}
