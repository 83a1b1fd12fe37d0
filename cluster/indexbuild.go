package cluster

import "context"

// indexLoop builds the `.indexOn` indexes new rules declare
// (fsm.FSM.BuildIndexes) on this goroutine, whenever the state machine
// says it has some to build, so that Raft's apply goroutine never spends
// the seconds a large node takes to index. It ends at shutdown, at the
// latest once the location it is indexing is done.
func (n *Node) indexLoop() {
	defer n.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-stopped:
		}
	}()
	for {
		select {
		case <-n.stop:
			return
		case <-n.fsm.IndexWork():
		}
		if err := n.fsm.BuildIndexes(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("build indexes", "err", err)
		}
	}
}
