//go:build !linux

package moto

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
