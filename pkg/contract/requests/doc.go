// Package requests is the run-once request protocol: how a hub Application's .operation
// (a sync asked for by `argocd app sync` or the ApplicationSet controller's RollingSync)
// and its refresh annotation are delivered to the cluster once and run once.
//
// The payload never carries them: the work agent re-applies the payload with every change
// of the ManifestWork, and would start the same sync again; and dropping a field it applied
// would remove it from the spoke while Argo CD still runs the operation. Instead the
// payload carries each as a request annotation with an id (Carried, wire.go). The agent on
// the cluster sets the request on the spoke Application together with the id in a
// delivered annotation, once per id (SpokePatch). The ManifestWork's status feedback brings
// that id back, and then the hub removes the request from the hub Application (so `argocd
// app sync` can be issued again, and a second identical refresh is a new request) and the
// payload stops carrying it (Hub).
//
// An id is minted when the hub holds a request the current ManifestWork does not carry
// unacknowledged: the same request while it is carried keeps its id, anything else (a
// different operation, or the same one asked for again after the last was delivered and
// cleared) is a new request.
//
// The annotation names are the wire contract in pkg/apis/apps; this package owns their
// values and every decision about them.
package requests
