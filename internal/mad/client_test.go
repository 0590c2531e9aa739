package mad

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
)

// silentTransport accepts every request and never answers, like a fabric
// whose responder is gone and whose transport has a long timeout.
type silentTransport struct {
	sent   chan []byte
	closed chan struct{}
}

func (s *silentTransport) Send(_ uint16, _ uint32, mad []byte) error {
	s.sent <- mad
	return nil
}

func (s *silentTransport) Recv([]byte) (int, bool, error) {
	<-s.closed
	return 0, false, net.ErrClosed
}

func (s *silentTransport) Close() error { close(s.closed); return nil }

// TestClientDeadline checks that a request without an answer ends at its
// context's deadline with ErrTimeout, that a later request still works,
// and that Close ends the receiver and fails later requests.
func TestClientDeadline(t *testing.T) {
	tr := &silentTransport{sent: make(chan []byte, 10), closed: make(chan struct{})}
	c := NewClient(ClientConfig{Transport: tr, Timeout: time.Hour}, zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := c.PortCounters(ctx, 2, 1)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests still pending after their deadline", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PortCounters(context.Background(), 2, 1); !errors.Is(err, ErrClosed) && !errors.Is(err, net.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}
