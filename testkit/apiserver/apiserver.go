// Package apiserver runs the real API server tier's servers, etcd and
// kube-apiserver, on 127.0.0.1, for the tests of test/realapi and the real
// Pulumi CLI tier of provider/: etcd from PATH (Debian's etcd-server),
// kube-apiserver at $NODELESS_EKS_KUBE_APISERVER or where
// test/apiserver/install.sh builds it. Without them a test skips, unless
// NODELESS_EKS_REAL_APISERVER is "required" (.ci/run sets it), when it
// fails.
package apiserver

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nodeless-eks/internal/kubeapi"
)

const (
	// EnvAPIServer names kube-apiserver's binary; EnvRequired, "required",
	// fails a test that cannot start the servers instead of skipping it.
	EnvAPIServer = "NODELESS_EKS_KUBE_APISERVER"
	EnvRequired  = "NODELESS_EKS_REAL_APISERVER"
	// EnvControllerManager names kube-controller-manager's binary.
	EnvControllerManager = "NODELESS_EKS_KUBE_CONTROLLER_MANAGER"
	// Version is the version test/apiserver/server builds.
	Version = "v1.36.3"
)

// Start starts the servers, on other ports when another process took one
// between its choice and the bind (other test binaries run beside this
// one), up to three times.
func Start() (*Server, error) {
	var s *Server
	var err error
	for try := 0; try < 3; try++ {
		if s, err = start(); !errors.Is(err, errPortTaken) {
			break
		}
	}
	return s, err
}

// Need starts the servers for one test, and stops them when it ends; it
// skips the test when etcd or kube-apiserver is missing, unless the tier
// is required, and fails it when they do not start.
func Need(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	switch {
	case errors.Is(err, ErrMissing) && os.Getenv(EnvRequired) != "required":
		t.Skip(err.Error())
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// errPortTaken is a start that failed because another process bound a
// port between its choice and the server's bind.
var errPortTaken = errors.New("a port the tier chose was taken before its server bound it")

// startFailed is the error of a start whose servers did not come up; one
// that names a port in use can be tried again on other ports.
func startFailed(dir, what string) error {
	logs := fmt.Sprintf("etcd: %s; kube-apiserver: %s", tail(filepath.Join(dir, "etcd.log")), tail(filepath.Join(dir, "kube-apiserver.log")))
	if strings.Contains(logs, "address already in use") {
		return fmt.Errorf("%w: %s; %s", errPortTaken, what, logs)
	}
	return fmt.Errorf("%s; %s", what, logs)
}

// ErrMissing is a start without etcd or kube-apiserver.
var ErrMissing = errors.New("the real API server tier needs etcd and kube-apiserver; run test/apiserver/install.sh (README, Tests)")

// Server is etcd and kube-apiserver on 127.0.0.1, each a process it
// started and stops by its PID.
type Server struct {
	dir            string
	etcd, api, kcm *proc
	URL, Token     string
	// CA is the PEM of the authority that signed the API server's
	// certificate.
	CA   []byte
	http *http.Client
	// Client is the cleanup's and the watch's client, with the static token.
	Client *kubeapi.Client
}

// Cached is the binary an install script builds into CacheDir()/rel, or
// $env when set. Without it the test skips, or fails when $required is
// "required" (.ci/run sets it), naming the script to run.
func Cached(t testing.TB, env, required, rel, install string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(CacheDir(), rel)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv(required) == "required" {
			t.Fatalf("%s is required and missing (%s): run %s", path, required, install)
		}
		t.Skipf("no %s: run %s", path, install)
	}
	return path
}

// NeedWithCollector starts the servers and kube-controller-manager with
// only its garbage collector and namespace controller, for one test: what
// pulumi-kubernetes' Foreground deletes and a namespace's deletion wait
// for. It skips or fails as Need does when a binary is missing.
func NeedWithCollector(t testing.TB) *Server {
	t.Helper()
	bin := Cached(t, EnvControllerManager, EnvRequired, filepath.Join("kube-controller-manager-"+Version, "kube-controller-manager"),
		"test/apiserver/install.sh")
	s := Need(t)
	kubeconfig := filepath.Join(s.dir, "kcm.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(s.Kubeconfig("")), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	s.kcm, err = launch(filepath.Join(s.dir, "kube-controller-manager.log"), bin, "--kubeconfig", kubeconfig,
		"--controllers", "garbage-collector-controller,namespace-controller", "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false")
	if err != nil {
		t.Fatal(err)
	}
	// Its health is not served (no port): the collector is up once it
	// logs its monitors synced (pkg/controller/garbagecollector/
	// garbagecollector.go, Run).
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(readAll(filepath.Join(s.dir, "kube-controller-manager.log")), "all resource monitors have synced") {
		if s.kcm.exited() || time.Now().After(deadline) {
			t.Fatalf("kube-controller-manager did not sync its garbage collector within a minute: %s", tail(filepath.Join(s.dir, "kube-controller-manager.log")))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s
}

// readAll is a file's text, or "".
func readAll(file string) string {
	raw, _ := os.ReadFile(file)
	return string(raw)
}

// freePorts are n ports of 127.0.0.1 that were free: all are held until
// all are chosen, so that none is chosen twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Binary is where kube-apiserver is: $NODELESS_EKS_KUBE_APISERVER, or
// where test/apiserver/install.sh builds it.
func Binary() string {
	if p := os.Getenv(EnvAPIServer); p != "" {
		return p
	}
	return filepath.Join(CacheDir(), "kube-apiserver-"+Version, "kube-apiserver")
}

// CacheDir is where the install scripts build, as they choose it
// (os.UserCacheDir differs on macOS).
func CacheDir() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "nodeless-eks")
}

// start runs etcd, then kube-apiserver, and waits until the API server is
// ready (/readyz), within a minute.
func start() (*Server, error) {
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("%w: no etcd on PATH", ErrMissing)
	}
	apiBin := Binary()
	if _, err := os.Stat(apiBin); err != nil {
		return nil, fmt.Errorf("%w: no %s", ErrMissing, apiBin)
	}
	dir, err := os.MkdirTemp("", "realapi-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, Token: "realapi-admin-token"}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	clientPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	s.etcd, err = launch(filepath.Join(dir, "etcd.log"), etcdBin, "--name", "realapi", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "realapi="+peerURL)
	if err != nil {
		return nil, err
	}
	if err := s.writeCredentials(); err != nil {
		return nil, err
	}
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	s.api, err = launch(filepath.Join(dir, "kube-apiserver.log"), apiBin,
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--tls-cert-file", filepath.Join(dir, "serving.crt"),
		"--tls-private-key-file", filepath.Join(dir, "serving.key"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow", "--service-cluster-ip-range", "10.96.0.0/16",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		// No controller manager creates service accounts; the tests play the
		// controllers they need.
		"--disable-admission-plugins", "ServiceAccount")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CA)
	s.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	if s.Client, err = kubeapi.New(s.Kubeconfig("")); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		status, _, err := s.Do(context.Background(), http.MethodGet, "/readyz", "", nil)
		if err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return nil, startFailed(dir, fmt.Sprintf("kube-apiserver not ready within a minute (%v, %d)", err, status))
		}
		if s.api.exited() || s.etcd.exited() {
			return nil, startFailed(dir, "a server exited")
		}
		time.Sleep(200 * time.Millisecond)
	}
	ok = true
	return s, nil
}

