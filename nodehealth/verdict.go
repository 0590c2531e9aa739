package nodehealth

import (
	"fmt"
	"strings"
	"time"
)

// Condition statuses, as Kubernetes spells them.
const (
	StatusTrue  = "True"
	StatusFalse = "False"
)

// Verdict statuses.
const (
	// VerdictOK means that no condition is true.
	VerdictOK = "ok"
	// VerdictUnhealthy means that at least one condition is true.
	VerdictUnhealthy = "unhealthy"
	// VerdictUnknown means that the daemon cannot tell yet: its
	// collectors have not all polled once.
	VerdictUnknown = "unknown"
)

// HealthyReason is the reason of a condition that is false.
const HealthyReason = "Healthy"

// Condition is the state of one node condition, as /health serves it.
type Condition struct {
	// Type is the condition's name (Definition.Type).
	Type string `json:"type"`
	// Status is "True" while the condition holds, else "False".
	Status string `json:"status"`
	// Reason is Definition.Reason while true, "Healthy" while false.
	Reason string `json:"reason"`
	// Message names the devices and the evidence while true.
	Message string `json:"message"`
	// Severity is the severity of the alerts the condition mirrors.
	Severity string `json:"severity"`
	// Alerts names those alerts.
	Alerts []string `json:"alerts"`
	// Devices lists the devices with evidence, while true.
	Devices []string `json:"devices,omitempty"`
	// Evidence lists one line per series that showed the condition at
	// the last evaluation that had evidence.
	Evidence []string `json:"evidence,omitempty"`
	// LastTransitionTime is when Status last changed (the daemon's
	// start for a condition that never changed).
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	// ClearsAt is, for a true condition whose evidence is gone, when it
	// will be cleared if no evidence comes back.
	ClearsAt *time.Time `json:"clearsAt,omitempty"`
}

// Verdict is the node's health: the status of every condition.
type Verdict struct {
	// Status is "ok", "unhealthy" or "unknown".
	Status string `json:"status"`
	// Reason is a one-line summary: the true conditions with their
	// reasons and devices, or why the status is unknown.
	Reason string `json:"reason"`
	// Time is when the verdict was computed.
	Time time.Time `json:"time"`
	// ClearAfter is the hold time of the hysteresis, in seconds.
	ClearAfterSeconds float64 `json:"clearAfterSeconds"`
	// Conditions lists every condition of the table, in its order.
	Conditions []Condition `json:"conditions"`
}

// summarize sets v.Status and v.Reason from the conditions.
func (v *Verdict) summarize() {
	var parts []string
	for _, c := range v.Conditions {
		if c.Status == StatusTrue {
			parts = append(parts, fmt.Sprintf("%s (%s) on %s", c.Type, c.Reason, strings.Join(c.Devices, ", ")))
		}
	}
	if len(parts) == 0 {
		v.Status, v.Reason = VerdictOK, "no NIC condition is true"
		return
	}
	v.Status, v.Reason = VerdictUnhealthy, strings.Join(parts, "; ")
}

// Only returns the verdict restricted to the conditions named in types,
// with its status and reason recomputed from them; an unknown verdict
// stays unknown. A name that is not a condition of the verdict is an
// error, so that a typo in a monitor's configuration cannot pass as a
// healthy node.
func (v *Verdict) Only(types []string) (*Verdict, error) {
	want := make(map[string]bool, len(types))
	for _, t := range types {
		want[t] = true
	}
	out := *v
	out.Conditions = nil
	for _, c := range v.Conditions {
		if want[c.Type] {
			out.Conditions = append(out.Conditions, c)
			delete(want, c.Type)
		}
	}
	if len(want) > 0 {
		var missing []string
		for _, t := range types {
			if want[t] {
				missing = append(missing, t)
			}
		}
		return nil, fmt.Errorf("no node condition %s; the verdict has %s", strings.Join(missing, ", "), strings.Join(v.types(), ", "))
	}
	if v.Status != VerdictUnknown {
		out.summarize()
	}
	return &out, nil
}

func (v *Verdict) types() []string {
	var out []string
	for _, c := range v.Conditions {
		out = append(out, c.Type)
	}
	return out
}
