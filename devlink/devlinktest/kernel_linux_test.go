//go:build linux

package devlinktest_test

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/devlink/devlinktest"
)

func TestFamily(t *testing.T) {
	k := devlinktest.NewKernel(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		t.Error("the family request reached the Func")
		return nil, nil
	})
	conn, _ := k.Dial()
	defer conn.Close()
	got, err := conn.GetFamily(unix.DEVLINK_GENL_NAME)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(devlinktest.Family(), got); diff != "" {
		t.Errorf("family (-want +got):\n%s", diff)
	}
	if _, err := conn.GetFamily("nl80211"); err == nil {
		t.Error("the fake kernel resolved a family other than devlink")
	}
}

// TestReplies checks the framing of replies: what a client reading them
// through genetlink gets for each kind of request and answer.
func TestReplies(t *testing.T) {
	errOther := errors.New("socket trouble")
	replies := func(n int) []genetlink.Message {
		out := make([]genetlink.Message, n)
		for i := range out {
			out[i] = genetlink.Message{Header: genetlink.Header{Command: unix.DEVLINK_CMD_NEW, Version: 1}, Data: []byte{byte(i), 0, 0, 0}}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		cmd     uint8
		flags   netlink.HeaderFlags
		replies []genetlink.Message
		err     error
		want    int
		wantErr func(error) bool
	}{
		{name: "get", cmd: unix.DEVLINK_CMD_GET, replies: replies(1), want: 1},
		{name: "dump read in pieces", cmd: unix.DEVLINK_CMD_GET, flags: netlink.Dump, replies: replies(7), want: 7},
		{name: "empty dump", cmd: unix.DEVLINK_CMD_GET, flags: netlink.Dump, want: 0},
		{name: "diagnose is multi-part", cmd: unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, replies: replies(3), want: 3},
		// genetlink returns the acknowledgement as a message, as with the
		// kernel.
		{name: "acknowledged", cmd: unix.DEVLINK_CMD_HEALTH_REPORTER_SET, flags: netlink.Acknowledge, want: 1},
		{
			name: "errno", cmd: unix.DEVLINK_CMD_INFO_GET, err: devlinktest.Errno(unix.EPERM),
			wantErr: func(err error) bool { return errors.Is(err, os.ErrPermission) },
		},
		{
			name: "errno of a dump", cmd: unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET, flags: netlink.Dump, err: devlinktest.Errno(unix.EOPNOTSUPP),
			wantErr: func(err error) bool { return errors.Is(err, unix.EOPNOTSUPP) },
		},
		{
			name: "other error", cmd: unix.DEVLINK_CMD_GET, err: errOther,
			wantErr: func(err error) bool { return errors.Is(err, errOther) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := devlinktest.NewKernel(func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
				if greq.Header.Command != tc.cmd || nreq.Header.Flags != netlink.Request|tc.flags {
					t.Errorf("request command %d flags %v, want %d %v", greq.Header.Command, nreq.Header.Flags, tc.cmd, netlink.Request|tc.flags)
				}
				return tc.replies, tc.err
			})
			conn, _ := k.Dial()
			defer conn.Close()
			f := devlinktest.Family()
			msgs, err := conn.Execute(genetlink.Message{Header: genetlink.Header{Command: tc.cmd, Version: f.Version}}, f.ID, netlink.Request|tc.flags)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != tc.want {
				t.Fatalf("%d replies, want %d", len(msgs), tc.want)
			}
			if len(tc.replies) > 0 {
				if diff := cmp.Diff(tc.replies, msgs); diff != "" {
					t.Errorf("replies (-sent +received):\n%s", diff)
				}
			}
			// The connection is ready for the next request.
			if _, err := conn.Execute(genetlink.Message{Header: genetlink.Header{Command: tc.cmd, Version: f.Version}}, f.ID, netlink.Request|tc.flags); err != nil {
				t.Errorf("second request: %v", err)
			}
		})
	}
}

func TestConns(t *testing.T) {
	k := devlinktest.NewKernel(nil)
	a, _ := k.Dial()
	b, _ := k.Dial()
	if opened, open := k.Conns(); opened != 2 || open != 2 {
		t.Fatalf("%d opened, %d open; want 2, 2", opened, open)
	}
	if err := a.JoinGroup(devlinktest.Family().Groups[0].ID); err == nil {
		t.Error("joined a multicast group of a kernel that sends no notifications")
	}
	if _, _, err := a.Receive(); err == nil {
		t.Error("a read without a request returned no error")
	}
	a.Close()
	a.Close()
	if opened, open := k.Conns(); opened != 2 || open != 1 {
		t.Fatalf("after closing one twice: %d opened, %d open; want 2, 1", opened, open)
	}
	f := devlinktest.Family()
	if _, err := a.Execute(genetlink.Message{Header: genetlink.Header{Command: unix.DEVLINK_CMD_GET, Version: f.Version}}, f.ID, netlink.Request); err == nil {
		t.Error("a request on a closed connection succeeded")
	}
	b.Close()
	if opened, open := k.Conns(); opened != 2 || open != 0 {
		t.Fatalf("after closing both: %d opened, %d open; want 2, 0", opened, open)
	}
}
