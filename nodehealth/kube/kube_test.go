package kube

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nic-exporter/nic_exporter/nodehealth"
)

func TestParseTaint(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Taint
		wantErr string
	}{
		{in: DefaultTaint, want: Taint{Key: "nic-exporter.io/unhealthy", Effect: corev1.TaintEffectNoSchedule}},
		{in: "nic-exporter.io/unhealthy=true:NoExecute", want: Taint{Key: "nic-exporter.io/unhealthy", Value: "true", Effect: corev1.TaintEffectNoExecute}},
		{in: "k:PreferNoSchedule", want: Taint{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "nic-exporter.io/unhealthy", wantErr: "want key[=value]:effect"},
		{in: ":NoSchedule", wantErr: "no key"},
		{in: "k:NoScheduleX", wantErr: "the effect must be"},
		{in: "k=a=b:NoSchedule", wantErr: "want key[=value]:effect"},
	} {
		got, err := ParseTaint(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTaint(%q): error %v, want one with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTaint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseTaint(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestWithTaint(t *testing.T) {
	ours := Taint{Key: "nic-exporter.io/unhealthy", Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	mine := corev1.Taint{Key: ours.Key, Effect: ours.Effect}
	old := corev1.Taint{Key: ours.Key, Value: "old", Effect: ours.Effect}
	for _, tc := range []struct {
		name        string
		have        []corev1.Taint
		want        bool
		out         []corev1.Taint
		wantChanged bool
	}{
		{"add to none", nil, true, []corev1.Taint{mine}, true},
		{"add beside others", []corev1.Taint{notReady}, true, []corev1.Taint{notReady, mine}, true},
		{"present", []corev1.Taint{notReady, mine}, true, []corev1.Taint{notReady, mine}, false},
		{"replace another value", []corev1.Taint{old, notReady}, true, []corev1.Taint{notReady, mine}, true},
		{"remove", []corev1.Taint{mine, notReady}, false, []corev1.Taint{notReady}, true},
		{"remove the last", []corev1.Taint{mine}, false, nil, true},
		{"absent", []corev1.Taint{notReady}, false, []corev1.Taint{notReady}, false},
		{"duplicate", []corev1.Taint{mine, mine}, true, []corev1.Taint{mine}, true},
	} {
		out, changed := withTaint(tc.have, ours, tc.want, time.Unix(0, 0))
		if diff := cmp.Diff(tc.out, out); diff != "" || changed != tc.wantChanged {
			t.Errorf("%s: changed %v, want %v; taints (-want +got):\n%s", tc.name, changed, tc.wantChanged, diff)
		}
	}
}

func TestConditionsPatch(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	verdict := &nodehealth.Verdict{Status: nodehealth.VerdictUnhealthy, Conditions: []nodehealth.Condition{
		{Type: "NICFirmwareFatal", Status: nodehealth.StatusTrue, Reason: "FirmwareFatalError", Message: "fw_fatal on pci/0000:08:00.0", LastTransitionTime: t0.Add(30 * time.Minute)},
		{Type: "NICLinkDown", Status: nodehealth.StatusFalse, Reason: nodehealth.HealthyReason, Message: "no evidence", LastTransitionTime: t0.Add(10 * time.Minute)},
	}}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	for _, tc := range []struct {
		name string
		have []corev1.NodeCondition
		want []corev1.NodeCondition // nil: no patch
	}{
		{
			name: "new node",
			have: []corev1.NodeCondition{ready},
			want: []corev1.NodeCondition{
				{Type: "NICFirmwareFatal", Status: "True", Reason: "FirmwareFatalError", Message: "fw_fatal on pci/0000:08:00.0", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(t0.Add(30 * time.Minute))},
				{Type: "NICLinkDown", Status: "False", Reason: "Healthy", Message: "no evidence", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(t0.Add(10 * time.Minute))},
			},
		},
		{
			name: "in line",
			have: []corev1.NodeCondition{
				ready,
				{Type: "NICFirmwareFatal", Status: "True", Reason: "FirmwareFatalError", Message: "fw_fatal on pci/0000:08:00.0"},
				{Type: "NICLinkDown", Status: "False", Reason: "Healthy", Message: "no evidence", LastTransitionTime: metav1.NewTime(t0)},
			},
		},
		{
			// Someone set NICLinkDown to True: it is put back with a new
			// transition time; a changed message of an unchanged status
			// keeps the Node's transition time.
			name: "edited by others",
			have: []corev1.NodeCondition{
				{Type: "NICFirmwareFatal", Status: "True", Reason: "FirmwareFatalError", Message: "old", LastTransitionTime: metav1.NewTime(t0)},
				{Type: "NICLinkDown", Status: "True", Reason: "Manual", Message: "set by hand", LastTransitionTime: metav1.NewTime(t0)},
			},
			want: []corev1.NodeCondition{
				{Type: "NICFirmwareFatal", Status: "True", Reason: "FirmwareFatalError", Message: "fw_fatal on pci/0000:08:00.0", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(t0)},
				{Type: "NICLinkDown", Status: "False", Reason: "Healthy", Message: "no evidence", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(t0.Add(10 * time.Minute))},
			},
		},
	} {
		got := conditionsPatch(&corev1.Node{Status: corev1.NodeStatus{Conditions: tc.have}}, verdict, now)
		if tc.want == nil {
			if got != nil {
				t.Errorf("%s: patch %s, want none", tc.name, got)
			}
			continue
		}
		var p struct {
			Status struct {
				Conditions []corev1.NodeCondition `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(got, &p); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, got)
		}
		if diff := cmp.Diff(tc.want, p.Status.Conditions); diff != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestEventQueueBounded checks that transitions queued while the API
// server cannot be reached keep the newest, count the dropped ones, and
// never block the evaluator.
func TestEventQueueBounded(t *testing.T) {
	s, err := New(Config{Client: &Client{}, Node: "n1", Verdict: func() *nodehealth.Verdict { return nil }, EventQueue: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for i := range 5 {
		s.ConditionChanged(nodehealth.Condition{Type: "NICFirmwareFatal", LastTransitionTime: t0.Add(time.Duration(i) * time.Second)})
	}
	if got := s.metrics.eventsDropped.Load(); got != 3 {
		t.Errorf("%d events dropped, want 3", got)
	}
	if len(s.events) != 2 || !s.events[0].LastTransitionTime.Equal(t0.Add(3*time.Second)) || !s.events[1].LastTransitionTime.Equal(t0.Add(4*time.Second)) {
		t.Errorf("queue %+v, want the two newest", s.events)
	}
	if len(s.wake) != 1 {
		t.Errorf("%d wake-ups pending, want 1", len(s.wake))
	}
}
