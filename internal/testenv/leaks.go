package testenv

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"testing"
)

// NetnsPrefix starts the name of every network namespace a test creates
// (under /run/netns, with "ip netns add"); the name also holds the test
// process's pid, as in fmt.Sprintf("nicexp-rtnl-%d-a", os.Getpid()), so
// MainCheckingLeaks can tell this process's namespaces from those of tests
// running at the same time in other processes.
const NetnsPrefix = "nicexp-"

// hostState is what a test may leave behind on the host: its network
// namespaces and the links of the host's own namespace.
type hostState struct {
	netns []string // this process's namespaces in /run/netns
	links []string // interfaces of the process's network namespace
}

// readHostState lists this process's namespaces in netnsDir and the links
// of the current network namespace.
func readHostState(netnsDir string, pid int) (hostState, error) {
	var s hostState
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !os.IsNotExist(err) {
		return s, fmt.Errorf("listing %s: %w", netnsDir, err)
	}
	mark := fmt.Sprintf("-%d", pid)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, NetnsPrefix) && (strings.HasSuffix(n, mark) || strings.Contains(n, mark+"-")) {
			s.netns = append(s.netns, n)
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return s, fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, i := range ifs {
		s.links = append(s.links, i.Name)
	}
	return s, nil
}

// leftovers returns what after has and before had not.
func leftovers(before, after hostState) []string {
	var out []string
	diff := func(kind string, b, a []string) {
		had := make(map[string]bool, len(b))
		for _, x := range b {
			had[x] = true
		}
		for _, x := range a {
			if !had[x] {
				out = append(out, kind+" "+x)
			}
		}
	}
	diff("network namespace", before.netns, after.netns)
	diff("host network interface", before.links, after.links)
	sort.Strings(out)
	return out
}

// MainCheckingLeaks runs m, for the TestMain of a package whose tests
// create network namespaces or veth pairs, and fails the run when the
// tests left any behind: a namespace of this process in /run/netns, or an
// interface in the host's network namespace that was not there before.
// Each test must remove what it creates with t.Cleanup registered before
// the first step that can fail, so nothing stays even when it fails; this
// proves it for every run, failed or not. It returns the exit code for
// os.Exit.
func MainCheckingLeaks(m *testing.M) int {
	return mainCheckingLeaks(m.Run, "/run/netns", os.Getpid(), os.Stderr)
}

func mainCheckingLeaks(run func() int, netnsDir string, pid int, w interface{ Write([]byte) (int, error) }) int {
	before, err := readHostState(netnsDir, pid)
	if err != nil {
		fmt.Fprintf(w, "leak check: %v\n", err)
		return 1
	}
	code := run()
	after, err := readHostState(netnsDir, pid)
	if err != nil {
		fmt.Fprintf(w, "leak check: %v\n", err)
		return 1
	}
	if left := leftovers(before, after); len(left) > 0 {
		fmt.Fprintf(w, "FAIL: the tests left behind: %s\n", strings.Join(left, ", "))
		if code == 0 {
			code = 1
		}
	}
	return code
}
