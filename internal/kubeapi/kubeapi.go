// Package kubeapi is a small Kubernetes API client built on the standard
// library alone: it reads a kubeconfig in JSON (pulumi-eks's
// kubeconfigJson), authenticates through its exec credential plugin (`aws
// eks get-token`), and lists and deletes objects as unstructured JSON. The
// destroy cleanup uses it so that `go run` compiles it in seconds from the
// standard library the program's own build already compiled, instead of
// the minute and more that client-go's clientsets take on a cold runner.
package kubeapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Resource names a kind of object: its API path prefix ("/api/v1",
// "/apis/karpenter.sh/v1") and plural resource name.
type Resource struct {
	// GroupVersion is "v1" for the core group, else "<group>/<version>".
	GroupVersion string
	// Plural is the resource's plural name ("nodepools").
	Plural string
	// Namespaced objects live in a namespace, which Delete then names.
	Namespaced bool
	// Kind is the object kind, for messages ("NodePool").
	Kind string
}

// The kinds the destroy cleanup and the bootstrap watch read or delete.
var (
	Pods         = Resource{GroupVersion: "v1", Plural: "pods", Namespaced: true, Kind: "Pod"}
	Events       = Resource{GroupVersion: "v1", Plural: "events", Namespaced: true, Kind: "Event"}
	Services     = Resource{GroupVersion: "v1", Plural: "services", Namespaced: true, Kind: "Service"}
	Claims       = Resource{GroupVersion: "v1", Plural: "persistentvolumeclaims", Namespaced: true, Kind: "PersistentVolumeClaim"}
	Volumes      = Resource{GroupVersion: "v1", Plural: "persistentvolumes", Kind: "PersistentVolume"}
	Ingresses    = Resource{GroupVersion: "networking.k8s.io/v1", Plural: "ingresses", Namespaced: true, Kind: "Ingress"}
	StatefulSets = Resource{GroupVersion: "apps/v1", Plural: "statefulsets", Namespaced: true, Kind: "StatefulSet"}
	Gateways     = Resource{GroupVersion: "gateway.networking.k8s.io/v1", Plural: "gateways", Namespaced: true, Kind: "Gateway"}
	// The Gateway API's classes and routes, which keep the LB controller's
	// configurations in use.
	GatewayClasses = Resource{GroupVersion: "gateway.networking.k8s.io/v1", Plural: "gatewayclasses", Kind: "GatewayClass"}
	HTTPRoutes     = Resource{GroupVersion: "gateway.networking.k8s.io/v1", Plural: "httproutes", Namespaced: true, Kind: "HTTPRoute"}
	GRPCRoutes     = Resource{GroupVersion: "gateway.networking.k8s.io/v1", Plural: "grpcroutes", Namespaced: true, Kind: "GRPCRoute"}
	// The AWS Load Balancer Controller's own kinds that it finalizes
	// (pkg/shared_constants/finalizers.go at v3.5.0): bindings of target
	// groups, Global Accelerators, and the Gateway API configurations
	// (served as v1 from v3.5.0, v1beta1 before).
	TargetGroupBindings               = Resource{GroupVersion: "elbv2.k8s.aws/v1beta1", Plural: "targetgroupbindings", Namespaced: true, Kind: "TargetGroupBinding"}
	GlobalAccelerators                = Resource{GroupVersion: "aga.k8s.aws/v1beta1", Plural: "globalaccelerators", Namespaced: true, Kind: "GlobalAccelerator"}
	ListenerRuleConfigurations        = Resource{GroupVersion: "gateway.k8s.aws/v1", Plural: "listenerruleconfigurations", Namespaced: true, Kind: "ListenerRuleConfiguration"}
	LoadBalancerConfigurations        = Resource{GroupVersion: "gateway.k8s.aws/v1", Plural: "loadbalancerconfigurations", Namespaced: true, Kind: "LoadBalancerConfiguration"}
	TargetGroupConfigurations         = Resource{GroupVersion: "gateway.k8s.aws/v1", Plural: "targetgroupconfigurations", Namespaced: true, Kind: "TargetGroupConfiguration"}
	ListenerRuleConfigurationsV1beta1 = Resource{GroupVersion: "gateway.k8s.aws/v1beta1", Plural: "listenerruleconfigurations", Namespaced: true, Kind: "ListenerRuleConfiguration"}
	LoadBalancerConfigurationsV1beta1 = Resource{GroupVersion: "gateway.k8s.aws/v1beta1", Plural: "loadbalancerconfigurations", Namespaced: true, Kind: "LoadBalancerConfiguration"}
	TargetGroupConfigurationsV1beta1  = Resource{GroupVersion: "gateway.k8s.aws/v1beta1", Plural: "targetgroupconfigurations", Namespaced: true, Kind: "TargetGroupConfiguration"}
	VolumeAttachments                 = Resource{GroupVersion: "storage.k8s.io/v1", Plural: "volumeattachments", Kind: "VolumeAttachment"}
	NodePools                         = Resource{GroupVersion: "karpenter.sh/v1", Plural: "nodepools", Kind: "NodePool"}
	NodeClaims                        = Resource{GroupVersion: "karpenter.sh/v1", Plural: "nodeclaims", Kind: "NodeClaim"}
	EC2NodeClasses                    = Resource{GroupVersion: "karpenter.k8s.aws/v1", Plural: "ec2nodeclasses", Kind: "EC2NodeClass"}
	Secrets                           = Resource{GroupVersion: "v1", Plural: "secrets", Namespaced: true, Kind: "Secret"}
	StorageClasses                    = Resource{GroupVersion: "storage.k8s.io/v1", Plural: "storageclasses", Kind: "StorageClass"}
	CRDs                              = Resource{GroupVersion: "apiextensions.k8s.io/v1", Plural: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
)

func (r Resource) String() string {
	if r.GroupVersion == "v1" {
		return r.Plural
	}
	return r.Plural + "." + r.GroupVersion
}

func (r Resource) base() string {
	if r.GroupVersion == "v1" {
		return "/api/v1"
	}
	return "/apis/" + r.GroupVersion
}

// Object is an object as the API returns it.
type Object map[string]any

// Name is metadata.name; Namespace metadata.namespace.
func (o Object) Name() string      { return o.Str("metadata", "name") }
func (o Object) Namespace() string { return o.Str("metadata", "namespace") }

// Label is the value of a metadata label, "" if absent.
func (o Object) Label(key string) string { return o.Str("metadata", "labels", key) }

// Annotation is the value of a metadata annotation, "" if absent.
func (o Object) Annotation(key string) string { return o.Str("metadata", "annotations", key) }

// Deleting reports whether the object has a deletion timestamp.
func (o Object) Deleting() bool { return o.Str("metadata", "deletionTimestamp") != "" }

// Get follows path through nested objects; nil if any step is absent.
func (o Object) Get(path ...string) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// Str is Get as a string, "" when absent or not a string.
func (o Object) Str(path ...string) string {
	s, _ := o.Get(path...).(string)
	return s
}

// Time is Get as an RFC 3339 time (how the API server writes
// timestamps), the zero time when absent or not one.
func (o Object) Time(path ...string) time.Time {
	t, _ := time.Parse(time.RFC3339, o.Str(path...))
	return t
}

// Items is the list at path as objects (a status's conditions, a pod's
// volumes); an element that is not an object is an empty one.
func (o Object) Items(path ...string) []Object {
	list, _ := o.Get(path...).([]any)
	out := make([]Object, 0, len(list))
	for _, raw := range list {
		m, _ := raw.(map[string]any)
		out = append(out, m)
	}
	return out
}

// Qualified is "namespace/name", or name for a cluster-wide object.
func Qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// API is what the cleanup asks of a cluster.
type API interface {
	// List returns every object of r (across namespaces when namespaced).
	List(ctx context.Context, r Resource) ([]Object, error)
	// Delete deletes one object; deleting one that is gone is not an error.
	Delete(ctx context.Context, r Resource, namespace, name string) error
	// DeleteNow deletes one object without a grace period: a pod whose
	// kubelet never confirmed its graceful deletion goes at once.
	DeleteNow(ctx context.Context, r Resource, namespace, name string) error
	// Ping checks that the API server answers.
	Ping(ctx context.Context) error
}

// StatusError is an answer of the API server other than success.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("API server answered %d: %s", e.Code, e.Message)
}

// IsNotFound reports a 404: the object, or its whole resource (a CRD that
// is not installed), does not exist.
func IsNotFound(err error) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Code == http.StatusNotFound
}

