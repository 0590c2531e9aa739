// Command release builds the release artifacts of nic_exporter into a
// directory (dist/ under `make release`): for linux/amd64 and linux/arm64
// a tarball, a .deb and a .rpm, a multi-arch OCI image as an OCI layout
// tarball, a CycloneDX SBOM of each binary, and sha256sums.txt over all
// of them.
//
// Every artifact is reproducible: the same commit gives the same bytes.
// Binaries are built with -trimpath, an empty build ID and CGO_ENABLED=0;
// archive entries are sorted, owned by 0:0 and dated SOURCE_DATE_EPOCH
// (the commit time unless the environment sets it); gzip streams carry no
// name or time.
//
// Run from the repository root:
//
//	go -C tools/release run . -root "$PWD" -out "$PWD/dist"
//
// `release publish` (make publish) pushes the image and the Helm chart of
// a release in dist/ to an OCI registry:
//
//	go -C tools/release run . publish -root "$PWD" -dist "$PWD/dist" -registry ghcr.io/nic-exporter
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "publish" {
		publishMain(os.Args[2:])
		return
	}
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", "dist", "output directory, replaced")
	version := flag.String("version", "", "release version without a leading v (default: from git describe)")
	flag.Parse()

	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			fatal(err)
		}
		return a
	}
	cfg, err := ConfigFromGit(abs(*root), os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fatal(err)
	}
	if *version != "" {
		cfg.Version = *version
	}
	cfg.Out = abs(*out)
	cfg.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	if err := Build(cfg); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}
