package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// API is what the sink asks of the API server. Client is the one the
// daemon uses; it is an interface so that the tests can count on the
// same requests with another account's client.
type API interface {
	// GetNode reads a Node.
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	// PatchNode applies a strategic merge patch to a Node, or to its
	// subresource ("status"), as field manager FieldManager.
	PatchNode(ctx context.Context, name string, patch []byte, subresource ...string) (*corev1.Node, error)
	// CreateEvent creates an Event in its namespace.
	CreateEvent(ctx context.Context, ev *corev1.Event) error
}

// Client is a REST client of the core/v1 API group only. client-go's
// clientset would do the same three requests, but its scheme registers
// the types of every API group, which tripled the exporter's binary;
// this client registers core/v1 alone on client-go's REST client.
type Client struct {
	rc *rest.RESTClient
}

var _ API = (*Client)(nil)

// NewClient returns a Client for the API server of cfg (rest.InClusterConfig,
// or a kubeconfig's).
func NewClient(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kubernetes: registering core/v1: %w", err)
	}
	c := rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &Client{rc: rc}, nil
}

// GetNode implements API.
func (c *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := c.rc.Get().Resource("nodes").Name(name).Do(ctx).Into(n); err != nil {
		return nil, err
	}
	return n, nil
}

// PatchNode implements API.
func (c *Client) PatchNode(ctx context.Context, name string, patch []byte, subresource ...string) (*corev1.Node, error) {
	n := &corev1.Node{}
	err := c.rc.Patch(types.StrategicMergePatchType).Resource("nodes").Name(name).SubResource(subresource...).
		VersionedParams(&metav1.PatchOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(patch).Do(ctx).Into(n)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// CreateEvent implements API.
func (c *Client) CreateEvent(ctx context.Context, ev *corev1.Event) error {
	return c.rc.Post().Namespace(ev.Namespace).Resource("events").
		VersionedParams(&metav1.CreateOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(ev).Do(ctx).Error()
}
