// Package phrase words what the agent tells the user in its ManagedClusterAddOn
// conditions, where several conditions say the same thing alike.
package phrase

import "strings"

// Namespaces names namespaces in a sentence: "namespace a" or "namespaces a, b".
func Namespaces(namespaces []string) string {
	if len(namespaces) == 1 {
		return "namespace " + namespaces[0]
	}
	return "namespaces " + strings.Join(namespaces, ", ")
}