// IsExpired reports a 410 Gone: the continue token of a paged list has
// expired (the server compacted the revision it pointed at), and the list
// must start over (Kubernetes API concepts, "Retrieving large results sets
// in chunks"; apimachinery's errors.IsResourceExpired).
func IsExpired(err error) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Code == http.StatusGone
}

// IsTransient reports an error that a retry may cure: the server or the
// network failing for now, or throttling.
func IsTransient(err error) bool {
	var s *StatusError
	if errors.As(err, &s) {
		return s.Code == http.StatusTooManyRequests || s.Code >= 500
	}
	// A connection that broke mid-request (*net.OpError "read" or
	// "write") may work next time; a TLS alert ("remote error") or a
	// protocol error will not.
	var opErr *net.OpError
	broken := errors.As(err, &opErr) && (opErr.Op == "read" || opErr.Op == "write")
	return errors.Is(err, context.DeadlineExceeded) || IsUnreachable(err) || broken || errors.Is(err, io.ErrUnexpectedEOF)
}

// IsUnreachable reports an API server that could not be reached at all: a
// connection refused or never made, a name that does not resolve, or no
// answer in time. Not an answer it could not trust: every error of
// http.Client.Do is a *url.Error, itself a net.Error, so a certificate the
// CA does not sign, or a proxy that speaks plain HTTP, would otherwise pass
// for an absent cluster, and the cleanup would skip instead of failing.
func IsUnreachable(err error) bool {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// IsGone reports an endpoint whose name no longer resolves: EKS removes a
// cluster's DNS name with the cluster.
func IsGone(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// Client talks to one cluster.
type Client struct {
	server string
	http   *http.Client
	exec   *execConfig
	token  string

	mu      sync.Mutex
	cached  string
	expires time.Time
	// skew is the API server's clock less this machine's, from the Date
	// header of its last answer; known once it has answered.
	skew      time.Duration
	skewKnown bool
}

// ServerNow is the API server's clock: this machine's, corrected by how
// far apart the two were at the server's last answer (its Date header,
// RFC 7231, to the second), so that a timestamp the server wrote (a
// condition's lastTransitionTime) is aged on the clock that wrote it.
// ok is false until the server has answered.
func (c *Client) ServerNow() (now time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.skewKnown {
		return time.Now(), false
	}
	return time.Now().Add(c.skew), true
}

type kubeconfig struct {
	Clusters []struct {
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		User struct {
			Token string      `json:"token"`
			Exec  *execConfig `json:"exec"`
		} `json:"user"`
	} `json:"users"`
}

type execConfig struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
}

// ExecPlugin is the credential plugin of a JSON kubeconfig's first user:
// its command, arguments and the environment it adds ("NAME=value"); ok
// is false when the user has none.
func ExecPlugin(kubeconfigJSON string) (command string, args, env []string, ok bool) {
	var kc kubeconfig
	if json.Unmarshal([]byte(kubeconfigJSON), &kc) != nil || len(kc.Users) == 0 || kc.Users[0].User.Exec == nil {
		return "", nil, nil, false
	}
	e := kc.Users[0].User.Exec
	for _, v := range e.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	return e.Command, e.Args, env, true
}

// New reads a JSON kubeconfig with one cluster and one user, which
// authenticates with a token or an exec credential plugin.
func New(kubeconfigJSON string) (*Client, error) {
	var kc kubeconfig
	if err := json.Unmarshal([]byte(kubeconfigJSON), &kc); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig (JSON): %w", err)
	}
	if len(kc.Clusters) == 0 || kc.Clusters[0].Cluster.Server == "" {
		return nil, errors.New("the kubeconfig names no cluster server")
	}
	if len(kc.Users) == 0 || (kc.Users[0].User.Exec == nil && kc.Users[0].User.Token == "") {
		return nil, errors.New("the kubeconfig has no user with a token or an exec credential plugin")
	}
	cl := kc.Clusters[0].Cluster
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cl.CertificateAuthorityData != "" {
		ca, err := base64.StdEncoding.DecodeString(cl.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("decoding certificate-authority-data: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("certificate-authority-data holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	return &Client{
		server: cl.Server,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment,
			DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		}},
		exec:  kc.Users[0].User.Exec,
		token: kc.Users[0].User.Token,
	}, nil
}

// bearer returns a token, running the exec plugin when the last one is
// about to expire (EKS tokens live 15 minutes: aws-iam-authenticator's
// presigned URL lifetime; `aws eks get-token` reports it in
// expirationTimestamp, which this honours too).
func (c *Client) bearer(ctx context.Context) (string, error) {
	if c.exec == nil {
		return c.token, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached != "" && time.Now().Before(c.expires.Add(-time.Minute)) {
		return c.cached, nil
	}
	cmd := exec.CommandContext(ctx, c.exec.Command, c.exec.Args...)
	// Once the plugin exits or ctx ends, a child of it that still holds
	// its output open is cut off after WaitDelay (os/exec, Cmd.WaitDelay):
	// without it, Output waits for that child however long it lives.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = os.Environ()
	for _, e := range c.exec.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s for a token: %w: %s", c.exec.Command, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var cred struct {
		Status struct {
			Token               string    `json:"token"`
			ExpirationTimestamp time.Time `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &cred); err != nil || cred.Status.Token == "" {
		return "", fmt.Errorf("%s printed no ExecCredential token", c.exec.Command)
	}
	c.cached, c.expires = cred.Status.Token, cred.Status.ExpirationTimestamp
	if c.expires.IsZero() {
		c.expires = time.Now().Add(10 * time.Minute)
	}
	return c.cached, nil
}

func (c *Client) do(ctx context.Context, method, path string) ([]byte, error) {
	token, err := c.bearer(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		// The Date is the second the answer was made, truncated: half a
		// second is its mean error.
		c.mu.Lock()
		c.skew, c.skewKnown = date.Add(500*time.Millisecond).Sub(time.Now()), true
		c.mu.Unlock()
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var status struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &status)
		if status.Message == "" {
			status.Message = http.StatusText(resp.StatusCode)
		}
		return nil, &StatusError{Code: resp.StatusCode, Message: status.Message}
	}
	return body, nil
}

// Ping asks the server for its version.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/version")
	return err
}

// List returns every object of r, following continue tokens.
func (c *Client) List(ctx context.Context, r Resource) ([]Object, error) {
	return c.ListIn(ctx, r, "", nil)
}

// expiredListRestarts bounds how often a paged list starts over after its
// continue token expired: client-go's pager falls back to one full list
// (tools/pager); a cluster that compacts faster than a few pages are read
// is one to report, not to loop on.
const expiredListRestarts = 3

// ListIn returns the objects of r in namespace ("" for all) that match
// query (labelSelector, fieldSelector), following continue tokens, and
// starting over when a continue token has expired.
func (c *Client) ListIn(ctx context.Context, r Resource, namespace string, query url.Values) ([]Object, error) {
	var out []Object
	next, restarts := "", 0
	for {
		q := url.Values{"limit": {"500"}}
		for k, v := range query {
			q[k] = v
		}
		if next != "" {
			q.Set("continue", next)
		}
		path := r.base() + "/"
		if namespace != "" {
			path += "namespaces/" + url.PathEscape(namespace) + "/"
		}
		path += r.Plural + "?" + q.Encode()
		body, err := c.do(ctx, http.MethodGet, path)
		if err != nil && next != "" && IsExpired(err) && restarts < expiredListRestarts {
			out, next = nil, ""
			restarts++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", r, err)
		}
		var list struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []Object `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("reading the list of %s: %w", r, err)
		}
		out = append(out, list.Items...)
		if next = list.Metadata.Continue; next == "" {
			return out, nil
		}
	}
}

// objectPath is the API path of one object of r.
func (r Resource) objectPath(namespace, name string) string {
	path := r.base() + "/"
	if r.Namespaced {
		path += "namespaces/" + url.PathEscape(namespace) + "/"
	}
	return path + r.Plural + "/" + url.PathEscape(name)
}

// Get returns one object; a 404 is a *StatusError IsNotFound tells.
func (c *Client) Get(ctx context.Context, r Resource, namespace, name string) (Object, error) {
	body, err := c.do(ctx, http.MethodGet, r.objectPath(namespace, name))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", r, Qualified(namespace, name), err)
	}
	var o Object
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", r, Qualified(namespace, name), err)
	}
	return o, nil
}

