package daemon

import (
	"errors"
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nic-exporter/nic_exporter/nodehealth"
	"github.com/nic-exporter/nic_exporter/nodehealth/kube"
)

// kubernetesFlags configure the Kubernetes sink of the node verdict
// (package nodehealth/kube).
type kubernetesFlags struct {
	conditions bool
	node       string
	taint      string
	kubeconfig string
	resync     time.Duration
}

func (k *kubernetesFlags) addFlags(app *kingpin.Application) {
	app.Flag("kubernetes.node-conditions", "Write the node verdict into this host's Node through the Kubernetes API server: one node condition per verdict condition (status.conditions, through nodes/status) and an Event per transition. Needs the RBAC and confinement of deploy/README.md (Node conditions and taint).").BoolVar(&k.conditions)
	app.Flag("kubernetes.node-name", "Name of this host's Node; in a DaemonSet, set NODE_NAME from the downward API's spec.nodeName.").Envar("NODE_NAME").StringVar(&k.node)
	app.Flag("kubernetes.taint", "With --kubernetes.node-conditions, also keep this taint (key[=value]:effect, such as "+kube.DefaultTaint+") on the Node while the verdict is unhealthy, and remove it when it is ok. Empty: no taint.").StringVar(&k.taint)
	app.Flag("kubernetes.kubeconfig", "Kubeconfig file to reach the API server with; empty: the pod's service account (in-cluster configuration).").StringVar(&k.kubeconfig)
	app.Flag("kubernetes.resync-interval", "How often the Node is compared with the verdict, and corrected, without a transition (others may edit it).").Default("5m").DurationVar(&k.resync)
}

// check refuses flag values that cannot work.
func (k *kubernetesFlags) check() error {
	if !k.conditions {
		if k.taint != "" || k.kubeconfig != "" {
			return errors.New("--kubernetes.taint and --kubernetes.kubeconfig need --kubernetes.node-conditions")
		}
		return nil
	}
	if k.node == "" {
		return errors.New("--kubernetes.node-conditions needs the Node's name: --kubernetes.node-name, or NODE_NAME from the downward API's spec.nodeName")
	}
	if k.taint != "" {
		if _, err := kube.ParseTaint(k.taint); err != nil {
			return fmt.Errorf("--kubernetes.taint: %w", err)
		}
	}
	if k.resync < time.Second {
		return fmt.Errorf("--kubernetes.resync-interval must be at least 1s, got %s", k.resync)
	}
	return nil
}

// KubernetesConfig configures the Kubernetes sink of Serve.
type KubernetesConfig struct {
	// Node is this host's Node.
	Node string
	// Taint, when set, is kept on the Node while unhealthy.
	Taint *kube.Taint
	// Kubeconfig is a kubeconfig file; "" means in-cluster.
	Kubeconfig string
	// Resync is the reconciliation interval without transitions.
	Resync time.Duration
}

// config returns the sink's configuration, or nil when it is off.
func (k *kubernetesFlags) config() *KubernetesConfig {
	if !k.conditions {
		return nil
	}
	c := &KubernetesConfig{Node: k.node, Kubeconfig: k.kubeconfig, Resync: k.resync}
	if k.taint != "" {
		t, _ := kube.ParseTaint(k.taint) // checked in check
		c.Taint = &t
	}
	return c
}

// newKubeSink returns the sink of cfg, on a client of the in-cluster
// configuration or of the kubeconfig file; verdict returns the latest
// verdict.
func newKubeSink(cfg *KubernetesConfig, verdict func() *nodehealth.Verdict, log *zap.Logger) (*kube.Sink, error) {
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the API server's configuration: %w", err)
	}
	rc.UserAgent = "nic_exporter/" + version.Version
	rc.WarningHandler = warningLog{log}
	client, err := kube.NewClient(rc)
	if err != nil {
		return nil, err
	}
	return kube.New(kube.Config{Client: client, Node: cfg.Node, Verdict: verdict, Taint: cfg.Taint, Resync: cfg.Resync}, log)
}

// warningLog logs the API server's warnings through zap rather than
// client-go's klog.
type warningLog struct{ log *zap.Logger }

func (w warningLog) HandleWarningHeader(code int, agent, text string) {
	w.log.Warn("the Kubernetes API server warns", zap.Int("code", code), zap.String("agent", agent), zap.String("warning", text))
}

// taintOrNone names the taint for the log, or says there is none.
func taintOrNone(t *kube.Taint) fmt.Stringer {
	if t == nil {
		return noTaint{}
	}
	return *t
}

type noTaint struct{}

func (noTaint) String() string { return "none" }
