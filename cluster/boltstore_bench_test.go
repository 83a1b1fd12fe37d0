package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkLogStoreAfterLargeEntry is the cost of storing a small entry
// (100 bytes) in the Raft log, on its own and as one of the four that
// follow a 16 MiB entry (cluster.MaxWriteBytes). bbolt does not split a
// leaf of four keys or fewer, so each of those four rewrites and fsyncs
// the leaf that holds the large entry: the writes queued behind a large
// one pay for it again on every node.
func BenchmarkLogStoreAfterLargeEntry(b *testing.B) {
	for _, bc := range []struct {
		name  string
		large bool
	}{{"ordinary", false}, {"after16MiB", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := raftboltdb.New(boltStoreOptions(b.TempDir()))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			large, small := make([]byte, MaxWriteBytes), make([]byte, 100)
			var index uint64
			store := func(data []byte) {
				index++
				if err := s.StoreLog(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < b.N; i++ {
				if i%4 == 0 && bc.large {
					b.StopTimer()
					for range 8 { // a leaf of its own before the large entry
						store(small)
					}
					store(large)
					b.StartTimer()
				}
				store(small)
			}
		})
	}
}