// Logs returns the last lines of a container's log; previous asks for the
// container's previous run, the one that crashed.
func (c *Client) Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int) (string, error) {
	q := url.Values{"tailLines": {fmt.Sprint(lines)}, "container": {container}}
	if previous {
		q.Set("previous", "true")
	}
	body, err := c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/pods/"+url.PathEscape(pod)+"/log?"+q.Encode())
	if err != nil {
		return "", fmt.Errorf("reading the log of %s/%s: %w", namespace, pod, err)
	}
	return string(body), nil
}

// Delete deletes one object, its dependents (a StatefulSet's pods) in the
// background; one already gone is fine.
func (c *Client) Delete(ctx context.Context, r Resource, namespace, name string) error {
	return c.delete(ctx, r, namespace, name, url.Values{"propagationPolicy": {"Background"}})
}

// DeleteNow deletes one object with a grace period of zero, which the API
// server applies at once instead of waiting for the kubelet (kubectl
// delete --grace-period=0 --force).
func (c *Client) DeleteNow(ctx context.Context, r Resource, namespace, name string) error {
	return c.delete(ctx, r, namespace, name, url.Values{"propagationPolicy": {"Background"}, "gracePeriodSeconds": {"0"}})
}

func (c *Client) delete(ctx context.Context, r Resource, namespace, name string, query url.Values) error {
	_, err := c.do(ctx, http.MethodDelete, r.objectPath(namespace, name)+"?"+query.Encode())
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", r, Qualified(namespace, name), err)
	}
	return nil
}
