package realapi

import "syscall"

// serverProcAttr starts a server in its own process group, killed when the
// test binary dies (PR_SET_PDEATHSIG).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
