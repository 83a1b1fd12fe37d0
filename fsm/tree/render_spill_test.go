package tree

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// spillAll renders through a Spilling renderer, collecting every spilled
// piece, and checks that no piece but the last is shorter than limit.
func spillAll(t *testing.T, limit int, render func(dst []byte, spill Spill) ([]byte, error)) []byte {
	t.Helper()
	var out bytes.Buffer
	pieces := 0
	rest, err := render(make([]byte, 0, 16), func(full []byte) ([]byte, error) {
		if len(full) < limit {
			t.Fatalf("spilled %d bytes, below the limit %d", len(full), limit)
		}
		out.Write(full)
		pieces++
		return full[:0], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Write(rest)
	if limit < 64 && pieces == 0 && out.Len() > 64 {
		t.Fatalf("limit %d: nothing spilled", limit)
	}
	return out.Bytes()
}

func TestSpillingRendersLikeAppendJSON(t *testing.T) {
	docs := map[string]*Node{
		"users":  mustParseBody(t, string(benchDocument(40))),
		"array":  mustParseBody(t, `{"a":[1,[2,3],{"0":"x","2":"y"},null,"s"]}`),
		"leaf":   mustParseBody(t, `"just a string"`),
		"nested": mustParseBody(t, `{"a":{"b":{"c":{"d":[1,2,{"e":true}]}}}}`),
	}
	for name, n := range docs {
		for _, o := range []RenderOptions{{}, {Pretty: true}, {Export: true}, {Pretty: true, Export: true}} {
			want := AppendJSON(nil, n, o)
			for _, limit := range []int{1, 7, 100, 4096, 1 << 20} {
				got := spillAll(t, limit, func(dst []byte, spill Spill) ([]byte, error) {
					return AppendJSONSpilling(dst, n, o, limit, spill)
				})
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %+v limit %d:\n got %s\nwant %s", name, o, limit, got, want)
				}
			}
		}
	}
}

func TestSpillingQueryResultsRenderLikeAppend(t *testing.T) {
	n := mustParseBody(t, string(benchDocument(60)))
	users := n.Child("users")
	for _, spec := range []QuerySpec{
		{Order: OrderByKey, Limit: 25, HasLimit: true},
		{Order: OrderByChild, Child: Path{"age"}, StartAt: &Bound{Value: Int(30)}},
		{Order: OrderByValue, Limit: 3, HasLimit: true, LimitToLast: true},
	} {
		q, err := NewQuery(spec)
		if err != nil {
			t.Fatal(err)
		}
		res, err := q.Eval(context.Background(), users)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []RenderOptions{{}, {Pretty: true}, {Export: true}} {
			want := AppendQueryResult(nil, res, o)
			for _, limit := range []int{1, 50, 1 << 20} {
				got := spillAll(t, limit, func(dst []byte, spill Spill) ([]byte, error) {
					return AppendQueryResultSpilling(dst, res, o, limit, spill)
				})
				if !bytes.Equal(got, want) {
					t.Fatalf("%+v %+v limit %d:\n got %s\nwant %s", spec, o, limit, got, want)
				}
			}
		}
	}
	arr := mustParseBody(t, `{"0":"a","1":"b","2":"c","3":"d"}`)
	q, err := NewQuery(QuerySpec{Order: OrderByKey, Limit: 3, HasLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Eval(context.Background(), arr)
	if err != nil {
		t.Fatal(err)
	}
	want := AppendQueryResult(nil, res, RenderOptions{})
	if got := spillAll(t, 1, func(dst []byte, spill Spill) ([]byte, error) {
		return AppendQueryResultSpilling(dst, res, RenderOptions{}, 1, spill)
	}); !bytes.Equal(got, want) {
		t.Fatalf("array result: got %s want %s", got, want)
	}
}

func TestSpillErrorStopsRendering(t *testing.T) {
	n := mustParseBody(t, string(benchDocument(200)))
	stop := errors.New("client gone")
	calls := 0
	_, err := AppendJSONSpilling(nil, n, RenderOptions{}, 100, func(full []byte) ([]byte, error) {
		calls++
		if calls == 3 {
			return nil, stop
		}
		return full[:0], nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("err %v after %d spills; want the spill's error after 3", err, calls)
	}
}
