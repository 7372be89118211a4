//go:build !unix

package recovery

import "errors"

// processExists cannot tell here: the recovery checks processes only on
// Unix systems, and a lock it cannot check stays.
func processExists(int) (bool, error) {
	return false, errors.New("the recovery checks processes only on Unix systems")
}
