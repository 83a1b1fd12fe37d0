package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// nodeView is one node's state at quiescence.
type nodeView struct {
	applied string
	etag    string
	err     error
}

// Converge waits until every node has applied the same index and serves
// the same root ETag from its own state (consistency=local, no read
// barrier): the replicas are identical, not merely able to agree when
// asked through the leader. On failure each node's root is saved for a
// diff.
func Converge(ctx context.Context, admin *client.Client, nodes []string, dir string, timeout time.Duration) Result {
	b := NewBuilder("replicas converged (same root ETag on every node, local reads)")
	deadline := time.Now().Add(timeout)
	var views map[string]nodeView
	polls := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		polls++
		views = map[string]nodeView{}
		for _, n := range nodes {
			views[n] = view(ctx, admin, n)
		}
		if agree(views) {
			return b.Done(fmt.Sprintf("root ETag %s, applied index %s on all %d nodes (%d polls)", views[nodes[0]].etag, views[nodes[0]].applied, len(nodes), polls))
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	for _, n := range nodes {
		v := views[n]
		b.Fail("%s: applied index %s, root ETag %q, error %v", n, v.applied, v.etag, v.err)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if r, err := admin.Do(dctx, n, "GET", "/.json?consistency=local&format=export", ""); err == nil {
			os.WriteFile(filepath.Join(dir, "root-"+n+".json"), r.Body, 0o644)
		}
		cancel()
	}
	return b.Done(fmt.Sprintf("not converged within %s; each node's root saved as root-<node>.json", timeout))
}

func view(ctx context.Context, admin *client.Client, node string) nodeView {
	var v nodeView
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := admin.Do(ctx, node, "GET", "/status", "")
	if err != nil || r.Status != 200 {
		v.err = fmt.Errorf("/status: %v %d", err, r.Status)
		return v
	}
	v.applied = jsonField(string(r.Body), "applied_index")
	r, err = admin.Do(ctx, node, "GET", "/.json?consistency=local", "", "X-Firebase-ETag", "true")
	if err != nil || r.Status != 200 {
		v.err = fmt.Errorf("GET /.json: %v %d", err, r.Status)
		return v
	}
	v.etag = r.Header.Get("ETag")
	return v
}

// jsonField pulls a number out of a flat JSON object without a struct
// for one field.
func jsonField(body, name string) string {
	i := strings.Index(body, `"`+name+`":`)
	if i < 0 {
		return "?"
	}
	rest := body[i+len(name)+3:]
	end := strings.IndexAny(rest, ",}")
	if end < 0 {
		return "?"
	}
	if _, err := strconv.ParseUint(rest[:end], 10, 64); err != nil {
		return "?"
	}
	return rest[:end]
}

func agree(views map[string]nodeView) bool {
	var first *nodeView
	for _, v := range views {
		if v.err != nil || v.etag == "" {
			return false
		}
		if first == nil {
			first = &v
			continue
		}
		if v.etag != first.etag || v.applied != first.applied {
			return false
		}
	}
	return true
}
