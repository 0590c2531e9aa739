//go:build !linux

package devlink

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/mdlayher/genetlink"
)

// errUnsupported is returned on systems without devlink.
var errUnsupported = fmt.Errorf("devlink: not implemented on %s: %w", runtime.GOOS, os.ErrNotExist)

type client struct{}

func newClient(func() (*genetlink.Conn, error)) (*client, error) { return nil, errUnsupported }

func (*client) Close() error                               { return errUnsupported }
func (*client) Devices(context.Context) ([]Device, error)  { return nil, errUnsupported }
func (*client) Ports(context.Context) ([]Port, error)      { return nil, errUnsupported }
func (*client) Info(context.Context, Handle) (Info, error) { return Info{}, errUnsupported }
func (*client) HealthReporters(context.Context) ([]HealthReporter, error) {
	return nil, errUnsupported
}
func (*client) HealthReporter(context.Context, ReporterID) (HealthReporter, error) {
	return HealthReporter{}, errUnsupported
}
func (*client) Diagnose(context.Context, ReporterID) (Object, error) { return nil, errUnsupported }
func (*client) Dump(context.Context, ReporterID) (Object, error)     { return nil, errUnsupported }
func (*client) SetHealthReporter(context.Context, ReporterID, HealthReporterSettings) error {
	return errUnsupported
}
func (*client) Recover(context.Context, ReporterID) error { return errUnsupported }
func (*client) Watch(context.Context, func(Event)) error  { return errUnsupported }
