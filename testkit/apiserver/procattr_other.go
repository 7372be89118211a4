//go:build !linux

package apiserver

import "syscall"

// procAttr starts a server in its own process group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
