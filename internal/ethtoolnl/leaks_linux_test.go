package ethtoolnl_test

import (
	"os"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestMain fails the run when a test of this package left a network
// namespace or a host interface behind, also after a failed test. Inside
// the qemu guest the check is off: the guest test creates devices
// (netdevsim ports) in a kernel that powers off when it ends.
func TestMain(m *testing.M) {
	if guest.InGuest() {
		os.Exit(m.Run())
	}
	os.Exit(testenv.MainCheckingLeaks(m))
}
