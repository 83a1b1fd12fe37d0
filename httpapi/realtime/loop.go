package realtime

// The session loop handles a connection's requests one at a time, sends
// its listens' changes and notices its token's expiry. It runs on a
// goroutine only while it has work: whatever gives it some (a request
// read, a feed's wake, the expiry, the session's end) calls kick, which
// starts one unless one runs, and the loop ends when nothing waits. An
// idle connection thus holds one goroutine, its reader. At most one loop
// runs at a time (running, under runMu), so the session's state is never
// touched by two at once, and each loop sees what the one before did.

// kick starts the loop unless it runs.
func (s *session) kick() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if !s.running {
		s.running = true
		go s.loop()
	}
}

// loop works until nothing waits for it, or until the session ended:
// then it finishes the session (its feeds, the close, onDisconnect) and
// stays marked running, so that none starts after it.
func (s *session) loop() {
	defer s.guardLoop()
	for {
		if g := s.expiredGen.Load(); g != 0 && g == s.expiryGen {
			s.expiredGen.Store(0)
			s.expiry = nil
			s.tokenExpired()
		}
		select {
		case <-s.ctx.Done():
			s.finishOnce()
			return
		case rq := <-s.reqs:
			s.handle(*rq)
		case <-s.wake:
			s.pump()
		default:
			if s.park() {
				return
			}
		}
	}
}

// park ends the loop's turn unless work arrived since it looked: false
// when it must go on.
func (s *session) park() bool {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if len(s.reqs) > 0 || len(s.wake) > 0 || s.ctx.Err() != nil {
		return false
	}
	if g := s.expiredGen.Load(); g != 0 && g == s.expiryGen {
		return false
	}
	s.running = false
	return true
}

// finishOnce finishes the session and forgets it, once.
func (s *session) finishOnce() {
	s.finished.Do(func() {
		defer s.srv.untrack(s)
		s.finish()
	})
}

// guardLoop is guard for the loop: after a panic the session is finished
// here, since the loop that would have finished it is gone.
func (s *session) guardLoop() {
	p := recover()
	if p == nil {
		return
	}
	s.recovered(p)
	s.finishOnce()
}
