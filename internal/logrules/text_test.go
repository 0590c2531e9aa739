package logrules

import (
	"strings"
	"testing"
)

// TestStripPrefix covers the prefixes of the public kernel log samples in
// testdata/realworld/kmsg (each case names the tool whose output it is).
func TestStripPrefix(t *testing.T) {
	const msg = "mlx5_core 0000:05:00.0: mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) op_mod(0x1) failed"
	for _, tc := range []struct{ name, in, want string }{
		{"none", msg, msg},
		{"dmesg", "[11176.517416] " + msg, msg},
		{"dmesg padded", "[    9.317026] " + msg, msg},
		{"console level and dmesg", "<3>[   67.915121] " + msg, msg},
		{"dmesg -T", "[Thu Oct 22 08:55:04 2020] " + msg, msg},
		{"dmesg -H relative", "[  +0.005106] " + msg, msg},
		{"dmesg -H relative short", "[ +0.000093] " + msg, msg},
		{"dmesg -H date", "[Mar15 18:17] " + msg, msg},
		{"syslog", "Jul 14 10:10:21 myserver.hostname kernel: " + msg, msg},
		{"syslog single-digit day", "May  7 17:31:25 src@ip-10-40-2-203 kernel: " + msg, msg},
		{"syslog and dmesg", "Jul 12 07:08:09 docker-linux kernel: [20045236.927756] " + msg, msg},
		{"journalctl short-precise", "Jan 02 03:04:05.123456 host kernel: " + msg, msg},
		{"journalctl short-iso", "2024-01-02T03:04:05+0100 host kernel: " + msg, msg},
		{"journalctl short-iso-precise", "2024-01-02T03:04:05.123456+01:00 host kernel: " + msg, msg},
		{"journalctl UTC", "2024-01-02T03:04:05Z host kernel: " + msg, msg},
		{"bare kernel", "kernel: [108533.415100] " + msg, msg},
		{"leading spaces", "   " + msg, msg},
		{"leading space and dmesg", " [ 1078.584085] " + msg, msg},
		{"syslog without a date", "gpu-node-17 kernel: " + msg, msg},
		{"pdsh and dmesg", "host01: [  435.367917] " + msg, msg},
		{"clush and dmesg -T", "node-a.cluster: [Thu Oct 22 08:55:04 2020] " + msg, msg},
		{"pdsh and syslog", "host01: Jul 14 10:10:21 host01 kernel: " + msg, msg},
		{"pdsh and syslog without a date", "host01: host01 kernel: " + msg, msg},
		{"pdsh and a console level", "host01: <3>" + msg, msg},
		// Kept: not a prefix of a kernel line.
		{"other program", "Jul 14 10:10:21 host sshd[42]: Accepted publickey", "Jul 14 10:10:21 host sshd[42]: Accepted publickey"},
		{"bracketed word", "[ENA_COM: ena_com_dev_reset] Reg read32 timeout occurred", "[ENA_COM: ena_com_dev_reset] Reg read32 timeout occurred"},
		{"hex dump", "[  408.380192] 00000030: 00 00 00 00 a9 00", "00000030: 00 00 00 00 a9 00"},
		{"not a level", "<abc> x", "<abc> x"},
		{"a netdev's own prefix", "eth0: renamed from veth1234", "eth0: renamed from veth1234"},
		{"pdsh without a kernel prefix", "host01: Accepted publickey", "host01: Accepted publickey"},
		{"a long word", strings.Repeat("h", 70) + " kernel: x", strings.Repeat("h", 70) + " kernel: x"},
		{"empty", "", ""},
	} {
		if got := StripPrefix(tc.in); got != tc.want {
			t.Errorf("%s: StripPrefix(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func FuzzStripPrefix(f *testing.F) {
	for _, s := range []string{
		"[11176.517416] mlx5_core 0000:05:00.0: x",
		"<3>[   67.915121] x",
		"[Thu Oct 22 08:55:04 2020] x",
		"[  +0.005106] x",
		"[Mar15 18:17] x",
		"Jul 14 10:10:21 host kernel: x",
		"May  7 17:31:25 host kernel: [1.0] x",
		"2024-01-02T03:04:05.1+01:00 host kernel: x",
		"kernel: x",
		"[ENA_COM: x] y",
		// pdsh/clush host prefixes and dateless syslog (stripHost).
		"host01: [   12.345678] mlx5_core 0000:05:00.0: x",
		"gpu-node-7.example.org: kernel: x",
		"n1: May  7 17:31:25 n1 kernel: [1.0] x",
		"host kernel: x",
		"a: b: [1] x",
		"<",
		"[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got := StripPrefix(line)
		// The message is a suffix of the line, and stripping is idempotent.
		if !strings.HasSuffix(line, got) {
			t.Errorf("StripPrefix(%q) = %q, not a suffix", line, got)
		}
		if again := StripPrefix(got); again != got {
			t.Errorf("StripPrefix not idempotent on %q: %q then %q", line, got, again)
		}
	})
}
