package presence

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	records := []Record{
		{Key: "w0-0", Node: "n1", Reg: Registered, Served: 1000, Ended: "left"},
		{Key: "w0-1", Node: "n2", Reg: Unknown, Served: 2000, Ended: "killed"},
		{Key: "w1-0", Node: "n3", Reg: Unknown, Served: 3000, Ended: "killed"},
	}
	ok := map[string]Ran{"w0-0": {Runs: 1, At: 1000}, "w0-1": {Runs: 1, At: 2500}}
	if r := Judge(records, ok); !r.OK {
		t.Fatalf("a good run judged bad: %+v", r)
	}
	for name, c := range map[string]struct {
		ran  map[string]Ran
		want string
	}{
		"a registered one never ran": {map[string]Ran{}, "w0-0 (held on n1, ended: left): registered, ran 0 times"},
		"a registered one ran twice": {map[string]Ran{"w0-0": {Runs: 2, At: 1500}}, "registered, ran 2 times"},
		"an unknown one ran twice":   {map[string]Ran{"w0-0": {Runs: 1, At: 1500}, "w1-0": {Runs: 2, At: 3500}}, "outcome of the registration unknown, ran 2 times"},
		"ran while served":           {map[string]Ran{"w0-0": {Runs: 1, At: 999}}, "ran at 999, 1 ms before its connection was last served"},
		"ran for nobody":             {map[string]Ran{"w0-0": {Runs: 1, At: 1500}, "w9-9": {Runs: 1, At: 5}}, "w9-9 ran (1 times), but no watcher registered it"},
	} {
		r := Judge(records, c.ran)
		if r.OK || !strings.Contains(strings.Join(r.Details, "\n"), c.want) {
			t.Errorf("%s: %+v, want a problem naming %q", name, r, c.want)
		}
	}
}
