// Package badpools holds the node pool configurations that must be
// rejected, shared by the config tests and the CRD checks of the test/
// module, which confirm the API server would reject them too.
package badpools

import (
	_ "embed"
	"encoding/json"
	"fmt"
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
	// CRDCannotSee says why the CRDs would accept the row, when they would.
	CRDCannotSee string `json:"crdCannotSee"`
}

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