// proc is a server process the tier started; done closes when it exits.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// launch starts a server with its output in logFile.
func launch(logFile, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Its own process group, and on Linux killed with the test binary: a
	// panic or go test's timeout skips stop().
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func tail(file string) string {
	raw, _ := os.ReadFile(file)
	if len(raw) > 3000 {
		raw = raw[len(raw)-3000:]
	}
	return string(raw)
}

// Stop ends the API server, then etcd (the API server would otherwise
// retry etcd until it is killed), each by its PID, and removes their
// files.
func (s *Server) Stop() {
	for _, p := range []*proc{s.kcm, s.api, s.etcd} {
		if p == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = os.RemoveAll(s.dir)
}

// writeCredentials writes a CA and the API server's certificate for
// 127.0.0.1, the service account signing key, and the static token file
// whose one token is a member of system:masters.
func (s *Server) writeCredentials() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "realapi-ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := map[string][]byte{
		"serving.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"serving.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"sa.key":      pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}),
		"tokens.csv":  []byte(s.Token + ",realapi-admin,realapi-admin,\"system:masters\"\n"),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(s.dir, name), content, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Kubeconfig is a JSON kubeconfig of the server, authenticated as
// pulumi-eks's is: by an exec credential plugin when execPlugin is a
// command (given the token in its environment), else by the token.
func (s *Server) Kubeconfig(execPlugin string) string {
	user := map[string]any{"token": s.Token}
	if execPlugin != "" {
		user = map[string]any{"exec": map[string]any{"apiVersion": "client.authentication.k8s.io/v1beta1", "command": execPlugin,
			"args": []string{"token"}, "env": []map[string]string{{"name": "REALAPI_TOKEN", "value": s.Token}}}}
	}
	raw, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "realapi",
		"clusters": []any{map[string]any{"name": "realapi", "cluster": map[string]any{"server": s.URL,
			"certificate-authority-data": base64.StdEncoding.EncodeToString(s.CA)}}},
		"users":    []any{map[string]any{"name": "realapi", "user": user}},
		"contexts": []any{map[string]any{"name": "realapi", "context": map[string]any{"cluster": "realapi", "user": "realapi"}}},
	})
	return string(raw)
}

// ExecPlugin writes a credential plugin that prints the token it is given
// as an ExecCredential, as `aws eks get-token` prints EKS's.
func ExecPlugin(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "get-token")
	script := "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\"," +
		"\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}' \"$REALAPI_TOKEN\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Do sends a request with the admin token; contentType "" sends JSON.
func (s *Server) Do(ctx context.Context, method, path, contentType string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		switch b := body.(type) {
		case []byte:
			r = bytes.NewReader(b)
		case string:
			r = strings.NewReader(b)
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				return 0, nil, err
			}
			r = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Must sends a request the test needs to succeed, and decodes the answer.
func (s *Server) Must(t testing.TB, method, path, contentType string, body any) map[string]any {
	t.Helper()
	status, out, err := s.Do(context.Background(), method, path, contentType, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status >= 300 {
		t.Fatalf("%s %s: %d: %s", method, path, status, out)
	}
	var obj map[string]any
	if len(out) > 0 {
		if err := json.Unmarshal(out, &obj); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return obj
}
