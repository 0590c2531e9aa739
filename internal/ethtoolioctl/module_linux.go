package ethtoolioctl

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// ModuleInfo returns the type and EEPROM length of the plug-in module of
// interface name (ETHTOOL_GMODULEINFO). This legacy ioctl is what
// kernels before 5.13 offer; it needs CAP_NET_ADMIN (net/ethtool/ioctl.c,
// __dev_ethtool: GMODULEINFO is not among the commands "done by anyone").
// A driver without module support fails with an error for which
// IsNotSupported is true.
func (s *Source) ModuleInfo(name string) (ModuleInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	const size = 44 // struct ethtool_modinfo: cmd, type, eeprom_len, reserved[8]
	buf, err := s.scratch(size)
	if err != nil {
		return ModuleInfo{}, err
	}
	clear(buf[:size])
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GMODULEINFO)
	if err := s.ioctl(name, buf); err != nil {
		return ModuleInfo{}, fmt.Errorf("module info of %s: %w", name, err)
	}
	return ModuleInfo{
		Type:   ModuleType(binary.NativeEndian.Uint32(buf[4:])),
		Length: int(binary.NativeEndian.Uint32(buf[8:])),
	}, nil
}

// ModuleEEPROM returns the first length bytes of the plug-in module's
// memory of interface name as one flat dump (ETHTOOL_GMODULEEEPROM; its
// layout per ModuleInfo.Type is described there). length is normally
// ModuleInfo.Length; the kernel refuses more (EINVAL). A module that
// fails the read gives EIO. Needs CAP_NET_ADMIN, as ModuleInfo.
func (s *Source) ModuleEEPROM(name string, length int) ([]byte, error) {
	if length <= 0 || length > maxModuleLen {
		return nil, fmt.Errorf("module eeprom of %s: length %d out of range", name, length)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	const head = 16 // struct ethtool_eeprom: cmd, magic, offset, len
	buf, err := s.scratch(head + length)
	if err != nil {
		return nil, err
	}
	clear(buf[:head+length])
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GMODULEEEPROM)
	binary.NativeEndian.PutUint32(buf[12:], uint32(length))
	if err := s.ioctl(name, buf); err != nil {
		return nil, fmt.Errorf("module eeprom of %s: %w", name, err)
	}
	// The kernel writes back how many bytes it copied.
	got := int(binary.NativeEndian.Uint32(buf[12:]))
	if got != length {
		return nil, fmt.Errorf("module eeprom of %s: %d bytes, asked for %d", name, got, length)
	}
	return append([]byte(nil), buf[head:head+length]...), nil
}
