package kernelpkgs

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// QueryArchive asks apt-cache madison which versions the configured
// archives offer of Packages.
func QueryArchive() (Available, error) {
	out, err := exec.Command("apt-cache", append([]string{"madison"}, Packages...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache madison: %w", err)
	}
	return ParseMadison(bytes.NewReader(out))
}

// QueryInstalled asks dpkg-query which of Packages are installed, and
// linux-headers-amd64's dependencies.
func QueryInstalled() (Installed, error) {
	in := Installed{Versions: map[string]string{}}
	for _, p := range Packages {
		// ${db:Status-Abbrev} is "ii " for an installed package; a
		// package that was removed but not purged is known to dpkg
		// with a version and another status.
		out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Abbrev}|${Version}|${Depends}", p).Output()
		if err != nil {
			continue // not known to dpkg: not installed
		}
		status, rest, _ := strings.Cut(string(out), "|")
		version, depends, _ := strings.Cut(rest, "|")
		if strings.TrimSpace(status) != "ii" {
			continue
		}
		in.Versions[p] = version
		if p == Headers {
			in.HeadersDepends = depends
		}
	}
	return in, nil
}
