package promstack

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Notification is one alert of an Alertmanager webhook notification.
type Notification struct {
	// Receiver is the name of the receiver Alertmanager routed the
	// alert to, Path the URL path it posted to.
	Receiver string `json:"-"`
	Path     string `json:"-"`
	// Received is when the webhook got it.
	Received time.Time `json:"-"`

	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
}

// Webhook receives Alertmanager's notifications and keeps every alert of
// them.
type Webhook struct {
	notify func(Notification)

	mu     sync.Mutex
	alerts []Notification
}

// NewWebhook returns a webhook receiver that calls notify (if not nil)
// for each alert it receives, one at a time, in the order received.
func NewWebhook(notify func(Notification)) *Webhook {
	return &Webhook{notify: notify}
}

// ServeHTTP takes one notification (Alertmanager's webhook payload,
// version 4).
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var msg struct {
		Receiver string         `json:"receiver"`
		Alerts   []Notification `json:"alerts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range msg.Alerts {
		a.Receiver, a.Path, a.Received = msg.Receiver, r.URL.Path, now
		w.alerts = append(w.alerts, a)
		if w.notify != nil {
			w.notify(a)
		}
	}
}

// Received returns every alert received so far.
func (w *Webhook) Received() []Notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Notification(nil), w.alerts...)
}

// Serve serves h on addr in the background until the returned server is
// shut down.
func Serve(addr string, h http.Handler) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
