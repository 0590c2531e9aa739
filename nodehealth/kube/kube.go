// Package kube takes a node with a sick NIC out of Kubernetes scheduling
// and puts it back: it writes the node verdict (package nodehealth) into
// the own Node object through the API server, as one node condition per
// verdict condition in status.conditions, optionally as a taint in
// spec.taints while the verdict is unhealthy, and as an Event on every
// transition.
//
// A Sink is a nodehealth.Sink: the evaluator hands it each transition,
// which it queues and returns at once. Its own goroutine (Run) then
// brings the Node in line with the evaluator's latest verdict, so a burst
// of transitions costs one patch (the latest verdict wins). It also does
// so at its start, once the verdict is known, and every Resync, because
// others may edit the Node. A request that fails (the API server
// unreachable, the service account forbidden) is retried with
// exponential backoff, logged once per change of the error, and counted
// in the self-metrics (Collector); neither the verdict nor /metrics ever
// waits for the API server.
//
// It writes only what it owns: the conditions named by the verdict
// (merged by type, others are kept), the one taint of Config.Taint
// (others are kept; the list is written with the Node's
// resourceVersion as a precondition, and rewritten on a conflict) and
// its Events.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nic-exporter/nic_exporter/nodehealth"
)

// FieldManager is the field manager of every write.
const FieldManager = "nic_exporter"

// DefaultTaint is the taint of the --kubernetes.taint flag's example.
const DefaultTaint = "nic-exporter.io/unhealthy:NoSchedule"

// maxMessage bounds the message of a condition and of an Event: a host
// with many sick devices could make the verdict's message long, and every
// Node read by every client of the cluster carries it.
const maxMessage = 1024

// Taint is the taint the sink keeps on the Node while the verdict is
// unhealthy.
type Taint struct {
	Key    string
	Value  string
	Effect corev1.TaintEffect
}

// String returns the taint as key[=value]:effect.
func (t Taint) String() string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// ParseTaint parses key[=value]:effect, the notation of kubectl taint.
// The effect is NoSchedule, PreferNoSchedule or NoExecute.
func ParseTaint(s string) (Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return Taint{}, fmt.Errorf("taint %q: want key[=value]:effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	if key == "" {
		return Taint{}, fmt.Errorf("taint %q: no key", s)
	}
	if strings.ContainsAny(key, " :=") || strings.ContainsAny(value, " :=") {
		return Taint{}, fmt.Errorf("taint %q: want key[=value]:effect", s)
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return Taint{Key: key, Value: value, Effect: e}, nil
	}
	return Taint{}, fmt.Errorf("taint %q: the effect must be NoSchedule, PreferNoSchedule or NoExecute, got %q", s, effect)
}

