//go:build linux

package devlink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Value types of fmsg values: the kernel's netlink policy types (enum in
// include/net/netlink.h, NLA_U8 and so on), which devlink puts in
// DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE. Kernels before 6.16 have no uapi
// definition, so golang.org/x/sys/unix has no constants for them.
const (
	fmsgU8        = 1
	fmsgU16       = 2
	fmsgU32       = 3
	fmsgU64       = 4
	fmsgString    = 5
	fmsgFlag      = 6
	fmsgNulString = 10
	fmsgBinary    = 11
)

// maxFmsgDepth bounds the nesting of fmsg output.
const maxFmsgDepth = 32

var errFmsg = errors.New("malformed devlink formatted message")

type frameKind uint8

const (
	frameObject frameKind = iota
	framePair
	frameArray
)

type frame struct {
	kind     frameKind
	obj      Object
	arr      Array
	name     string
	named    bool
	value    Value
	hasValue bool
}

// fmsgDecoder rebuilds the tree from devlink's flat fmsg stream: nest
// start flags, names, typed values and nest ends. Output longer than one
// netlink message continues in the next message, so the decoder is fed
// each message's DEVLINK_ATTR_FMSG nest in turn.
//
// The stream is decoded leniently where real drivers are sloppy: an end
// with nothing open is ignored (netdevsim in Linux 6.1 closes one nest too
// many in its dummy reporter), an object directly inside an object is
// merged into it (the kernel wraps all output in one object), and nests
// still open at the end are closed. Anything else out of place is an
// error.
type fmsgDecoder struct {
	stack []*frame // stack[0] is the root object and is never popped
	vtype *uint8   // value type waiting for its data
}

func newFmsgDecoder() *fmsgDecoder {
	return &fmsgDecoder{stack: []*frame{{kind: frameObject}}}
}

// feed decodes the attributes of one DEVLINK_ATTR_FMSG nest.
func (d *fmsgDecoder) feed(b []byte) error {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return fmt.Errorf("%w: %v", errFmsg, err)
	}
	for ad.Next() {
		var err error
		switch ad.Type() {
		case unix.DEVLINK_ATTR_FMSG_OBJ_NEST_START:
			err = d.push(frameObject)
		case unix.DEVLINK_ATTR_FMSG_PAIR_NEST_START:
			err = d.push(framePair)
		case unix.DEVLINK_ATTR_FMSG_ARR_NEST_START:
			err = d.push(frameArray)
		case unix.DEVLINK_ATTR_FMSG_NEST_END:
			err = d.end()
		case unix.DEVLINK_ATTR_FMSG_OBJ_NAME:
			top := d.top()
			if top.kind != framePair || top.named {
				return fmt.Errorf("%w: name %q outside a pair", errFmsg, ad.String())
			}
			top.name, top.named = ad.String(), true
		case unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE:
			t := ad.Uint8()
			d.vtype = &t
		case unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA:
			if d.vtype == nil {
				return fmt.Errorf("%w: value without a type", errFmsg)
			}
			v, verr := fmsgValue(*d.vtype, ad.Bytes())
			d.vtype = nil
			if verr != nil {
				return verr
			}
			err = d.value(v)
		}
		if err != nil {
			return err
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("%w: %v", errFmsg, err)
	}
	return nil
}

func (d *fmsgDecoder) top() *frame { return d.stack[len(d.stack)-1] }

func (d *fmsgDecoder) push(k frameKind) error {
	if len(d.stack) > maxFmsgDepth {
		return fmt.Errorf("%w: nested deeper than %d", errFmsg, maxFmsgDepth)
	}
	top := d.top()
	switch {
	case k == framePair && top.kind != frameObject:
		return fmt.Errorf("%w: pair outside an object", errFmsg)
	case k == frameArray && top.kind == frameObject:
		return fmt.Errorf("%w: array without a name", errFmsg)
	case top.kind == framePair && top.hasValue:
		return fmt.Errorf("%w: pair %q has two values", errFmsg, top.name)
	}
	d.stack = append(d.stack, &frame{kind: k})
	return nil
}

func (d *fmsgDecoder) value(v Value) error {
	switch top := d.top(); top.kind {
	case framePair:
		if top.hasValue {
			return fmt.Errorf("%w: pair %q has two values", errFmsg, top.name)
		}
		top.value, top.hasValue = v, true
	case frameArray:
		top.arr = append(top.arr, v)
	default:
		return fmt.Errorf("%w: value outside a pair or array", errFmsg)
	}
	return nil
}

// end closes the innermost open nest.
func (d *fmsgDecoder) end() error {
	if len(d.stack) == 1 {
		return nil // unbalanced end; see fmsgDecoder
	}
	f := d.top()
	d.stack = d.stack[:len(d.stack)-1]
	parent := d.top()
	switch f.kind {
	case framePair:
		if !f.named {
			return fmt.Errorf("%w: pair without a name", errFmsg)
		}
		// push allows pairs only in objects.
		parent.obj = append(parent.obj, Field{Name: f.name, Value: f.value})
		return nil
	case frameObject:
		if parent.kind == frameObject {
			parent.obj = append(parent.obj, f.obj...)
			return nil
		}
		if f.obj == nil {
			return d.value(Object{})
		}
		return d.value(f.obj)
	default:
		if f.arr == nil {
			return d.value(Array{})
		}
		return d.value(f.arr)
	}
}

// finish closes what is still open and returns the tree.
func (d *fmsgDecoder) finish() (Object, error) {
	for len(d.stack) > 1 {
		if f := d.top(); f.kind == framePair && !f.named {
			d.stack = d.stack[:len(d.stack)-1]
			continue
		}
		if err := d.end(); err != nil {
			return nil, err
		}
	}
	if d.stack[0].obj == nil {
		return Object{}, nil
	}
	return d.stack[0].obj, nil
}

// fmsgValue decodes one value's data by its type. Unknown types are kept
// as Binary so a newer kernel's output still renders.
func fmsgValue(t uint8, b []byte) (Value, error) {
	need := map[uint8]int{fmsgFlag: 1, fmsgU8: 1, fmsgU16: 2, fmsgU32: 4, fmsgU64: 8}[t]
	if len(b) < need {
		return nil, fmt.Errorf("%w: value of type %d has %d bytes", errFmsg, t, len(b))
	}
	switch t {
	case fmsgFlag:
		return b[0] != 0, nil
	case fmsgU8:
		return b[0], nil
	case fmsgU16:
		return binary.NativeEndian.Uint16(b), nil
	case fmsgU32:
		return binary.NativeEndian.Uint32(b), nil
	case fmsgU64:
		return binary.NativeEndian.Uint64(b), nil
	case fmsgString, fmsgNulString:
		return string(bytes.TrimRight(b, "\x00")), nil
	default:
		return Binary(bytes.Clone(b)), nil
	}
}

// decodeFmsg decodes the DEVLINK_ATTR_FMSG nests of a sequence of reply
// messages' attribute payloads.
func decodeFmsg(payloads [][]byte) (Object, error) {
	d := newFmsgDecoder()
	for _, p := range payloads {
		ad, err := netlink.NewAttributeDecoder(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errFmsg, err)
		}
		for ad.Next() {
			if ad.Type() != unix.DEVLINK_ATTR_FMSG {
				continue
			}
			if err := d.feed(ad.Bytes()); err != nil {
				return nil, err
			}
		}
		if err := ad.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", errFmsg, err)
		}
	}
	return d.finish()
}
