package realapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/test/kubecheck"
	"nodeless-eks/testkit/badpools"
)

// crPath is the API path of a Karpenter object.
func crPath(obj map[string]any) string {
	kind := obj["kind"].(string)
	name := obj["metadata"].(map[string]any)["name"].(string)
	switch kind {
	case "NodePool":
		return "/apis/karpenter.sh/v1/nodepools/" + name
	case "EC2NodeClass":
		return "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/" + name
	}
	panic("no path for " + kind)
}

// apply applies obj server-side, as pulumi-kubernetes does, with the
// field validation given ("Strict" fails on unknown fields, "Ignore"
// prunes them).
func apply(s *server, obj map[string]any, validation string) (int, []byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return 0, nil, err
	}
	return s.do(ctxT(), http.MethodPatch, crPath(obj)+"?fieldManager=pulumi-kubernetes-realapi&force=true&fieldValidation="+validation,
		"application/apply-patch+yaml", raw)
}

// TestProgramsNodeObjectsOnARealServer applies every EC2NodeClass and
// NodePool the program registers (the goldens its graph tests keep) to a
// real API server with Karpenter's CRDs: each is accepted, and stored as
// the offline validator (test/kubecheck, which the other tests use) says
// the API server stores it, defaults included.
func TestProgramsNodeObjectsOnARealServer(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	v, err := kubecheck.NewKarpenterValidator()
	require.NoError(t, err)
	for _, file := range []string{"nodepools-dev.golden.json", "nodepools-multipool.golden.json"} {
		raw, err := os.ReadFile("../../testdata/" + file)
		require.NoError(t, err)
		var objects []map[string]any
		require.NoError(t, json.Unmarshal(raw, &objects))
		for _, obj := range objects {
			t.Run(file+" "+obj["kind"].(string)+" "+obj["metadata"].(map[string]any)["name"].(string), func(t *testing.T) {
				status, out, err := apply(s, obj, "Strict")
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, statusOK(status), "the API server refuses what the program registers: %s", out)
				var stored map[string]any
				require.NoError(t, json.Unmarshal(out, &stored))
				want, err := v.Validate(obj)
				require.NoError(t, err)
				assert.Equal(t, norm(want.Object["spec"]), norm(stored["spec"]), "stored as the offline validator defaults it")
				t.Cleanup(func() { s.do(ctxT(), http.MethodDelete, crPath(obj), "", nil) })
			})
		}
	}
}

// unsafeName are the runs of characters an object's name may not hold.
var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// statusOK folds the success statuses of an apply (200 updated, 201
// created) into one.
func statusOK(status int) int {
	if status == http.StatusCreated {
		return http.StatusOK
	}
	return status
}

// TestUnknownFields: a field the CRD does not know fails a server-side
// apply, which is how pulumi-kubernetes writes the program's objects: the
// apply cannot build its typed patch, whatever the field validation. A
// create, which the offline validator models, refuses it under strict
// field validation and prunes it otherwise, as the validator says.
func TestUnknownFields(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	v, err := kubecheck.NewKarpenterValidator()
	require.NoError(t, err)
	raw, err := os.ReadFile("../../testdata/nodepools-dev.golden.json")
	require.NoError(t, err)
	var objects []map[string]any
	require.NoError(t, json.Unmarshal(raw, &objects))
	var pool map[string]any
	for _, o := range objects {
		if o["kind"] == "NodePool" {
			pool = o
		}
	}
	require.NotNil(t, pool)
	pool["spec"].(map[string]any)["weightt"] = 10 // a typo
	want, err := v.Validate(pool)
	require.NoError(t, err)
	assert.Equal(t, []string{"spec.weightt"}, want.Pruned)

	for _, validation := range []string{"Strict", "Ignore"} {
		status, out, err := apply(s, pool, validation)
		require.NoError(t, err)
		assert.Equal(t, http.StatusInternalServerError, status, "a server-side apply fails (%s): %s", validation, out)
		assert.Contains(t, string(out), ".spec.weightt: field not declared in schema")
	}

	status, out, err := s.do(ctxT(), http.MethodPost, "/apis/karpenter.sh/v1/nodepools?fieldValidation=Strict", "", pool)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, status, "a strict create refuses it: %s", out)
	assert.Contains(t, string(out), "weightt")

	status, out, err = s.do(ctxT(), http.MethodPost, "/apis/karpenter.sh/v1/nodepools?fieldValidation=Ignore", "", pool)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status, string(out))
	var stored map[string]any
	require.NoError(t, json.Unmarshal(out, &stored))
	assert.NotContains(t, stored["spec"], "weightt", "pruned")
	assert.Equal(t, norm(want.Object["spec"]), norm(stored["spec"]), "stored as the validator says")
	s.do(ctxT(), http.MethodDelete, crPath(pool), "", nil)
}

// TestTheValidatorAgreesWithARealServerOnBadPools: each pool
// configuration that config validation rejects (testkit/badpools) is
// refused by the real API server exactly when the offline validator says
// the CRDs refuse it, so the offline tests that rely on the validator
// hold for the real server.
func TestTheValidatorAgreesWithARealServerOnBadPools(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	v, err := kubecheck.NewKarpenterValidator()
	require.NoError(t, err)
	rows, err := badpools.Rows()
	require.NoError(t, err)
	checked := 0
	for _, row := range rows {
		_, _, objects, err := kubecheck.ObjectsFor(row)
		require.NoError(t, err)
		require.NotEmpty(t, objects, "%s: a configuration with no object to check checks nothing", row.Name)
		for i, obj := range objects {
			name := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(row.Name), "-"), "-")
			if len(name) > 56 {
				name = strings.Trim(name[:56], "-")
			}
			name = fmt.Sprintf("%s-%d", name, i)
			obj["metadata"].(map[string]any)["name"] = name
			res, err := v.Validate(obj)
			require.NoError(t, err)
			status, out, err := apply(s, obj, "Ignore")
			require.NoError(t, err)
			accepted := statusOK(status) == http.StatusOK
			if !assert.Equal(t, len(res.Errors) == 0, accepted, "%s: %s %s: the validator says %v; the API server answered %d: %s",
				row.Name, obj["kind"], name, res.Errors, status, out) {
				continue
			}
			if accepted {
				var stored map[string]any
				require.NoError(t, json.Unmarshal(out, &stored))
				assert.True(t, reflect.DeepEqual(norm(res.Object["spec"]), norm(stored["spec"])), "%s: %s stored as the validator defaults it", row.Name, name)
				s.do(ctxT(), http.MethodDelete, crPath(obj), "", nil)
			}
			checked++
		}
	}
	t.Logf("%d objects of %d bad pool configurations: the real server and the validator agree on each", checked, len(rows))
	assert.Greater(t, checked, 10)
}
