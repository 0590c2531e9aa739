package mixin

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-jsonnet/formatter"
)

// Format rewrites every .libsonnet file under dir that jsonnetfmt's
// default style would change, and returns the paths it rewrote. With
// write false it only returns them.
func Format(dir string, write bool) ([]string, error) {
	var changed []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".libsonnet") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := formatter.Format(path, string(b), formatter.DefaultOptions())
		if err != nil {
			return fmt.Errorf("formatting %s: %w", path, err)
		}
		if out == string(b) {
			return nil
		}
		changed = append(changed, path)
		if write {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
		}
		return nil
	})
	return changed, err
}
