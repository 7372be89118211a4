// Package spectest holds the cases of node pool configuration that must be
// rejected, shared by the program's config tests and the CRD checks of
// the test/ module, which confirm the API server would reject them too.
package spectest

import (
	"encoding/json"
	"fmt"
	"os"
)

// BadNodePool is a row of testdata/bad-nodepools.json: a configuration
// that the program's config validation rejects.
type BadNodePool struct {
	Name        string          `json:"name"`
	Key         string          `json:"key"`
	NodePools   json.RawMessage `json:"nodePools"`
	NodeClasses json.RawMessage `json:"nodeClasses"`
	Production  bool            `json:"production"`
	// CRDCannotSee says why the CRDs would accept the row, when they would.
	CRDCannotSee string `json:"crdCannotSee"`
}

// LoadBadNodePools reads the rows of path; it fails on an empty file.
func LoadBadNodePools(path string) ([]BadNodePool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []BadNodePool
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s holds no rows", path)
	}
	return rows, nil
}
