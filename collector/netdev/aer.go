package netdev

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

var (
	pcieAERErrors = exposition.MustNewDesc("nic_pcie_aer_errors_total",
		"PCIe Advanced Error Reporting error messages (ERR_COR, ERR_NONFATAL, ERR_FATAL) the PCI function behind the interface sent, by severity: the TOTAL_ERR_* line of /sys/bus/pci/devices/<pci_address>/aer_dev_{correctable,nonfatal,fatal} (kernel 4.19+). Absent for functions without an AER capability.",
		exposition.Counter, "device", "pci_address", "severity")
	pcieAERTypes = exposition.MustNewDesc("nic_pcie_aer_error_types_total",
		"PCIe AER errors of one type (a bit of the AER status register) the PCI function behind the interface reported, by severity, from the named lines of aer_dev_{correctable,nonfatal,fatal}. The type is the kernel's name, which depends on the kernel version (\"RxErr\" in current kernels, \"Receiver Error\" in the first ones; \"dev_cor_errs_bit[N]\" for bits without a name). One message may carry several types, so the types need not add up to nic_pcie_aer_errors_total.",
		exposition.Counter, "device", "pci_address", "severity", "type").AsDetail()
)

// aerFile is one AER statistics attribute of a PCI function.
type aerFile struct {
	file, severity, total string
}

// aerFiles are the three per-function AER statistics attributes in the
// order they are exported (drivers/pci/pcie/aer.c, aer_stats_dev_attr).
var aerFiles = [...]aerFile{
	{file: "aer_dev_correctable", severity: "correctable", total: "TOTAL_ERR_COR"},
	{file: "aer_dev_nonfatal", severity: "nonfatal", total: "TOTAL_ERR_NONFATAL"},
	{file: "aer_dev_fatal", severity: "fatal", total: "TOTAL_ERR_FATAL"},
}

// aerCount is one named line of an AER statistics attribute.
type aerCount struct {
	Type  string
	Count uint64
}

// aerStats is one parsed AER statistics attribute.
type aerStats struct {
	Severity string
	Total    uint64
	Types    []aerCount
}

// parseAER parses an AER statistics attribute: one "<name> <count>" line
// per error type and a last line "<total> <count>", where total is the
// file's TOTAL_ERR_* name. The kernel prints the name with %s, and before
// 5.6 the names had spaces ("Receiver Error 2", "RELAY_NUM Rollover 0"),
// so the count is the last field and the name everything before it.
// Lines "dev_cor_errs_bit[N] <count>" (bits without a name, printed only
// when not zero) are types like the others. The total line is required:
// without it the file is not an AER statistics attribute.
func parseAER(s, total string) (uint64, []aerCount, error) {
	var (
		types    []aerCount
		sum      uint64
		hasTotal bool
	)
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		i := strings.LastIndexAny(line, " \t")
		if i <= 0 {
			return 0, nil, fmt.Errorf("%w: AER line %q has no count", errclass.ErrParse, line)
		}
		name := strings.TrimSpace(line[:i])
		v, err := sysfs.ParseCounter(line[i+1:])
		if err != nil {
			return 0, nil, fmt.Errorf("AER line %q: %w", line, err)
		}
		if hasTotal {
			return 0, nil, fmt.Errorf("%w: AER line %q after %s", errclass.ErrParse, line, total)
		}
		if name == total {
			sum, hasTotal = v, true
			continue
		}
		if strings.HasPrefix(name, "TOTAL_") {
			return 0, nil, fmt.Errorf("%w: AER total %q, want %s", errclass.ErrParse, name, total)
		}
		types = append(types, aerCount{Type: name, Count: v})
	}
	if !hasTotal {
		return 0, nil, fmt.Errorf("%w: AER statistics without a %s line", errclass.ErrParse, total)
	}
	return sum, types, nil
}

// readAER reads the AER statistics attributes of the PCI function in dir.
// A function without an AER capability, and any function on a kernel
// before 4.19, has none of the files: nothing is reported. A file that
// answers EINVAL or EOPNOTSUPP is reported once and not read again for the
// interface identity; any other read error (EMFILE, EACCES, EIO, a file
// that is not a regular file) and a file that does not parse are reported
// at every poll, and the file is read again at the next.
func (n *Collector) readAER(dir, identity string, p *collector.Poll) []aerStats {
	var out []aerStats
	for _, f := range aerFiles {
		key := "pci/" + f.file
		if n.unsupported.Has(identity, key) {
			continue
		}
		path := filepath.Join(dir, f.file)
		s, err := n.readAttr(path)
		if err != nil {
			if !errclass.IsNotExist(err) {
				n.unsupported.Remember(identity, key, err, errclass.IsUnsupportedAttr)
				p.SourceError(path, err)
			}
			continue
		}
		total, types, err := parseAER(s, f.total)
		if err != nil {
			p.SourceError(path, err)
			continue
		}
		out = append(out, aerStats{Severity: f.severity, Total: total, Types: types})
	}
	return out
}

// emitAER adds the AER series of one PCI function.
func emitAER(p *collector.Poll, device, pciAddr string, stats []aerStats) {
	for _, st := range stats {
		p.Add(pcieAERErrors, float64(st.Total), device, pciAddr, st.Severity)
		for _, t := range st.Types {
			p.Add(pcieAERTypes, float64(t.Count), device, pciAddr, st.Severity, t.Type)
		}
	}
}
