package otlp

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ParseResponse reads an ExportTraceServiceResponse in protobuf: the partial_success's
// rejected_spans and error_message (0 and "" when absent). Unknown fields are skipped, as
// protobuf readers must; a body that is not protobuf is an error.
func ParseResponse(msg []byte) (rejected int64, message string, err error) {
	err = fields(msg, func(n protowire.Number, t protowire.Type, v []byte, x uint64) error {
		if n != 1 || t != protowire.BytesType { // partial_success
			return nil
		}
		return fields(v, func(n protowire.Number, t protowire.Type, v []byte, x uint64) error {
			switch {
			case n == 1 && t == protowire.VarintType: // rejected_spans
				rejected = int64(x)
			case n == 2 && t == protowire.BytesType: // error_message
				message = string(v)
			}
			return nil
		})
	})
	if err != nil {
		return 0, "", err
	}
	return rejected, message, nil
}

// rpcStatusMessage returns the message of a google.rpc.Status in protobuf (field 2), or ""
// when body is not one.
func rpcStatusMessage(body []byte) string {
	var message string
	err := fields(body, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
		if n == 2 && t == protowire.BytesType {
			message = string(v)
		}
		return nil
	})
	if err != nil {
		return ""
	}
	return message
}

// fields calls f for each top-level field of the protobuf message b: its number, wire
// type, the bytes of a length-delimited value and the number of a varint or fixed one.
func fields(b []byte, f func(n protowire.Number, t protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		n, t, size := protowire.ConsumeTag(b)
		if size < 0 {
			return errors.New("not protobuf: a bad tag")
		}
		b = b[size:]
		var v []byte
		var x uint64
		switch t {
		case protowire.VarintType:
			x, size = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, size = protowire.ConsumeFixed32(b)
			x = uint64(x32)
		case protowire.Fixed64Type:
			x, size = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, size = protowire.ConsumeBytes(b)
		default:
			size = protowire.ConsumeFieldValue(n, t, b)
		}
		if size < 0 {
			return fmt.Errorf("not protobuf: field %d is cut short", n)
		}
		b = b[size:]
		if err := f(n, t, v, x); err != nil {
			return err
		}
	}
	return nil
}
