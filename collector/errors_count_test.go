package collector

import (
	"fmt"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/collector/exposition"
)

// CountSourceError counts under the error's reason, like SourceError,
// and logs nothing; a nil SourceErrors is ignored.
func TestCountSourceError(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	errs := NewSourceErrors(zap.New(core), 0)
	p := NewPoll(exposition.NewBuilder(), errs)
	for _, err := range []error{syscall.EPERM, fmt.Errorf("module of eth0: %w", syscall.EACCES), syscall.EIO} {
		p.CountSourceError(err)
	}
	want := []ReasonCount{{Reason: "eacces", Count: 2}, {Reason: "eio", Count: 1}}
	if got := errs.Counts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	if n := logs.Len(); n != 0 {
		t.Errorf("%d lines logged, want none: %v", n, logs.All())
	}
	NewPoll(exposition.NewBuilder(), nil).CountSourceError(syscall.EPERM)
}
