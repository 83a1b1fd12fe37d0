package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// phaseUpgraded names the checks on the fully upgraded cluster under load.
const phaseUpgraded = "upgraded, under load"

// checkUpgraded runs once every node runs the new release, under load:
// every member advertises the new formats, then the rules entry that was
// refused before is accepted, reads back on every node, and judges writes
// taken by a follower. It reports whether the rules were set (what the
// quiet checks build on).
func (r *result) checkUpgraded(ctx context.Context, o options, admin adminClient, leader string) bool {
	if !r.checkAllAdvertiseNew(ctx, o, admin) {
		return false
	}
	via := follower(leader)
	code, body, attempts, err := admin.putRetrying(ctx, via, "/.settings/rules.json", rulesSource, o.StepTimeout)
	if err == nil && (code != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}`) {
		err = errUnexpected("PUT rules through "+via, code, body, `200 {"status":"ok"}`)
	}
	r.crossed(phaseUpgraded, "PUT /.settings/rules.json accepted",
		fmt.Sprintf("through %s (leader %s), %d attempt(s)", via, leader, attempts), err)
	if err != nil {
		return false
	}
	r.checkRulesEverywhere(ctx, phaseUpgraded, admin)
	r.checkJudged(ctx, phaseUpgraded, admin, via, "upgraded")
	return true
}

// follower is the first node, in ordinal order, that is not leader.
func follower(leader string) string {
	for _, id := range nodes {
		if id != leader {
			return id
		}
	}
	return nodes[0]
}

// checkAllAdvertiseNew waits until every node's /status shows every
// member on the new release, with the formats the node itself applies
// (at least the rules' entry format): what the gate waits for.
func (r *result) checkAllAdvertiseNew(ctx context.Context, o options, admin adminClient) bool {
	var detail string
	err := poll(ctx, o.StepTimeout, "every member advertising the new release", func(ctx context.Context) error {
		for _, id := range nodes {
			st, err := admin.status(ctx, id)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			self := st.Versions
			if self.Release != r.Releases.New || self.EntryFormat < rulesFormat {
				return fmt.Errorf("%s runs release %q, entry format %d", id, self.Release, self.EntryFormat)
			}
			if len(st.Members) != len(nodes) {
				return fmt.Errorf("%s's /status lists %d members, want %d", id, len(st.Members), len(nodes))
			}
			for _, m := range st.Members {
				if v := m.Versions; v == nil || *v != self {
					return fmt.Errorf("%s's /status shows %s with versions %+v, want %+v", id, m.ID, v, self)
				}
			}
			detail = fmt.Sprintf("every node's /status shows %s on %s (entry format %d, snapshot format %d)",
				strings.Join(nodes, " "), self.Release, self.EntryFormat, self.SnapshotFormat)
		}
		return nil
	})
	r.crossed(phaseUpgraded, "every member advertises the new release and formats", detail, err)
	return err == nil
}

// checkRulesEverywhere reads the rules back from every node, as written.
func (r *result) checkRulesEverywhere(ctx context.Context, phase string, admin adminClient) {
	var errs []error
	for _, id := range nodes {
		got, err := admin.getRules(ctx, id)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		case got != rulesSource:
			errs = append(errs, fmt.Errorf("%s serves other rules (%d bytes, want %d as written)", id, len(got), len(rulesSource)))
		}
	}
	r.crossed(phase, "rules read back as written", "on "+strings.Join(nodes, " "), errors.Join(errs...))
}

// checkJudged writes as the user alice (an admin with
// auth_variable_override) through via: her own key with a string is
// allowed, bob's key and a number are refused with 401, and every node
// then holds exactly what was allowed. tag keeps each round's value apart.
func (r *result) checkJudged(ctx context.Context, phase string, admin adminClient, via, tag string) {
	const what = "writes judged by the rules"
	judged := formatsRoot + "/judged"
	allowed := "alice, " + tag
	for _, w := range []struct {
		path, body string
		want       int
	}{
		{judged + "/alice", jsonString(allowed), http.StatusOK},
		{judged + "/bob", jsonString("alice writing bob's"), http.StatusUnauthorized},
		{judged + "/alice", "42", http.StatusUnauthorized}, // .validate: a string only
	} {
		code, body, err := admin.do(ctx, via, http.MethodPut, w.path+".json?"+asUser("alice"), w.body)
		switch {
		case err != nil:
			r.crossed(phase, what, "", fmt.Errorf("PUT %s as alice through %s: %w", w.path, via, err))
			return
		case code != w.want || (code == http.StatusUnauthorized && errorMessage(body) != msgPermission):
			want := "200"
			if w.want != http.StatusOK {
				want = fmt.Sprintf("401 %q", msgPermission)
			}
			r.crossed(phase, what, "", errUnexpected(fmt.Sprintf("PUT %s %s as alice through %s", w.path, w.body, via), code, body, want))
			return
		}
	}
	if err := admin.sameEverywhere(ctx, judged+"/alice", &allowed); err != nil {
		r.crossed(phase, what, "", err)
		return
	}
	if err := admin.sameEverywhere(ctx, judged+"/bob", nil); err != nil {
		r.crossed(phase, what, "", err)
		return
	}
	r.crossed(phase, what, fmt.Sprintf("as alice through %s (%s): her key 200, bob's key 401, a number 401; every node holds only hers",
		via, r.history(via)), nil)
}

// history says how node came to the new release, for the report.
func (r *result) history(node string) string {
	for i, s := range r.Steps {
		if s.Node == node {
			return fmt.Sprintf("old release until step %d", i+1)
		}
	}
	return "never on the old release"
}
