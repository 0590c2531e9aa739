package deploy

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// privileges is what a DaemonSet grants the exporter on a node, in a form
// that two renderings (kustomize with components, Helm with values) can be
// compared by: the effective user, the security context, the host
// namespaces, the capabilities, the host paths and Secrets mounted, and
// the exporter's arguments.
type privileges struct {
	RunAsUser                int64
	RunAsGroup               int64
	RunAsNonRoot             bool
	Privileged               bool
	AllowPrivilegeEscalation bool
	ReadOnlyRootFilesystem   bool
	Seccomp                  string
	HostNetwork              bool
	HostPID                  bool
	HostIPC                  bool
	// Capabilities are the added capabilities, sorted; every other one
	// is dropped (checked by privilegesOf).
	Capabilities []string
	// HostPaths maps each mounted host path to "ro <mount path>" or
	// "rw <mount path>".
	HostPaths map[string]string
	// Secrets are the names of the Secrets mounted, sorted.
	Secrets []string
	// Devices maps each extended resource the container asks for (a
	// device a device plugin hands out) to its limit.
	Devices map[string]string
	// Args are the exporter's arguments, sorted.
	Args []string
}

// clone returns a deep copy of p, for a test to modify.
func (p privileges) clone() privileges {
	p.Capabilities = slices.Clone(p.Capabilities)
	p.HostPaths = maps.Clone(p.HostPaths)
	p.Devices = maps.Clone(p.Devices)
	p.Secrets = slices.Clone(p.Secrets)
	p.Args = slices.Clone(p.Args)
	return p
}

// addCapabilities adds caps to p, keeping the list sorted.
func (p *privileges) addCapabilities(caps ...string) {
	p.Capabilities = append(p.Capabilities, caps...)
	sort.Strings(p.Capabilities)
}

// addArgs adds args to p, keeping the list sorted.
func (p *privileges) addArgs(args ...string) {
	p.Args = append(p.Args, args...)
	sort.Strings(p.Args)
}

// asRoot is the one exception to running as uid 65534: a container that
// needs a capability runs as root, with only that capability added.
func (p *privileges) asRoot() {
	p.RunAsUser, p.RunAsGroup, p.RunAsNonRoot = 0, 0, false
}

// privilegesOf reads the privilege profile of ds, failing the test when
// the DaemonSet does not have exactly one container, does not drop every
// capability, or leaves the user to the image.
func privilegesOf(t *testing.T, ds *appsv1.DaemonSet) privileges {
	t.Helper()
	spec := ds.Spec.Template.Spec
	c := container(t, ds)
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.RunAsNonRoot == nil ||
		sc.Privileged == nil || sc.AllowPrivilegeEscalation == nil || sc.ReadOnlyRootFilesystem == nil {
		t.Fatalf("container security context %+v: want user, group, runAsNonRoot, privileged, allowPrivilegeEscalation, readOnlyRootFilesystem and capabilities all set", sc)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities drop %v, want [ALL]", sc.Capabilities.Drop)
	}
	p := privileges{
		RunAsUser:                *sc.RunAsUser,
		RunAsGroup:               *sc.RunAsGroup,
		RunAsNonRoot:             *sc.RunAsNonRoot,
		Privileged:               *sc.Privileged,
		AllowPrivilegeEscalation: *sc.AllowPrivilegeEscalation,
		ReadOnlyRootFilesystem:   *sc.ReadOnlyRootFilesystem,
		HostNetwork:              spec.HostNetwork,
		HostPID:                  spec.HostPID,
		HostIPC:                  spec.HostIPC,
		Capabilities:             capabilities(c),
		HostPaths:                map[string]string{},
		Devices:                  map[string]string{},
		Args:                     slices.Sorted(slices.Values(c.Args)),
	}
	for name, q := range c.Resources.Limits {
		switch {
		case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
			strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		default:
			p.Devices[string(name)] = q.String()
			if r, ok := c.Resources.Requests[name]; ok && r.Cmp(q) != 0 {
				t.Errorf("extended resource %s: request %s differs from limit %s", name, r.String(), q.String())
			}
		}
	}
	if spec.SecurityContext != nil && spec.SecurityContext.SeccompProfile != nil {
		p.Seccomp = string(spec.SecurityContext.SeccompProfile.Type)
	}
	if sc.SeccompProfile != nil {
		p.Seccomp = string(sc.SeccompProfile.Type)
	}
	if psc := spec.SecurityContext; psc != nil && (psc.RunAsUser != nil || psc.RunAsNonRoot != nil || psc.RunAsGroup != nil) {
		t.Errorf("pod security context %+v sets a user: keep the user in the container's, where the components change it", psc)
	}
	volumes := make(map[string]corev1.Volume)
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.HostPath != nil:
			mode := "rw "
			if m.ReadOnly {
				mode = "ro "
			}
			p.HostPaths[v.HostPath.Path] = mode + m.MountPath
		case v.Secret != nil:
			if !m.ReadOnly {
				t.Errorf("Secret %s mounted read-write", v.Secret.SecretName)
			}
			p.Secrets = append(p.Secrets, v.Secret.SecretName)
		}
	}
	sort.Strings(p.Secrets)
	return p
}

