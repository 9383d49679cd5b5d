package main

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The generator writes JSON by hand instead of through encoding/json's map
// support so that object keys keep the order they have in the Go source and the
// output is byte-for-byte deterministic.

// value is a JSON value: object, array or scalar.
type value interface{}

// field is one key of an object.
type field struct {
	key string
	val value
}

// object is a JSON object whose keys are written in slice order.
type object []field

// array is a JSON array.
type array []value

// scalar is an already-encoded JSON number, string, bool or null.
type scalar string

const jsonNull = scalar("null")

// jsonString encodes s as a JSON string, leaving <, > and & readable.
func jsonString(s string) scalar {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // encoding a Go string cannot fail
	}
	return scalar(strings.TrimSuffix(buf.String(), "\n"))
}

// encodeJSON renders v with a two-space indent and a trailing newline.
func encodeJSON(v value) []byte {
	var buf bytes.Buffer
	writeValue(&buf, v, 0)
	buf.WriteByte('\n')
	return buf.Bytes()
}

func writeValue(buf *bytes.Buffer, v value, depth int) {
	switch v := v.(type) {
	case object:
		writeObject(buf, v, depth)
	case array:
		writeArray(buf, v, depth)
	case scalar:
		buf.WriteString(string(v))
	default:
		panic("jsonout: unsupported value type")
	}
}

func writeObject(buf *bytes.Buffer, o object, depth int) {
	if len(o) == 0 {
		buf.WriteString("{}")
		return
	}
	buf.WriteString("{\n")
	for i, f := range o {
		indent(buf, depth+1)
		buf.WriteString(string(jsonString(f.key)))
		buf.WriteString(": ")
		writeValue(buf, f.val, depth+1)
		if i < len(o)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	indent(buf, depth)
	buf.WriteByte('}')
}

func writeArray(buf *bytes.Buffer, a array, depth int) {
	if len(a) == 0 {
		buf.WriteString("[]")
		return
	}
	buf.WriteString("[\n")
	for i, v := range a {
		indent(buf, depth+1)
		writeValue(buf, v, depth+1)
		if i < len(a)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	indent(buf, depth)
	buf.WriteByte(']')
}

func indent(buf *bytes.Buffer, depth int) {
	buf.WriteString(strings.Repeat("  ", depth))
}
