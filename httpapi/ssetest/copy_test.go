package ssetest

import (
	"reflect"
	"testing"
)

func TestCopy(t *testing.T) {
	got, err := Copy([]string{
		`put {"path":"/","data":{"a":1,"b":[true,null,"x"]}}`,
		`patch {"path":"/","data":{"a":null,"c/d":2}}`,
		`put {"path":"/b/1","data":{"e":{}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Normal(`{"b":{"0":true,"2":"x"},"c":{"d":2}}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy %v, want %v", got, want)
	}
	for _, bad := range []string{`put {`, `keep-alive null`, `patch {"path":"/","data":5}`} {
		if _, err := Copy([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
