package promstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ProcessConfig describes a program to start.
type ProcessConfig struct {
	// Name names the process in errors ("prometheus").
	Name string
	// Path is the program's path, Args its arguments.
	Path string
	Args []string
	// LogFile receives the program's standard output and error; it is
	// created or truncated.
	LogFile string
}

// Process is a started program. It runs in a process group of its own,
// so a Ctrl-C in the terminal reaches only the parent, which stops its
// children in order; on Linux it also gets SIGTERM when the parent dies.
type Process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, set before done is closed
}

// Start starts the program of c.
func Start(c ProcessConfig) (*Process, error) {
	out, err := os.Create(c.LogFile)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	p := &Process{name: c.Name, log: c.LogFile, done: make(chan struct{})}
	p.cmd = exec.Command(c.Path, c.Args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", c.Name, c.Path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// Name returns the name the process was started with.
func (p *Process) Name() string { return p.name }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	return nil
}

// Done is closed when the process has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how the process ended: nil for exit status 0. It must
// be called only after Done is closed.
func (p *Process) ExitErr() error { return p.err }

// Stop sends SIGTERM and waits for the process to exit; after grace it
// kills it. It returns once the process has been waited for, and is a
// no-op for a process that has exited already.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// LogTail returns at most the last n bytes of the process's output.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.log, err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// WaitHTTP polls url until it answers 200 OK. It fails when the process
// exits first (with the end of its output) or when ctx ends.
func WaitHTTP(ctx context.Context, p *Process, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s answered:\n%s", p.name, p.err, url, p.LogTail(4000))
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to answer %s: %w (last: %v)", p.name, url, ctx.Err(), last)
		case <-p.done:
		case <-tick.C:
		}
	}
}

// errNoAlertmanager is returned by LookAlertmanager.
var errNoAlertmanager = errors.New("no Alertmanager in PATH (looked for alertmanager and prometheus-alertmanager)")

// LookAlertmanager returns Alertmanager's path: "alertmanager" as
// upstream and most distributions name it, or "prometheus-alertmanager"
// as Debian does.
func LookAlertmanager() (string, error) {
	for _, name := range []string{"alertmanager", "prometheus-alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errNoAlertmanager
}

// PrometheusArgs returns the arguments of a Prometheus server with
// configuration file config, its TSDB in dir, listening on addr.
func PrometheusArgs(config, dir, addr string) []string {
	return []string{"--config.file=" + config, "--storage.tsdb.path=" + dir, "--web.listen-address=" + addr}
}

// AlertmanagerArgs returns the arguments of a lone Alertmanager (no
// cluster listener) with configuration file config, its state in dir,
// listening on addr.
func AlertmanagerArgs(config, dir, addr string) []string {
	return []string{"--config.file=" + config, "--storage.path=" + dir, "--web.listen-address=" + addr,
		"--cluster.listen-address="}
}
