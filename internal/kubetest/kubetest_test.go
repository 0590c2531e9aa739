//go:build linux

package kubetest

import (
	"os"
	"regexp"
	"testing"
)

// TestVersionMatchesToolsModule checks that KubernetesVersion, which
// names the cached binary the tests look for, is the version of
// k8s.io/kubernetes that tools/kube builds, which make kube-apiserver
// reads from the same go.mod to name the binary it caches.
func TestVersionMatchesToolsModule(t *testing.T) {
	b, err := os.ReadFile("../../tools/kube/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("tools/kube/go.mod requires no k8s.io/kubernetes")
	}
	if string(m[1]) != KubernetesVersion {
		t.Errorf("tools/kube builds k8s.io/kubernetes %s, the tests look for %s", m[1], KubernetesVersion)
	}
}
