package recovery

import "runtime"

// onLinux reports a Linux kernel, where /proc/self/ns/pid exists.
func onLinux() bool { return runtime.GOOS == "linux" }