// Config configures a Sink.
type Config struct {
	// Client talks to the API server (NewClient).
	Client API
	// Node is the name of the own Node (the downward API's
	// spec.nodeName).
	Node string
	// Verdict returns the latest verdict (nodehealth.Evaluator.Verdict).
	Verdict func() *nodehealth.Verdict
	// Taint, when set, is kept on the Node while the verdict is
	// unhealthy and removed when it is ok.
	Taint *Taint
	// Resync is the time between two reconciliations without a
	// transition; 0 means 5 minutes.
	Resync time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed
	// reconciliation is retried, doubling from the one to the other;
	// 0 means 1 s and 2 minutes.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds each request; 0 means 10 s.
	Timeout time.Duration
	// EventQueue is how many Events may wait for the API server; the
	// oldest is dropped (and counted) when more come. 0 means 32.
	EventQueue int
	// Namespace is where the Events are created; "" means "default",
	// where the kubelet puts the Events of Nodes.
	Namespace string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Sink writes the verdict into the Node.
type Sink struct {
	cfg     Config
	log     *zap.Logger
	wake    chan struct{}
	metrics *metrics

	mu     sync.Mutex
	events []nodehealth.Condition // transitions not yet posted

	// Run's own state.
	errKey string // the error last logged, "" while the requests succeed
}

var _ nodehealth.Sink = (*Sink)(nil)

// New returns a Sink; Run does its work.
func New(cfg Config, log *zap.Logger) (*Sink, error) {
	if cfg.Client == nil {
		return nil, errors.New("kubernetes: no client")
	}
	if cfg.Node == "" {
		return nil, errors.New("kubernetes: no node name (set --kubernetes.node-name or NODE_NAME from the downward API's spec.nodeName)")
	}
	if cfg.Verdict == nil {
		return nil, errors.New("kubernetes: no verdict")
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 5 * time.Minute
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 2 * time.Minute
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, fmt.Errorf("kubernetes: the maximum backoff %s is below the minimum %s", cfg.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.EventQueue <= 0 {
		cfg.EventQueue = 32
	}
	if cfg.Namespace == "" {
		cfg.Namespace = metav1.NamespaceDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sink{cfg: cfg, log: log, wake: make(chan struct{}, 1), metrics: newMetrics()}, nil
}

// ConditionChanged queues the transition's Event and wakes Run; it never
// blocks.
func (s *Sink) ConditionChanged(c nodehealth.Condition) {
	s.mu.Lock()
	if len(s.events) >= s.cfg.EventQueue {
		s.events = s.events[1:]
		s.metrics.eventsDropped.Add(1)
	}
	s.events = append(s.events, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// unknownRetry is how often Run looks again at a verdict that is still
// unknown (the collectors have not all polled once).
const unknownRetry = time.Second

// Run reconciles the Node with the verdict at once, on every transition
// and every Resync, until ctx ends. After a failure it waits for its
// backoff, ignoring transitions and Resync, then tries again with the
// latest verdict.
func (s *Sink) Run(ctx context.Context) {
	resync := time.NewTicker(s.cfg.Resync)
	defer resync.Stop()
	backoff := time.Duration(0)
	for {
		var retry <-chan time.Time
		err := s.reconcile(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errUnknown):
			retry = time.After(unknownRetry)
		case err != nil:
			if backoff == 0 {
				backoff = s.cfg.MinBackoff
			} else {
				backoff = min(2*backoff, s.cfg.MaxBackoff)
			}
			// Jitter in [backoff/2, backoff): a fleet that lost the API
			// server together does not come back in step.
			retry = time.After(backoff/2 + rand.N(backoff/2+1))
		default:
			backoff = 0
		}
		if retry != nil {
			select {
			case <-ctx.Done():
				return
			case <-retry:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-resync.C:
		}
	}
}

// errUnknown means the verdict is still unknown; nothing is written.
var errUnknown = errors.New("the node verdict is unknown yet")

// reconcile brings the Node in line with the latest verdict and posts
// the queued Events. It logs a failure when it differs from the last
// one, and the recovery.
func (s *Sink) reconcile(ctx context.Context) error {
	v := s.cfg.Verdict()
	if v.Status == nodehealth.VerdictUnknown {
		return errUnknown
	}
	req, err := s.sync(ctx, v)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		reason := errorReason(err)
		s.metrics.errors.WithLabelValues(req, reason).Inc()
		if key := req + "/" + reason; key != s.errKey {
			s.errKey = key
			s.log.Error("cannot bring the Node in line with the node verdict; retrying with backoff", zap.String("node", s.cfg.Node), zap.String("request", req), zap.String("reason", reason), zap.Error(err))
		}
		return err
	}
	if s.errKey != "" {
		s.log.Info("the Node is in line with the node verdict again", zap.String("node", s.cfg.Node), zap.String("verdict", v.Status))
		s.errKey = ""
	}
	s.metrics.lastSuccess.Set(float64(s.cfg.Now().UnixNano()) / 1e9)
	return nil
}

// The requests, as the self-metrics' request label names them.
const (
	reqGetNode     = "get_node"
	reqConditions  = "patch_conditions"
	reqTaint       = "patch_taint"
	reqCreateEvent = "create_event"
)

// sync does the requests of one reconciliation and returns the one that
// failed.
func (s *Sink) sync(ctx context.Context, v *nodehealth.Verdict) (string, error) {
	node, err := s.getNode(ctx)
	if err != nil {
		return reqGetNode, err
	}
	if patch := conditionsPatch(node, v, s.cfg.Now()); patch != nil {
		if node, err = s.patch(ctx, patch, "status"); err != nil {
			return reqConditions, err
		}
		s.metrics.writes.WithLabelValues(reqConditions).Inc()
	}
	if s.cfg.Taint != nil {
		if err := s.syncTaint(ctx, node, v.Status == nodehealth.VerdictUnhealthy); err != nil {
			return reqTaint, err
		}
	}
	if err := s.postEvents(ctx, node); err != nil {
		return reqCreateEvent, err
	}
	return "", nil
}

func (s *Sink) getNode(ctx context.Context) (*corev1.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.cfg.Client.GetNode(ctx, s.cfg.Node)
	if err != nil {
		return nil, fmt.Errorf("getting node %s: %w", s.cfg.Node, err)
	}
	return n, nil
}

// patch applies a strategic merge patch to the Node or its status
// subresource.
func (s *Sink) patch(ctx context.Context, patch []byte, subresource ...string) (*corev1.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.cfg.Client.PatchNode(ctx, s.cfg.Node, patch, subresource...)
	if err != nil {
		what := "node " + s.cfg.Node
		if len(subresource) > 0 {
			what += "/" + subresource[0]
		}
		return nil, fmt.Errorf("patching %s: %w", what, err)
	}
	return n, nil
}

// conditionsPatch returns the strategic merge patch of status.conditions
// that gives the Node the verdict's conditions, or nil when it has them
// already. The conditions are merged by type, so those of the kubelet and
// of others stay. A condition whose status does not change keeps its
// lastTransitionTime; one that changes gets the verdict's.
func conditionsPatch(node *corev1.Node, v *nodehealth.Verdict, now time.Time) []byte {
	have := make(map[corev1.NodeConditionType]corev1.NodeCondition, len(node.Status.Conditions))
	for _, c := range node.Status.Conditions {
		have[c.Type] = c
	}
	var out []corev1.NodeCondition
	for _, c := range v.Conditions {
		want := corev1.NodeCondition{
			Type:               corev1.NodeConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status),
			Reason:             c.Reason,
			Message:            truncate(c.Message, maxMessage),
			LastHeartbeatTime:  metav1.NewTime(now),
			LastTransitionTime: metav1.NewTime(c.LastTransitionTime),
		}
		if h, ok := have[want.Type]; ok {
			if h.Status == want.Status && h.Reason == want.Reason && h.Message == want.Message {
				continue
			}
			if h.Status == want.Status {
				want.LastTransitionTime = h.LastTransitionTime
			}
		}
		out = append(out, want)
	}
	if len(out) == 0 {
		return nil
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": out}})
	if err != nil {
		panic(err) // the types marshal; a failure is a bug
	}
	return b
}

// maxConflicts bounds the rewrites of the taint list after conflicts
// with other writers within one reconciliation.
const maxConflicts = 5

// syncTaint adds or removes the taint. The taints are a list that a
// strategic merge patch replaces whole, so the patch carries the
// resourceVersion it was computed from; on a conflict the Node is read
// again.
func (s *Sink) syncTaint(ctx context.Context, node *corev1.Node, want bool) error {
	for range maxConflicts {
		taints, changed := withTaint(node.Spec.Taints, *s.cfg.Taint, want, s.cfg.Now())
		if !changed {
			return nil
		}
		if taints == nil {
			taints = []corev1.Taint{} // null would not remove the last taint
		}
		b, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		_, err = s.patch(ctx, b)
		if err == nil {
			s.metrics.writes.WithLabelValues(reqTaint).Inc()
			if want {
				s.log.Warn("tainted the Node", zap.String("node", s.cfg.Node), zap.Stringer("taint", *s.cfg.Taint))
			} else {
				s.log.Info("removed the taint from the Node", zap.String("node", s.cfg.Node), zap.Stringer("taint", *s.cfg.Taint))
			}
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		if node, err = s.getNode(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("patching the taints of node %s: still conflicting after %d attempts", s.cfg.Node, maxConflicts)
}

// withTaint returns the taints with t present (want) or absent, and
// whether that differs from taints. A taint with t's key and effect but
// another value is replaced.
func withTaint(taints []corev1.Taint, t Taint, want bool, now time.Time) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	found := false
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			if want && x.Value == t.Value && !found {
				found = true
				out = append(out, x)
			}
			continue
		}
		out = append(out, x)
	}
	if want && !found {
		nt := corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
		if t.Effect == corev1.TaintEffectNoExecute {
			at := metav1.NewTime(now)
			nt.TimeAdded = &at
		}
		out = append(out, nt)
	}
	return out, len(out) != len(taints) || (want && !found)
}

// postEvents creates an Event for each queued transition, oldest first.
// One that fails stays queued with those after it.
func (s *Sink) postEvents(ctx context.Context, node *corev1.Node) error {
	for {
		s.mu.Lock()
		if len(s.events) == 0 {
			s.mu.Unlock()
			return nil
		}
		c := s.events[0]
		s.mu.Unlock()
		if err := s.postEvent(ctx, node, c); err != nil {
			return err
		}
		s.metrics.writes.WithLabelValues(reqCreateEvent).Inc()
		s.mu.Lock()
		// ConditionChanged may have dropped the oldest meanwhile; the
		// posted one is removed only if it is still first.
		if len(s.events) > 0 && s.events[0].Type == c.Type && s.events[0].LastTransitionTime.Equal(c.LastTransitionTime) {
			s.events = s.events[1:]
		}
		s.mu.Unlock()
	}
}

// postEvent creates the Event of one transition on the Node.
func (s *Sink) postEvent(ctx context.Context, node *corev1.Node, c nodehealth.Condition) error {
	now := metav1.NewTime(s.cfg.Now())
	typ, reason := corev1.EventTypeWarning, c.Reason
	if c.Status != nodehealth.StatusTrue {
		typ, reason = corev1.EventTypeNormal, c.Type+"Cleared"
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// Unique per transition, so that a retry after a lost
			// answer finds its Event already there.
			Name:      fmt.Sprintf("%s.%s-%s.%x", s.cfg.Node, strings.ToLower(c.Type), strings.ToLower(c.Status), c.LastTransitionTime.UnixNano()),
			Namespace: s.cfg.Namespace,
		},
		InvolvedObject:      corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID},
		Reason:              reason,
		Message:             truncate(fmt.Sprintf("%s=%s: %s", c.Type, c.Status, c.Message), maxMessage),
		Type:                typ,
		Source:              corev1.EventSource{Component: "nic_exporter", Host: s.cfg.Node},
		FirstTimestamp:      metav1.NewTime(c.LastTransitionTime),
		LastTimestamp:       metav1.NewTime(c.LastTransitionTime),
		Count:               1,
		ReportingController: "nic-exporter.io/nic_exporter",
		ReportingInstance:   s.cfg.Node,
		EventTime:           metav1.NewMicroTime(now.Time),
		Action:              "Set" + c.Type,
	}
	if c.Status != nodehealth.StatusTrue {
		ev.Action = "Clear" + c.Type
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	err := s.cfg.Client.CreateEvent(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		return nil // posted before a retry lost the answer
	}
	if err != nil {
		return fmt.Errorf("creating the event %s of node %s: %w", reason, s.cfg.Node, err)
	}
	return nil
}

// errorReason classifies a request's error for the reason label.
func errorReason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsNotFound(err):
		return "not_found"
	case apierrors.IsConflict(err):
		return "conflict"
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return "invalid"
	case apierrors.IsTooManyRequests(err):
		return "throttled"
	case apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err):
		return "server_error"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return "other"
	}
	return "unreachable"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
