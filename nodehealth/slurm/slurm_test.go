package slurm

import (
	"strings"
	"testing"
	"time"
)

// The records below are the output of scontrol show node -o localhost of
// Debian 12's slurm-wlm 22.05.8 (slurmctld and slurmd on 127.0.0.1, as
// in TestSlurmDrain of cmd/nic_exporter), idle and after
// scontrol update nodename=localhost state=drain reason=...
const (
	idleRecord    = `NodeName=localhost Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=16.52 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=500 AllocMem=0 FreeMem=18304 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-11-28T16:03:55 SlurmdStartTime=2026-11-28T20:44:39 LastBusyTime=2026-11-28T20:44:39 CfgTRES=cpu=1,mem=500M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s`
	drainedRecord = `NodeName=localhost Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=16.52 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=500 AllocMem=0 FreeMem=18304 Sockets=1 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-11-28T16:03:55 SlurmdStartTime=2026-11-28T20:44:39 LastBusyTime=2026-11-28T20:44:39 CfgTRES=cpu=1,mem=500M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=nic_exporter: NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1 [root@2026-11-28T20:44:51]`
)

func TestParseNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		state   string
		drained bool
		ours    bool
		reason  string
		user    string
		at      time.Time
	}{
		{"idle", idleRecord, "IDLE", false, false, "", "", time.Time{}},
		{"drained by us", drainedRecord, "IDLE+DRAIN", true, true,
			"nic_exporter: NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1", "root",
			time.Date(2026, 11, 28, 20, 44, 51, 0, time.UTC)},
		{"drained by an admin", strings.Replace(strings.Replace(drainedRecord, "nic_exporter: NICFirmwareFatal", "bad DIMM, ticket 42; NICFirmwareFatal", 1), "State=IDLE+DRAIN", "State=MIXED+DRAIN", 1), "MIXED+DRAIN", true, false,
			"bad DIMM, ticket 42; NICFirmwareFatal (FirmwareFatalError) on pci/0000:08:00.0, pci/0000:08:00.1", "root",
			time.Date(2026, 11, 28, 20, 44, 51, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := parseNode([]byte(tc.in+"\n"), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if n.Name != "localhost" || strings.Join(n.State, "+") != tc.state || n.Drained() != tc.drained || n.Ours() != tc.ours ||
				n.Reason != tc.reason || n.ReasonUser != tc.user || !n.ReasonTime.Equal(tc.at) {
				t.Errorf("got %+v (drained %v, ours %v)", n, n.Drained(), n.Ours())
			}
		})
	}
}

func TestParseNodeRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"Node localhost not found",
		idleRecord + "\n" + idleRecord,
		strings.Replace(drainedRecord, " [root@2026-11-28T20:44:51]", "", 1),
		strings.Replace(drainedRecord, "2026-11-28T20:44:51", "2026-13-28T20:44:51", 1),
	} {
		if n, err := parseNode([]byte(in), time.UTC); err == nil {
			t.Errorf("%q: accepted as %+v", truncate(in, 60), n)
		}
	}
}

func FuzzParseNode(f *testing.F) {
	f.Add(idleRecord)
	f.Add(drainedRecord)
	f.Add("NodeName=a State=DOWN+DRAIN Reason=x [@2026-01-01T00:00:00]")
	f.Fuzz(func(t *testing.T, in string) {
		n, err := parseNode([]byte(in), time.UTC)
		if err != nil {
			return
		}
		if n.Name == "" || len(n.State) == 0 {
			t.Fatalf("accepted a record without name or state: %+v", n)
		}
	})
}
