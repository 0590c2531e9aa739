package daemon

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/safefile"
)

// checkPaths refuses paths given explicitly on the command line that
// cannot be what their flag says: a typo would otherwise read as "nothing
// to collect" (the collector up, no series), and a wrong procfs would
// make every live VMA process look stale. The defaults (/proc, /tmp,
// /dev/kmsg, /sys) are not checked: where they are absent there is nothing to
// collect. Only the paths of enabled collectors are checked. Nothing is
// opened: a FIFO given as a path must not block the startup.
func (o *Options) checkPaths() error {
	if o.sysfsSet {
		if err := checkSysfs(o.sysfs); err != nil {
			return fmt.Errorf("--path.sysfs: %w", err)
		}
	}
	if o.procfsSet {
		if err := checkProcfs(o.procfs); err != nil {
			return fmt.Errorf("--path.procfs: %w", err)
		}
	}
	for _, cf := range o.collectors {
		if cf.checkPaths == nil || !cf.common.Enabled {
			continue
		}
		if err := cf.checkPaths(); err != nil {
			return err
		}
	}
	return nil
}

// checkProcfs checks that dir looks like a procfs: a directory with the
// stat file (the boot time) and self (the reader's own process).
func checkProcfs(dir string) error {
	if err := collector.CheckDir(dir); err != nil {
		return err
	}
	for _, name := range []string{"stat", "self"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is not a procfs: %w", dir, err)
		}
	}
	return nil
}

// checkSysfs checks that dir looks like a sysfs: a directory with the
// class directory, under which every collector that reads sysfs looks.
// A wrong path used to read as a host without interfaces.
func checkSysfs(dir string) error {
	if err := collector.CheckDir(dir); err != nil {
		return err
	}
	if err := collector.CheckDir(filepath.Join(dir, "class")); err != nil {
		return fmt.Errorf("%s is not a sysfs: %w", dir, err)
	}
	return nil
}

// checkWebConfig refuses a --web.config.file that exporter-toolkit could
// not serve with: one that is no regular file or larger than
// MaxWebConfigSize, names a certificate, key or client CA file that is
// no regular file or too large, or does not validate. The toolkit reads
// the file whole with os.ReadFile at startup, at every request and at
// every TLS handshake (and the files it names at every handshake): a
// FIFO there blocked every request and /dev/zero grew the heap until
// memory ran out. The check opens nothing that could block. It cannot
// cover a file replaced after the startup; the toolkit's reads are its
// own.
func checkWebConfig(path string) error {
	data, err := safefile.ReadRegular(path, MaxWebConfigSize)
	if err != nil {
		return err
	}
	var c web.Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	for _, f := range []struct{ key, path string }{
		{"cert_file", c.TLSConfig.TLSCertPath},
		{"key_file", c.TLSConfig.TLSKeyPath},
		{"client_ca_file", c.TLSConfig.ClientCAs},
	} {
		if f.path == "" {
			continue
		}
		if _, err := safefile.ReadRegular(f.path, MaxWebConfigSize); err != nil {
			return fmt.Errorf("tls_server_config.%s: %w", f.key, err)
		}
	}
	// The toolkit's own checks (password hashes, the certificate and key
	// pair, TLS settings), which it would otherwise make only when it
	// starts to serve, after the startup log said "Listening".
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// MaxWebConfigSize is the largest --web.config.file, and the largest
// certificate, key or client CA file it names, that the exporter
// accepts: 1 MiB, far more than any such file, small enough that a wrong
// path (/dev/zero, a log file) fails at once.
const MaxWebConfigSize = 1 << 20
