package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfileMatchesImage keeps the Dockerfile, for those who build
// with Docker, on the layout of the release image: the same base, user,
// port, entrypoint, binary path and CA bundle path, and the passwd and
// group contents. (No Docker daemon runs in CI to build it.)
func TestDockerfileMatchesImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(release.cfg.Root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	// The final stage starts at the last FROM.
	final := df[strings.LastIndex(df, "\nFROM "):]
	port, _, _ := strings.Cut(imagePort, "/")
	for _, want := range []string{
		"\nFROM scratch\n",
		"\nUSER " + imageUser + "\n",
		"\nEXPOSE " + port + "\n",
		"\nENTRYPOINT [\"" + imageBinary + "\"]\n",
		"\nENV PATH=/bin\n",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q", strings.TrimSpace(want))
		}
	}
	for _, want := range []string{
		"-o /rootfs" + imageBinary + " ",
		"> /rootfs" + imageCABundle,
		"cat " + caCertificatesDir + "/*.crt",
		"printf '" + strings.ReplaceAll(imagePasswd, "\n", `\n`) + "' > /rootfs/etc/passwd",
		"printf '" + strings.ReplaceAll(imageGroup, "\n", `\n`) + "' > /rootfs/etc/group",
		"CGO_ENABLED=0 go build -trimpath -buildvcs=false",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	for label := range imageLabels(release.cfg, "") {
		switch label {
		case "org.opencontainers.image.created", "org.opencontainers.image.description", "io.github.nic-exporter.ca-certificates":
			continue // set by make release only
		}
		if !strings.Contains(final, label+"=") {
			t.Errorf("the Dockerfile does not set the label %s", label)
		}
	}
}
