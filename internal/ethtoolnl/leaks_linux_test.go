package ethtoolnl_test

import (
	"os"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestMain fails the run when a test of this package left a network
// namespace or a host interface behind, also after a failed test.
func TestMain(m *testing.M) {
	os.Exit(testenv.MainCheckingLeaks(m))
}
