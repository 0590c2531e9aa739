// Package kernelpkgs chooses the Debian kernel packages that the real-kernel
// tests boot and build against (internal/testenv/guest), and checks what is
// installed. The image, the headers and the source of one kernel must have
// the same Debian version, but the archive updates them one at a time: on
// 2026-11-28 the security archive served linux-source-6.1 6.1.192-3 while
// linux-image-amd64 and linux-headers-amd64 were still at 6.1.192-2, and
// installing the newest of each left a set the tests could not use. The
// archive keeps older versions, so Choose picks the newest version that
// all three packages have.
//
// CI installs the chosen set with the command in cmd/guest-kernel; the
// guest harness checks the installed set with Installed and CheckInstalled
// and names that command when it is wrong.
package kernelpkgs

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The packages of one guest kernel. The image and headers are Debian's
// metapackages, whose versions are those of the kernel packages they
// depend on exactly (linux-headers-amd64 6.1.192-2 depends on
// linux-headers-6.1.0-NN-amd64 (= 6.1.192-2)).
const (
	Image   = "linux-image-amd64"
	Headers = "linux-headers-amd64"
	Source  = "linux-source-6.1"
)

// Packages lists the packages of one guest kernel, in the order they are
// reported.
var Packages = []string{Image, Headers, Source}

// InstallCommand is what installs the set Choose picks from the archive.
const InstallCommand = "go run ./internal/testenv/kernelpkgs/cmd/guest-kernel -install"

// Available maps each package to the versions the archive offers.
type Available map[string][]string

// ParseMadison reads the output of apt-cache madison for any packages:
// lines of "package | version | source". Lines of other shapes (apt's
// warnings) are skipped; the same version from two archives counts once.
func ParseMadison(r io.Reader) (Available, error) {
	av := Available{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "|")
		if len(fields) != 3 {
			continue
		}
		pkg, ver := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
		if pkg == "" || ver == "" || strings.ContainsAny(pkg+ver, " \t") {
			continue
		}
		if !slices.Contains(av[pkg], ver) {
			av[pkg] = append(av[pkg], ver)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading apt-cache madison: %w", err)
	}
	return av, nil
}

// Choice is the version Choose picked and why.
type Choice struct {
	// Version is the newest version that every package has.
	Version string
	// Newest maps each package to the newest version the archive has of
	// it, to show the skew that made an older choice necessary.
	Newest map[string]string
}

// String tells the choice, and each package whose newest version was
// passed over.
func (c Choice) String() string {
	var skipped []string
	for _, p := range Packages {
		if n := c.Newest[p]; n != c.Version {
			skipped = append(skipped, fmt.Sprintf("%s %s", p, n))
		}
	}
	s := fmt.Sprintf("guest kernel packages at %s (%s)", c.Version, strings.Join(Packages, ", "))
	if len(skipped) > 0 {
		s += "; newer but not common to all: " + strings.Join(skipped, ", ")
	}
	return s
}

// Choose returns the newest version that the archive has of every package
// in Packages, or an error naming what each package offers.
func Choose(av Available) (Choice, error) {
	c := Choice{Newest: map[string]string{}}
	var common []string
	for i, p := range Packages {
		vs := av[p]
		if len(vs) == 0 {
			return Choice{}, fmt.Errorf("the archive has no %s (apt-get update first?)", p)
		}
		c.Newest[p] = slices.MaxFunc(vs, CompareVersions)
		if i == 0 {
			common = slices.Clone(vs)
			continue
		}
		common = slices.DeleteFunc(common, func(v string) bool { return !slices.Contains(vs, v) })
	}
	if len(common) == 0 {
		var offers []string
		for _, p := range Packages {
			offers = append(offers, p+": "+strings.Join(av[p], " "))
		}
		return Choice{}, fmt.Errorf("no version common to the guest kernel packages; %s", strings.Join(offers, "; "))
	}
	c.Version = slices.MaxFunc(common, CompareVersions)
	return c, nil
}

// Installed is what dpkg says of the installed guest kernel packages.
type Installed struct {
	// Versions maps each installed package of Packages to its version;
	// an absent one is missing.
	Versions map[string]string
	// HeadersDepends is linux-headers-amd64's Depends field, which names
	// the kernel release: "linux-headers-6.1.0-56-amd64 (= 6.1.192-2)".
	HeadersDepends string
}

// Kernel is an installed kernel that the harness can boot.
type Kernel struct {
	// Release is the kernel release as uname -r prints it.
	Release string
	// Version is the Debian version of its packages.
	Version string
}

// CheckInstalled returns the installed kernel when the headers and source
// are installed at one version; the image is not installed (the harness
// downloads it at that version). Its errors name InstallCommand.
func CheckInstalled(in Installed) (Kernel, error) {
	hv, sv := in.Versions[Headers], in.Versions[Source]
	switch {
	case hv == "" && sv == "":
		return Kernel{}, fmt.Errorf("%s and %s are not installed: %s", Headers, Source, InstallCommand)
	case hv == "":
		return Kernel{}, fmt.Errorf("%s is not installed: %s", Headers, InstallCommand)
	case sv == "":
		return Kernel{}, fmt.Errorf("%s is not installed: %s", Source, InstallCommand)
	case hv != sv:
		return Kernel{}, fmt.Errorf("%s is version %s but %s is %s: %s", Source, sv, Headers, hv, InstallCommand)
	}
	dep := strings.TrimSpace(strings.Split(in.HeadersDepends, ",")[0])
	name, ver, ok := strings.Cut(dep, " (= ")
	if !ok || !strings.HasPrefix(name, "linux-headers-") || ver != hv+")" {
		return Kernel{}, fmt.Errorf("unexpected dependency of %s %s: %q", Headers, hv, dep)
	}
	return Kernel{Release: strings.TrimPrefix(name, "linux-headers-"), Version: hv}, nil
}
