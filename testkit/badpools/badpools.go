// Package badpools holds the node pool configurations that must be
// rejected, shared by the config tests and the CRD checks of the test/
// module, which confirm the API server would reject them too.
package badpools

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed bad-nodepools.json
var rows []byte

// Row is a configuration that the program's config validation rejects.
type Row struct {
	Name        string          `json:"name"`
	Key         string          `json:"key"`
	NodePools   json.RawMessage `json:"nodePools"`
	NodeClasses json.RawMessage `json:"nodeClasses"`
	Production  bool            `json:"production"`
	// CRDCannotSee says why the CRDs of Karpenter 1.14 would accept the
	// row, when they would. From 1.15 the CRDs take any spec.kubelet.
	CRDCannotSee string `json:"crdCannotSee"`
	// KarpenterAccepts says why Karpenter 1.15's controller would accept
	// a kubelet row the program refuses, when it would.
	KarpenterAccepts string `json:"karpenterAccepts"`
	// KarpenterVersion, when set, is the only karpenterVersion the row is
	// refused on; the default version takes it.
	KarpenterVersion string `json:"karpenterVersion"`
}

// Kubelet reports whether the row is about a node class's kubelet.
func (r Row) Kubelet() bool { return strings.Contains(r.Key, ".kubelet") }

// Rows are the rows of bad-nodepools.json; an empty file is an error.
func Rows() ([]Row, error) {
	var out []Row
	if err := json.Unmarshal(rows, &out); err != nil {
		return nil, fmt.Errorf("reading bad-nodepools.json: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bad-nodepools.json holds no rows")
	}
	return out, nil
}
