//go:build linux

package devlink_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/devlink"
	"github.com/nic-exporter/nic_exporter/devlink/devlinktest"
)

// hangGuard bounds the wait for a request that must not be blocked. It is
// not a latency assertion: a request that shares the blocked capture's
// connection would wait until the capture is released, that is forever.
const hangGuard = 30 * time.Second

// TestPollsDoNotWaitForCaptures checks that reporter, device and info
// polls complete while a diagnose or dump request is still being answered:
// the fake kernel holds the capture until the polls have returned.
func TestPollsDoNotWaitForCaptures(t *testing.T) {
	id := devlink.ReporterID{Handle: devlink.Handle{Bus: "pci", Device: "0000:08:00.0"}, Name: "fw_fatal"}
	encode := func(t *testing.T, fn func(*netlink.AttributeEncoder)) []byte {
		ae := netlink.NewAttributeEncoder()
		fn(ae)
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	handle := func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_BUS_NAME, id.Bus)
		ae.String(unix.DEVLINK_ATTR_DEV_NAME, id.Device)
	}
	for _, tc := range []struct {
		name string
		cmd  uint8
		call func(context.Context, *devlink.Client) (devlink.Object, error)
	}{
		{"dump", unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET, func(ctx context.Context, c *devlink.Client) (devlink.Object, error) {
			return c.Dump(ctx, id)
		}},
		{"diagnose", unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, func(ctx context.Context, c *devlink.Client) (devlink.Object, error) {
			return c.Diagnose(ctx, id)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capturing := make(chan struct{}) // closed when the kernel holds the capture
			release := make(chan struct{})   // closed to let the capture finish
			var releaseOnce sync.Once
			releaseCapture := func() { releaseOnce.Do(func() { close(release) }) }
			defer releaseCapture()

			k := devlinktest.NewKernel(func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
				reply := func(fn func(*netlink.AttributeEncoder)) []genetlink.Message {
					return []genetlink.Message{{Header: genetlink.Header{Command: greq.Header.Command, Version: 1}, Data: encode(t, fn)}}
				}
				switch greq.Header.Command {
				case tc.cmd:
					close(capturing)
					<-release
					return reply(func(ae *netlink.AttributeEncoder) {
						ae.Nested(unix.DEVLINK_ATTR_FMSG, func(nae *netlink.AttributeEncoder) error {
							nae.Flag(unix.DEVLINK_ATTR_FMSG_PAIR_NEST_START, true)
							nae.String(unix.DEVLINK_ATTR_FMSG_OBJ_NAME, "Syndrome")
							nae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, 1) // NLA_U8
							nae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, 7)
							nae.Flag(unix.DEVLINK_ATTR_FMSG_NEST_END, true)
							return nil
						})
					}), nil
				case unix.DEVLINK_CMD_HEALTH_REPORTER_GET:
					return reply(func(ae *netlink.AttributeEncoder) {
						handle(ae)
						ae.Nested(unix.DEVLINK_ATTR_HEALTH_REPORTER, func(nae *netlink.AttributeEncoder) error {
							nae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, id.Name)
							nae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 1)
							return nil
						})
					}), nil
				case unix.DEVLINK_CMD_GET:
					return reply(handle), nil
				case unix.DEVLINK_CMD_INFO_GET:
					return reply(func(ae *netlink.AttributeEncoder) {
						handle(ae)
						ae.String(unix.DEVLINK_ATTR_INFO_DRIVER_NAME, "mlx5_core")
					}), nil
				}
				t.Errorf("unexpected command %d", greq.Header.Command)
				return nil, devlinktest.Errno(unix.EOPNOTSUPP)
			})
			c, err := devlink.NewWithDial(k.Dial)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()

			type result struct {
				o   devlink.Object
				err error
			}
			captured := make(chan result, 1)
			go func() {
				o, err := tc.call(ctx, c)
				captured <- result{o, err}
			}()
			<-capturing

			polled := make(chan error, 1)
			go func() {
				polled <- func() error {
					r, err := c.HealthReporter(ctx, id)
					if err != nil {
						return err
					}
					if r.State == nil || *r.State != devlink.HealthStateError {
						return fmt.Errorf("reporter %+v, want the error state the kernel sent", r)
					}
					if _, err := c.HealthReporters(ctx); err != nil {
						return err
					}
					if _, err := c.Devices(ctx); err != nil {
						return err
					}
					_, err = c.Info(ctx, id.Handle)
					return err
				}()
			}()
			select {
			case err := <-polled:
				if err != nil {
					t.Fatalf("polls during the %s: %v", tc.name, err)
				}
			case <-time.After(hangGuard):
				releaseCapture()
				t.Fatalf("polls still waiting after %v while the %s was held: they wait behind it", hangGuard, tc.name)
			}
			select {
			case r := <-captured:
				t.Fatalf("the %s returned (%v, %v) before the kernel released it", tc.name, r.o, r.err)
			default:
			}

			releaseCapture()
			r := <-captured
			if r.err != nil {
				t.Fatalf("%s: %v", tc.name, r.err)
			}
			if v, ok := r.o.Get("Syndrome"); !ok || v != uint8(7) {
				t.Errorf("%s output %v, want Syndrome 7", tc.name, r.o)
			}
		})
	}
}
