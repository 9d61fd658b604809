package responsesin

import (
	"strconv"

	"github.com/agate-gateway/agate/translate/internal/members"
)

// The param paths and quoted strings of the parser's errors.

// index is the param path of element i of the array at base ("input[2]").
func index(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// clip cuts a client string quoted in an error message (members.Clip).
func clip(s string) string { return members.Clip(s) }
