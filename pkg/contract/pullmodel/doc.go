// Package pullmodel is the contract the hub controllers share about a pulled Argo CD
// Application and its ManifestWork: which objects are pulled (Marked), the work's name and
// the key and field index that lead from a ManifestWork back to its hub Application, the
// status feedback the work agent returns and how it is read, how feedback and the agent's
// report combine into the scalars shown on the hub, and whether a cluster's agent is
// available. Each rule is written here once; the controllers under pkg/hub import it and
// never each other.
package pullmodel
