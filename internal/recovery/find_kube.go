package recovery

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
)

// kubeResources are the API resources of the Kubernetes types the program
// applies, by type token.
var kubeResources = map[string]kubeapi.Resource{
	"kubernetes:karpenter.sh/v1:NodePool":                         kubeapi.NodePools,
	"kubernetes:karpenter.k8s.aws/v1:EC2NodeClass":                kubeapi.EC2NodeClasses,
	"kubernetes:storage.k8s.io/v1:StorageClass":                   kubeapi.StorageClasses,
	"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": kubeapi.CRDs,
}

func kube(ctx context.Context, l Lookups) (KubeAPI, error) {
	k, err := l.Kube(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster: %w", err)
	}
	return k, nil
}

// releaseRecord is one revision of a Helm release: a Secret of type
// helm.sh/release.v1 labelled owner=helm, name, status and version
// (helm.sh/helm/v3 v3.20.2 pkg/storage/driver/secrets.go newSecretsObject).
type releaseRecord struct {
	secret  string
	version int
	status  string
	created time.Time
}

// secretsDriver checks that the release's records are Secrets, which is
// all the recovery reads: pulumi-kubernetes v4.32.0 gives Helm its
// provider's helmReleaseSettings.driver, else PULUMI_K8S_HELM_DRIVER, else
// "secret" (provider/pkg/provider/provider.go, Configure), and Helm keeps
// the records of "secret", "secrets" and "" as Secrets (helm.sh/helm/v3
// v3.20.2 pkg/action/action.go, Configuration.Init). Elsewhere no Secret
// is no proof that Helm wrote no record. The variable is the interrupted
// run's, which the state does not hold; the recovery reads its own (a
// Deployments pre-run has the run's).
func secretsDriver(t Target) error {
	driver, _ := os.LookupEnv("PULUMI_K8S_HELM_DRIVER")
	p := t.State.providerOf(t.Op.Resource.Provider)
	if p == nil {
		return cannotTell("the state holds no provider of it, so the recovery cannot tell where Helm keeps the release's records")
	}
	switch settings := decoded(p.Inputs["helmReleaseSettings"]).(type) {
	case nil:
	case map[string]any:
		if _, secret := settings[secretSig]; secret {
			return cannotTell("its provider's helmReleaseSettings are a secret in the state, so the recovery cannot tell where Helm keeps the release's records")
		}
		if v, ok := settings["driver"]; ok && v != nil {
			if driver, ok = v.(string); !ok {
				return cannotTell("its provider's helmReleaseSettings.driver is not readable in the state, so the recovery cannot tell where Helm keeps the release's records")
			}
		}
	default:
		return cannotTell("its provider's helmReleaseSettings are not readable in the state, so the recovery cannot tell where Helm keeps the release's records")
	}
	switch driver {
	case "", "secret", "secrets":
		return nil
	}
	return cannotTell("Helm keeps the release's records with the %q driver (helmReleaseSettings.driver or PULUMI_K8S_HELM_DRIVER), "+
		"and the recovery reads only Secrets", driver)
}

// secretSig marks a secret value in a state (sig.Key in pulumi/pulumi
// sdk/go/common/resource/sig/sig.go; apitype.SecretV1).
const secretSig = "4dabf18193072939515e22adb298388d"

