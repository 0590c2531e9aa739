package devlink

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
)

// Object is decoded devlink formatted-message (fmsg) output, as diagnose
// and dump return it: named fields in the order the driver wrote them.
// Names may repeat. It marshals to a JSON object with the fields in order.
type Object []Field

// A Field is one name-value pair of an Object.
type Field struct {
	Name  string
	Value Value
}

// A Value is a field's value or an array element: bool, uint8, uint16,
// uint32, uint64, string, Binary, Object, Array, or nil for a pair without
// a value.
type Value any

// Array is an fmsg array.
type Array []Value

// Binary is an fmsg binary value. It marshals to JSON as a hex string.
// Long binary values arrive as an Array of Binary chunks.
type Binary []byte

// MarshalJSON implements json.Marshaler.
func (b Binary) MarshalJSON() ([]byte, error) {
	return json.Marshal(hex.EncodeToString(b))
}

// MarshalJSON implements json.Marshaler, keeping the fields' order.
func (o Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(f.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Get returns the value of the first field named name.
func (o Object) Get(name string) (Value, bool) {
	for _, f := range o {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}
