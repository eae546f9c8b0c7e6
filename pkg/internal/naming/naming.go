// Package naming bounds generated Kubernetes names and label values: a name that would be
// too long keeps a readable prefix and ends with a hash of the whole, so distinct inputs
// stay distinct and the same input always gives the same name.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// trimmed are the characters a bounded name's prefix may not end (or start) with: a DNS
// subdomain's parts and a label value must begin and end with an alphanumeric character.
const trimmed = "-_."

// Bounded returns s when it has at most limit bytes, otherwise WithHash(s, s, max, hashLength).
func Bounded(s string, limit, hashLength int) string {
	if len(s) <= limit {
		return s
	}
	return WithHash(s, s, limit, hashLength)
}

// WithHash returns prefix, cut so that the result has at most limit bytes, followed by "-"
// and the first hashLength hex characters of the SHA-256 of of. Separators at either end
// of the prefix are dropped; when nothing is left the result is the hash alone. Callers
// pass a prefix that is already made of valid characters for what they name.
func WithHash(prefix, of string, limit, hashLength int) string {
	sum := sha256.Sum256([]byte(of))
	hash := hex.EncodeToString(sum[:])
	if hashLength < len(hash) {
		hash = hash[:hashLength]
	}
	if keep := limit - 1 - len(hash); len(prefix) > keep {
		prefix = prefix[:max(keep, 0)]
	}
	prefix = strings.Trim(prefix, trimmed)
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}