// releaseRecords are a release's revisions, newest first.
func releaseRecords(ctx context.Context, k KubeAPI, t Target, namespace, name string) ([]releaseRecord, error) {
	if err := secretsDriver(t); err != nil {
		return nil, err
	}
	secrets, err := k.ListIn(ctx, kubeapi.Secrets, namespace, url.Values{"labelSelector": {"owner=helm,name=" + name}})
	if err != nil {
		return nil, err
	}
	var out []releaseRecord
	for _, s := range secrets {
		v, err := strconv.Atoi(s.Label("version"))
		if err != nil {
			return nil, fmt.Errorf("release record %s has no version label", s.Name())
		}
		out = append(out, releaseRecord{secret: s.Name(), version: v, status: s.Label("status"), created: s.Time("metadata", "creationTimestamp")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version > out[j].version })
	return out, nil
}

func namespaceOf(t Target) string {
	if ns := t.Input("namespace"); ns != "" {
		return ns
	}
	return "default"
}

// deleteRecords is the fix that removes release records, as `helm` would
// see them gone.
func deleteRecords(k KubeAPI, namespace, release string, records []releaseRecord) *Fix {
	var names []string
	for _, r := range records {
		names = append(names, r.secret)
	}
	return &Fix{
		Does: fmt.Sprintf("delete the release record(s) %s in namespace %s", strings.Join(names, ", "), namespace),
		Apply: func(ctx context.Context) error {
			for _, n := range names {
				if err := k.Delete(ctx, kubeapi.Secrets, namespace, n); err != nil && !kubeapi.IsNotFound(err) {
					return fmt.Errorf("deleting release record %s/%s of %s: %w", namespace, n, release, err)
				}
			}
			return nil
		},
	}
}

// findRelease decides a release whose install was cut off. Helm installs
// in this order (pkg/action/install.go): refuse a name with any record
// ("cannot re-use a name that is still in use"), the chart's CRDs
// (skipping those that exist), the namespace (ignoring that it exists),
// the record in pending-install, then the chart's objects, each labelled
// and annotated as the release's. A record that is deployed is the
// release. A record left pending-install (or failed, the only revision)
// would block every later install; deleting it lets the next install run,
// and that install adopts the objects the cut-off one made, as they carry
// the release's ownership (pkg/action/validate.go existingResourceConflict).
func findRelease(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "name")
	if err != nil {
		return absent, err
	}
	name, namespace := in[0], namespaceOf(t)
	k, err := kube(ctx, l)
	if err != nil {
		return absent, err
	}
	records, err := releaseRecords(ctx, k, t, namespace, name)
	if err != nil {
		return absent, err
	}
	if len(records) == 0 {
		return Found{Note: "Helm wrote no record, so none of the chart's objects; the next install skips the CRDs and namespace that exist"}, nil
	}
	id := namespace + "/" + name
	newest := records[0]
	switch {
	case newest.status == "deployed":
		// Its first revision's record is when the install began; with that
		// one pruned (Helm's history limit) its age is not known.
		f := Found{Exists: true, ID: id}
		if oldest := records[len(records)-1]; oldest.version == 1 {
			f.Created = oldest.created
		}
		return f, nil
	case len(records) == 1 && (newest.status == "pending-install" || newest.status == "failed"):
		return Found{
			Note: fmt.Sprintf("Helm's install stopped at revision %d (%s); the next install adopts the objects it made", newest.version, newest.status),
			Fix:  deleteRecords(k, namespace, name, records),
		}, nil
	}
	return absent, cannotTell("release %s is at revision %d (%s) with %d revisions: `helm history %s -n %s` says what happened",
		id, newest.version, newest.status, len(records), name, namespace)
}

// releaseUpdateFix readies a release whose upgrade was cut off for the
// next one: Helm refuses to upgrade a release whose newest record is
// pending ("another operation (install/upgrade/rollback) is in progress",
// pkg/action/upgrade.go), and the revision before it is still the
// deployed one, so deleting the pending record returns the release to it.
func releaseUpdateFix(ctx context.Context, l Lookups, t Target) (*Fix, string, error) {
	name, namespace := t.Input("name"), namespaceOf(t)
	if name == "" {
		return nil, "", cannotTell("its recorded inputs have no release name")
	}
	k, err := kube(ctx, l)
	if err != nil {
		return nil, "", err
	}
	records, err := releaseRecords(ctx, k, t, namespace, name)
	if err != nil {
		return nil, "", err
	}
	if len(records) == 0 || !strings.HasPrefix(records[0].status, "pending-") {
		return nil, "", nil
	}
	if len(records) < 2 || records[1].status != "deployed" {
		return nil, "", cannotTell("release %s/%s is %s at revision %d with no deployed revision before it", namespace, name, records[0].status, records[0].version)
	}
	return deleteRecords(k, namespace, name, records[:1]),
		fmt.Sprintf("Helm's upgrade stopped at revision %d (%s), and revision %d is deployed", records[0].version, records[0].status, records[1].version), nil
}
