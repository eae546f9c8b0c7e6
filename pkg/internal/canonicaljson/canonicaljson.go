// Package canonicaljson encodes JSON values so that two encodings of the same value
// compare equal byte for byte: object keys sorted, null members dropped.
package canonicaljson

import "encoding/json"

// Marshal encodes v canonically.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Reencode(raw)
}

// Reencode re-encodes raw canonically.
func Reencode(raw []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return json.Marshal(withoutNulls(v))
}

// withoutNulls drops the null members of every object in v, in place.
func withoutNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, member := range t {
			if member == nil {
				delete(t, k)
				continue
			}
			t[k] = withoutNulls(member)
		}
	case []any:
		for i := range t {
			t[i] = withoutNulls(t[i])
		}
	}
	return v
}
