package phy

import (
	"fmt"

	"go.uber.org/zap"
)

// moduleGrant says how to grant what module memory reads need, in every
// deployment the project ships.
const moduleGrant = "CAP_NET_ADMIN: on Kubernetes the transceivers component " +
	"(deploy/kubernetes/components/transceivers) or the Helm value transceivers.enabled=true; " +
	"under systemd CAP_NET_ADMIN in CapabilityBoundingSet= and AmbientCapabilities= (the shipped unit has it); " +
	"otherwise run the exporter with CAP_NET_ADMIN"

// denied handles an operation the kernel refused for lack of a
// privilege. Like EOPNOTSUPP it is remembered for the device, and not
// asked again for UnsupportedRetry or until the interface changes: the
// privilege does not come back on its own, and each module read would
// cost an I2C transaction. Unlike EOPNOTSUPP it is an error: it is
// counted once per remembered refusal (reason eacces) without the
// generic log line, and the first refusal of each operation is logged
// once per process at warn level with what grants the privilege; later
// ones, of other devices, at debug level.
func (c *Collector) denied(d *device, op string, err error, r *reading) {
	c.unsupported.Add(d.iface.Name, op)
	r.errs = append(r.errs, opError{op: op, err: fmt.Errorf("%s of %s: %w", op, d.iface.Name, err), logged: true})
	fields := []zap.Field{
		zap.String("device", d.iface.Name), zap.String("driver", d.iface.Driver), zap.String("operation", op),
		zap.Error(err), zap.Duration("retry", c.cfg.UnsupportedRetry),
	}
	if c.deniedLogged[op] {
		c.log.Debug("operation not permitted; not asked again for a while", fields...)
		return
	}
	c.deniedLogged[op] = true
	if op == opModule {
		c.log.Warn("reading pluggable module (transceiver) memory is not permitted: the transceiver series and the NICTransceiver alerts are absent; "+
			"grant "+moduleGrant+". The kernel checks the capability before it asks the driver, so interfaces without a module are refused too. "+
			"Logged once; other devices are refused alike",
			append(fields, zap.String("needs", "CAP_NET_ADMIN"))...)
		return
	}
	c.log.Warn("ethtool operation not permitted: its series are absent. Logged once; other devices are refused alike", fields...)
}
