package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// maxNameLen is the longest tool name Anthropic, Gemini and OpenAI all accept.
const maxNameLen = 64

// validName reports whether s is a usable model-facing name: 1 to 64 characters of
// [a-zA-Z0-9_-].
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// validateSourceName rejects source names that cannot prefix a model-facing name or would
// make "source/tool" references ambiguous.
func validateSourceName(s string) error {
	if !validName(s) {
		return fmt.Errorf("tool source name %q: want 1 to %d characters of [a-zA-Z0-9_-]", s, maxNameLen)
	}
	return nil
}

// modelName returns the model-facing name of tool on source: "<source>__<tool>" when that is
// a valid name, otherwise a deterministic replacement: disallowed characters become '_', the
// result is cut to leave room, and "_" plus 8 hex digits of the SHA-256 of the full
// "<source>__<tool>" is appended so distinct tools keep distinct names.
func modelName(source, tool string) string {
	return shortenName(source + "__" + tool)
}

func shortenName(full string) string {
	if validName(full) {
		return full
	}
	suffix := "_" + shortHash(full)
	b := make([]byte, 0, maxNameLen)
	for i := 0; i < len(full) && len(b) < maxNameLen-len(suffix); i++ {
		if nameByte(full[i]) {
			b = append(b, full[i])
		} else {
			b = append(b, '_')
		}
	}
	return string(b) + suffix
}

// shortHash is 8 hex digits of the SHA-256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