// leastPrivilege is the profile of the default deployment, apart from its
// arguments: uid 65534, no capability, no host namespace but the network,
// /sys read-only, a read-only root and the runtime's seccomp filter.
var leastPrivilege = privileges{
	RunAsUser:              65534,
	RunAsGroup:             65534,
	RunAsNonRoot:           true,
	ReadOnlyRootFilesystem: true,
	Seccomp:                string(corev1.SeccompProfileTypeRuntimeDefault),
	HostNetwork:            true,
	HostPaths:              map[string]string{"/sys": "ro /host/sys"},
	Devices:                map[string]string{},
}

// checkLeastPrivilege fails the test unless ds has the default
// deployment's profile.
func checkLeastPrivilege(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	got := privilegesOf(t, ds)
	want := leastPrivilege.clone()
	want.Args = got.Args
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the default DaemonSet is not least-privilege (-want +got):\n%s", d)
	}
}

// The deltas of the opt-in privileges, shared by the kustomize components
// and the Helm values that stand for them; the README's "Required
// privileges" table and deploy/README.md document the same.

// wantVMA is the vma component: the node's PID namespace, its /tmp
// read-write and /var/log/vma read-only, root with DAC_OVERRIDE and
// SYS_PTRACE.
func wantVMA(p *privileges) {
	p.asRoot()
	p.HostPID = true
	p.addCapabilities("DAC_OVERRIDE", "SYS_PTRACE")
	p.HostPaths["/tmp"] = "rw /host/tmp"
	p.HostPaths["/var/log/vma"] = "ro /host/var/log/vma"
	p.addArgs("--collector.vma.stats-dir=/host/tmp", "--collector.applog.files=/host/var/log/vma/*.log")
}

// wantKernelLog is the kernel-log component: /dev/kmsg from a device
// plugin (one unit of squat.ai/kmsg), root with CAP_SYSLOG only, not
// privileged, and the state directory read-write for the kernel log
// counters' state file. internal/captest measures in the qemu guest that
// this is enough under an unprivileged pod's device policy.
func wantKernelLog(p *privileges) {
	p.asRoot()
	p.addCapabilities("SYSLOG")
	p.Devices["squat.ai/kmsg"] = "1"
	p.HostPaths["/var/lib/nic_exporter"] = "rw /var/lib/nic_exporter"
	p.addArgs("--collector.kmsg.state-file=/var/lib/nic_exporter/kmsg.state")
}

// wantKernelLogPrivileged is the kernel-log-privileged component, the
// fallback without a device plugin: /dev/kmsg from a hostPath in a
// privileged root container (the device cgroup), CAP_SYSLOG named, and
// the same state directory.
func wantKernelLogPrivileged(p *privileges) {
	p.asRoot()
	p.Privileged = true
	p.AllowPrivilegeEscalation = true
	p.addCapabilities("SYSLOG")
	p.HostPaths["/dev/kmsg"] = "ro /dev/kmsg"
	p.HostPaths["/var/lib/nic_exporter"] = "rw /var/lib/nic_exporter"
	p.addArgs("--collector.kmsg.state-file=/var/lib/nic_exporter/kmsg.state")
}

// wantDevlinkCapture is the devlink-capture component: root with
// NET_ADMIN and the capture directory read-write.
func wantDevlinkCapture(p *privileges) {
	p.asRoot()
	p.addCapabilities("NET_ADMIN")
	p.HostPaths["/var/lib/nic_exporter/captures"] = "rw /var/lib/nic_exporter/captures"
	p.addArgs("--collector.devlink.capture-dir=/var/lib/nic_exporter/captures")
}

// wantTransceivers is the transceivers component: root with NET_ADMIN
// only (module EEPROM reads are admin-only), no mount, no argument.
func wantTransceivers(p *privileges) {
	p.asRoot()
	p.addCapabilities("NET_ADMIN")
}

// wantDevlinkCaptureAndTransceivers is both: NET_ADMIN appears once.
func wantDevlinkCaptureAndTransceivers(p *privileges) {
	wantDevlinkCapture(p)
}

// wantTLS is the tls component: the web config Secret, no privilege.
func wantTLS(p *privileges) {
	p.Secrets = append(p.Secrets, "nic-exporter-web-config")
	sort.Strings(p.Secrets)
	p.addArgs("--web.config.file=/etc/nic_exporter/web/web-config.yml")
}
