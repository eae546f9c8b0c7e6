package framework

// Refused requests, from the API server's audit log: a process the tests start (the
// manager, as a process on the fleet or in-process in the chart suite) makes requests no
// transport wrapper of the test can see, and a 403 it logs and retries would otherwise go
// unnoticed. The API server records each request of the audited users with its response
// code; RefusedRequests reads the 403s back.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AuditLog is the audit log of one API server, for the requests of Users.
type AuditLog struct {
	// Path is the log file (JSON lines, one event per request).
	Path string
	// Users are whose requests count, by their own or their impersonated name. The log
	// holds only theirs when they authenticate as themselves; an impersonating client's
	// requests are decided on (and logged) before the API server knows whom it
	// impersonates, so with LogEveryone every request is logged.
	Users       []string
	LogEveryone bool
}

// NewAuditLog is an audit log in dir for the requests of users.
func NewAuditLog(dir string, users ...string) *AuditLog {
	return &AuditLog{Path: filepath.Join(dir, "audit.log"), Users: users}
}

// Configure makes apiServer write the log: one event per completed request of the users,
// metadata only (no bodies), nothing for anyone else.
func (a *AuditLog) Configure(apiServer *envtest.APIServer) error {
	quoted := make([]string, len(a.Users))
	for i, u := range a.Users {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	users := fmt.Sprintf("\n  users: [%s]", strings.Join(quoted, ", "))
	if a.LogEveryone {
		users = ""
	}
	policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata%s
- level: None
`, users)
	policyFile := strings.TrimSuffix(a.Path, ".log") + "-policy.yaml"
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	args := apiServer.Configure()
	args.Set("audit-policy-file", policyFile)
	args.Set("audit-log-path", a.Path)
	args.Set("audit-log-format", "json")
	// Written as they happen: a suite reads the log right after the requests.
	args.Set("audit-log-mode", "blocking")
	return nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// TimeRange is the span of time from From to To, both included.
type TimeRange struct {
	From, To time.Time
}

func (r TimeRange) contains(t time.Time) bool { return !t.Before(r.From) && !t.After(r.To) }

// RefusedRequests are the requests of the audited users the API server answered 403
// Forbidden, each "<user>: <verb> <URI> (n times)", sorted. A log that records no request
// of theirs is an error.
func (a *AuditLog) RefusedRequests() ([]string, error) {
	return a.RefusedRequestsOutside(nil)
}

// RefusedRequestsOutside is RefusedRequests without the 403s of requests the API server
// received within one of skip: a restarted kube-apiserver refuses requests until its RBAC
// informers have synced, before /readyz answers 200, when no load balancer or Service
// would send it any (see fleet's ControlPlane.APIServerStarting).
func (a *AuditLog) RefusedRequestsOutside(skip []TimeRange) ([]string, error) {
	count := map[string]int{}
	if err := a.eachRequest(func(user string, e auditEvent) {
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 &&
			!slices.ContainsFunc(skip, func(r TimeRange) bool { return r.contains(e.RequestReceived) }) {
			count[fmt.Sprintf("%s: %s %s", user, e.Verb, e.RequestURI)]++
		}
	}); err != nil {
		return nil, err
	}
	var out []string
	for req, n := range count {
		out = append(out, fmt.Sprintf("%s (%d times)", req, n))
	}
	slices.Sort(out)
	return out, nil
}

// Answered counts the requests of the audited users the API server answered with code,
// by verb (create, update, patch, ...).
func (a *AuditLog) Answered(code int) (map[string]int, error) {
	count := map[string]int{}
	err := a.eachRequest(func(_ string, e auditEvent) {
		if e.ResponseStatus != nil && e.ResponseStatus.Code == code {
			count[e.Verb]++
		}
	})
	return count, err
}

// eachRequest calls fn with every logged request of the audited users. No log, or no
// request of the users in it, is an error: a check that read nothing would pass whatever
// the users did.
func (a *AuditLog) eachRequest(fn func(user string, e auditEvent)) error {
	f, err := os.Open(a.Path)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	seen := 0
	scan := bufio.NewScanner(f)
	scan.Buffer(make([]byte, 1<<20), 16<<20)
	for scan.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scan.Bytes(), &e); err != nil {
			return fmt.Errorf("reading %s: %w", a.Path, err)
		}
		user := e.User.Username
		if e.ImpersonatedUser != nil {
			user = e.ImpersonatedUser.Username
		}
		if !slices.Contains(a.Users, user) {
			continue
		}
		seen++
		fn(user, e)
	}
	if err := scan.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", a.Path, err)
	}
	if seen == 0 {
		return fmt.Errorf("%s records no request of %v", a.Path, a.Users)
	}
	return nil
}
