package promstack

import "syscall"

// sysProcAttr puts a child in its own process group and has the kernel
// send it SIGTERM when the parent dies, so a killed parent leaves no
// Prometheus behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
