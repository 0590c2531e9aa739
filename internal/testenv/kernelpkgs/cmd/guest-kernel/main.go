// Command guest-kernel chooses the Debian kernel packages for the
// real-kernel tests (the newest version that linux-image-amd64,
// linux-headers-amd64 and linux-source-6.1 all have in the configured
// archives; see package kernelpkgs) and prints the choice. With -install it
// installs the headers and the source at that version, unless they are
// installed at it already; the image is downloaded by the tests
// themselves. CI runs it after apt-get update:
//
//	go run ./internal/testenv/kernelpkgs/cmd/guest-kernel -install
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/nic-exporter/nic_exporter/internal/testenv/kernelpkgs"
)

func main() {
	install := flag.Bool("install", false, "install the chosen headers and source with apt-get")
	flag.Parse()
	if err := run(*install); err != nil {
		fmt.Fprintln(os.Stderr, "guest-kernel:", err)
		os.Exit(1)
	}
}

func run(install bool) error {
	av, err := kernelpkgs.QueryArchive()
	if err != nil {
		return err
	}
	choice, err := kernelpkgs.Choose(av)
	if err != nil {
		return err
	}
	fmt.Println(choice)
	if !install {
		return nil
	}
	in, err := kernelpkgs.QueryInstalled()
	if err != nil {
		return err
	}
	if k, err := kernelpkgs.CheckInstalled(in); err == nil && k.Version == choice.Version {
		fmt.Printf("already installed: kernel %s\n", k.Release)
		return nil
	}
	args := []string{"install", "-y", "-qq", "--no-install-recommends", "--allow-downgrades",
		kernelpkgs.Headers + "=" + choice.Version, kernelpkgs.Source + "=" + choice.Version}
	cmd := exec.Command("apt-get", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %v: %w", args, err)
	}
	in, err = kernelpkgs.QueryInstalled()
	if err != nil {
		return err
	}
	k, err := kernelpkgs.CheckInstalled(in)
	if err != nil {
		return fmt.Errorf("after installing: %w", err)
	}
	fmt.Printf("installed: kernel %s at %s\n", k.Release, k.Version)
	return nil
}
