//go:build !linux

package realapi

import "syscall"

// serverProcAttr starts a server in its own process group.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
