//go:build linux

// Package kubetest starts a real Kubernetes control plane for tests: the
// Debian etcd and a kube-apiserver built from k8s.io/kubernetes (make
// kube-apiserver, tools/kube), on free loopback ports, with certificates
// made here in a temporary directory, and stops both by process group
// when the test ends. There is no kubelet, scheduler or controller
// manager: tests create the Node, ServiceAccount and Pod objects they
// need themselves.
//
// A test that cannot find the cached binary or etcd skips, and fails
// under NIC_EXPORTER_REQUIRE_ALL=1 (internal/testenv).
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// KubernetesVersion is the version of kube-apiserver that tools/kube
// builds; TestVersionMatchesToolsModule checks that they agree.
const KubernetesVersion = "v1.34.2"

// BinaryVar names an environment variable that, when set, is the path of
// the kube-apiserver binary instead of the cache's.
const BinaryVar = "NIC_EXPORTER_KUBE_APISERVER"

// CachedBinary returns where make kube-apiserver caches the binary:
// nic_exporter-kube/<Kubernetes version>-<Go version>/kube-apiserver
// under the user's cache directory ($XDG_CACHE_HOME or ~/.cache).
func CachedBinary() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "nic_exporter-kube", KubernetesVersion+"-"+runtime.Version(), "kube-apiserver"), nil
}

// stopWait is how long a stopped server may take to exit after SIGTERM
// before it is killed.
const stopWait = 15 * time.Second

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Dir holds the certificates, the data and the logs.
	Dir string
	// Admin is a client configuration with the rights of
	// system:masters (a client certificate).
	Admin *rest.Config
	// Client is a clientset of Admin.
	Client kubernetes.Interface

	t          testing.TB
	apiserver  string
	args       []string
	url        string
	caPEM      []byte
	api        *proc
	apiStarted int
}

