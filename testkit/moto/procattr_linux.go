package moto

import "syscall"

// procAttr kills the server with the test binary that started it.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
