package jobs

// Watching the jobs as a whole, for a stream of the job list: one channel
// closed at every change of any job (a step of the transition, a new job),
// then replaced, so a follower reads the list again instead of polling.

// Watch returns a channel closed at the next change of any job, and whether
// the service is closing: a follower then ends, so that it does not hold
// the server's shutdown open.
func (s *Service) Watch() (changed <-chan struct{}, closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed, s.closing
}

// notifyLocked wakes the watchers.
func (s *Service) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}
