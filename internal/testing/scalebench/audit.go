package scalebench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// auditPolicy records the controllers' requests at Metadata level (no bodies) and
// nothing else: the simulator and the benchmark would only add volume. With all, every
// user's requests are recorded, to follow a whole pipeline when looking into a result.
func auditPolicy(all bool) string {
	users := `
  users: ["` + userOurs + `", "` + userRS + `", "` + userUpstream + `"]`
	if all {
		users = ""
	}
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
omitManagedFields: true
rules:
- level: Metadata` + users + `
- level: None
`
}

// AuditLog reads the apiserver's audit log (JSON lines).
type AuditLog struct{ path string }

// Mark returns the current end of the log, to count from.
func (a *AuditLog) Mark() (int64, error) {
	st, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// Requests counts one user's requests.
type Requests struct {
	// Total is every request.
	Total int `json:"total"`
	// ByVerb counts by audit verb: get, list, watch, create, update, patch, delete.
	ByVerb map[string]int `json:"byVerb"`
	// ByCall counts by "verb resource[/subresource]".
	ByCall map[string]int `json:"byCall"`
	// Failed counts responses with a code of 400 or more (conflicts, not found, ...).
	Failed int `json:"failed"`
	// Events counts the requests on Events (either API group): what a controller reports
	// to people rather than what it does. Included in Total.
	Events int `json:"events"`
}

// Count reads the log from offset and counts user's requests received in [from, to]. A
// watch is counted when its response starts, anything else when it completes.
func (a *AuditLog) Count(offset int64, user string, from, to time.Time) (Requests, error) {
	r := Requests{ByVerb: map[string]int{}, ByCall: map[string]int{}}
	f, err := os.Open(a.path)
	if err != nil {
		return r, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return r, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line being written as we read
		}
		if e.User.Username != user || e.RequestReceived.Before(from) || e.RequestReceived.After(to) {
			continue
		}
		if e.Verb == "watch" {
			if e.Stage != "ResponseStarted" {
				continue
			}
		} else if e.Stage != "ResponseComplete" {
			continue
		}
		r.Total++
		r.ByVerb[e.Verb]++
		call := e.Verb
		if e.ObjectRef != nil {
			call += " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				call += "/" + e.ObjectRef.Subresource
			}
		}
		r.ByCall[call]++
		if e.ObjectRef != nil && e.ObjectRef.Resource == "events" {
			r.Events++
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 400 {
			r.Failed++
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("reading %s: %w", a.path, err)
	}
	return r, nil
}

// Calls returns ByCall as "call=count" sorted by count, largest first.
func (r Requests) Calls() []string {
	type kv struct {
		k string
		v int
	}
	var list []kv
	for k, v := range r.ByCall {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].v != list[j].v {
			return list[i].v > list[j].v
		}
		return list[i].k < list[j].k
	})
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = fmt.Sprintf("%s=%d", e.k, e.v)
	}
	return out
}
