//go:build unix

package recovery

import (
	"errors"
	"syscall"
)

// processExists asks the system whether pid runs: signal 0 checks without
// signalling (kill(2)); ESRCH is no such process, and EPERM one this user
// may not signal, which runs.
func processExists(pid int) (bool, error) {
	if pid <= 0 {
		return false, errors.New("no valid process ID")
	}
	switch err := syscall.Kill(pid, 0); {
	case err == nil, errors.Is(err, syscall.EPERM):
		return true, nil
	case errors.Is(err, syscall.ESRCH):
		return false, nil
	default:
		return false, err
	}
}
