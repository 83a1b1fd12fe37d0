package tree

import (
	"fmt"
	"slices"
	"testing"
)

// TestAppenderBuildsAsObjectBuilder: children appended in key order make
// the same object (content, size, ETag) an ObjectBuilder makes, and keys
// out of order or null children are refused without changing anything.
func TestAppenderBuildsAsObjectBuilder(t *testing.T) {
	keys := []string{"-5", "0", "7", "10", "0010", "2147483648", ".priority", "A", "a", "a/b", "é", "\U0001F600", "\uFFFD"}
	for i := range 5000 {
		keys = append(keys, fmt.Sprintf("k%05d", i))
	}
	slices.SortFunc(keys, CompareKeys)
	a, b := NewAppender(), NewObjectBuilder()
	for i, k := range keys {
		v := Int(int64(i))
		if i%3 == 0 {
			v = String(k).WithPriority(Int(int64(i)))
		}
		if !a.AppendOne(k, v) {
			t.Fatalf("AppendOne(%q) refused in key order", k)
		}
		b.Set(k, v)
	}
	if a.AppendOne(keys[0], Int(1)) || a.AppendOne(keys[len(keys)-1], Int(1)) || a.AppendOne("zzzzzz", nil) {
		t.Fatal("AppendOne took a key out of order or a null child")
	}
	got, want := a.Build(), b.Build(nil)
	if got.ETag() != want.ETag() || got.Size() != want.Size() || !got.Equal(want) || got.Len() != len(keys) {
		t.Fatalf("appended %s (%d bytes), built %s (%d bytes)", got.ETag(), got.Size(), want.ETag(), want.Size())
	}
	if a.AppendOne("zzzzzz", Int(1)) {
		t.Fatal("AppendOne after Build")
	}
	if NewAppender().Build() != nil {
		t.Fatal("an empty Appender built an object")
	}
}
