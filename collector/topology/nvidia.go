package topology

import (
	"fmt"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

// GPUInformation is what the topology collector takes from the NVIDIA
// driver's /proc/driver/nvidia/gpus/<pci address>/information file.
type GPUInformation struct {
	// UUID is the "GPU UUID" line, for example
	// GPU-a75cda02-62ce-2c30-9150-555ef08935e2.
	UUID string
	// BusLocation is the "Bus Location" line, the GPU's PCI address
	// (0000:07:00.0).
	BusLocation string
}

// ParseGPUInformation parses the information file the NVIDIA kernel
// module writes for each GPU: one "Key: value" line per item ("Model:",
// "IRQ:", "GPU UUID:", "Video BIOS:", "Bus Type:", "DMA Size:", "DMA
// Mask:", "Bus Location:", "Device Minor:", "GPU Excluded:" in the
// drivers of 2020 to 2026), the value after tabs and spaces. It is a few
// lines of text with no library for it, so it is parsed here; unknown
// keys are ignored. A file without a "GPU UUID" line, or with a UUID that
// is not "GPU-" followed by hexadecimal digits and dashes, is an error.
func ParseGPUInformation(b []byte) (GPUInformation, error) {
	var info GPUInformation
	for _, line := range strings.Split(string(b), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "GPU UUID":
			info.UUID = value
		case "Bus Location":
			info.BusLocation = strings.ToLower(value)
		}
	}
	if info.UUID == "" {
		return GPUInformation{}, fmt.Errorf("%w: no GPU UUID line", errclass.ErrParse)
	}
	if !validUUID(info.UUID) {
		return GPUInformation{}, fmt.Errorf("%w: GPU UUID %q is not GPU- and hexadecimal digits", errclass.ErrParse, info.UUID)
	}
	if info.BusLocation != "" && !isPCIAddress(info.BusLocation) {
		return GPUInformation{}, fmt.Errorf("%w: bus location %q is not a PCI address", errclass.ErrParse, info.BusLocation)
	}
	return info, nil
}

// validUUID reports whether s looks like an NVIDIA GPU UUID: "GPU-" and
// then hexadecimal digits and dashes, at most 64 characters in all.
func validUUID(s string) bool {
	rest, ok := strings.CutPrefix(s, "GPU-")
	if !ok || rest == "" || len(s) > 64 {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

// isPCIAddress reports whether s is a PCI address as sysfs names
// functions: domain:bus:device.function in lower-case hexadecimal, with a
// domain of four digits ("0000:07:00.0") or more (Intel VMD domains such
// as "10000:01:00.0").
func isPCIAddress(s string) bool {
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || len(domain) < 4 || len(domain) > 8 || !isHex(domain) {
		return false
	}
	bus, devfn, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 || !isHex(bus) {
		return false
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	return ok && len(dev) == 2 && isHex(dev) && len(fn) == 1 && fn[0] >= '0' && fn[0] <= '7'
}

// isHex reports whether s is lower-case hexadecimal digits.
func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// BusID returns a PCI address in the form NVML and DCGM print it, the
// pci_bus_id label of dcgm-exporter: the domain in eight digits and
// upper-case hexadecimal, "00000000:07:00.0" for 0000:07:00.0. It returns
// "" for anything that is not a PCI address.
func BusID(addr string) string {
	if !isPCIAddress(addr) {
		return ""
	}
	domain, rest, _ := strings.Cut(addr, ":")
	return strings.Repeat("0", 8-len(domain)) + strings.ToUpper(domain+":"+rest)
}
