package collect

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sff"
)

// ModuleReader reads the memory of an interface's pluggable module: the
// phy collector's module source (ETHTOOL_MSG_MODULE_EEPROM_GET, the
// legacy ioctls as fallback) on a host, the demo optic on the demo host.
type ModuleReader interface {
	Module(ifname string) (*sff.Memory, error)
}

// openModules opens the pluggable module reader (the phy collector's
// ethtool netlink source), or returns nil, noting why, when there is none.
func (c *collector) openModules() ModuleReader {
	if c.src.Modules == nil {
		return nil
	}
	mr, err := c.src.Modules()
	if err != nil {
		c.b.unreadableErr("ethtool -m (module memory)", err)
		return nil
	}
	return mr
}

// moduleOnce writes ethtool_-m_IF.txt for each NIC interface with a
// module (one whose driver answers EOPNOTSUPP has none): the memory as the pages the module advertises, in the text
// form internal/sff reads back (ParseTextDump), after comment lines with
// the decoded identity and monitors.
func (c *collector) moduleOnce(mr ModuleReader) {
	if mr == nil {
		return
	}
	c.withEthtool(func(_ Ethtool, names []string) {
		for _, n := range names {
			cmd := "ethtool -m " + n
			m, err := mr.Module(n)
			if errclass.IsUnsupported(err) || errclass.IsNotExist(err) {
				continue // no pluggable module (ENA, virtual functions, an empty cage)
			}
			if err != nil {
				c.b.unreadableErr(cmd, err)
				continue
			}
			if _, err := sff.Decode(m); errors.Is(err, sff.ErrNoModule) {
				continue // an empty cage
			}
			c.b.add("ethtool_-m_"+n+".txt", cmd+" (ETHTOOL_MSG_MODULE_EEPROM_GET; the pages as hex rows, the decoded monitors as comments)",
				[]byte(renderModule(m)))
		}
	})
}

// dBm returns watts in dBm, as ethtool -m prints optical power.
func dBm(w float64) string {
	if w <= 0 {
		return "-inf dBm"
	}
	return fmt.Sprintf("%.2f dBm", 10*math.Log10(w*1000))
}

// renderModule prints module memory: a decoded summary as comments, then
// "page addr=0xAA bank=B page=0xPP" sections of "OO: hex bytes" rows.
func renderModule(m *sff.Memory) string {
	var b strings.Builder
	if mod, err := sff.Decode(m); err != nil {
		fmt.Fprintf(&b, "# not decoded: %v\n", err)
	} else {
		id := mod.Identity
		fmt.Fprintf(&b, "# %s %s, vendor %s, part %s, revision %s, serial %s\n", mod.Standard, id.IdentifierName, id.VendorName, id.PartNumber, id.Revision, id.SerialNumber)
		if mod.TemperatureCelsius != nil {
			fmt.Fprintf(&b, "# temperature %.2f C\n", *mod.TemperatureCelsius)
		}
		for _, l := range mod.Lanes {
			if l.RxPowerWatts != nil {
				fmt.Fprintf(&b, "# lane %d rx power %s\n", l.Index, dBm(*l.RxPowerWatts))
			}
		}
		if t := mod.RxPowerThresholds; t != nil {
			fmt.Fprintf(&b, "# rx power low alarm %s\n", dBm(t.LowAlarm))
			if t.LowWarning != nil {
				fmt.Fprintf(&b, "# rx power low warning %s\n", dBm(*t.LowWarning))
			}
		}
	}
	rows := func(data []byte, base int) {
		for off := 0; off < len(data); off += 16 {
			end := min(off+16, len(data))
			hex := make([]string, 0, 16)
			for _, x := range data[off:end] {
				hex = append(hex, fmt.Sprintf("%02x", x))
			}
			fmt.Fprintf(&b, "%02x: %s\n", base+off, strings.Join(hex, " "))
		}
	}
	addrs := make([]int, 0, len(m.Lower))
	for a := range m.Lower {
		addrs = append(addrs, int(a))
	}
	keys := make([]sff.PageKey, 0, len(m.Upper))
	for k := range m.Upper {
		keys = append(keys, k)
		if _, ok := m.Lower[k.Addr]; !ok {
			addrs = append(addrs, int(k.Addr))
		}
	}
	sort.Ints(addrs)
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.Addr != y.Addr {
			return x.Addr < y.Addr
		}
		if x.Bank != y.Bank {
			return x.Bank < y.Bank
		}
		return x.Page < y.Page
	})
	for _, a := range addrs {
		addr := uint8(a)
		fmt.Fprintf(&b, "page addr=0x%02x bank=0 page=0x00\n", addr)
		rows(m.Lower[addr], 0)
		for _, k := range keys {
			if k.Addr != addr {
				continue
			}
			if k.Bank != 0 || k.Page != 0 {
				fmt.Fprintf(&b, "page addr=0x%02x bank=%d page=0x%02x\n", k.Addr, k.Bank, k.Page)
			}
			rows(m.Upper[k], sff.PageSize)
		}
	}
	return b.String()
}
