package httpapi

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// queryStringSeeds are raw queries for parseQueryString's plain path and
// the ones that must leave it.
var queryStringSeeds = []string{
	"", "a", "a=", "=b", "&", "&&a=1&&", "a=1&a=2", "auth=x.y.z&print=silent",
	"a==b", "a=b=c", "a=%41", "a=b+c", "a;b=1", "a=1;b=2", "a=%zz", "%=1",
	strings.Repeat("a=1&", plainQueryParams-1) + "b=2",
	strings.Repeat("a=1&", plainQueryParams) + "b=2",
}

// TestParseQueryStringMatchesURL checks that the plain path answers what
// url.ParseQuery answers.
func TestParseQueryStringMatchesURL(t *testing.T) {
	for _, raw := range queryStringSeeds {
		checkQueryString(t, raw)
	}
}

// FuzzParseQueryString compares parseQueryString with url.ParseQuery on
// arbitrary queries.
func FuzzParseQueryString(f *testing.F) {
	for _, raw := range queryStringSeeds {
		f.Add(raw)
	}
	f.Fuzz(checkQueryString)
}

// checkQueryString fails t unless parseQueryString(raw) and
// url.ParseQuery(raw) agree: the same values, or both an error.
func checkQueryString(t *testing.T, raw string) {
	got, gotErr := parseQueryString(raw)
	want, wantErr := url.ParseQuery(raw)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, url.ParseQuery's %v", raw, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %v, url.ParseQuery %v", raw, got, want)
	}
}