// proc is a server started in a process group of its own.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts etcd and kube-apiserver and waits until the API server is
// ready; the test's cleanup stops them.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := os.Getenv(BinaryVar)
	if bin == "" {
		var err error
		bin, err = CachedBinary()
		if err != nil {
			testenv.Require(t, false, "a user cache directory for kube-apiserver: "+err.Error())
		}
	}
	_, err := os.Stat(bin)
	testenv.Require(t, err == nil, fmt.Sprintf("kube-apiserver at %s (make kube-apiserver builds it; %s overrides the path)", bin, BinaryVar))
	etcd := testenv.LookPath(t, "etcd")

	dir := t.TempDir()
	c := &Cluster{Dir: dir, t: t, apiserver: bin}
	ca, err := c.writeCertificates()
	if err != nil {
		t.Fatal(err)
	}
	c.caPEM = ca

	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	e := c.start("etcd", etcd,
		"--name=ktest", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=ktest="+peerURL)
	t.Cleanup(func() { c.stop(e) })
	c.waitFor("etcd healthy", e, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	certs := filepath.Join(dir, "certs")
	c.url = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.args = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + filepath.Join(certs, "server.crt"),
		"--tls-private-key-file=" + filepath.Join(certs, "server.key"),
		"--client-ca-file=" + filepath.Join(certs, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(certs, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(certs, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		"--cert-dir=" + certs,
	}
	c.Admin = &rest.Config{
		Host: c.url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   ca,
			CertFile: filepath.Join(certs, "admin.crt"),
			KeyFile:  filepath.Join(certs, "admin.key"),
		},
		QPS:   100,
		Burst: 200,
	}
	c.Client, err = kubernetes.NewForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	c.StartAPIServer()
	t.Cleanup(c.StopAPIServer)
	return c
}

// StartAPIServer starts the API server (again, after StopAPIServer) on
// the same port and waits until it is ready.
func (c *Cluster) StartAPIServer() {
	c.t.Helper()
	c.apiStarted++
	c.api = c.start(fmt.Sprintf("kube-apiserver.%d", c.apiStarted), c.apiserver, c.args...)
	tr, err := rest.TransportFor(c.Admin)
	if err != nil {
		c.t.Fatal(err)
	}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	c.waitFor("kube-apiserver ready", c.api, func() bool {
		resp, err := hc.Get(c.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// StopAPIServer stops the API server; etcd keeps running.
func (c *Cluster) StopAPIServer() {
	if c.api != nil {
		c.stop(c.api)
		c.api = nil
	}
}

// start starts a server with its output in Dir/<name>.log.
func (c *Cluster) start(name, bin string, args ...string) *proc {
	c.t.Helper()
	f, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		c.t.Fatalf("%s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

// stop ends p's process group: SIGTERM, then SIGKILL after stopWait.
func (c *Cluster) stop(p *proc) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// waitFor polls ok until it holds, within the hang guard; p exiting
// first fails the test with the end of its log.
func (c *Cluster) waitFor(what string, p *proc, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(testenv.HangGuard)
	for !ok() {
		select {
		case <-p.done:
			c.t.Fatalf("%s: %s exited:\n%s", what, p.name, c.Log(p.name))
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within the hang guard:\n%s", what, c.Log(p.name))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Log returns the last 8 KiB of a server's log (name "etcd" or
// "kube-apiserver.N").
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// Config returns a client configuration that authenticates with a bearer
// token, such as a service account's.
func (c *Cluster) Config(token string) *rest.Config {
	return &rest.Config{Host: c.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM}}
}

// WriteKubeconfig writes a kubeconfig file for a bearer token into Dir
// and returns its path.
func (c *Cluster) WriteKubeconfig(name, token string) string {
	c.t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.url, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(c.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// CreateNode creates a Node object with no kubelet behind it.
func (c *Cluster) CreateNode(ctx context.Context, name string) *corev1.Node {
	c.t.Helper()
	n, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating node %s: %v", name, err)
	}
	return n
}

// PodToken creates, in namespace ns, the service account sa (unless it
// exists) and a pod of it bound to node (spec.nodeName; no kubelet runs
// it), and returns a token of the service account bound to that pod,
// like the one the kubelet projects into a DaemonSet's pod. The API
// server puts the pod's node name into such a token, and its
// authenticator hands it on as the user's extra
// authentication.kubernetes.io/node-name.
func (c *Cluster) PodToken(ctx context.Context, ns, sa, pod, node string) string {
	c.t.Helper()
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatalf("creating service account %s/%s: %v", ns, sa, err)
	}
	p, err := c.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			NodeName:           node,
			Containers:         []corev1.Container{{Name: "exporter", Image: "nic-exporter.invalid/nic_exporter:test"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("creating pod %s/%s: %v", ns, pod, err)
	}
	expiry := int64(3600)
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &expiry,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("token request for %s/%s bound to pod %s: %v", ns, sa, pod, err)
	}
	return tr.Status.Token
}

// Apply creates the objects of a YAML file of shipped manifests
// (documents separated by ---) as they are, decoded strictly into their
// API types, and returns them. It knows the kinds of the node-condition
// component: Namespace, ClusterRole, ClusterRoleBinding,
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding.
func (c *Cluster) Apply(ctx context.Context, file string) []any {
	c.t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		c.t.Fatal(err)
	}
	var out []any
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			c.t.Fatalf("%s, document %d: %v", file, i+1, err)
		}
		var obj any
		var create func() error
		switch meta.Kind {
		case "Namespace":
			o := &corev1.Namespace{}
			obj, create = o, func() error {
				_, err := c.Client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
				return err
			}
		case "ClusterRole":
			o := &rbacv1.ClusterRole{}
			obj, create = o, func() error {
				_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
				return err
			}
		case "ClusterRoleBinding":
			o := &rbacv1.ClusterRoleBinding{}
			obj, create = o, func() error {
				_, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
				return err
			}
		case "ValidatingAdmissionPolicy":
			o := &admissionv1.ValidatingAdmissionPolicy{}
			obj, create = o, func() error {
				_, err := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
				return err
			}
		case "ValidatingAdmissionPolicyBinding":
			o := &admissionv1.ValidatingAdmissionPolicyBinding{}
			obj, create = o, func() error {
				_, err := c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
				return err
			}
		default:
			c.t.Fatalf("%s, document %d: kind %q is not one Apply knows", file, i+1, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			c.t.Fatalf("%s, document %d: %v", file, i+1, err)
		}
		if err := create(); err != nil {
			c.t.Fatalf("%s, document %d: creating the %s: %v", file, i+1, meta.Kind, err)
		}
		out = append(out, obj)
	}
	return out
}

// freePort returns a port no one listens on at 127.0.0.1 now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeCertificates writes into Dir/certs a CA, the API server's serving
// certificate for 127.0.0.1 and localhost, an administrator's client
// certificate (organization system:masters) and the RSA key pair that
// signs service-account tokens, and returns the CA certificate in PEM.
func (c *Cluster) writeCertificates() ([]byte, error) {
	dir := filepath.Join(c.Dir, "certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nic_exporter test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o600); err != nil {
		return nil, err
	}
	leaf := func(name string, serial int64, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("%s certificate: %w", name, err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	}
	if err := leaf("server", 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}); err != nil {
		return nil, err
	}
	if err := leaf("admin", 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	// The certificates must load as a pair before a server is started
	// with them, so that a mistake here is reported here.
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")); err != nil {
		return nil, err
	}
	return caPEM, nil
}
