package apiserver

import "syscall"

// procAttr starts a server in its own process group, killed when the test
// binary dies (PR_SET_PDEATHSIG).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
