package sysfs

import "golang.org/x/sys/unix"

// openDirPath opens the directory at host with O_PATH: a descriptor to
// look names up in, which reads nothing and needs no permission on the
// directory itself.
func openDirPath(host string) (int, error) {
	for {
		fd, err := unix.Open(host, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
