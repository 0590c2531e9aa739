// Package slurm takes a node with a sick NIC out of Slurm scheduling and
// puts it back: it drains the node with scontrol when the node verdict is
// unhealthy, and resumes it when the verdict is healthy again, but only a
// node that it drained itself (its drain reason starts with Prefix), so
// an administrator's drain is never undone.
//
// Slurm ignores the exit status of its HealthCheckProgram, so the
// program must act itself; nic_exporter check does it through this
// package. It runs scontrol rather than talking to slurmrestd: scontrol
// is on every node that runs slurmd, authenticates with the node's munge
// like slurmd does, and needs no token or extra daemon. Its one-line node
// record (scontrol show node -o) is parsed here; Slurm has no Go client
// library to do that.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Prefix starts the drain reason of every node this package drains. It
// is how Resume recognizes its own drains.
const Prefix = "nic_exporter: "

// maxReason bounds the drain reason: sinfo -R shows 20 characters by
// default and scontrol the whole reason, which a host with many sick
// devices could make long.
const maxReason = 256

// Config configures a Client.
type Config struct {
	// Scontrol is the scontrol command; "" means "scontrol" from $PATH.
	Scontrol string
	// Node is the Slurm node name of this host.
	Node string
	// MinDrained is how long a node this package drained stays drained
	// at least before Reconcile resumes it, counted from the time Slurm
	// recorded with the reason. With the verdict's own hold time it
	// bounds how often a node can go in and out of service.
	MinDrained time.Duration
	// Timeout bounds each scontrol call; 0 means 10 s.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client runs scontrol for one node.
type Client struct {
	cfg Config
	log *zap.Logger
}

// New returns a Client.
func New(cfg Config, log *zap.Logger) (*Client, error) {
	if cfg.Node == "" {
		return nil, errors.New("slurm: no node name")
	}
	if cfg.Scontrol == "" {
		cfg.Scontrol = "scontrol"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MinDrained < 0 {
		return nil, fmt.Errorf("slurm: the minimum drain time must not be negative, got %s", cfg.MinDrained)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg, log: log}, nil
}

// Node is what Slurm says of a node: its state flags and drain reason.
type Node struct {
	// Name is the node's name.
	Name string
	// State holds the base state and its flags, such as IDLE and DRAIN.
	State []string
	// Reason is the reason text without the user and time Slurm
	// appends; "" when the node has none.
	Reason string
	// ReasonUser and ReasonTime are who set the reason and when.
	ReasonUser string
	ReasonTime time.Time
}

// Drained reports whether the node has the DRAIN flag (draining or
// drained).
func (n Node) Drained() bool {
	for _, s := range n.State {
		if s == "DRAIN" {
			return true
		}
	}
	return false
}

// Ours reports whether the node's drain reason is one this package set.
func (n Node) Ours() bool { return strings.HasPrefix(n.Reason, Prefix) }

// reasonRE matches the reason of a one-line node record: the text, then
// Slurm's " [user@YYYY-MM-DDTHH:MM:SS]".
var reasonRE = regexp.MustCompile(`(?:^| )Reason=(.*?) \[([^@\]]*)@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]`)

// parseNode parses the output of scontrol show node -o NAME. Slurm
// writes the reason time in the local time of slurmctld; loc is that
// zone.
func parseNode(out []byte, loc *time.Location) (Node, error) {
	line := strings.TrimSpace(string(out))
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		return Node{}, fmt.Errorf("scontrol show node: want one node record, got %d lines", strings.Count(line, "\n")+1)
	}
	var n Node
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "NodeName":
			if n.Name == "" {
				n.Name = v
			}
		case "State":
			if n.State == nil {
				n.State = strings.Split(v, "+")
			}
		}
	}
	if n.Name == "" || len(n.State) == 0 || n.State[0] == "" {
		return Node{}, fmt.Errorf("scontrol show node: no NodeName or State in %q", truncate(line, 200))
	}
	if m := reasonRE.FindStringSubmatch(line); m != nil {
		t, err := time.ParseInLocation("2006-01-02T15:04:05", m[3], loc)
		if err != nil {
			return Node{}, fmt.Errorf("scontrol show node: reason time %q: %w", m[3], err)
		}
		n.Reason, n.ReasonUser, n.ReasonTime = m[1], m[2], t
	} else if strings.Contains(line, " Reason=") {
		return Node{}, fmt.Errorf("scontrol show node: a reason without [user@time] in %q", truncate(line, 200))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// run runs scontrol with args and returns its standard output.
func (c *Client) run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.cfg.Scontrol, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", c.cfg.Scontrol, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Show returns Slurm's record of the node.
func (c *Client) Show(ctx context.Context) (Node, error) {
	out, err := c.run(ctx, "show", "node", "-o", c.cfg.Node)
	if err != nil {
		return Node{}, err
	}
	return parseNode(out, time.Local)
}

// Action is what Reconcile did.
type Action string

// The actions of Reconcile.
const (
	None    Action = "none"
	Drained Action = "drained"
	Resumed Action = "resumed"
)

// Reconcile drains the node when unhealthy is true and drain is allowed,
// or resumes it when unhealthy is false and resume is allowed. It drains
// only a node that is not drained already (whoever drained it: an
// administrator's reason is kept), and resumes only a node whose reason
// it set, once MinDrained has passed since. reason is the verdict's
// one-line reason.
func (c *Client) Reconcile(ctx context.Context, unhealthy bool, reason string, drain, resume bool) (Action, string, error) {
	if !(unhealthy && drain) && !(!unhealthy && resume) {
		return None, "no Slurm action asked for", nil
	}
	n, err := c.Show(ctx)
	if err != nil {
		return None, "", err
	}
	if unhealthy {
		if n.Drained() {
			return None, fmt.Sprintf("node %s is already drained: %s", n.Name, n.Reason), nil
		}
		r := truncate(Prefix+strings.ReplaceAll(reason, "\n", " "), maxReason)
		if _, err := c.run(ctx, "update", "nodename="+c.cfg.Node, "state=drain", "reason="+r); err != nil {
			return None, "", err
		}
		c.log.Warn("drained the Slurm node", zap.String("node", c.cfg.Node), zap.String("reason", r))
		return Drained, fmt.Sprintf("drained node %s: %s", c.cfg.Node, r), nil
	}
	if !n.Drained() {
		return None, fmt.Sprintf("node %s is not drained", n.Name), nil
	}
	if !n.Ours() {
		return None, fmt.Sprintf("node %s was drained by %s, not by nic_exporter; left drained: %s", n.Name, n.ReasonUser, n.Reason), nil
	}
	if since := c.cfg.Now().Sub(n.ReasonTime); since < c.cfg.MinDrained {
		return None, fmt.Sprintf("node %s was drained %s ago, less than the minimum of %s; left drained", n.Name, since.Round(time.Second), c.cfg.MinDrained), nil
	}
	if _, err := c.run(ctx, "update", "nodename="+c.cfg.Node, "state=resume"); err != nil {
		return None, "", err
	}
	c.log.Info("resumed the Slurm node", zap.String("node", c.cfg.Node), zap.String("drained_for", n.Reason))
	return Resumed, fmt.Sprintf("resumed node %s (drained at %s: %s)", c.cfg.Node, n.ReasonTime.Format(time.RFC3339), n.Reason), nil
}
