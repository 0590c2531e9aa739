package deploy

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"
)

// faultSchedules are the demo faults that do not simply start at
// faultStart: optic_degrading runs its timeline (received power through the
// module's warning and alarm thresholds, BER, uncorrectable blocks, then
// flaps) compressed into 45 s, from 20 s to 65 s, so all of it happens
// while the test watches. The exporters read the module every second
// (--collector.phy.module-interval) for the same reason.
var faultSchedules = map[string]string{
	"optic_degrading": faultStart + "-65s",
}

// faultSchedule returns the schedule of a demo fault in the test.
func faultSchedule(fault string) string {
	if s, ok := faultSchedules[fault]; ok {
		return s
	}
	return faultStart
}

// firstTime returns the earliest timestamp, in the last 10 minutes, at
// which expr had a result, or ok false if it never had one.
func (p promAPI) firstTime(expr string) (ts float64, ok bool, err error) {
	q := fmt.Sprintf("min(min_over_time(timestamp(%s)[10m:1s]))", expr)
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?"+url.Values{"query": {q}}.Encode(), &body); err != nil {
		return 0, false, err
	}
	if body.Status != "success" {
		return 0, false, fmt.Errorf("query %q: %s", q, body.Error)
	}
	if len(body.Data.Result) == 0 {
		return 0, false, nil
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	ts, err = strconv.ParseFloat(s, 64)
	return ts, err == nil, err
}

// testOpticAlertBeforeFlap checks the point of the physical-layer alerts:
// on the faulty demo host the optic's received power alert fires in
// Prometheus before the link first goes down for the optic's reason, bad
// signal integrity (the same host's link_down fault, a switch port down,
// gives another reason from its start).
func (s *stack) testOpticAlertBeforeFlap(t *testing.T) {
	alert := fmt.Sprintf(`ALERTS{alertname="NICTransceiverRxPowerLow", alertstate="firing", instance=%q}`, s.faulty)
	flap := fmt.Sprintf(`nic_phy_link_down_reason{instance=%q, reason="bad_signal_integrity"} == 1`, s.faulty)
	var fired, flapped float64
	waitFor(t, "the rx power alert firing and the link flapping on the faulty demo host", stackWait, func() error {
		var ok1, ok2 bool
		var err error
		if fired, ok1, err = s.prom.firstTime(alert); err != nil {
			return err
		}
		if flapped, ok2, err = s.prom.firstTime(flap); err != nil {
			return err
		}
		if !ok1 || !ok2 {
			return fmt.Errorf("alert fired: %v, link flapped: %v", ok1, ok2)
		}
		return nil
	})
	if fired >= flapped {
		t.Errorf("NICTransceiverRxPowerLow first fired at %.0f, not before the first flap at %.0f", fired, flapped)
	}
	t.Logf("NICTransceiverRxPowerLow fired %.0f s before the link first went down", flapped-fired)
	for _, healthy := range []string{
		fmt.Sprintf(`ALERTS{alertname=~"NICTransceiver.*|NICPreFECBERHigh|NICFECUncorrectableBlocks|NICLinkDownWithReason", instance=%q}`, s.healthy),
		fmt.Sprintf(`nic_phy_link_down_reason{instance=%q}`, s.healthy),
	} {
		if _, ok, err := s.prom.firstTime(healthy); err != nil || ok {
			t.Errorf("%s on the healthy demo host: %v %v", healthy, ok, err)
		}
	}
}
